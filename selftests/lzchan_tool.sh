#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The lzchan command on the shm backend (no module needed): every
# subcommand, --json, messages and exit codes, pipelines, the man page.
# Prints TAP.
# usage: lzchan_tool.sh PATH-TO-lzchan
tool=${1:?usage: $0 PATH-TO-lzchan}
here=$(cd "$(dirname "$0")" && pwd)
manpage=$here/../man/man1/lzchan.1
n=0 failed=0
echo "TAP version 13"

check() { # description, then the test as a command (or shell function)
	desc=$1; shift
	n=$((n + 1))
	if "$@"; then printf 'ok %s %s\n' $n "$desc"
	else printf 'not ok %s %s\n' $n "$desc"; failed=1; fi
}
skip() { n=$((n + 1)); printf 'ok %s %s # SKIP %s\n' $n "$1" "$2"; }

tmp=$(mktemp -d)
out=$tmp/out err=$tmp/err
trap 'rm -rf "$tmp"' EXIT
# A private directory of channels, whatever the host has in /dev/shm.
export LZCHAN_BACKEND=shm LZCHAN_SHM_DIR=$tmp/shm
mkdir "$LZCHAN_SHM_DIR"

run() { "$tool" "$@" >"$out" 2>"$err"; echo $? >"$tmp/rc"; }
rc() { cat "$tmp/rc"; }
rc_is() { [ "$(rc)" = "$1" ]; }
out_has() { grep -q -- "$1" "$out"; }
err_has() { grep -q -- "$1" "$err"; }
err_one_line() { [ "$(wc -l < "$err")" = 1 ]; }

# A JSON checker: python3, else jq; none means the JSON checks SKIP.
if command -v python3 >/dev/null 2>&1; then
	json_ok() { python3 -c 'import json,sys; json.load(sys.stdin)' < "$1" 2>/dev/null; }
	json_get() { python3 -c "import json,sys; d=json.load(sys.stdin); print($2)" < "$1"; }
elif command -v jq >/dev/null 2>&1; then
	json_ok() { jq -e . < "$1" >/dev/null 2>&1; }
	json_get() { jq -r "$3" < "$1"; }
else
	json_ok() { return 2; }
fi
json_check() { # description, file, then a python expression and a jq filter that must hold
	if ! command -v python3 >/dev/null 2>&1 && ! command -v jq >/dev/null 2>&1; then
		skip "$1" "neither python3 nor jq installed"
		return
	fi
	desc=$1 file=$2 py=$3 jqf=$4
	t_json() { json_ok "$file" && [ "$(json_get "$file" "$py" "$jqf")" = True ] ||
		[ "$(json_get "$file" "$py" "$jqf")" = true ]; }
	check "$desc" t_json
}

# --- the basics ---
run --version
check "--version prints the version" eval 'rc_is 0 && out_has "^lzchan [0-9]*\.[0-9]*$"'
run --help
check "--help exits 0 with usage listing every command" \
	eval 'rc_is 0 && out_has "^usage:" && out_has "lzchan watch" && out_has "exit status"'
run
check "no command is a usage error (2)" eval 'rc_is 2 && grep -q "^usage:" "$err"'
run frobnicate
check "unknown command is a usage error (2)" eval "rc_is 2 && err_has \"unknown command 'frobnicate'\""
run features
check "features without the module: ENOENT and how to load it" \
	eval 'rc_is 1 && err_has "(ENOENT).*modprobe lzchan" && err_one_line'
run features --json
check "features --json without the module: exit 1, nothing on stdout" \
	eval 'rc_is 1 && [ ! -s "$out" ]'

# --- help per command ---
run help send
cp "$out" "$tmp/help1"
run send --help
check "'help send' and 'send --help' print the same help, exit 0" \
	eval 'rc_is 0 && cmp -s "$out" "$tmp/help1" && out_has "^usage: lzchan send NAME"'
check "send's help documents the record prefix and exit codes" \
	eval 'out_has "4-byte little-endian" && out_has "3 timed out"'
run help rm
check "help knows aliases (rm -> remove)" eval 'rc_is 0 && out_has "^usage: lzchan remove"'
run help frob
check "help for an unknown command is a usage error" eval "rc_is 2 && err_has \"unknown command 'frob'\""
run recv ch --bogus
check "an unknown option is a usage error naming it" \
	eval "rc_is 2 && err_has \"unknown option '--bogus'\" && err_has \"lzchan recv --help\""
run recv ch --count
check "an option without its value is a usage error" eval 'rc_is 2 && err_has "needs a value"'
run send
check "a missing NAME is a usage error" eval 'rc_is 2 && err_has "NAME is required"'
run show -xj ch
check "an unknown option first in a cluster is named, not the command" \
	eval "rc_is 2 && err_has \"unknown option '-x'\" && ! err_has \"'show'\""
run show ch --json=1
check "a value given to a flag: 'takes no value', not 'needs a value'" \
	eval "rc_is 2 && err_has \"option '--json' takes no value\""

# --- create / list / show ---
run create ch --slots 8 --mode 0640 --lanes 3
check "create exits 0 and prints nothing" eval 'rc_is 0 && [ ! -s "$out" ] && [ ! -s "$err" ]'
run create ch
check "create of an existing name: EEXIST, exit 1, how to fix" \
	eval 'rc_is 1 && err_has "(EEXIST)" && err_has "exist-ok" && err_one_line'
run create ch --exist-ok
check "create --exist-ok of an existing name is fine" rc_is 0
t_badopts() {
	for a in "--slots 3" "--slots 0" "--slot-size 100" "--slot-size 131072" "--lanes 0" \
		 "--lanes 5000" "--mode 999" "--mode rw" "--node x" "--strict" "--slots -8"; do
		# shellcheck disable=SC2086
		run create bad $a
		rc_is 2 || { echo "# create bad $a: rc $(rc)"; return 1; }
	done
	[ ! -e "$LZCHAN_SHM_DIR/lzchan.bad" ]
}
check "create: bad geometry, mode, node are usage errors; nothing created" t_badopts
run create "a/b"
check "a name with '/' is a usage error" eval 'rc_is 2 && err_has "channel name"'
run list
check "list shows the backend and the channel's row" \
	eval "rc_is 0 && out_has \"^backend: shm ($LZCHAN_SHM_DIR)\" && \
	      out_has '^ch  *[0-9][0-9]*  *[0-9][0-9]* 0640 *-  *8x64  *0/3  *none  *0  *0\$'"
run ls
check "ls is list" eval 'rc_is 0 && out_has "^ch "'
run list --json
cp "$out" "$tmp/list.json"
json_check "list --json is valid JSON with the channel's geometry" "$tmp/list.json" \
	'd["backend"]=="shm" and [c for c in d["channels"] if c["name"]=="ch"][0]["slot_count"]==8 and d["channels"][0]["max_msg"]==440' \
	'.backend=="shm" and (.channels[] | select(.name=="ch") | .slot_count==8 and .max_msg==440)'

# --- send / recv ---
printf 'a\nb\n' | "$tool" send ch 2>"$err"; s=$?
check "printf 'a\\nb\\n' | lzchan send ch: exit 0" eval '[ $s = 0 ] && [ ! -s "$err" ]'
run show ch
check "show: geometry, largest message, messages counted, closed lane 0 holding 2" \
	eval 'rc_is 0 && out_has "^slots: *8 x 64" && out_has "^largest message: *440 bytes" && \
	      out_has "^messages: *2$" && out_has "^ *0 closed *1 *no *no *2 *0 *2 *2 *2$"'
run show ch --json
cp "$out" "$tmp/show.json"
json_check "show --json: valid, counters and lanes" "$tmp/show.json" \
	'd["channel"]["messages"]==2 and d["lanes"][0]["state"]=="closed" and d["lanes"][0]["pending"]==2 and len(d["lanes"])==3' \
	'.channel.messages==2 and .lanes[0].state=="closed" and .lanes[0].pending==2 and (.lanes|length)==3'
run recv ch --count 1
check "recv --count 1 takes exactly one message" eval 'rc_is 0 && [ "$(cat "$out")" = a ]'
run recv ch --count 1
check "the next receiver gets the rest, nothing lost" eval 'rc_is 0 && [ "$(cat "$out")" = b ]'
run recv ch --timeout 100
check "recv --timeout with nothing there: ETIMEDOUT, exit 3" \
	eval 'rc_is 3 && err_has "(ETIMEDOUT)" && err_one_line'
echo late | "$tool" send ch 2>"$err"; s=$?
check "send after the receiver left: EPIPE, exit 1, says to start one" \
	eval '[ $s = 1 ] && err_has "(EPIPE)" && err_has "lzchan recv ch"'
run recv nope
check "recv of a missing channel: ENOENT and 'lzchan list'" \
	eval 'rc_is 1 && err_has "(ENOENT)" && err_has "lzchan list" && err_one_line'

# Receiver first, parked, then the sender: a pipeline in the other order.
run create pipe --slots 4
"$tool" recv pipe --count 3 >"$tmp/p.out" 2>"$tmp/p.err" &
rpid=$!
sleep 0.3
printf '1\n2\n3\n' | "$tool" send pipe
src=$?
wait $rpid; s=$?
check "a waiting receiver gets what a later sender sends" \
	eval '[ $s = 0 ] && [ $src = 0 ] && [ "$(cat "$tmp/p.out")" = "$(printf "1\n2\n3")" ]'

# A ring of 3 messages and 300 lines: send waits for room, drops nothing.
run create small --slots 4
seq 1 300 > "$tmp/seq"
"$tool" recv small --eof >"$tmp/s.out" 2>"$tmp/s.err" &
rpid=$!
"$tool" send small < "$tmp/seq"
src=$?
wait $rpid; s=$?
check "300 lines through a 4-slot ring: all, in order; --eof ends recv" \
	eval '[ $s = 0 ] && [ $src = 0 ] && cmp -s "$tmp/seq" "$tmp/s.out"'

# Records: any bytes, NUL, newline, 0xff, empty record.
run create rec --slot-size 128 --slots 4
printf '\003\000\000\000a\nb\000\000\000\000\005\000\000\000\000\377\n\001z' > "$tmp/r.in"
"$tool" send rec --records < "$tmp/r.in"
src=$?
run recv rec --records --count 3
check "send/recv --records: binary records round trip byte for byte" \
	eval 'rc_is 0 && [ $src = 0 ] && cmp -s "$out" "$tmp/r.in"'
run create bin
printf 'x\000y\377\n' > "$tmp/b.in"
"$tool" send bin < "$tmp/b.in"
run recv bin --count 1
check "line mode carries NUL and 0xff bytes" eval 'rc_is 0 && cmp -s "$out" "$tmp/b.in"'
run create big --slots 8
{ head -c 441 /dev/zero | tr '\0' x; echo; echo ok; } > "$tmp/long"
"$tool" send big < "$tmp/long" 2>"$err"; s=$?
check "a line over the limit: EMSGSIZE naming the limit, exit 1" \
	eval '[ $s = 1 ] && err_has "(EMSGSIZE)" && err_has "line 1 is 441 bytes" && err_has "largest message of 440 bytes" && err_one_line'
head -c 440 /dev/zero | tr '\0' x > "$tmp/fits"
echo >> "$tmp/fits"
"$tool" send big < "$tmp/fits"
src=$?
run recv big --count 1
check "a line of exactly the limit goes through" eval '[ $src = 0 ] && rc_is 0 && cmp -s "$out" "$tmp/fits"'
printf '\020\000\000' | "$tool" send rec --records 2>"$err"; s=$?
check "a record cut in its prefix: EBADMSG, exit 1" \
	eval '[ $s = 1 ] && err_has "(EBADMSG)" && err_has "length prefix"'
printf '\020\000\000\000abc' | "$tool" send rec --records 2>"$err"; s=$?
check "a record cut in its body: EBADMSG, exit 1" \
	eval '[ $s = 1 ] && err_has "(EBADMSG)" && err_has "after 3 of its 16 bytes"'
printf '\377\001\000\000' | "$tool" send rec --records 2>"$err"; s=$?
check "a record over the limit: EMSGSIZE before reading it" \
	eval '[ $s = 1 ] && err_has "(EMSGSIZE)" && err_has "record 1 is 511 bytes"'
"$tool" send ch < /dev/null; s=$?
check "send with empty stdin: exit 0" eval '[ $s = 0 ]'

# --- permissions ---
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	chmod 0777 "$tmp" "$LZCHAN_SHM_DIR"
	setpriv --reuid 65534 --regid 65534 --clear-groups "$tool" recv ch --count 1 >"$out" 2>"$err"; s=$?
	check "no read permission: EACCES with the mode, owner and the missing bits" \
		eval '[ $s = 1 ] && err_has "(EACCES)" && err_has "mode 0640, owner uid 0" && err_has "both the '"'r'"' and the '"'w'"' bit"'
	chmod 0644 "$LZCHAN_SHM_DIR/lzchan.ch"
	setpriv --reuid 65534 --regid 65534 --clear-groups "$tool" recv ch --count 1 >"$out" 2>"$err"; s=$?
	check "0644 on shm: receiving is refused for the missing 'w' bit, not the 'r' it has" \
		eval '[ $s = 1 ] && err_has "(EACCES)" && err_has "mode 0644" && err_has "'"'w'"' bit"'
	chmod 0640 "$LZCHAN_SHM_DIR/lzchan.ch"
	setpriv --reuid 65534 --regid 65534 --clear-groups "$tool" list >"$out" 2>"$err"; s=$?
	check "an unprivileged user still lists the channel" eval '[ $s = 0 ] && out_has "^ch "'
else
	skip "no read permission: EACCES with the mode, owner and the missing bits" "needs root and setpriv"
	skip "0644 on shm: receiving is refused for the missing 'w' bit, not the 'r' it has" "needs root and setpriv"
	skip "an unprivileged user still lists the channel" "needs root and setpriv"
fi

# --- watch ---
run watch --iterations 2 --interval 0.05
check "watch --iterations 2: two frames, no escapes when not a tty, exit 0" \
	eval 'rc_is 0 && [ "$(grep -c "^NAME" "$out")" = 2 ] && ! grep -q "$(printf "\033")" "$out" && out_has "^ch "'
run watch ch --iterations 3 --interval 0.05 --json
cp "$out" "$tmp/watch.json"
json_check "watch --json: a valid array, one frame per iteration, rates" "$tmp/watch.json" \
	'len(d)==3 and d[0]["channels"][0]["name"]=="ch" and d[2]["channels"][0]["messages_per_s"]==0' \
	'length==3 and .[0].channels[0].name=="ch" and .[2].channels[0].messages_per_s==0'
# A rate: a sender fills the ring while watch samples.
run create rate --slots 1024
"$tool" watch rate --iterations 1 --interval 1 --json >"$tmp/rate.json" &
wpid=$!
sleep 0.3
seq 1 500 | "$tool" send rate
wait $wpid
json_check "watch sees the messages sent meanwhile as a rate" "$tmp/rate.json" \
	'd[0]["channels"][0]["messages_per_s"]>0 and d[0]["channels"][0]["messages"]==500' \
	'.[0].channels[0].messages_per_s>0 and .[0].channels[0].messages==500'
run watch nope --iterations 1 --interval 0.05
check "watch of a missing channel: ENOENT, exit 1" eval 'rc_is 1 && err_has "(ENOENT)"'
run watch --interval 0
check "watch --interval 0 is a usage error" rc_is 2

# --- remove ---
run remove ch
check "remove exits 0" rc_is 0
run show ch
check "a removed channel is gone (show: ENOENT)" eval 'rc_is 1 && err_has "(ENOENT)"'
run rm ch
check "rm of a missing channel: ENOENT, exit 1" eval 'rc_is 1 && err_has "(ENOENT)"'

# --- backends and odd files ---
printf 'garbage' > "$LZCHAN_SHM_DIR/lzchan.junk"
run list
check "list shows a file that is not a channel with unknown geometry" \
	eval 'rc_is 0 && out_has "^junk .* ? *? "'
run recv junk --count 1
check "recv of a file that is not a channel: says so and how to remove it" \
	eval 'rc_is 1 && err_has "(EPROTO)" && err_has "not a valid lzchan channel file" && err_has "lzchan remove junk" && err_one_line'
run show junk
check "show of a file that is not a channel: lanes unavailable (EPROTO), as the library says" \
	eval 'rc_is 0 && out_has "^lanes: *unavailable (EPROTO)"'
mkdir "$LZCHAN_SHM_DIR/lzchan.adir"
run create adir --exist-ok
check "create --exist-ok over a directory: EPROTO, exit 1 (not 'exists')" \
	eval 'rc_is 1 && err_has "(EPROTO)" && err_one_line'
rmdir "$LZCHAN_SHM_DIR/lzchan.adir"
# A receiver killed without closing: send must not end with status 0.
"$tool" create dead
"$tool" recv dead >/dev/null 2>&1 & rpid=$!
sleep 0.3
kill -9 $rpid; wait $rpid 2>/dev/null
printf 'x\ny\n' | "$tool" send dead >"$out" 2>"$err"; s=$?
check "send to a receiver killed meanwhile: EPIPE, exit 1 (not 0)" \
	eval '[ $s = 1 ] && err_has "(EPIPE)"'
"$tool" create nobody-yet
printf 'x\n' | "$tool" send nobody-yet >"$out" 2>"$err"; s=$?
check "send before any receiver: exit 0 at once, the message waits" eval '[ $s = 0 ] && [ ! -s "$err" ]'
run recv nobody-yet --count 1
check "... and the first receiver gets it" eval 'rc_is 0 && [ "$(cat "$out")" = x ]'
LZCHAN_BACKEND=dev "$tool" list >"$out" 2>"$err"; s=$?
check "LZCHAN_BACKEND=dev without the module: ENODEV, how to load it" \
	eval '[ $s = 1 ] && err_has "(ENODEV)" && err_has "modprobe lzchan"'
LZCHAN_BACKEND=bogus "$tool" list >"$out" 2>"$err"; s=$?
check "a bad LZCHAN_BACKEND is a usage error" eval '[ $s = 2 ] && err_has "LZCHAN_BACKEND"'

# --- publish/subscribe ---
run create ticks --pubsub --slots 16 --subscribers 4
check "create --pubsub exits 0 and prints nothing" eval 'rc_is 0 && [ ! -s "$out" ] && [ ! -s "$err" ]'
run list
check "list shows the pub/sub channel with its subscribers" eval 'rc_is 0 && out_has "^ticks .* 0 subs"'
run create bad --pubsub --lanes 2
check "create --pubsub --lanes: a usage error naming --subscribers" \
	eval 'rc_is 2 && err_has "subscribers" && err_one_line'
run create bad --policy sometimes --pubsub
check "create --policy of neither kind: a usage error" eval 'rc_is 2 && err_has "overwrite"'
run create bad --stall 5
check "create --stall without --pubsub: a usage error" eval 'rc_is 2 && err_has "need --pubsub"'
"$tool" subscribe ticks --count 3 >"$tmp/s1.out" 2>"$tmp/s1.err" &
s1=$!
"$tool" subscribe ticks >"$tmp/s2.out" 2>"$tmp/s2.err" &
s2=$!
# Both attached (show counts them) before the publisher starts.
i=0
while [ $i -lt 100 ] && ! "$tool" show ticks 2>/dev/null | grep -q "subscribers: *2 attached"; do
	sleep 0.05; i=$((i + 1))
done
printf '1\n2\n3\n' | "$tool" publish ticks 2>"$err"; p=$?
wait $s1; r1=$?
wait $s2; r2=$?
check "publish: every subscriber gets every line; the publisher's close ends the stream" \
	eval '[ $p = 0 ] && [ $r1 = 0 ] && [ $r2 = 0 ] && [ "$(cat "$tmp/s1.out")" = "$(printf "1\n2\n3")" ] &&
	      [ "$(cat "$tmp/s2.out")" = "$(printf "1\n2\n3")" ]'
run show ticks
check "show: publisher, subscribers' places, positions" \
	eval 'rc_is 0 && out_has "publish/subscribe" && out_has "^messages: *3" && out_has "PLACE" &&
	      out_has "closed"'
run show ticks --json
json_check "show --json of a pub/sub channel: kind, subscribers[]" "$out" \
	'd["channel"]["kind"]=="pubsub" and d["channel"]["messages"]==3 and len(d["subscribers"])==2 and d["subscribers"][0]["position"]==3' \
	'.channel.kind=="pubsub" and .channel.messages==3 and (.subscribers|length)==2 and .subscribers[0].position==3'
seq 1 40 | "$tool" publish ticks
run subscribe ticks --history 5 --timeout 100
check "subscribe --history 5: the last five, then the end (exit 0)" \
	eval 'rc_is 0 && [ "$(cat "$out")" = "$(seq 36 40)" ]'
run subscribe ticks --history 100 --timeout 100
check "history is what the ring still holds (15 of 16 slots)" \
	eval 'rc_is 0 && [ "$(cat "$out")" = "$(seq 26 40)" ]'
run recv ticks
check "recv of a pub/sub channel: EPROTOTYPE, says to subscribe" \
	eval 'rc_is 1 && err_has "(EPROTOTYPE)" && err_has "lzchan subscribe ticks" && err_one_line'
run subscribe nobody-yet
check "subscribe to a channel: EPROTOTYPE, says to use recv" \
	eval 'rc_is 1 && err_has "(EPROTOTYPE)" && err_has "lzchan recv" && err_one_line'
run subscribe ticks --timeout 100
check "subscribe with nothing published: ETIMEDOUT, exit 3" eval 'rc_is 3 && err_has "(ETIMEDOUT)"'

# --- endpoints: on shm, the channel file itself ---
# One sender endpoint of channel $1 served at $tmp/ep.sock in the
# background (gpid), once the socket is there.
grant_bg() {
	"$tool" grant "$1" --role sender --socket "$tmp/ep.sock" --count 1 --timeout 10000 \
		>"$tmp/g.out" 2>"$tmp/g.err" &
	gpid=$!
	i=0
	while [ $i -lt 100 ] && [ ! -S "$tmp/ep.sock" ]; do sleep 0.05; i=$((i + 1)); done
}
"$tool" create epch >/dev/null 2>&1
grant_bg epch
# No receiver yet: the messages wait in the ring for one.
printf 'a\nb\n' | "$tool" send --endpoint "$tmp/ep.sock" 2>"$tmp/es.err"; src=$?
wait $gpid; grc=$?
run recv epch --count 2 --timeout 5000
check "grant on shm: the channel file, passed; send --endpoint delivers; recv gets both" \
	eval '[ $grc = 0 ] && [ $src = 0 ] && [ ! -s "$tmp/es.err" ] && rc_is 0 &&
	      [ "$(cat "$out")" = "$(printf "a\nb")" ]'
check "grant on shm says what it gave: no id, no role limit, not revocable; socket removed" \
	eval 'grep -q "^granted sender endpoint of epch (shm: the channel file, no role limit, not revocable)$" "$tmp/g.out" &&
	      [ "$(wc -l < "$tmp/g.out")" = 1 ] && [ ! -s "$tmp/g.err" ] && [ ! -e "$tmp/ep.sock" ]'
# A second grant on a served path is refused, and neither its look at the
# socket nor a peer that hangs up without reading takes the one endpoint
# (a fresh channel: epch's receiver has been and gone).
"$tool" create epch2 >/dev/null 2>&1
grant_bg epch2
run grant epch2 --role sender --socket "$tmp/ep.sock"
check "a second grant on a served socket: EADDRINUSE, exit 1" \
	eval 'rc_is 1 && err_has "(EADDRINUSE)" && err_one_line'
if command -v python3 >/dev/null 2>&1; then
	# Connects, waits until the endpoint is there to read, hangs up.
	python3 -c 'import select, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
select.select([s], [], [], 5)
s.close()' "$tmp/ep.sock"
	printf 'c\n' | "$tool" send --endpoint "$tmp/ep.sock" 2>"$tmp/es.err"; src=$?
	wait $gpid; grc=$?
	run recv epch2 --count 1 --timeout 5000
	check "grant: a peer that hung up unread is not counted; the next one gets the endpoint" \
		eval '[ $grc = 0 ] && [ $src = 0 ] && rc_is 0 && [ "$(cat "$out")" = c ] &&
		      [ "$(grep -c "^granted" "$tmp/g.out")" = 1 ] &&
		      grep -q "(ECONNRESET): a peer hung up without taking its endpoint (not counted)" "$tmp/g.err"'
else
	kill $gpid 2>/dev/null; wait $gpid
	skip "grant: a peer that hung up unread is not counted" "python3 not installed"
fi
"$tool" remove epch2 >/dev/null 2>&1
run grant nosuch --role receiver --socket "$tmp/ep.sock"
check "grant of a missing channel on shm: ENOENT, exit 1, no socket left" \
	eval 'rc_is 1 && err_has "(ENOENT)" && err_one_line && [ ! -s "$out" ] && [ ! -e "$tmp/ep.sock" ]'
run grant epch --role subscriber --socket "$tmp/ep.sock"
check "grant of a pub/sub role on a channel (shm): EPROTOTYPE, exit 1, no socket left" \
	eval 'rc_is 1 && err_has "(EPROTOTYPE)" && err_one_line && [ ! -e "$tmp/ep.sock" ]'
run grant epch --socket "$tmp/ep.sock"
check "grant without --role is a usage error" eval 'rc_is 2 && err_has "role"'
run grant epch --role writer --socket "$tmp/ep.sock"
check "grant --role of no role is a usage error" eval 'rc_is 2 && err_has "writer"'
run grant epch --role sender
check "grant without --socket is a usage error" eval 'rc_is 2 && err_has "socket PATH"'
run revoke epch 1
check "revoke on shm: EOPNOTSUPP, exit 1, says the file is not revocable" \
	eval 'rc_is 1 && err_has "(EOPNOTSUPP)" && err_has "channel file" && err_one_line && [ ! -s "$out" ]'
run revoke epch --all
check "revoke --all on shm: EOPNOTSUPP too" eval 'rc_is 1 && err_has "(EOPNOTSUPP)" && err_one_line'
run revoke epch
check "revoke without ID or --all is a usage error" eval 'rc_is 2 && err_has "ID"'
run revoke epch 1 --all
check "revoke with ID and --all is a usage error" eval 'rc_is 2'
run send --endpoint "$tmp/nobody.sock" </dev/null
check "send --endpoint where nobody serves: ENOENT, exit 1, says 'lzchan grant'" \
	eval 'rc_is 1 && err_has "ENOENT" && err_has "lzchan grant" && err_one_line'
run subscribe epch --endpoint "$tmp/nobody.sock" --history 2
check "subscribe --endpoint with --history is a usage error" eval 'rc_is 2'
run show epch --json
json_check "show --json on shm: peers is null (the module's)" "$out" \
	'd["peers"] is None' '.peers == null'
"$tool" remove epch >/dev/null 2>&1

# --- the man page ---
if command -v groff >/dev/null 2>&1 && [ -f "$manpage" ]; then
	t_groff() { [ -z "$(groff -ww -man -z "$manpage" 2>&1)" ]; }
	check "man page: groff -ww -man reports nothing" t_groff
	t_man() {
		command -v man >/dev/null 2>&1 || return 0
		w=$(MANWIDTH=80 man --warnings -l "$manpage" 2>&1 >"$tmp/man.txt")
		[ -z "$w" ] && grep -q "EXIT STATUS" "$tmp/man.txt" &&
			for c in list show create remove send recv publish subscribe watch features limits grant revoke; do
				grep -q "^ *$c" "$tmp/man.txt" || return 1
			done
	}
	check "man page renders with man -l, no warnings, every command" t_man
else
	skip "man page: groff -ww -man reports nothing" "groff or $manpage missing"
	skip "man page renders with man -l, no warnings, every command" "groff or $manpage missing"
fi
echo "1..$n"
exit $failed
