#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# lzchan-bridged between "hosts": network namespaces joined by veth pairs,
# each with its own bridge and its own directory of channels (shm
# backend), UCX pinned to TCP on the veth.  Prints TAP.  Needs root (ip
# netns); SKIPs without it, without ip, or without the bridge built.
# usage: lzchan_bridge.sh TOP   (the source tree, built)
top=${1:?usage: $0 TOP}
# LZCHAN_BRIDGED=PATH runs another build of the bridge (check.sh: the
# ASan+UBSan one); the key tools are the same program.
bridged=${LZCHAN_BRIDGED:-$top/tools/lzchan-bridged}
tool=$top/tools/lzchan
fuzz=$top/selftests/lzchan_bridge_fuzz
n=0 failed=0
echo "TAP version 13"

check() { # description, then the test as a command (or shell function)
	desc=$1; shift
	n=$((n + 1))
	if "$@"; then printf 'ok %s %s\n' $n "$desc"
	else printf 'not ok %s %s\n' $n "$desc"; failed=1; fi
}
skip_all() { echo "1..0 # SKIP $1"; exit 0; }

[ -x "$bridged" ] || skip_all "lzchan-bridged not built (UCX or libsodium missing)"
[ "$(id -u)" = 0 ] || skip_all "network namespaces need root"
command -v ip >/dev/null || skip_all "no ip (iproute2)"

tmp=$(mktemp -d)
tag=lzb$$
A=${tag}a B=${tag}b C=${tag}c D=${tag}d
pids=""
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	for ns in $A $B $C $D; do ip netns del "$ns" 2>/dev/null; done
	# LZCHAN_BRIDGE_LOGS=DIR keeps the bridges' logs there.
	[ -z "${LZCHAN_BRIDGE_LOGS:-}" ] ||
		for h in A B C; do cp "$tmp/$h/log" "$LZCHAN_BRIDGE_LOGS/$h.log" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# Three hosts on one LAN: A and C send, B receives.  B's namespace holds
# the switch (a Linux bridge) and its own address on it; A and C each have
# a veth into it.  (One segment: UCX's TCP transport then reaches each
# host through the one interface it has.)
ip netns add "$A" && ip netns add "$B" && ip netns add "$C" ||
	skip_all "cannot create network namespaces here"
lan() { # host, its ifname, the switch port's name, its address
	ip link add "$2" type veth peer name "$3" &&
	ip link set "$2" netns "$1" && ip link set "$3" netns "$B" &&
	ip -n "$B" link set "$3" master "${tag}sw" && ip -n "$B" link set "$3" up &&
	ip -n "$1" addr add "$4/24" dev "$2" && ip -n "$1" link set "$2" up &&
	ip -n "$1" link set lo up
}
ip -n "$B" link add "${tag}sw" type bridge && ip -n "$B" link set "${tag}sw" up &&
	ip -n "$B" addr add 10.231.0.2/24 dev "${tag}sw" && ip -n "$B" link set lo up &&
	lan "$A" "${tag}A" "${tag}pA" 10.231.0.1 && lan "$C" "${tag}C" "${tag}pC" 10.231.0.3 ||
	skip_all "cannot make a bridge and veth pairs here"

for h in A B C; do mkdir -p "$tmp/$h/shm"; done
# Each host its key pair (lzchan-bridged --genkey, --pubkey); C's bridge
# runs with a pair B does not know (wrongC), while the hostile client
# holds hostC's real one (C).
for k in A B C wrongC; do
	(umask 077; "$bridged" --genkey > "$tmp/$k.key") || skip_all "lzchan-bridged --genkey failed"
	eval "pub_$k=\$("$bridged" --pubkey < "$tmp/$k.key")"
done
cat > "$tmp/A/conf" <<EOF
name hostA
status $tmp/A/status.json
private-key $tmp/A.key
peer hostB 10.231.0.2:14000 public-key=$pub_B
route orders@hostB slots=256
route slow@hostB slots=256
route kill@hostB slots=256
route secret@hostB slots=256
route gone@hostB slots=256
route huge@hostB slots=512 slot_size=65536 senders=1
EOF
cat > "$tmp/B/conf" <<EOF
name hostB
status $tmp/B/status.json
listen 10.231.0.2:14000
private-key $tmp/B.key
peer hostA public-key=$pub_A
peer hostC public-key=$pub_C
allow hostA orders slow kill gone huge
allow hostC orders
EOF
cat > "$tmp/C/conf" <<EOF
# hostC's bridge holds a key pair hostB does not know
name hostC
private-key $tmp/wrongC.key
peer hostB 10.231.0.2:14000 public-key=$pub_B
route orders@hostB slots=256
EOF

# on HOST CMD...: run as HOST does, with its channels and its veth.
on() {
	local h=$1; shift
	local ns; eval "ns=\$$h"
	ip netns exec "$ns" env UCX_TLS=tcp UCX_NET_DEVICES=all LZCHAN_BACKEND=shm \
		LZCHAN_SHM_DIR="$tmp/$h/shm" LZCHAN_ORIGIN_DIR="$tmp/$h/origin" "$@"
}
# spawn PIDFILE HOST CMD...: as on, in the background; PIDFILE gets the
# command's own pid (what $! would give is a subshell's).
spawn() {
	local pf=$1 h=$2; shift 2
	local ns; eval "ns=\$$h"
	rm -f "$pf"
	sh -c 'echo $$ > "$0"; exec "$@"' "$pf" ip netns exec "$ns" env UCX_TLS=tcp \
		UCX_NET_DEVICES=all LZCHAN_BACKEND=shm LZCHAN_SHM_DIR="$tmp/$h/shm" \
		LZCHAN_ORIGIN_DIR="$tmp/$h/origin" "$@" <&0 &
	until [ -s "$pf" ]; do sleep 0.01; done
	pids="$pids $(cat "$pf")"
}
bridge_start() { # host: its bridge, in the background; sets bpid_HOST
	spawn "$tmp/$1/bridge.pid" "$1" "$bridged" -v -c "$tmp/$1/conf" >> "$tmp/$1/log" 2>&1
	eval "bpid_$1=$(cat "$tmp/$1/bridge.pid")"
}
# until SECONDS CMD...: retry CMD every 0.1 s for up to SECONDS.
until_ok() {
	local t=$(($1 * 10)); shift
	while [ $t -gt 0 ]; do "$@" && return 0; sleep 0.1; t=$((t - 1)); done
	return 1
}
proxy_exists() { [ -e "$tmp/$1/shm/lzchan.$2" ]; }
# Is a receiver attached to channel CH on HOST?  (A receiver started in
# the background must be, before anything is sent: a channel whose last
# receiver left tells its senders EPIPE until the next one attaches.)
rx_on() { on "$1" "$tool" show "$2" --json 2>/dev/null | grep -q '"receiver": true'; }
rx_wait() { until_ok 20 rx_on "$1" "$2" || { echo "# no receiver on $2"; return 1; }; }
log_has() { grep -q -- "$2" "$tmp/$1/log"; }

# poll-us: beyond its bound or not a number is refused at once, naming
# the line; a value in range is what --check says the bridge polls.
poll_conf() {
	local v out
	for v in 10001 -1 5ms; do
		{ cat "$tmp/B/conf"; echo "poll-us $v"; } > "$tmp/poll.conf"
		if out=$(on B "$bridged" --check -c "$tmp/poll.conf" 2>&1); then
			echo "# poll-us $v accepted"; return 1
		fi
		case $out in
		*"poll.conf:"*"poll-us wants 0 to 10000 microseconds"*) ;;
		*) echo "# poll-us $v: $out"; return 1 ;;
		esac
	done
	{ cat "$tmp/B/conf"; echo "poll-us 200"; } > "$tmp/poll.conf"
	on B "$bridged" --check -c "$tmp/poll.conf" | grep -q "polls 200 us after work before it sleeps" ||
		{ echo "# --check did not say poll-us 200"; return 1; }
}
check "poll-us out of range is refused with its line; --check says the value in force" poll_conf

seq -f "many %.0f" 1 2000000 > "$tmp/many"	# more than any test takes
on B "$tool" create orders --slots 256 >/dev/null
for ch in secret slow kill gone; do on B "$tool" create $ch --slots 256 >/dev/null; done
on B "$tool" create huge --slots 512 --slot-size 65536 --lanes 2 >/dev/null
# B's origin directory: a record an earlier bridge left, and a file that
# is not a record (the directory is the administrator's to choose).
mkdir -p "$tmp/B/origin"
printf 'lzchan-origin 1 pid=1 start=1 channel=orders lane=7 host=h uid=0 rpid=0\n' \
	> "$tmp/B/origin/orders.7"
echo "not a record" > "$tmp/B/origin/notes"
bridge_start B
bridge_start A
origin_dir_kept() { [ ! -e "$tmp/B/origin/orders.7" ] && [ -e "$tmp/B/origin/notes" ]; }
check "a starting bridge removes stale origin records, and only those" until_ok 10 origin_dir_kept
check "the bridges connect and A's proxies appear" \
	until_ok 20 proxy_exists A orders@hostB

# 1: exactly once, in order, from three remote senders and a local one
# into one receiver; each line names its sender and its number.
N=${LZCHAN_BRIDGE_MSGS:-500000}
exactly_once() {
	until_ok 20 proxy_exists A orders@hostB || return 1
	local k senders=""
	on B "$tool" recv orders --count $((4 * N)) --timeout 60000 > "$tmp/got" &
	local r=$!
	rx_wait B orders || return 1
	for k in 1 2 3; do
		seq -f "A$k %.0f" 1 "$N" | on A "$tool" send orders@hostB --timeout 60000 &
		senders="$senders $!"
	done
	seq -f "B0 %.0f" 1 "$N" | on B "$tool" send orders --timeout 60000 &
	senders="$senders $!"
	wait $r || { echo "# the receiver failed ($?)"; return 1; }
	for k in $senders; do wait $k || { echo "# a sender failed"; return 1; }; done
	# Per sender: 1..N, in order, each once.
	awk -v n="$N" '
		{ if ($2 != ++next_[$1]) { print "# " $1 ": " $2 " where " next_[$1] " was due"; bad = 1; exit } }
		END { for (s in next_) if (next_[s] != n) { print "# " s ": " next_[s] " of " n; bad = 1 }
		      if (length(next_) != 4) { print "# " length(next_) " senders"; bad = 1 }
		      exit bad }' "$tmp/got"
}
check "exactly once and in order: 3 remote senders and 1 local, $((4 * N)) messages" exactly_once

# 2: the largest message the channel takes, and one byte more.
records() { python3 -c '
import sys, struct
for n in map(int, sys.argv[1:]):
    body = bytes((i * 7 + n) & 0xff for i in range(n))
    sys.stdout.buffer.write(struct.pack("<I", n) + body)' "$@"; }
largest() {
	local max
	until_ok 20 proxy_exists A orders@hostB || return 1
	max=$(on B "$tool" show orders --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["channel"]["max_msg"])')
	records 1 "$max" 100 "$max" > "$tmp/big.in"
	on B "$tool" recv orders --records --count 4 --timeout 20000 > "$tmp/big.out" &
	local r=$!
	rx_wait B orders || return 1
	on A "$tool" send orders@hostB --records --timeout 20000 < "$tmp/big.in" || return 1
	wait $r && cmp -s "$tmp/big.in" "$tmp/big.out" || { echo "# the largest messages differ"; return 1; }
	records $((max + 1)) > "$tmp/over.in"
	! on A "$tool" send orders@hostB --records --timeout 2000 < "$tmp/over.in" 2>"$tmp/over.err" &&
		grep -q "$max" "$tmp/over.err"
}
check "messages up to the channel's largest arrive whole; one byte more is EMSGSIZE" largest

# A message larger than what UCX may hold for a peer at once (16 MiB),
# then small ones, on it and on another route: everything crosses (the
# batch's length, left behind by the lone large one, once stopped every
# route of the bridge for good).
huge() {
	until_ok 20 proxy_exists A huge@hostB || return 1
	records $((17 << 20)) 5 6 7 > "$tmp/huge.in"
	on B "$tool" recv huge --records --count 4 --timeout 60000 > "$tmp/huge.out" &
	local r=$!
	rx_wait B huge || return 1
	on A "$tool" send huge@hostB --records --timeout 60000 < "$tmp/huge.in" || return 1
	wait $r && cmp -s "$tmp/huge.in" "$tmp/huge.out" || { echo "# the huge message and those after it differ"; return 1; }
	on B "$tool" recv orders --count 1 --timeout 10000 > "$tmp/after-huge.out" &
	r=$!
	rx_wait B orders || return 1
	echo after-huge | on A "$tool" send orders@hostB --timeout 5000 && wait $r &&
		grep -qx after-huge "$tmp/after-huge.out" || { echo "# orders@hostB stalled after it"; return 1; }
}
check "a 17 MiB message, then small ones: all cross, and other routes keep going" huge

# 3: a receiver that is not there: the sender blocks (its proxy lane
# full, credit spent), B's bridge holds at most its window, nothing is lost.
slow_receiver() {
	local rss0 rss1 s
	until_ok 20 proxy_exists A slow@hostB || return 1
	rss0=$(awk '/VmRSS/ { print $2 }' /proc/$bpid_B/status)
	seq 1 200000 | on A "$tool" send slow@hostB --timeout 60000 &
	s=$!
	sleep 3
	kill -0 $s 2>/dev/null || { echo "# the sender finished with nobody receiving"; return 1; }
	rss1=$(awk '/VmRSS/ { print $2 }' /proc/$bpid_B/status)
	echo "# B's bridge: RSS $rss0 kB before, $rss1 kB with the receiver away"
	[ $((rss1 - rss0)) -lt 16384 ] || { echo "# the bridge buffered without bound"; return 1; }
	on B "$tool" recv slow --count 200000 --timeout 30000 > "$tmp/slow.out" || return 1
	wait $s && seq 1 200000 | cmp -s - "$tmp/slow.out"
}
check "a slow receiver: the sender blocks, memory stays bounded, nothing lost" slow_receiver

# The counters (lzchan-bridged --status): what crossed, and the stalls of
# the slow receiver above, on both sides (written within a second).
counted() {
	"$bridged" --status -c "$tmp/A/conf" > "$tmp/A.json" &&
	"$bridged" --status -c "$tmp/B/conf" > "$tmp/B.json" &&
	python3 - "$tmp/A.json" "$tmp/B.json" "$N" <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2])); n = int(sys.argv[3])
pa = a["peers"][0]; pb = [p for p in b["peers"] if p["name"] == "hostA"][0]
want = 3 * n + 4 + 200000
ok = (a["bridge"] == "hostA" and pa["connected"] and pb["connected"]
      and pa["sent"]["messages"] >= want and pb["received"]["messages"] >= want
      and pa["credit_stalls"] >= 1 and pb["lane_stalls"] >= 1
      and any(r["proxy"] == "orders@hostB" and r["open"] for r in a["routes"]))
sys.exit(0 if ok else 1)
PY
}
check "lzchan-bridged --status counts what crossed, and the stalls" until_ok 5 counted

# 4: a remote sender killed: its lane ends over there; the others go on.
# (A receiver stays attached throughout: one that leaves ends the streams
# into its channel, and their senders get EPIPE -- as locally.)
lines() { [ -s "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }
killed_sender() {
	local k s r
	until_ok 20 proxy_exists A kill@hostB || return 1
	on B "$tool" recv kill --eof --who --timeout 20000 > "$tmp/kill.out" 2> "$tmp/kill.err" &
	r=$!
	rx_wait B kill || return 1
	spawn "$tmp/k.pid" A "$tool" send kill@hostB --timeout 60000 < "$tmp/many" 2>/dev/null
	until_ok 20 lines "$tmp/kill.out" 1000 || { echo "# nothing arrived"; return 1; }
	# B's receiver knows who sends, through B's bridge (lzchan_peer_origin()).
	grep -q "lane 0: remote sender uid $(id -u) pid $(cat "$tmp/k.pid") on hostA, through pid $bpid_B " \
		"$tmp/kill.err" || { echo "# --who said: '$(cat "$tmp/kill.err")'"; return 1; }
	# lzchan show marks the lane remote, by the bridge's record.
	on B "$tool" show kill --json | grep -q "\"origin\": {\"host\": \"hostA\", \"uid\": $(id -u), \"pid\": $(cat "$tmp/k.pid"), \"via_pid\": $bpid_B}" ||
		{ echo "# show: $(on B "$tool" show kill --json | head -c 1500)"; return 1; }
	kill -9 "$(cat "$tmp/k.pid")"
	# The receiver sees that lane end (--eof stops there) ...
	wait $r || { echo "# no end of stream for the killed sender: $(wc -l < "$tmp/kill.out") received,"\
		"last '$(tail -n 1 "$tmp/kill.out")'; $(on B "$tool" show kill --json | head -c 1500)"; return 1; }
	until_ok 10 log_has B "into 'kill' died" || { echo "# B was not told it died"; return 1; }
	# ... as a death, not a clean close (lzchan_end_cause() says LOST) ...
	grep -q "its sender died" "$tmp/kill.err" ||
		{ echo "# B's receiver was not told the sender died: '$(cat "$tmp/kill.err")'"; return 1; }
	# ... and the lane's origin record went with the lane.
	[ ! -e "$tmp/B/origin/kill.0" ] || { echo "# B's origin record stayed"; return 1; }
	# ... and a sender after it is carried as before, its close a clean one.
	on B "$tool" recv kill --eof --timeout 20000 > "$tmp/after.out" 2> "$tmp/after.err" &
	r=$!
	rx_wait B kill || return 1
	seq 1 1000 | on A "$tool" send kill@hostB --timeout 20000 &
	s=$!
	wait $r && wait $s && seq 1 1000 | cmp -s - "$tmp/after.out" || return 1
	! grep -q "died" "$tmp/after.err" ||
		{ echo "# a clean close said: '$(cat "$tmp/after.err")'"; return 1; }
}
check "a remote sender killed: end of stream on its lane as a death, the next one carried and closed cleanly" killed_sender

# 5: the receiving bridge killed and restarted: the sender sees an error,
# then a new sender gets through.
bridge_restart() {
	local s rc ups
	until_ok 20 proxy_exists A orders@hostB || return 1
	spawn "$tmp/r.pid" B "$tool" recv orders --timeout 30000 > "$tmp/restart.out"
	rx_wait B orders || return 1
	on A "$tool" send orders@hostB --timeout 60000 < "$tmp/many" 2>"$tmp/restart.err" &
	s=$!
	until_ok 20 lines "$tmp/restart.out" 100 || { echo "# nothing arrived"; return 1; }
	ups=$(grep -c "peer hostB: connected" "$tmp/A/log")
	kill -9 $bpid_B
	wait $s; rc=$?
	[ $rc = 1 ] && grep -q "EPIPE" "$tmp/restart.err" ||
		{ echo "# the sender: status $rc, $(cat "$tmp/restart.err")"; return 1; }
	bridge_start B
	until_ok 20 sh -c "[ \$(grep -c 'peer hostB: connected' $tmp/A/log) -gt $ups ]" &&
		until_ok 10 proxy_exists A orders@hostB ||
		{ echo "# A did not reconnect"; return 1; }
	: > "$tmp/restart.out"
	echo again | on A "$tool" send orders@hostB --timeout 5000 || return 1
	until_ok 10 grep -qx again "$tmp/restart.out" || { echo "# 'again' did not arrive"; return 1; }
	kill "$(cat "$tmp/r.pid")"
	until_ok 10 sh -c "! kill -0 $(cat "$tmp/r.pid") 2>/dev/null"
}
check "the receiving bridge killed and restarted: EPIPE, then senders get through" bridge_restart

# 6: a channel B's access list does not give A: refused, nothing delivered.
not_allowed() {
	local rc
	until_ok 20 proxy_exists A secret@hostB || return 1
	echo leaked | on A "$tool" send secret@hostB --timeout 5000 2>"$tmp/acl.err"
	rc=$?
	until_ok 20 log_has B "'secret' is not on its access list" ||
		{ echo "# B did not refuse"; return 1; }
	! on B "$tool" recv secret --timeout 500 | grep -q leaked || return 1
	# ... and the sender is told: not status 0 for a message nobody took.
	[ $rc != 0 ] && grep -q EPIPE "$tmp/acl.err" ||
		{ echo "# the sender: status $rc, '$(cat "$tmp/acl.err")'"; return 1; }
}
check "a channel not on the access list is refused, and the sender told (EPIPE, status 1)" not_allowed

# A remote channel whose receiver has left: the sender is told, as it is
# locally (EPIPE, status 1), not status 0 for a message dropped there.
remote_rx_gone() {
	local rc
	until_ok 20 proxy_exists A gone@hostB || return 1
	on B "$tool" recv gone --count 1 --timeout 10000 > /dev/null &
	local r=$!
	rx_wait B gone || return 1
	echo first | on B "$tool" send gone --timeout 5000 && wait $r || return 1
	echo lost | on A "$tool" send gone@hostB --timeout 5000 2>"$tmp/gone.err"
	rc=$?
	[ $rc = 1 ] && grep -q EPIPE "$tmp/gone.err" ||
		{ echo "# the sender: status $rc, '$(cat "$tmp/gone.err")'"; return 1; }
}
check "a remote receiver that left: the sender gets EPIPE, status 1" remote_rx_gone

# 7: a bridge with a key pair B does not know: refused, no proxy appears
# on it.  (B finds out first: C's HELLO does not prove hostC's key.)
wrong_key() {
	bridge_start C
	until_ok 20 log_has B "a HELLO as 'hostC' that does not prove its key" ||
		{ echo "# B did not refuse it"; return 1; }
	until_ok 10 log_has C "the peer refused us" || { echo "# C was not told"; return 1; }
	! log_has B "peer hostC: accepted" && ! proxy_exists C orders@hostB || return 1
	kill $bpid_C && wait $bpid_C
}
check "a peer with the wrong key is refused" wrong_key

# 8: garbage from the network (a fuzzing client) never crashes B's
# bridge, and a sender still gets through, whole, after it.
garbage() {
	[ -x "$fuzz" ] || { echo "# $fuzz not built"; return 1; }
	on C "$fuzz" fuzz 10.231.0.2:14000 hostC "$tmp/C.key" "$pub_B" hostB 300 > "$tmp/fuzz.log" 2>&1 ||
		{ echo "# the fuzzer failed: $(tail -3 "$tmp/fuzz.log")"; return 1; }
	kill -0 $bpid_B || { echo "# B's bridge died"; return 1; }
	until_ok 20 proxy_exists A orders@hostB || return 1
	on B "$tool" recv orders --count 5000 --timeout 20000 > "$tmp/fz.out" &
	local r=$!
	rx_wait B orders || return 1
	seq 1 5000 | on A "$tool" send orders@hostB --timeout 20000 &&
		wait $r && seq 1 5000 | cmp -s - "$tmp/fz.out"
}
check "garbage from the network: the bridge stays up, channels whole" garbage

# ---- the hostile network: each of these lets something in, or takes
# the bridge down, on a bridge that trusts what UCX says of a frame ----

# A message from A still reaches B's channel CH (the honest peer unharmed).
crosses() {
	on B "$tool" recv orders --count 1 --timeout 10000 > "$tmp/cross.out" &
	local r=$!
	rx_wait B orders || return 1
	echo "$1" | on A "$tool" send orders@hostB --timeout 5000 && wait $r &&
		grep -qx "$1" "$tmp/cross.out" || { echo "# '$1' did not cross"; return 1; }
}

# Only the configured sockets listen: the listen address, and UCX's own
# listener on a port of the data ports (default: the 64 after it), both
# bound to the listen address's interface (ss: ADDR%DEV); nothing on lo
# or another address.
listeners() {
	local got
	got=$(ip netns exec "$B" ss -ltnH | awk '{ print $4 }' | sort | tr '\n' ' ')
	case $got in
	"10.231.0.2%${tag}sw:14000 10.231.0.2%${tag}sw:140"[0-6][0-9]" ") ;;
	*) echo "# B listens on: $got"; return 1 ;;
	esac
}
check "the bridge listens only on the configured address and data ports" listeners

# A host on another network of B's (D, over a veth of its own) that
# routes B's listen address through that link: Linux takes a connection
# for a local address on any interface (the weak host model), but the
# bridge binds UCX's listeners to the interface the configuration names,
# so neither UCX port answers D.  (The WireGuard deployment rests on this:
# the tunnel's underlay must not reach UCX; lzchan_bridge_wg_vm.sh.)
other_network() {
	local ports p
	ports=$(ip netns exec "$B" ss -ltnH | awk '{ n = split($4, a, ":"); print a[n] }')
	[ -n "$ports" ] || { echo "# B listens on nothing"; return 1; }
	ip netns add "$D" && ip link add "${tag}D" type veth peer name "${tag}pD" &&
		ip link set "${tag}D" netns "$D" && ip link set "${tag}pD" netns "$B" &&
		ip -n "$B" addr add 10.232.0.2/24 dev "${tag}pD" && ip -n "$B" link set "${tag}pD" up &&
		ip -n "$D" addr add 10.232.0.4/24 dev "${tag}D" && ip -n "$D" link set "${tag}D" up &&
		ip -n "$D" route add 10.231.0.2/32 via 10.232.0.2 ||
		{ echo "# cannot make D's network"; return 1; }
	# The route works: B answers D at its listen address...
	ip netns exec "$D" busybox ping -c 1 -W 3 10.231.0.2 >/dev/null ||
		{ echo "# D cannot reach 10.231.0.2 at all"; return 1; }
	# ...but no UCX port does.
	for p in $ports; do
		if ip netns exec "$D" timeout 5 bash -c "exec 3<>/dev/tcp/10.231.0.2/$p" 2>/dev/null; then
			echo "# D connected to 10.231.0.2:$p over ${tag}pD"
			return 1
		fi
	done
	kill -0 "$bpid_B" || { echo "# B's bridge died"; return 1; }
}
check "a host on another of B's networks that routes the listen address there: no UCX port answers" \
	other_network

# A host without any key sends OPEN and DATA over its own connection,
# each frame's reply endpoint id rewritten to name other connections
# (hostA's among them): nothing is delivered, nobody is spoken for.
forged() {
	# A receiver attached throughout: a lane into a channel without one
	# is refused (EPIPE), which would hide a forged delivery.
	on B "$tool" recv orders --timeout 3000 > "$tmp/forged.out" 2>/dev/null &
	local r=$!
	rx_wait B orders || return 1
	on C "$fuzz" forge 10.231.0.2:14000 orders > "$tmp/forge.log" 2>&1 ||
		{ echo "# the forging client failed: $(cat "$tmp/forge.log")"; return 1; }
	echo "# $(cat "$tmp/forge.log")"
	wait $r
	! grep -q forged "$tmp/forged.out" || { echo "# delivered: $(grep forged "$tmp/forged.out" | head -3)"; return 1; }
	until_ok 10 log_has B "unauthenticated frames so far" || { echo "# B did not log them"; return 1; }
	kill -0 $bpid_B && crosses after-forge
}
check "a keyless host naming other connections' reply endpoints: dropped and logged" forged

# A handshake under way while a keyless host sends frames that claim to
# be its own (a refusal, a HELLO, a CHALLENGE, an AUTH, tags made up),
# before it and between its steps: it completes all the same.
storm() {
	on C "$fuzz" storm 10.231.0.2:14000 hostC "$tmp/C.key" "$pub_B" hostB - > "$tmp/storm.log" 2>&1 ||
		{ echo "# $(cat "$tmp/storm.log")"; return 1; }
	echo "# $(cat "$tmp/storm.log")"
	kill -0 $bpid_B
}
check "frames claiming to be a handshaking connection's do not stop its handshake" storm

# C holds its own key pair and says it is hostA: refused.
impersonation() {
	! on C "$fuzz" hello 10.231.0.2:14000 hostA "$tmp/C.key" "$pub_B" hostB 1 > "$tmp/imp.log" 2>&1 ||
		{ echo "# welcomed as hostA with hostC's key: $(cat "$tmp/imp.log")"; return 1; }
	until_ok 10 log_has B "a HELLO as 'hostA' that does not prove its key" ||
		{ echo "# B did not log it"; return 1; }
	kill -0 $bpid_B && crosses after-impersonation
}
check "another peer's key holder cannot speak as that peer" impersonation

# fuzz_delivers MODE COUNT EXPECTED: the hostile client in MODE, holding
# hostC's key, against B's 'orders'; B's receiver gets exactly the lines
# EXPECTED (COUNT of them), nothing after them, and B's bridge lives on.
fuzz_delivers() {
	on B "$tool" recv orders --count "$2" --timeout 15000 > "$tmp/$1.out" 2>/dev/null &
	local r=$!
	rx_wait B orders || return 1
	on C "$fuzz" "$1" 10.231.0.2:14000 hostC "$tmp/C.key" "$pub_B" hostB orders > "$tmp/$1.log" 2>&1 ||
		{ echo "# the client failed: $(cat "$tmp/$1.log")"; return 1; }
	wait $r
	# ... and nothing after them.
	on B "$tool" recv orders --timeout 1000 >> "$tmp/$1.out" 2>/dev/null
	printf '%s' "$3" | cmp -s - "$tmp/$1.out" ||
		{ echo "# delivered: $(tr '\n' ' ' < "$tmp/$1.out")"; return 1; }
	kill -0 $bpid_B
}

# A frame replayed, one sealed ahead of its turn, one cut short: none is
# delivered, and what follows them in order is, exactly once.
replayed() { fuzz_delivers replay 3 'one
two-b
three
'; }
check "replayed, reordered and truncated frames are dropped, the rest delivered once" replayed

# DATAV frames (several messages in one) whose records lie, from a peer
# that holds its key: the good frame before each is delivered, the bad
# one closes its connection, and nothing of it arrives.
datav() {
	fuzz_delivers datav 6 'v0a
v0b
v1a
v1b
v2a
v2b
' || return 1
	[ "$(grep -c "a DATAV frame whose records do not fill it" "$tmp/B/log")" = 3 ] ||
		{ echo "# B logged $(grep -c "DATAV" "$tmp/B/log") DATAV refusals"; return 1; }
	kill -0 "$bpid_B"
}
check "DATAV frames whose records lie close their connection; nothing of them is delivered" datav

# A peer whose frames stop opening (one lost or altered on the way: the
# counters never meet again) is not kept for ever: nothing authenticated
# for 10 s closes its connection.
desync() {
	on C "$fuzz" desync 10.231.0.2:14000 hostC "$tmp/C.key" "$pub_B" hostB - > "$tmp/desync.log" 2>&1 ||
		{ echo "# $(cat "$tmp/desync.log")"; return 1; }
	until_ok 5 log_has B "nothing authenticated from the peer for 10 s" ||
		{ echo "# B did not say why"; return 1; }
	kill -0 $bpid_B
}
check "a connection whose frames stopped opening is closed after 10 s of that" desync

# A keyless host holds 100 connections open without a word; an honest
# peer connecting meanwhile from elsewhere gets through.
half_open_flood() {
	on C "$fuzz" flood 10.231.0.2:14000 100 4 > "$tmp/flood.log" 2>&1 &
	local f=$!
	sleep 1.5
	on A "$fuzz" hello 10.231.0.2:14000 hostC "$tmp/C.key" "$pub_B" hostB 1 > "$tmp/hello.log" 2>&1
	wait $f
	grep -q "welcomed 1" "$tmp/hello.log" ||
		{ echo "# the honest peer: $(cat "$tmp/hello.log")"; return 1; }
	log_has B "evicted before its handshake finished" || { echo "# nothing evicted"; return 1; }
	kill -0 $bpid_B
}
check "a half-open flood from one host does not lock an honest peer out" half_open_flood

# One peer opens 20 authenticated connections: each replaces the one
# before, one is left.
peer_flood() {
	on C "$fuzz" hello 10.231.0.2:14000 hostC "$tmp/C.key" "$pub_B" hostB 20 > "$tmp/pflood.log" 2>&1
	grep -q "welcomed 20 alive 1\$" "$tmp/pflood.log" ||
		{ echo "# $(cat "$tmp/pflood.log")"; return 1; }
	kill -0 $bpid_B
}
check "a peer's connections: the newest replaces the older, one is left" peer_flood

# The sending side's bridge killed mid-stream and started again: what
# its proxy's lane held is never forwarded by the new one (nothing twice,
# nothing from a sender it cannot name), the lane ends on B as a death,
# and senders get through again.
sender_bridge_killed() {
	local s r ups
	until_ok 20 proxy_exists A orders@hostB || return 1
	on B "$tool" recv orders --who --timeout 6000 > "$tmp/ak.out" 2> "$tmp/ak.err" &
	r=$!
	rx_wait B orders || return 1
	on A "$tool" send orders@hostB --timeout 60000 < "$tmp/many" 2>/dev/null &
	s=$!
	until_ok 20 lines "$tmp/ak.out" 1000 || { echo "# nothing arrived"; return 1; }
	ups=$(grep -c "proxy 'orders@hostB' open" "$tmp/A/log")
	kill -9 $bpid_A
	wait $bpid_A 2>/dev/null
	wait $s && { echo "# the sender was not told"; return 1; }
	bridge_start A
	until_ok 20 sh -c "[ \$(grep -c \"proxy 'orders@hostB' open\" $tmp/A/log) -gt $ups ]" ||
		{ echo "# A's bridge did not open its proxy again"; return 1; }
	echo after-restart | on A "$tool" send orders@hostB --timeout 5000 || return 1
	wait $r
	grep -qx after-restart "$tmp/ak.out" || { echo "# 'after-restart' did not arrive"; return 1; }
	[ -z "$(sort "$tmp/ak.out" | uniq -d | head -3)" ] ||
		{ echo "# delivered twice: $(sort "$tmp/ak.out" | uniq -d | head -3 | tr '\n' ' ')"; return 1; }
	! grep -q "uid 4294967295" "$tmp/ak.err" ||
		{ echo "# a sender nobody can name: $(grep 4294967295 "$tmp/ak.err" | head -2)"; return 1; }
	grep -q "its sender died" "$tmp/ak.err" ||
		{ echo "# the lane did not end as a death: $(cat "$tmp/ak.err")"; return 1; }
	log_has A "ended the one an earlier bridge left" || { echo "# the stale proxy was not ended"; return 1; }
}
check "the sending bridge killed mid-stream and restarted: nothing twice, nobody unnamed, the lane lost" \
	sender_bridge_killed

# Two bridges that route to each other, started together, 20 times: both
# proxies open within 5 s every time.  (A bridge whose first connect
# failed -- the other not listening yet -- could sleep past its reconnect
# timer for ever.)  A second pair of bridges, in A's and B's namespaces,
# on ports of their own.
conf2() { # host, its address, the other, the other's address, the other's key, route, allow
	printf 'name host%s2\nlisten %s:15000\nprivate-key %s\npeer host%s2 %s:15000 public-key=%s\nroute %s@host%s2\nallow host%s2 %s\n' \
		"$1" "$2" "$tmp/$1.key" "$3" "$4" "$5" "$6" "$3" "$3" "$7" > "$tmp/$1/conf2"
}
two_way() {
	local i t slow=0 ok
	conf2 A 10.231.0.1 B 10.231.0.2 "$pub_B" ping pong
	conf2 B 10.231.0.2 A 10.231.0.1 "$pub_A" pong ping
	for i in $(seq 1 20); do
		rm -rf "$tmp/A/shm2" "$tmp/B/shm2"
		mkdir -p "$tmp/A/shm2" "$tmp/B/shm2"
		for h in A B; do
			spawn "$tmp/$h/b2.pid" $h env LZCHAN_SHM_DIR="$tmp/$h/shm2" \
				LZCHAN_ORIGIN_DIR="$tmp/$h/origin2" "$bridged" -v -c "$tmp/$h/conf2" \
				>> "$tmp/$h/log2" 2>&1
		done
		ok=0
		for t in $(seq 1 50); do
			if [ -e "$tmp/A/shm2/lzchan.ping@hostB2" ] && [ -e "$tmp/B/shm2/lzchan.pong@hostA2" ]; then
				ok=1; break
			fi
			sleep 0.1
		done
		for h in A B; do
			kill "$(cat "$tmp/$h/b2.pid")" && wait "$(cat "$tmp/$h/b2.pid")"
		done
		[ $ok = 1 ] || { echo "# start $i: not both open in 5 s"; slow=$((slow + 1)); }
	done
	[ $slow = 0 ] || { tail -n 20 "$tmp/A/log2" "$tmp/B/log2" | sed 's/^/# /'; return 1; }
}
check "two bridges routing to each other, started together 20 times: both proxies open in 5 s" two_way

# SIGTERM (what systemd and kill send) with a sender active: exit 0, the
# proxies removed first, the sender told.
sigterm() {
	local s rc
	until_ok 20 proxy_exists A orders@hostB || return 1
	on B "$tool" recv orders --timeout 10000 > "$tmp/term.out" 2>/dev/null &
	rx_wait B orders || return 1
	on A "$tool" send orders@hostB --timeout 20000 < "$tmp/many" 2>"$tmp/term.err" &
	s=$!
	until_ok 20 lines "$tmp/term.out" 100 || { echo "# nothing arrived"; return 1; }
	kill -TERM $bpid_A
	wait $bpid_A; rc=$?
	[ $rc = 0 ] || { echo "# A's bridge exited with $rc after SIGTERM"; return 1; }
	! proxy_exists A orders@hostB && ! proxy_exists A slow@hostB ||
		{ echo "# proxies left behind"; return 1; }
	wait $s && { echo "# the sender was not told"; return 1; }
	return 0
}
check "SIGTERM with a sender active: exit 0, proxies gone, the sender told" sigterm

for h in A B C; do
	if [ $failed = 1 ]; then
		sed 's/^/# '$h': /' "$tmp/$h/log" 2>/dev/null | tail -n 60
	else
		sed 's/^/# '$h': /' "$tmp/$h/log" 2>/dev/null | tail -n 8
	fi
done
echo "1..$n"
exit $failed
