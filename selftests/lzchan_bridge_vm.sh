#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# lzchan-bridged on the module's backend: the VM rig runs it (busybox sh)
# with lzchan.ko loaded.  Two bridges in one VM stand for two hosts,
# "hostA" and "hostB", over the loopback (UCX on TCP); every channel --
# A's proxies, B's real ones -- lives in the module.  (The network side,
# namespaces and veth pairs, is lzchan_bridge.sh's, on the host.)
# Without the module every test SKIPs, unless LZCHAN_EXPECT_DEV=1 says it
# must be there; without the bridge (built where UCX and libsodium are)
# too.  Prints TAP.
# usage: lzchan_bridge_vm.sh [DIR holding lzchan-bridged and lzchan-static]
here=$(cd "${1:-$(dirname "$0")}" && pwd)
bridged=$here/lzchan-bridged
tool=$here/lzchan-static
plan=4
. "$(dirname "$0")/lzchan_vm_tap.sh"
need_dev
[ -x "$bridged" ] || skip_all "lzchan-bridged not built (UCX or libsodium missing where it was built)"
"$bridged" --help >/dev/null 2>&1 || skip_all "lzchan-bridged does not run here (its libraries?)"
# A kernel without IPv4 (CONFIG_INET) has no TCP for UCX (the debug kernel has
# it since issue 29: selftests/vm/debug.config).
[ -d /proc/sys/net/ipv4 ] || skip_all "no IPv4 in this kernel (CONFIG_INET): UCX's TCP transport needs it"

tmp=$(mktemp -d)
pids=""
p=br$$		# channel names of this run
cleanup() {
	for q in $pids; do kill "$q" 2>/dev/null; done
	sleep 1
	for q in $pids; do kill -9 "$q" 2>/dev/null; done
	wait 2>/dev/null
	for ch in ${p}o ${p}k ${p}o@hostB ${p}k@hostB; do
		"$tool" remove "$ch" >/dev/null 2>&1
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
unset LZCHAN_SHM_DIR
export LZCHAN_BACKEND=dev UCX_TLS=tcp UCX_NET_DEVICES=lo
ip link set lo up 2>/dev/null

mkdir -p "$tmp/A/origin" "$tmp/B/origin"
(umask 077; "$bridged" --genkey > "$tmp/A.key" && "$bridged" --genkey > "$tmp/B.key") ||
	skip_all "lzchan-bridged --genkey failed"
pub_A=$("$bridged" --pubkey < "$tmp/A.key")
pub_B=$("$bridged" --pubkey < "$tmp/B.key")
# Both bridges on this one machine, over lo: named, as the bridge never
# picks lo by itself.
cat > "$tmp/A/conf" <<EOF
name hostA
device lo
private-key $tmp/A.key
peer hostB 127.0.0.1:14700 public-key=$pub_B
route ${p}o@hostB slots=256
route ${p}k@hostB slots=256
EOF
cat > "$tmp/B/conf" <<EOF
name hostB
listen 127.0.0.1:14700
private-key $tmp/B.key
peer hostA public-key=$pub_A
allow hostA ${p}o ${p}k
EOF

# as HOST CMD...: run as HOST does (its origin records: B's receivers
# read B's bridge's).
as() {
	h=$1; shift
	LZCHAN_ORIGIN_DIR="$tmp/$h/origin" "$@"
}
# spawn PIDFILE HOST INPUT CMD...: in the background, its standard input
# from INPUT (busybox gives a background command /dev/null before any
# redirection); PIDFILE gets its pid.
spawn() {
	pf=$1 h=$2 in=$3; shift 3
	rm -f "$pf"
	LZCHAN_ORIGIN_DIR="$tmp/$h/origin" sh -c 'echo $$ > "$0"; in=$1; shift; exec "$@" < "$in"' \
		"$pf" "$in" "$@" &
	until [ -s "$pf" ]; do sleep 0.1; done
	pids="$pids $(cat "$pf")"
}
# until SECONDS CMD...: retry CMD every 0.2 s for up to SECONDS.
until_ok() {
	t=$(($1 * 5)); shift
	while [ $t -gt 0 ]; do "$@" && return 0; sleep 0.2; t=$((t - 1)); done
	return 1
}
exists() { "$tool" show "$1" >/dev/null 2>&1; }
rx_on() { "$tool" show "$1" --json 2>/dev/null | grep -q '"receiver": true'; }
rx_wait() { until_ok 60 rx_on "$1" || { echo "# no receiver on $1"; return 1; }; }
lines() { [ -s "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }

"$tool" create ${p}o --slots 256 >/dev/null && "$tool" create ${p}k --slots 256 >/dev/null ||
	{ echo "# could not create the channels"; failed=1; }
spawn "$tmp/B.pid" B /dev/null "$bridged" -v -c "$tmp/B/conf" >> "$tmp/B/log" 2>&1
bpid_B=$(cat "$tmp/B.pid")
spawn "$tmp/A.pid" A /dev/null "$bridged" -v -c "$tmp/A/conf" >> "$tmp/A/log" 2>&1

# 1: A's bridge makes its proxies in the module and reaches B's.
connected() {
	until_ok 120 exists ${p}o@hostB && until_ok 120 exists ${p}k@hostB &&
		until_ok 120 grep -q "peer hostB: connected" "$tmp/A/log"
}
check "the bridges connect; A's proxies are channels of the module" connected
if [ $failed = 1 ]; then	# the rest would only wait for their timeouts
	while [ $n -lt $plan ]; do
		n=$((n + 1))
		echo "not ok $n # the bridges did not connect"
	done
	for h in A B; do sed 's/^/# '$h': /' "$tmp/$h/log" 2>/dev/null | tail -n 40; done
	exit 1
fi

# 2: exactly once, in order, from two remote senders and a local one.
N=5000
exactly_once() {
	as B "$tool" recv ${p}o --count $((3 * N)) --timeout 120000 > "$tmp/got" &
	r=$!
	rx_wait ${p}o || return 1
	seq 1 $N | sed 's/^/A1 /' | as A "$tool" send ${p}o@hostB --timeout 120000 &
	s1=$!
	seq 1 $N | sed 's/^/A2 /' | as A "$tool" send ${p}o@hostB --timeout 120000 &
	s2=$!
	seq 1 $N | sed 's/^/B0 /' | as B "$tool" send ${p}o --timeout 120000 &
	s3=$!
	wait $r || { echo "# the receiver failed: $(wc -l < "$tmp/got") received"; return 1; }
	for s in $s1 $s2 $s3; do wait $s || { echo "# a sender failed"; return 1; }; done
	awk -v n=$N '
		{ if ($2 != ++next_[$1]) { print "# " $1 ": " $2 " where " next_[$1] " was due"; bad = 1; exit } }
		END { k = 0; for (s in next_) { k++; if (next_[s] != n) { print "# " s ": " next_[s] " of " n; bad = 1 } }
		      if (k != 3) { print "# " k " senders"; bad = 1 }
		      exit bad }' "$tmp/got"
}
check "exactly once and in order: 2 remote senders and 1 local, $((3 * N)) messages" exactly_once

# 3: a remote sender killed: its lane ends on B as a death, named by
# B's bridge's origin record while it lived.
killed_sender() {
	as B "$tool" recv ${p}k --eof --who --timeout 120000 > "$tmp/kill.out" 2> "$tmp/kill.err" &
	r=$!
	rx_wait ${p}k || return 1
	# A sender that would send for ever: its input a pipe that never ends.
	mkfifo "$tmp/fifo"
	seq 1 1000000000 > "$tmp/fifo" &
	pids="$pids $!"
	spawn "$tmp/k.pid" A "$tmp/fifo" "$tool" send ${p}k@hostB --timeout 120000
	until_ok 60 lines "$tmp/kill.out" 100 || { echo "# nothing arrived"; return 1; }
	grep -q "remote sender uid $(id -u) pid $(cat "$tmp/k.pid") on hostA, through pid $bpid_B " \
		"$tmp/kill.err" || { echo "# --who said: '$(cat "$tmp/kill.err")'"; return 1; }
	kill -9 "$(cat "$tmp/k.pid")"
	wait $r || { echo "# no end of stream for the killed sender"; return 1; }
	grep -q "its sender died" "$tmp/kill.err" ||
		{ echo "# B's receiver was not told the sender died: '$(cat "$tmp/kill.err")'"; return 1; }
}
check "a remote sender killed: end of stream on its lane, as a death" killed_sender

# 4: after it, a sender is carried as before and closes cleanly.
clean_after() {
	as B "$tool" recv ${p}k --eof --timeout 120000 > "$tmp/after.out" 2> "$tmp/after.err" &
	r=$!
	rx_wait ${p}k || return 1
	seq 1 1000 | as A "$tool" send ${p}k@hostB --timeout 120000 &
	s=$!
	wait $r && wait $s && seq 1 1000 | cmp -s - "$tmp/after.out" || return 1
	! grep -q "died" "$tmp/after.err" || { echo "# a clean close said: '$(cat "$tmp/after.err")'"; return 1; }
}
check "the next remote sender is carried and closes cleanly" clean_after

for h in A B; do
	if [ $failed = 1 ]; then
		sed 's/^/# '$h': /' "$tmp/$h/log" 2>/dev/null | tail -n 40
	else
		sed 's/^/# '$h': /' "$tmp/$h/log" 2>/dev/null | tail -n 4
	fi
done
exit $failed
