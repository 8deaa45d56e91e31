#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# lzchan-bridged's documented deployment, end to end: bridge traffic over
# WireGuard (lzchan-bridged(8), "Security"; the admin guide's "Bridging
# hosts").  The VM rig runs it (busybox sh, lzchan.ko loaded, the kernel's
# veth and wireguard), with iproute2's ip and wireguard-tools' wg copied
# into the initramfs beside the bridge.  Three network namespaces stand for
# three hosts:
#
#   wA 192.168.77.1 --veth-- 192.168.77.2 wB 192.168.78.2 --veth-- 192.168.78.3 wC
#   wA wg0 10.77.0.1  ====== WireGuard ======  wB wg0 10.77.0.2
#
# A's bridge reaches B's over wg0 alone; C shares an underlay network with
# B, holds no WireGuard key, and routes the tunnel's addresses through B's
# underlay address, as a hostile neighbour would: it must reach nothing of
# UCX's.  Channels live in the module (one IPC namespace: A's proxies and
# B's channels side by side, as in lzchan_bridge_vm.sh).  SKIPs without
# the module (unless LZCHAN_EXPECT_DEV=1), the bridge, ip, wg, or a kernel
# with namespaces, veth and WireGuard.  Prints TAP.
# usage: lzchan_bridge_wg_vm.sh [DIR holding lzchan-bridged, lzchan-static, net/ip, net/wg]
here=$(cd "${1:-$(dirname "$0")}" && pwd)
bridged=$here/lzchan-bridged
tool=$here/lzchan-static
IP=$here/net/ip
WG=$here/net/wg
plan=6
. "$(dirname "$0")/lzchan_vm_tap.sh"
need_dev
[ -x "$bridged" ] || skip_all "lzchan-bridged not built (UCX or libsodium missing where it was built)"
"$bridged" --help >/dev/null 2>&1 || skip_all "lzchan-bridged does not run here (its libraries?)"
[ -x "$IP" ] && "$IP" -V >/dev/null 2>&1 || skip_all "no iproute2 ip in the rig ('make deps' installs it)"
[ -x "$WG" ] && "$WG" --version >/dev/null 2>&1 || skip_all "no wg in the rig ('make deps' installs wireguard-tools)"
[ -d /proc/sys/net/ipv4 ] || skip_all "no IPv4 in this kernel (CONFIG_INET)"

tmp=$(mktemp -d)
pids=""
p=wg$$			# channel names of this run
A=wA$$ B=wB$$ C=wC$$	# namespaces
cleanup() {
	for q in $pids; do kill "$q" 2>/dev/null; done
	sleep 1
	for q in $pids; do kill -9 "$q" 2>/dev/null; done
	wait 2>/dev/null
	for ch in ${p}o ${p}o@hostB; do "$tool" remove "$ch" >/dev/null 2>&1; done
	for ns in $A $B $C; do "$IP" netns del "$ns" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
unset LZCHAN_SHM_DIR UCX_TLS UCX_NET_DEVICES
export LZCHAN_BACKEND=dev

# ip netns keeps its namespaces under /run/netns (Debian's build;
# /var/run/netns elsewhere): a tmpfs of its own in the initramfs.
for d in /run/netns /var/run/netns; do
	mkdir -p $d && { grep -q " $d " /proc/mounts || mount -t tmpfs netns $d; } ||
		skip_all "cannot mount a tmpfs on $d for ip netns"
done
"$IP" netns add $A && "$IP" netns add $B && "$IP" netns add $C ||
	skip_all "cannot create network namespaces (CONFIG_NET_NS)"
"$IP" link add vA$$ type veth peer name vB$$ ||
	skip_all "cannot make a veth pair (CONFIG_VETH)"
on() { ns=$1; shift; "$IP" netns exec "$ns" "$@"; }

# The underlay: A-B and B-C, each a veth pair.
underlay() {
	"$IP" link set vA$$ netns $A && "$IP" link set vB$$ netns $B &&
	"$IP" link add vC$$ type veth peer name vD$$ &&
	"$IP" link set vC$$ netns $C && "$IP" link set vD$$ netns $B &&
	"$IP" -n $A addr add 192.168.77.1/24 dev vA$$ && "$IP" -n $A link set vA$$ up &&
	"$IP" -n $B addr add 192.168.77.2/24 dev vB$$ && "$IP" -n $B link set vB$$ up &&
	"$IP" -n $B addr add 192.168.78.2/24 dev vD$$ && "$IP" -n $B link set vD$$ up &&
	"$IP" -n $C addr add 192.168.78.3/24 dev vC$$ && "$IP" -n $C link set vC$$ up &&
	for ns in $A $B $C; do "$IP" -n $ns link set lo up || return 1; done
}
underlay || { echo "# cannot set up the underlay"; skip_all "veth pairs between namespaces failed"; }
"$IP" -n $A link add wg0 type wireguard 2>/dev/null ||
	skip_all "no WireGuard in this kernel (CONFIG_WIREGUARD)"

# 1: the tunnel: a wg0 in A and B, each knowing the other's public key.
tunnel() {
	(umask 077; "$WG" genkey > "$tmp/wgA" && "$WG" genkey > "$tmp/wgB") || return 1
	wpA=$("$WG" pubkey < "$tmp/wgA") && wpB=$("$WG" pubkey < "$tmp/wgB") || return 1
	"$IP" -n $B link add wg0 type wireguard &&
	on $A "$WG" set wg0 private-key "$tmp/wgA" listen-port 51820 \
		peer "$wpB" allowed-ips 10.77.0.2/32 endpoint 192.168.77.2:51820 &&
	on $B "$WG" set wg0 private-key "$tmp/wgB" listen-port 51820 \
		peer "$wpA" allowed-ips 10.77.0.1/32 endpoint 192.168.77.1:51820 &&
	"$IP" -n $A addr add 10.77.0.1/24 dev wg0 && "$IP" -n $A link set wg0 up &&
	"$IP" -n $B addr add 10.77.0.2/24 dev wg0 && "$IP" -n $B link set wg0 up || return 1
	# The first ping starts WireGuard's handshake (slow under emulation).
	i=0
	until on $A ping -c 1 -W 5 10.77.0.2 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 12 ] || { echo "# no answer over wg0"; on $A "$WG" show wg0 | sed 's/^/#   /'; return 1; }
	done
}
check "a WireGuard tunnel between A and B carries traffic" tunnel

(umask 077; "$bridged" --genkey > "$tmp/A.key" && "$bridged" --genkey > "$tmp/B.key") ||
	{ echo "# lzchan-bridged --genkey failed"; failed=1; }
pub_A=$("$bridged" --pubkey < "$tmp/A.key")
pub_B=$("$bridged" --pubkey < "$tmp/B.key")
mkdir -p "$tmp/A/origin" "$tmp/B/origin"
# A names the tunnel; B's interface follows from its listen address.
cat > "$tmp/A/conf" <<EOF
name hostA
device wg0
private-key $tmp/A.key
peer hostB 10.77.0.2:14800 public-key=$pub_B
route ${p}o@hostB slots=256
EOF
cat > "$tmp/B/conf" <<EOF
name hostB
listen 10.77.0.2:14800
private-key $tmp/B.key
peer hostA public-key=$pub_A
allow hostA ${p}o
EOF
# The same bridge on the underlay: what --check must warn of.
sed 's/^listen .*/listen 192.168.77.2:14800/' "$tmp/B/conf" > "$tmp/B/underlay.conf"

# 2: --check is content with the WireGuard configurations, and warns of
# the underlay one.
checked() {
	on $A "$bridged" --check -c "$tmp/A/conf" > "$tmp/checkA" 2>&1 &&
	on $B "$bridged" --check -c "$tmp/B/conf" > "$tmp/checkB" 2>&1 || {
		sed 's/^/#   /' "$tmp/checkA" "$tmp/checkB"; return 1; }
	if grep -q warning "$tmp/checkA" "$tmp/checkB" || ! grep -q "UCX on wg0 over tcp" "$tmp/checkB"; then
		sed 's/^/#   /' "$tmp/checkA" "$tmp/checkB"
		return 1
	fi
	on $B "$bridged" --check -c "$tmp/B/underlay.conf" > "$tmp/checkU" 2>&1
	grep -q "warning: vB$$ is not a WireGuard interface" "$tmp/checkU" ||
		{ echo "# no warning for the underlay:"; sed 's/^/#   /' "$tmp/checkU"; return 1; }
}
check "lzchan-bridged --check: silent over wg0, a warning for the underlay" checked

# spawn PIDFILE NS HOST CMD...: in the background in namespace NS, as
# HOST (its origin records); PIDFILE gets the command's pid.
spawn() {
	pf=$1 ns=$2 h=$3; shift 3
	rm -f "$pf"
	LZCHAN_ORIGIN_DIR="$tmp/$h/origin" sh -c 'echo $$ > "$0"; exec "$@" < /dev/null' \
		"$pf" "$IP" netns exec "$ns" "$@" &
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

"$tool" create ${p}o --slots 256 >/dev/null || { echo "# could not create ${p}o"; failed=1; }
spawn "$tmp/B.pid" $B B "$bridged" -v -c "$tmp/B/conf" >> "$tmp/B/log" 2>&1
bpid_B=$(cat "$tmp/B.pid")
spawn "$tmp/A.pid" $A A "$bridged" -v -c "$tmp/A/conf" >> "$tmp/A/log" 2>&1

# 3: messages cross the tunnel exactly once, in order, named as A's.
N=2000
crossed() {
	until_ok 120 exists ${p}o@hostB && until_ok 120 grep -q "peer hostB: connected" "$tmp/A/log" ||
		{ echo "# the bridges did not connect"; return 1; }
	LZCHAN_ORIGIN_DIR="$tmp/B/origin" "$tool" recv ${p}o --count $N --who --timeout 120000 \
		> "$tmp/got" 2> "$tmp/who" &
	r=$!
	until_ok 60 rx_on ${p}o || { echo "# no receiver"; return 1; }
	seq 1 $N | LZCHAN_ORIGIN_DIR="$tmp/A/origin" "$IP" netns exec $A \
		"$tool" send ${p}o@hostB --timeout 120000 || { echo "# the sender failed"; return 1; }
	wait $r || { echo "# the receiver got $(wc -l < "$tmp/got") of $N"; return 1; }
	seq 1 $N | cmp -s - "$tmp/got" || { echo "# not exactly once and in order"; return 1; }
	grep -q "remote sender uid $(id -u) pid [0-9]* on hostA, through pid $bpid_B " "$tmp/who" ||
		{ echo "# --who said: '$(head -n 1 "$tmp/who")'"; return 1; }
}
check "$N messages cross wg0 exactly once and in order, named as hostA's" crossed

# B's listening TCP ports, from /proc/net/tcp (state 0A).
ports_of() {
	on "$1" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk '$4 == "0A" { n = split($2, a, ":"); print a[n] }' |
		while read -r hex; do echo $((0x$hex)); done | sort -u
}

# 4: only the configured listener and UCX's own (a data port) listen.
only_ours() {
	got=$(ports_of $B | tr '\n' ' ')
	case $got in
	"14800 148"[0-6][0-9]" ") ;;
	*) echo "# B listens on ports: $got"; return 1 ;;
	esac
}
check "B listens on its listen port and one data port only" only_ours

# 5: C, on B's other underlay network without any WireGuard key, routes
# the tunnel's addresses through B: B's kernel answers it there (Linux's
# weak host model), but no UCX port does, and nothing changes for A.
neighbour() {
	"$IP" -n $C route add 10.77.0.0/24 via 192.168.78.2 || return 1
	on $C ping -c 1 -W 5 10.77.0.2 >/dev/null 2>&1 ||
		{ echo "# C cannot reach 10.77.0.2 at all (the test proves nothing)"; return 1; }
	for port in $(ports_of $B); do
		if on $C nc -w 5 10.77.0.2 "$port" -e true 2>/dev/null; then
			echo "# C connected to 10.77.0.2:$port over the underlay"
			return 1
		fi
	done
	kill -0 "$bpid_B" || { echo "# B's bridge died"; return 1; }
	echo "after" | LZCHAN_ORIGIN_DIR="$tmp/A/origin" "$IP" netns exec $A \
		"$tool" send ${p}o@hostB --timeout 60000 &
	s=$!
	LZCHAN_ORIGIN_DIR="$tmp/B/origin" "$tool" recv ${p}o --count 1 --timeout 60000 > "$tmp/after" &&
		wait $s && grep -qx after "$tmp/after"
}
check "a keyless neighbour routing to the tunnel's address reaches no UCX port" neighbour

# 6: without the tunnel nothing crosses: A's bridge stays up and says the
# peer is unreachable; the sender is not told success.
tunnel_down() {
	"$IP" -n $B link set wg0 down || return 1
	until_ok 120 grep -q "peer hostB: connection closed" "$tmp/A/log" ||
		{ echo "# A never saw its connection go"; return 1; }
	if echo "lost" | LZCHAN_ORIGIN_DIR="$tmp/A/origin" "$IP" netns exec $A \
		"$tool" send ${p}o@hostB --timeout 20000 2>/dev/null; then
		echo "# a send with the tunnel down reported success"
		return 1
	fi
	kill -0 "$(cat "$tmp/A.pid")" && kill -0 "$bpid_B"
}
check "the tunnel down: the sender is told, both bridges stay up" tunnel_down

for h in A B; do
	if [ $failed = 1 ]; then
		sed 's/^/# '$h': /' "$tmp/$h/log" 2>/dev/null | tail -n 40
	else
		sed 's/^/# '$h': /' "$tmp/$h/log" 2>/dev/null | tail -n 4
	fi
done
exit $failed
