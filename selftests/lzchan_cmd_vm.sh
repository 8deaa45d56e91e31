#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The lzchan command on the dev backend: the VM rig runs it (busybox sh)
# with lzchan.ko loaded and /dev/lzchan mode 0666.  Without the module
# every test SKIPs, unless LZCHAN_EXPECT_DEV=1 says it must be there.
# Prints TAP.
# usage: lzchan_cmd_vm.sh [PATH-TO-lzchan]   (default: lzchan-static here)
here=$(cd "$(dirname "$0")" && pwd)
tool=${1:-$here/lzchan-static}
plan=36
. "$here/lzchan_vm_tap.sh"
need_dev

tmp=$(mktemp -d)
out=$tmp/out err=$tmp/err
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
unset LZCHAN_BACKEND LZCHAN_SHM_DIR
p=cmd$$	# channel names of this run

run() { "$tool" "$@" >"$out" 2>"$err"; echo $? >"$tmp/rc"; }
rc_is() { [ "$(cat "$tmp/rc")" = "$1" ]; }
out_has() { grep -q -- "$1" "$out"; }
err_has() { grep -q -- "$1" "$err"; }
err_one_line() { [ "$(wc -l < "$err")" = 1 ]; }
# Wait (up to ~20 s of emulated time) until 'show' prints a line matching $2.
show_until() {
	i=0
	while [ $i -lt 200 ]; do
		"$tool" show "$1" > "$tmp/show" 2>/dev/null
		grep -q -- "$2" "$tmp/show" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# An unprivileged user to switch to (busybox su reads /etc/passwd).
mkdir -p /etc
grep -q '^nobody:' /etc/passwd 2>/dev/null ||
	echo 'nobody:x:65534:65534:nobody:/:/bin/sh' >> /etc/passwd
grep -q '^nogroup:' /etc/group 2>/dev/null || echo 'nogroup:x:65534:' >> /etc/group
as_nobody() { su -s /bin/sh nobody -c "$*"; }

run features
check "features reports ABI 4 from the module" eval 'rc_is 0 && out_has "^abi_version 4$"'
run features --json
check "features --json names the feature bits" \
	eval 'rc_is 0 && out_has "^{\"abi_version\": 4, .*\"numa\": true, \"eventfd\": true, \"peercred\": true, \"placement\": true, \"nopin\": true, \"usage\": true, \"departures\": true, \"bye\": true, \"temp\": true, \"pubsub\": true, \"endpoint\": true}$"'

run limits
check "limits shows each limit with root's exemption" \
	eval 'rc_is 0 && out_has "^channels, machine  *[0-9][0-9]* *[1-9][0-9]*$" && out_has "^bytes, you " && out_has "CAP_SYS_RESOURCE"'
limits_before=$(sed -n 's/^channels, you  *\([0-9]*\) .*/\1/p' "$out")
"$tool" create $p.lim >/dev/null 2>&1
run limits --json
check "limits --json counts a new channel for its creator" \
	eval "rc_is 0 && out_has '\"exempt\": true' && out_has '\"user\": {\"channels\": $((limits_before + 1)), '"
"$tool" remove $p.lim >/dev/null 2>&1
as_nobody "$tool limits" > "$out" 2> "$err"; echo $? > "$tmp/rc"
check "limits for an unprivileged user: not exempt" eval 'rc_is 0 && ! out_has CAP_SYS_RESOURCE'

run list
check "list names the dev backend" eval 'rc_is 0 && out_has "^backend: dev (/dev/lzchan)$"'

run create $p.a --slots 8 --mode 0640 --lanes 3 --node 1 --strict
check "create on node 1, strict" eval 'rc_is 0 && [ ! -s "$err" ]'
run list
check "list shows the module's channel: mode, node 1 strict, geometry, lanes" \
	eval "rc_is 0 && out_has '^$p.a  *0  *0 0640   1!  *8x64  *0/3  *none  *0  *0\$'"
run list --json
check "list --json carries the channel" \
	eval "rc_is 0 && out_has '\"name\": \"$p.a\".*\"numa_node\": 1, \"node_strict\": true, \"slot_size\": 64, \"slot_count\": 8, \"max_senders\": 3'"
run create $p.a
check "create of an existing name: EEXIST from the module, exit 1" \
	eval 'rc_is 1 && err_has "(EEXIST)" && err_one_line'
run create $p.x --node 7 --strict
check "create on a node that does not exist: EINVAL naming the node" \
	eval 'rc_is 1 && err_has "(EINVAL)" && err_has "node 7 does not exist"'

printf 'a\nb\n' | "$tool" send $p.a; s=$?
run show $p.a
check "show through the module: messages 2, sender attach 1, the lane's sender by name" \
	eval '[ $s = 0 ] && rc_is 0 && out_has "^backend: *dev (/dev/lzchan)" && out_has "^messages: *2$" && \
	      out_has "^sender attaches: *1$" && out_has "^numa node: *1 (strict)" && \
	      out_has "^ *LANE  *STATE  *GEN  *PID  *UID  *GID  *VIA$" && out_has "^ *0 closed  *1 .* by name$"'
run show $p.a --json
check "show --json: the module's counters, lanes null, the lane's peer" \
	eval 'rc_is 0 && out_has "\"backend\": \"dev\"" && out_has "\"messages\": 2," && \
	      out_has "\"lanes\": null, \"peers\": \[{\"lane\": 0, \"state\": \"closed\", \"gen\": 1, .*\"endpoint\": null}]}$"'
run recv $p.a --count 2
check "recv --count 2 through the module gets both lines" \
	eval 'rc_is 0 && [ "$(cat "$out")" = "$(printf "a\nb")" ]'

# A parked receiver shows as parked; a send wakes it through the eventfd.
run create $p.w --slots 16
"$tool" recv $p.w --count 1 --spin-ns 0 > "$tmp/w.out" 2>"$tmp/w.err" &
rpid=$!
check "show sees the waiting receiver parked" show_until $p.w "^receiver: *parked$"
run recv $p.w --count 1 --timeout 100
check "a second receiver: EBUSY, one receiver per channel" \
	eval 'rc_is 1 && err_has "(EBUSY)" && err_has "already attached"'
echo wake | "$tool" send $p.w; s=$?
wait $rpid; rs=$?
check "the parked receiver is woken and gets the message" \
	eval '[ $s = 0 ] && [ $rs = 0 ] && [ "$(cat "$tmp/w.out")" = wake ]'
run show $p.w
check "the module counted the wakeup" \
	eval 'rc_is 0 && grep -q "^wakeups: *[1-9]" "$out" && grep -q "^receiver: *none$" "$out"'

# Binary records through the module.
run create $p.r --slot-size 128 --slots 4
printf '\003\000\000\000a\nb\000\000\000\000\002\000\000\000\000\377' > "$tmp/r.in"
"$tool" send $p.r --records < "$tmp/r.in"; s=$?
run recv $p.r --records --count 3
check "records round trip byte for byte through the module" \
	eval '[ $s = 0 ] && rc_is 0 && cmp -s "$out" "$tmp/r.in"'

run watch --iterations 2 --interval 0.1
check "watch --iterations 2 lists the module's channels twice" \
	eval "rc_is 0 && [ \$(grep -c '^NAME' \"\$out\") = 2 ] && out_has '^$p.a '"

# Permissions: an unprivileged user against a 0640 channel of root's.
as_nobody "$tool recv $p.a --count 1" > "$out" 2> "$err"; s=$?
check "unprivileged recv: EACCES naming mode, owner and the missing bit" \
	eval "[ \$s = 1 ] && err_has '(EACCES)' && err_has 'mode 0640, owner uid 0 gid 0' && \
	      err_has \"the 'r' bit for you (uid 65534\" && err_one_line"
echo x | as_nobody "$tool send $p.a" > "$out" 2> "$err"; s=$?
check "unprivileged send: EACCES naming the 'w' bit" \
	eval "[ \$s = 1 ] && err_has '(EACCES)' && err_has \"sending needs the 'w' bit\""
as_nobody "$tool list" > "$out" 2> "$err"; s=$?
check "an unprivileged user lists the channel (like ipcs)" \
	eval "[ \$s = 0 ] && out_has '^$p.a '"
as_nobody "$tool rm $p.a" > "$out" 2> "$err"; s=$?
check "unprivileged remove: EPERM, who may" \
	eval "[ \$s = 1 ] && err_has '(EPERM)' && err_has 'belongs to uid 0' && err_has CAP_SYS_ADMIN"
chmod 0600 /dev/lzchan
as_nobody "$tool list" > "$out" 2> "$err"; s=$?
chmod 0666 /dev/lzchan
check "no access to /dev/lzchan: EACCES naming its mode and owner" \
	eval "[ \$s = 1 ] && err_has '(EACCES)' && err_has '/dev/lzchan is mode 0600, owner uid 0' && err_one_line"

# The shm backend is another namespace of names.
mkdir "$tmp/shm"
LZCHAN_BACKEND=shm LZCHAN_SHM_DIR=$tmp/shm "$tool" list > "$out" 2> "$err"; s=$?
check "LZCHAN_BACKEND=shm lists the shm directory, not the module" \
	eval "[ \$s = 0 ] && out_has '^backend: shm ($tmp/shm)' && ! out_has '^$p.a '"

for c in a w r; do
	run remove $p.$c
	rc_is 0 || break
done
check "remove each channel" rc_is 0
run show $p.a
check "a removed channel is gone: ENOENT and 'lzchan list'" \
	eval 'rc_is 1 && err_has "(ENOENT)" && err_has "lzchan list"'
# Publish/subscribe through the module: two subscribers get every line,
# show lists their places.
run create $p.ticks --pubsub --slots 16 --subscribers 4
check "create --pubsub on the module" rc_is 0
"$tool" subscribe $p.ticks --count 3 >"$tmp/s1.out" 2>"$tmp/s1.err" &
s1=$!
"$tool" subscribe $p.ticks --count 3 >"$tmp/s2.out" 2>"$tmp/s2.err" &
s2=$!
show_until $p.ticks "subscribers: *2 attached" || true
printf '1\n2\n3\n' | "$tool" publish $p.ticks 2>"$err"; pr=$?
wait $s1; r1=$?
wait $s2; r2=$?
check "publish and subscribe on the module: every subscriber gets every line" \
	eval '[ $pr = 0 ] && [ $r1 = 0 ] && [ $r2 = 0 ] && [ "$(cat "$tmp/s1.out")" = "$(printf "1\n2\n3")" ] &&
	      [ "$(cat "$tmp/s2.out")" = "$(printf "1\n2\n3")" ]'
run show $p.ticks
check "show of a module pub/sub channel: its kind and 3 messages" \
	eval 'rc_is 0 && out_has "publish/subscribe" && out_has "^messages: *3"'
run remove $p.ticks
# Endpoints through the module: 'lzchan grant' hands out sender endpoints
# over a Unix socket; a sender through one delivers, 'show' names the
# endpoint on its lane, and a revocation ends a sender mid-stream.
run create $p.ep
"$tool" grant $p.ep --role sender --socket "$tmp/ep.sock" --count 2 >"$tmp/g.out" 2>"$tmp/g.err" &
g=$!
i=0
while [ ! -S "$tmp/ep.sock" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
printf 'e1\ne2\n' | "$tool" send --endpoint "$tmp/ep.sock" 2>"$err"; es=$?
run recv $p.ep --count 2
check "a sender endpoint from 'lzchan grant' delivers through the module" \
	eval '[ $es = 0 ] && rc_is 0 && [ "$(cat "$out")" = "$(printf "e1\ne2")" ]'
# The receiver that took e1 and e2 left: a new one waits for three.
"$tool" recv $p.ep --count 3 --timeout 20000 >"$tmp/r.out" 2>"$tmp/r.err" &
r=$!
show_until $p.ep "^receiver: *\(attached\|parked\)$" || true
mkfifo "$tmp/feed"
trap '' PIPE	# a sender that ended early must fail a check, not the script
"$tool" send --endpoint "$tmp/ep.sock" <"$tmp/feed" 2>"$tmp/e2.err" &
e2=$!
exec 3>"$tmp/feed"
echo e3 >&3
show_until $p.ep "^ *[0-9]* attached .* endpoint 2$"; sh=$?
run revoke $p.ep 2
rv=$(cat "$tmp/rc")
echo e4 >&3 2>/dev/null
echo e5 >&3 2>/dev/null
exec 3>&-
wait $e2; e2s=$?
wait $g; gs=$?
wait $r; rs=$?
sed 's/^/# sender: /' "$tmp/e2.err"
sed 's/^/# grant: /' "$tmp/g.err"
check "show names the endpoint a lane's sender came through" eval '[ $sh = 0 ]'
check "revoke ends that sender, its receiver still there: its sends fail (EPIPE)" \
	eval '[ $rv = 0 ] && out_has "^revoked 1 endpoint" && [ $e2s = 1 ] && grep -q "EPIPE" "$tmp/e2.err" &&
	      [ $gs = 0 ] && grep -q "^granted sender endpoint 2 of $p.ep$" "$tmp/g.out"'
check "what the revoked sender sent before is delivered, nothing after" \
	eval '[ $rs = 3 ] && [ "$(cat "$tmp/r.out")" = e3 ]'
run remove $p.ep
run list
check "nothing of this run is listed any more" eval "rc_is 0 && ! out_has '^$p\\.'"
[ $n = $plan ] || { echo "# ran $n tests, planned $plan"; failed=1; }
exit $failed
