#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The VM rig: boot one kernel under qemu with a freshly built lzchan.ko and
# the selftests in an initramfs, and report in TAP.
#
#   scripts/vm-run.sh bookworm|trixie|trixie-backports|debug
#
#   bookworm           Debian 12's cloud kernel (6.1)
#   trixie             Debian 13's cloud kernel (6.12)
#   trixie-backports   the newest cloud kernel in trixie-backports (7.3)
#   debug              6.1 built by the project with KASAN, lockdep, KFENCE,
#                      UBSAN, kmemleak, DEBUG_VM/LIST/OBJECTS
#                      (scripts/debug-kernel.sh); every suite runs longer
#                      there, kmemleak is scanned at the end, and the
#                      checkers are proven to bite (selftests/vm/rigcheck)
#
# Needs 'make deps' (kernels, trixie root) and 'make lib selftests' first.
# Prints a stream of suites ("=== LZCHAN-SUITE name", TAP, "=== LZCHAN-EXIT
# rc") that scripts/tap-summary.awk totals; the rig's own checks (module
# load/unload, NUMA nodes, a clean kernel log) form the suite "<kernel>/vm".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$top/.cache}
name=${1:?usage: vm-run.sh bookworm|trixie|trixie-backports|debug}
vm=$CACHE/vm/$name

# The rig's own suite, printed at the end whatever happened.
checks=()
check() { checks+=("$1|$2"); }	# check "ok|not ok" "description"
finish() {
	echo "=== LZCHAN-SUITE $name/vm"
	echo "TAP version 13"
	echo "1..${#checks[@]}"
	local i=0 c
	for c in "${checks[@]}"; do
		i=$((i + 1))
		echo "${c%%|*} $i ${c#*|}"
	done
	echo "=== LZCHAN-EXIT 0"
	exit 0
}
fail_early() { check "not ok" "$1"; finish; }

# One run per kernel at a time: a second one (another shell, another
# clone sharing the cache) waits here instead of overwriting this one's
# initramfs and logs.
mkdir -p "$vm"
exec 8> "$vm/.run-lock"
if ! flock -n 8; then
	echo "vm-run: another run on '$name' holds $vm; waiting for it" >&2
	flock 8
fi
# The debug kernel: make sure the cached build is the one the current
# config fragment asks for (instant when it is; a build when it is not).
if [ "$name" = debug ]; then
	CACHE=$CACHE "$top/scripts/debug-kernel.sh" >&2 ||
		fail_early "debug kernel built (scripts/debug-kernel.sh failed)"
fi
[ -f "$vm/kernel.env" ] || fail_early "kernel '$name' prepared (run 'make deps': $vm/kernel.env missing)"
DEBUG=	# only kernel.env says so, never the caller's environment
# shellcheck disable=SC1091
. "$vm/kernel.env"
[ -s "$VMLINUZ" ] || fail_early "kernel image present ($VMLINUZ missing: run 'make deps')"
# A KASAN kernel under software emulation runs every suite several times
# slower (and the debug run does more: see selftests/vm/init).
if [ -n "$DEBUG" ]; then
	QEMU_TIMEOUT=${LZCHAN_VM_TIMEOUT:-3000}
else
	QEMU_TIMEOUT=${LZCHAN_VM_TIMEOUT:-900}
fi
command -v qemu-system-x86_64 >/dev/null || fail_early "qemu-system-x86_64 installed (run 'make deps')"

# --- build lzchan.ko for this kernel from a clean copy of the sources ---
# LZCHAN_KMOD_SRC: build the module from another tree's Kbuild and kmod/
# (scripts/rig-breakage.sh boots deliberately broken copies).
ksrc=${LZCHAN_KMOD_SRC:-$top}
src_copy() {	# copy the module's sources (no build products) into a fresh $1
	# Fresh: tar keeps the sources' mtimes, so objects left from another
	# tree (LZCHAN_KMOD_SRC, a breakage run) would look newer and be kept.
	rm -rf "$1"
	mkdir -p "$1"
	(cd "$ksrc" && tar -c --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' \
		--exclude='*.mod' --exclude='*.mod.c' --exclude=modules.order \
		--exclude=Module.symvers Kbuild kmod) | tar -x -C "$1"
}
kbuild() {	# M= directory (as seen by the build): make modules for $KDIR
	if [ -n "$ROOT" ]; then
		# 7.x's objtool reads /proc: mount it in a private mount namespace,
		# gone with the build.
		unshare --mount --propagation private sh -c \
			'mount -t proc proc "$1/proc" && exec chroot "$1" make -C "$2" M="$3" modules' \
			sh "$ROOT" "$KDIR" "$1"
	else
		make -C "$KDIR" M="$1" modules
	fi
}
if [ -n "$ROOT" ]; then
	# Per kernel: trixie and trixie-backports share the root.
	bsrc=$ROOT/build/lzchan-$name
	src_copy "$bsrc"
	kbuild "/build/lzchan-$name" > "$vm/build.log" 2>&1
else
	bsrc=$vm/src
	src_copy "$bsrc"
	kbuild "$bsrc" > "$vm/build.log" 2>&1
fi
rc=$?
if [ $rc != 0 ] || [ ! -f "$bsrc/kmod/lzchan.ko" ]; then
	sed 's/^/# /' "$vm/build.log"
	fail_early "lzchan.ko builds against $KVER"
fi
check ok "lzchan.ko builds against $KVER"
vermagic=$(modinfo -F vermagic "$bsrc/kmod/lzchan.ko")
if [ "${vermagic%% *}" = "$KVER" ]; then
	check ok "vermagic matches the kernel ($KVER)"
else
	fail_early "vermagic matches the kernel ($vermagic vs $KVER)"
fi

# The rig's self-test module: deliberate bugs for the debug kernel's checkers.
if [ -n "$DEBUG" ]; then
	rsrc=$vm/rigcheck
	rm -rf "$rsrc" && mkdir -p "$rsrc"
	cp "$top"/selftests/vm/rigcheck/Kbuild "$top"/selftests/vm/rigcheck/*.c "$rsrc/"
	if kbuild "$rsrc" > "$vm/rigcheck-build.log" 2>&1 && [ -f "$rsrc/lzchan_rigcheck.ko" ]; then
		check ok "lzchan_rigcheck.ko (the checkers' self-test) builds"
	else
		sed 's/^/# /' "$vm/rigcheck-build.log"
		fail_early "lzchan_rigcheck.ko (the checkers' self-test) builds"
	fi
fi

# --- initramfs: busybox, /init, the module, the tests ---
# LZCHAN_VM_TESTS="lzchan_dev lzchan_peer": run only these (default: the
# list in selftests/vm/tests).
if [ -n "${LZCHAN_VM_TESTS:-}" ]; then
	mapfile -t tests < <(printf '%s\n' $LZCHAN_VM_TESTS)
else
	mapfile -t tests < <(grep -v '^#' "$top/selftests/vm/tests")
fi
initrd=$vm/initramfs
rm -rf "$initrd" && mkdir -p "$initrd"/{bin,proc,sys,dev,tests}
cp /bin/busybox "$initrd/bin/busybox"
cp "$top/selftests/vm/init" "$initrd/init"
cp "$bsrc/kmod/lzchan.ko" "$initrd/lzchan.ko"
[ -z "$DEBUG" ] || cp "$rsrc/lzchan_rigcheck.ko" "$initrd/lzchan_rigcheck.ko"
cp "$top/selftests/settings" "$initrd/tests/"
cp "$top/selftests/lzchan_vm_tap.sh" "$initrd/tests/"	# the shell tests' TAP
cp "$top/selftests/lzchan_hold" "$initrd/tests/" || fail_early "lzchan_hold built (run 'make selftests')"
cp "$top/selftests/lzchan-static" "$initrd/tests/" || fail_early "lzchan-static built (run 'make selftests')"
# The bridge, where it was built (UCX, libsodium), with the shared
# libraries it loads at their own paths (the loader's too):
# lzchan_bridge_vm.sh runs it on the module's backend.
if [ -x "$top/tools/lzchan-bridged" ]; then
	cp "$top/tools/lzchan-bridged" "$initrd/tests/"
	for lib in $(ldd "$top/tools/lzchan-bridged" | awk '/\// { print ($2 == "=>") ? $3 : $1 }'); do
		mkdir -p "$initrd$(dirname "$lib")" && cp -L "$lib" "$initrd$lib" ||
			fail_early "the bridge's library $lib copied"
	done
fi
# iproute2's ip and wireguard-tools' wg, likewise, for the bridge's
# WireGuard test (lzchan_bridge_wg_vm.sh: namespaces, veth, wg0): busybox's
# ip knows neither namespaces nor WireGuard.  Absent, that test SKIPs.
for x in ip wg; do
	xp=$(command -v "$x") || continue
	mkdir -p "$initrd/tests/net"
	cp "$xp" "$initrd/tests/net/$x" || fail_early "$xp copied"
	for lib in $(ldd "$xp" | awk '/\// { print ($2 == "=>") ? $3 : $1 }'); do
		mkdir -p "$initrd$(dirname "$lib")" && cp -L "$lib" "$initrd$lib" ||
			fail_early "$x's library $lib copied"
	done
done
for x in lzchan_epoll-static lzchan_fanin-static lzchan_grant-static; do
	cp "$top/selftests/$x" "$initrd/tests/" || fail_early "$x built (run 'make selftests')"
done
for t in "${tests[@]}"; do
	[ -x "$top/selftests/$t" ] || fail_early "selftest $t built (run 'make selftests')"
	cp "$top/selftests/$t" "$initrd/tests/"
done
printf '%s\n' "${tests[@]}" > "$initrd/tests/list"
# The slow disk's driver: the stock kernels build virtio-blk as modules
# (make deps puts them, decompressed, beside vmlinuz with their load order);
# the debug kernel has it built in.  /init loads them in that order.
kmods=$CACHE/kernels/$KVER/modules
mkdir -p "$initrd/modules"
if [ -f "$kmods/load" ]; then
	while read -r m; do
		cp "$kmods/$m" "$initrd/modules/" || fail_early "module $m present ($kmods: run 'make deps')"
	done < "$kmods/load"
	cp "$kmods/load" "$initrd/modules/load"
fi
(cd "$initrd" && find . | cpio -o -H newc --quiet) > "$vm/initramfs.cpio"

# --- boot: 2 vCPUs, one socket per NUMA node (a socket split across nodes
# makes the kernel WARN about topology), 1 GiB per node ---
console=$vm/console.log results=$vm/results.log
cpu=max append="console=ttyS0 panic=-1 loglevel=7"
if [ -n "$DEBUG" ]; then
	# A named model, as the issue's first debug build hung under -cpu max
	# (that hang was the RCU-tasks self-test of a preemptible build, and it
	# struck named models too: see debug.config), less the features
	# software emulation lacks (qemu warns about each).  Every KASAN report
	# is printed (not only the first), and init is told to run the debug
	# schedule: LZCHAN_RIG=debug reaches it as environment.
	cpu=${LZCHAN_DEBUG_CPU:-Skylake-Client-v4,-pcid,-x2apic,-tsc-deadline,-invpcid,-rdseed,-spec-ctrl,-3dnowprefetch,-xsavec,-xsaves}
	# No speculation mitigations: the emulated Skylake is "vulnerable" to
	# RETBleed and the kernel WARNs so at boot; a test VM has no secrets.
	#
	# tsc=reliable: on this model the guest keeps the TSC as its clock
	# (the stock kernels' boots find it unsynchronized and drop it before
	# /init), and on a loaded host the clocksource watchdog, whose reads
	# the emulator delays, can call it unstable mid-run ("Long readout
	# interval" was seen).  Dropping it then flips the sched_clock static
	# key, that is patches kernel text on the fly, which is exactly what
	# the emulator has been seen to mishandle (an unhandled int3: see
	# emulator_fault below).  The emulated TSC is the host's clock.
	append="$append kasan_multi_shot mitigations=off tsc=reliable LZCHAN_RIG=debug"
fi
# A guest that has not reached /init after BOOT_TIMEOUT seconds is stuck in
# its own boot: qemu is stopped, and the retry below boots it again.  Seen
# with the debug kernel's first, preemptible build, one boot in three or so
# on a loaded machine: its RCU-tasks self-test (PROVE_RCU, before any module
# can load) waited for minutes, where the kernel reaches /init in 16-20 s
# (the build is no longer preemptible: see debug.config); and once an int3
# oops in __mod_timer right after the kernel patched that instruction (the
# emulator running stale code).  Stock kernels reach /init in about 4 s.
BOOT_TIMEOUT=${LZCHAN_BOOT_TIMEOUT:-120}
# A vm-run killed mid-boot takes its qemu along (which would otherwise run
# on for up to QEMU_TIMEOUT, holding the kernel's lock).
qemu_pid=
stop_qemu() {
	[ -n "$qemu_pid" ] || return 0
	pkill -KILL -P "$qemu_pid" 2>/dev/null
	kill -KILL "$qemu_pid" 2>/dev/null
}
# The slow disk: a small raw image, fresh for every boot, that qemu's I/O
# limits (throttling.*) hold to SLOW_IOPS requests a second, so that an
# O_DIRECT read queued behind a few others lands seconds later
# (selftests/lzchan_pin.c).  /init names it to the tests in
# LZCHAN_SLOW_DISK; the limit reaches them as LZCHAN_SLOW_DISK_IOPS.
SLOW_IOPS=10
tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/lzchan-vm-$name.XXXXXX") || fail_early "temporary directory made"
cleanup() { stop_qemu; rm -rf "$tmpdir"; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM
append="$append LZCHAN_SLOW_DISK_IOPS=$SLOW_IOPS"
BOOT_TRIES=${LZCHAN_BOOT_TRIES:-5}
boot() {
	local pid waited=0
	rm -f "$console" "$results" "$tmpdir/slow.img"
	truncate -s 8M "$tmpdir/slow.img" || return 1
	echo "vm-run: booting $KVER under qemu (software emulation)" >&2
	timeout -s KILL "$QEMU_TIMEOUT" qemu-system-x86_64 \
		-accel tcg,thread=multi -cpu "$cpu" -smp 2,sockets=2,cores=1,threads=1 -m 2048 \
		-object memory-backend-ram,id=mem0,size=1024M \
		-object memory-backend-ram,id=mem1,size=1024M \
		-numa node,nodeid=0,cpus=0,memdev=mem0 \
		-numa node,nodeid=1,cpus=1,memdev=mem1 \
		-kernel "$VMLINUZ" -initrd "$vm/initramfs.cpio" \
		-drive "file=$tmpdir/slow.img,if=none,id=slow,format=raw,throttling.iops-total=$SLOW_IOPS" \
		-device virtio-blk-pci,drive=slow \
		-append "$append" \
		-display none -monitor none -nic none -no-reboot \
		-serial "file:$console" -serial "file:$results" </dev/null &
	pid=$!
	qemu_pid=$pid
	while kill -0 "$pid" 2>/dev/null && ! grep -q '^=== LZCHAN-BEGIN' "$results" 2>/dev/null; do
		if [ $waited -ge "$BOOT_TIMEOUT" ]; then
			echo "# no /init after ${BOOT_TIMEOUT}s: stopping qemu; last console line: $(tail -n 1 "$console" 2>/dev/null | tr -d '\r')"
			pkill -KILL -P "$pid" 2>/dev/null
			kill -KILL "$pid" 2>/dev/null
			break
		fi
		sleep 1
		waited=$((waited + 1))
	done
	wait "$pid"
	local rc=$?
	qemu_pid=
	return $rc
}
# What counts as a kernel report: any outside the rig's deliberate-bug
# frames fails the run.  lockdep's and the other checkers' reports are
# matched by their own wording: a bare "lockdep" would match the boot
# banner "RCU lockdep checking is enabled".
bad='BUG:|WARNING:|Oops|Call Trace|general protection|kernel BUG|Kernel panic'
bad+='|possible circular locking|possible recursive locking|inconsistent lock state'
bad+='|possible irq lock inversion|suspicious RCU usage|DEBUG_LOCKS_WARN_ON|lock held when returning'
bad+='|bad unlock balance|held lock freed|INFO: lockdep is turned off'
bad+='|refcount_t:|UBSAN:|KASAN:|KFENCE:|ODEBUG:|list_add corruption|list_del corruption'
bad+='|scheduling while atomic|sleeping function called from invalid context|[Hh]ung task'
bad+='|soft lockup|hard LOCKUP|RCU stall|detected stalls? on CPU|self-detected stall|BUG kmalloc|Bad page'
# x86's oops headers for traps that say neither BUG nor Oops.
bad+='|int3: [0-9a-f]{4}|invalid opcode: [0-9a-f]{4}|divide error: [0-9a-f]{4}|stack segment: [0-9a-f]{4}'
# Software emulation very rarely kills a kernel during its own boot (seen
# once with 6.12: a fault in a crypto self-test thread, garbage EFLAGS).
# Only a guest that never reached /init is booted again: our module is not
# loaded before /init, so a retry cannot hide a fault of ours.
#
# The same emulator fault also struck once mid-test: EFLAGS loaded with a
# pointer's low bits right after a cmpxchg16b in the kernel's own kmalloc,
# trap flag set, hence a kernel-mode single-step trap (exc_debug_kernel)
# and a cascade of oopses.  Kernel code never single-steps itself without
# a debugger, so that one signature also earns a second boot; any other
# splat fails the run at once.
#
# It also showed as a double fault, RIP again in the kernel's allocator
# after a cmpxchg16b with garbage EFLAGS: a double fault whose RIP is not in
# lzchan earns the second boot too.  On a loaded machine the pre-/init
# death came twice in a row, so that case (which cannot involve us) gets
# up to BOOT_TRIES boots (5).
#
# And as an int3 trap in kernel code (seen once before /init, in
# __mod_timer, and once mid-test in the debug kernel, in interrupt
# context, where the panic said only "Fatal exception in interrupt"): the
# kernel puts int3 into its own text only while it patches an instruction
# (static keys, alternatives), and handles every such trap while it does;
# an unhandled one is the emulator running a stale translation of the
# patched code.  Not when its RIP is in lzchan.
#
# The emulator's fault earns its second boot only when it was the boot's
# first report: a report of anything before it fails the run as usual.
emulator_fault_line() {	# the line of the console's emulator fault, if any
	local n
	! grep -q 'RIP: .*\[lzchan\]' "$console" || return 1
	n=$(grep -n -m1 -E 'at arch/x86/kernel/traps.c:[0-9]* exc_debug_kernel|double fault|int3: [0-9a-f]{4}' \
		"$console" | cut -d: -f1)
	[ -n "$n" ] && echo "$n"
}
emulator_fault() {
	local n first
	n=$(emulator_fault_line) || return 1
	first=$(awk '/LZCHAN-RIGCHECK-BEGIN / { on = 1 } !on { print NR ": " $0 } /LZCHAN-RIGCHECK-END / { on = 0 }' \
		"$console" | grep -E -m1 "$bad" | cut -d: -f1)
	[ -z "$first" ] || [ "$first" -ge "$n" ]
}
boot
qrc=$?
tries=1
while ! grep -q '^=== LZCHAN-BEGIN' "$results" 2>/dev/null && [ $tries -lt "$BOOT_TRIES" ]; do
	cp "$console" "$vm/console-failed-boot.log"
	echo "# kernel did not reach /init (boot $tries, qemu status $qrc); console kept in $vm/console-failed-boot.log; booting again"
	grep -m1 -E 'Kernel panic|BUG:|Oops|general protection|int3:' "$console" | sed 's/^/#   /'
	boot
	qrc=$?
	tries=$((tries + 1))
done
if [ $tries -gt 1 ]; then
	:	# already booted again: a fault after /init now counts
elif emulator_fault; then
	cp "$console" "$vm/console-emulator-fault.log"
	cp "$results" "$vm/results-emulator-fault.log"
	echo "# emulator fault: a kernel-mode single-step trap (exc_debug_kernel), a double fault or an unhandled kernel int3, outside lzchan and before any other report (the emulator's garbage-EFLAGS and stale-code signatures); logs kept as $vm/*-emulator-fault.log; booting once more"
	sed -n "$(emulator_fault_line),+3p" "$console" | tr -d '\r' | sed 's/^/#   fault: /'
	# What that boot reported, so a real report before the fault shows.
	tr -d '\r' < "$console" | grep -E 'BUG:|WARNING:|UBSAN:|KASAN:|lzchan' |
		sed 's/^\[ *[0-9.]*\] //' | awk '!seen[$0]++' | head -n 10 | sed 's/^/#   discarded boot: /'
	boot
	qrc=$?
fi
[ $qrc = 0 ] || check "not ok" "qemu exited cleanly (status $qrc; 137 means it ran past ${QEMU_TIMEOUT}s)"

tr -d '\r' < "$results" > "$results.txt" 2>/dev/null || : > "$results.txt"
marker() { sed -n "s/^=== LZCHAN-$1 //p" "$results.txt" | head -n 1; }
status_check() {	# marker, description: marker's value 0 means ok
	local v
	v=$(marker "$1")
	if [ "$v" = 0 ]; then check ok "$2"; else check "not ok" "$2 (status '${v:-none}')"; fi
}

if grep -q '^=== LZCHAN-BEGIN' "$results.txt"; then
	check ok "kernel $KVER booted to /init"
else
	check "not ok" "kernel $KVER booted to /init"
	echo "# last lines of the console:"; tail -n 30 "$console" | sed 's/^/# /'
fi
nodes=$(marker NODES)
if [ "$nodes" = 2 ]; then check ok "two NUMA nodes"; else check "not ok" "two NUMA nodes (saw '${nodes:-none}')"; fi
status_check INSMOD "insmod lzchan.ko"
status_check DEVNODE "/dev/lzchan appears"
slow=$(marker SLOWDISK)
if [ "$slow" = /dev/vda ]; then
	check ok "slow disk (virtio-blk, $SLOW_IOPS requests/s) at $slow"
else
	check "not ok" "slow disk (virtio-blk, $SLOW_IOPS requests/s) appears (saw '${slow:-none}'; a stock kernel needs its modules from 'make deps')"
fi

# The suites, renamed <kernel>/<test>.
awk -v k="$name" '
	/^=== LZCHAN-SUITE / { insuite = 1; print "=== LZCHAN-SUITE " k "/" $3; next }
	/^=== LZCHAN-EXIT /  { insuite = 0; print; next }
	insuite { print }
' "$results.txt"

busy=$(marker RMMOD-BUSY)
if [ -n "$busy" ] && [ "$busy" != 0 ]; then
	check ok "rmmod refused while a mapping holds a channel"
else
	check "not ok" "rmmod refused while a mapping holds a channel (status '${busy:-none}')"
fi
for counter in CHANNELS PAGES; do
	v=$(marker $counter)
	if [ "$v" = 0 ]; then
		check ok "no ${counter,,} left once everything closed"
	else
		check "not ok" "no ${counter,,} left once everything closed (saw '${v:-none}')"
	fi
done
status_check RMMOD "rmmod lzchan"
status_check DEVGONE "/dev/lzchan gone after rmmod"
if grep -q '^=== LZCHAN-END' "$results.txt"; then
	check ok "VM ran to the end"
else
	check "not ok" "VM ran to the end"
fi

# Kernel log: the full dmesg the guest printed, plus the console.
sed -n '/^=== LZCHAN-DMESG/,/^=== LZCHAN-END/p' "$results.txt" > "$vm/dmesg.log"
tr -d '\r' < "$console" > "$vm/console.txt" 2>/dev/null || : > "$vm/console.txt"

# --- the debug kernel: kmemleak, and proof that every checker bites ---
rigchecks="lockdep atomic_sleep ubsan list odebug kasan double_free kfence"
declare -A expect=(
	[lockdep]='possible circular locking dependency detected'
	[atomic_sleep]='BUG: sleeping function called from invalid context'
	[ubsan]='UBSAN: shift-out-of-bounds'
	[list]='list_del corruption'
	[odebug]='ODEBUG: free active'
	[kasan]='BUG: KASAN: slab-out-of-bounds'
	[double_free]='BUG: KASAN: double-free'
	[kfence]='BUG: KFENCE: out-of-bounds read'
)
frame() {	# trigger, log: the lines between its BEGIN and END markers
	awk -v t="$1" '
		$0 ~ ("LZCHAN-RIGCHECK-END " t "( |$)") { on = 0 }
		on { print }
		$0 ~ ("LZCHAN-RIGCHECK-BEGIN " t "( |$)") { on = 1 }
	' "$2"
}
unframed() {	# log: everything outside the rig's deliberate-bug frames
	awk '/LZCHAN-RIGCHECK-BEGIN / { on = 1 } !on { print } /LZCHAN-RIGCHECK-END / { on = 0 }' "$1"
}
# kmemleak's report, one object per block.  An object is lzchan's when a
# frame of its allocation backtrace is in lzchan (by name while loaded, by
# address once unloaded: the scan runs after rmmod, and lzchan is then the
# only unloaded module whose code ran).
kmemleak_check() {
	local mod base=0 size=0 line obj="" ours=0 rig=0 n_ours=0 n_rig=0 n_other=0 a
	local -a ours_txt=() other_txt=()
	mod=$(marker MODULE)
	if [ -n "$mod" ]; then
		size=$(echo "$mod" | awk '{ print $2 }')
		base=$(echo "$mod" | awk '{ print $6 }')
	fi
	flush() {
		[ -n "$obj" ] || return 0
		# lzchan's wins: a frame of ours makes it our leak, whatever
		# else is in the backtrace.
		if [ $ours = 1 ]; then
			n_ours=$((n_ours + 1)); ours_txt+=("$obj")
		elif [ $rig = 1 ]; then
			n_rig=$((n_rig + 1))
		else
			n_other=$((n_other + 1)); other_txt+=("$obj")
		fi
		obj="" ours=0 rig=0
	}
	while IFS= read -r line; do
		case $line in
		"unreferenced object "*) flush; obj=$line ;;
		*) [ -n "$obj" ] && obj+=$'\n'"$line" ;;
		esac
		case $line in
		*"[lzchan]"*) ours=1 ;;
		*"rigcheck_leak_alloc+"*"[lzchan_rigcheck]"*) rig=1 ;;
		*"] 0x"*)
			a=0x${line##*] 0x}; a=${a%% *}
			if [[ $a =~ ^0x[0-9a-f]+$ ]] && [[ $base =~ ^0x[0-9a-f]+$ ]] &&
			   (( a >= base && a < base + size )); then
				ours=1
			fi ;;
		esac
	done < <(sed -n '/^=== LZCHAN-KMEMLEAK$/,/^=== LZCHAN-KMEMLEAK-END/p' "$results.txt")
	flush
	status_check KMEMLEAK-SCAN "kmemleak scan ran"
	if [ $n_rig -gt 0 ]; then
		check ok "kmemleak finds the rig's deliberate leak"
	else
		check "not ok" "kmemleak finds the rig's deliberate leak"
	fi
	if [ -n "$mod" ] && [ $n_ours = 0 ]; then
		check ok "kmemleak: no leak in lzchan ($n_other elsewhere in the kernel)"
	else
		check "not ok" "kmemleak: no leak in lzchan ($n_ours leaked objects; lzchan was '${mod:-not recorded}')"
		printf '%s\n' "${ours_txt[@]}" | head -n 60 | sed 's/^/#   /'
	fi
	if [ $n_other -gt 0 ]; then
		echo "# kmemleak: $n_other suspected leak(s) outside lzchan (the kernel's own; first shown):"
		printf '%s\n' "${other_txt[0]}" | head -n 30 | sed 's/^/#   /'
	fi
}
if [ -n "$DEBUG" ]; then
	if grep -q '^=== LZCHAN-RIG debug' "$results.txt"; then
		check ok "init ran the debug schedule"
	else
		check "not ok" "init ran the debug schedule (LZCHAN_RIG=debug not seen)"
	fi
	status_check RIGCHECK-INSMOD "insmod lzchan_rigcheck.ko"
	kmemleak_check
	for t in $rigchecks; do
		st=$(sed -n "s/^=== LZCHAN-RIGCHECK-STATUS $t //p" "$results.txt" | head -n 1)
		# grep reads it all (no -q): under pipefail, awk killed by
		# SIGPIPE after an early match would fail the check.
		if frame "$t" "$vm/dmesg.log" | grep -F "${expect[$t]}" >/dev/null; then
			check ok "the debug kernel reports a deliberate $t bug (${expect[$t]})"
		else
			check "not ok" "the debug kernel reports a deliberate $t bug (${expect[$t]}; trigger status '${st:-none}')"
			frame "$t" "$vm/dmesg.log" | head -n 20 | sed 's/^/#   /'
		fi
	done
	status_check RIGCHECK-RMMOD "rmmod lzchan_rigcheck"
fi

# Any report outside the deliberate frames fails the run (the pattern,
# $bad, is defined above the boot, which also reads it).
splat=$( { unframed "$vm/dmesg.log"; unframed "$vm/console.txt"; } | grep -E "$bad" |
	sed 's/^\[ *[0-9.]*\] //' | awk '!seen[$0]++' | head -n 20)
if [ -z "$splat" ] && [ -s "$vm/dmesg.log" ]; then
	check ok "kernel log clean"
else
	check "not ok" "kernel log clean"
	echo "# kernel log:"; printf '%s\n' "${splat:-(no dmesg captured)}" | sed 's/^/#   /'
	# The first report whole (its header, registers and trace): the
	# matching lines alone do not say where it happened.
	first=$(unframed "$vm/console.txt" | grep -n -m1 -E "$bad" | cut -d: -f1)
	if [ -n "$first" ]; then
		echo "# the first report on the console (kept in $vm/console.txt):"
		unframed "$vm/console.txt" | sed -n "$((first > 5 ? first - 5 : 1)),$((first + 60))p" |
			sed 's/^/#   /'
	fi
fi
finish
