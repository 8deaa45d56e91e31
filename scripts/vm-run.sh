#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The VM rig: boot one distribution kernel under qemu with a freshly built
# lzchan.ko and the selftests in an initramfs, and report in TAP.
#
#   scripts/vm-run.sh bookworm|trixie
#
# Needs 'make deps' (kernels, trixie root) and 'make lib selftests' first.
# Prints a stream of suites ("=== LZCHAN-SUITE name", TAP, "=== LZCHAN-EXIT
# rc") that scripts/tap-summary.awk totals; the rig's own checks (module
# load/unload, NUMA nodes, a clean kernel log) form the suite "<kernel>/vm".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$top/.cache}
name=${1:?usage: vm-run.sh bookworm|trixie}
vm=$CACHE/vm/$name
QEMU_TIMEOUT=${LZCHAN_VM_TIMEOUT:-900}

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

[ -f "$vm/kernel.env" ] || fail_early "kernel '$name' prepared (run 'make deps': $vm/kernel.env missing)"
# shellcheck disable=SC1091
. "$vm/kernel.env"
[ -s "$VMLINUZ" ] || fail_early "kernel image present ($VMLINUZ missing: run 'make deps')"
command -v qemu-system-x86_64 >/dev/null || fail_early "qemu-system-x86_64 installed (run 'make deps')"

# --- build lzchan.ko for this kernel from a clean copy of the sources ---
src_copy() {	# copy the module's sources (no build products) into $1
	mkdir -p "$1"
	(cd "$top" && tar -c --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' \
		--exclude='*.mod' --exclude='*.mod.c' --exclude=modules.order \
		--exclude=Module.symvers Kbuild kmod) | tar -x -C "$1"
}
if [ -n "$ROOT" ]; then
	bsrc=$ROOT/build/lzchan
	src_copy "$bsrc"
	chroot "$ROOT" make -C "$KDIR" M=/build/lzchan modules > "$vm/build.log" 2>&1
else
	bsrc=$vm/src
	src_copy "$bsrc"
	make -C "$KDIR" M="$bsrc" modules > "$vm/build.log" 2>&1
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

# --- initramfs: busybox, /init, the module, the tests ---
mapfile -t tests < <(grep -v '^#' "$top/selftests/vm/tests")
initrd=$vm/initramfs
rm -rf "$initrd" && mkdir -p "$initrd"/{bin,proc,sys,dev,tests}
cp /bin/busybox "$initrd/bin/busybox"
cp "$top/selftests/vm/init" "$initrd/init"
cp "$bsrc/kmod/lzchan.ko" "$initrd/lzchan.ko"
cp "$top/selftests/settings" "$initrd/tests/"
cp "$top/selftests/lzchan_hold" "$initrd/tests/" || fail_early "lzchan_hold built (run 'make selftests')"
cp "$top/selftests/lzchan-static" "$initrd/tests/" || fail_early "lzchan-static built (run 'make selftests')"
for t in "${tests[@]}"; do
	[ -x "$top/selftests/$t" ] || fail_early "selftest $t built (run 'make selftests')"
	cp "$top/selftests/$t" "$initrd/tests/"
done
printf '%s\n' "${tests[@]}" > "$initrd/tests/list"
(cd "$initrd" && find . | cpio -o -H newc --quiet) > "$vm/initramfs.cpio"

# --- boot: 2 vCPUs, one socket per NUMA node (a socket split across nodes
# makes the kernel WARN about topology), 1 GiB per node ---
console=$vm/console.log results=$vm/results.log
boot() {
	rm -f "$console" "$results"
	echo "vm-run: booting $KVER under qemu (software emulation)" >&2
	timeout -s KILL "$QEMU_TIMEOUT" qemu-system-x86_64 \
		-accel tcg,thread=multi -cpu max -smp 2,sockets=2,cores=1,threads=1 -m 2048 \
		-object memory-backend-ram,id=mem0,size=1024M \
		-object memory-backend-ram,id=mem1,size=1024M \
		-numa node,nodeid=0,cpus=0,memdev=mem0 \
		-numa node,nodeid=1,cpus=1,memdev=mem1 \
		-kernel "$VMLINUZ" -initrd "$vm/initramfs.cpio" \
		-append "console=ttyS0 panic=-1 loglevel=7" \
		-display none -monitor none -nic none -no-reboot \
		-serial "file:$console" -serial "file:$results" </dev/null
}
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
# up to three boots.
emulator_double_fault() {
	grep -q 'double fault' "$console" && ! grep -q 'RIP: .*\[lzchan\]' "$console"
}
boot
qrc=$?
tries=1
while ! grep -q '^=== LZCHAN-BEGIN' "$results" 2>/dev/null && [ $tries -lt 3 ]; do
	cp "$console" "$vm/console-failed-boot.log"
	echo "# kernel died before /init (status $qrc); console kept in $vm/console-failed-boot.log; booting again"
	grep -m1 -E 'Kernel panic|BUG:|Oops|general protection' "$console" | sed 's/^/#   /'
	boot
	qrc=$?
	tries=$((tries + 1))
done
if [ $tries -gt 1 ]; then
	:	# already booted again: a fault after /init now counts
elif grep -q 'at arch/x86/kernel/traps.c:[0-9]* exc_debug_kernel' "$console" || emulator_double_fault; then
	cp "$console" "$vm/console-emulator-fault.log"
	cp "$results" "$vm/results-emulator-fault.log"
	echo "# emulator fault: a kernel-mode single-step trap (exc_debug_kernel) or a double fault outside lzchan, the emulator's garbage-EFLAGS signature; logs kept as $vm/*-emulator-fault.log; booting once more"
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
bad='BUG:|WARNING:|Oops|Call Trace|general protection|kernel BUG|possible circular locking|possible recursive locking|inconsistent lock state|lockdep|refcount_t:|UBSAN:|KASAN:|list_add corruption|list_del corruption|scheduling while atomic|sleeping function called from invalid context|[Hh]ung task|soft lockup|hard LOCKUP|RCU stall|BUG kmalloc|Bad page'
splat=$(cat "$vm/dmesg.log" "$console" 2>/dev/null | tr -d '\r' | grep -E "$bad" | sed 's/^\[ *[0-9.]*\] //' | awk '!seen[$0]++' | head -n 20)
if [ -z "$splat" ] && [ -s "$vm/dmesg.log" ]; then
	check ok "kernel log clean"
else
	check "not ok" "kernel log clean"
	echo "# kernel log:"; printf '%s\n' "${splat:-(no dmesg captured)}" | sed 's/^/#   /'
fi
finish
