#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build (once) and cache the VM rig's debug kernel: Debian's linux-source-6.1
# with x86_64_defconfig + kvm_guest.config + selftests/vm/debug.config
# (KASAN, lockdep, KFENCE, UBSAN, kmemleak, DEBUG_VM/LIST/OBJECTS, ...).
#
#   scripts/debug-kernel.sh          build if needed, then write
#                                    $CACHE/vm/debug/kernel.env for vm-run.sh
#
# The build lives OUTSIDE the clone, in $LZCHAN_RIG_CACHE (default
# /var/cache/lzchan-rig), keyed by the source package's version, the
# compiler's version and a hash of the config fragment, so every clone on
# the machine (CI's included) shares one build.  A build takes about 20
# minutes with 2 CPUs; a cached one is found in well under a second.  Only
# a finished build (the .ready marker) is used; an interrupted one is
# started again from scratch; a flock keeps two builds from racing.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$top/.cache}
RIG=${LZCHAN_RIG_CACHE:-/var/cache/lzchan-rig}
frag=$top/selftests/vm/debug.config

say() { echo "debug-kernel: $*" >&2; }
die() { echo "debug-kernel: error: $*" >&2; exit 1; }

srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null) ||
	die "linux-source-6.1 is not installed (run 'make deps')"
tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1) || true
[ -n "$tarball" ] || die "linux-source-6.1 tarball not found in /usr/src"
for t in flex bison bc gcc make; do
	command -v "$t" >/dev/null || die "$t missing (run 'make deps')"
done
ccver=$(gcc -dumpfullversion)
# Bump RECIPE ("2", "3", ...) whenever the build steps below change in a way
# that changes the result: it is part of the key, so every cache rebuilds.
RECIPE=
hash=$( { echo "$srcver"; echo "gcc $ccver"; cat "$frag"
	  [ -z "$RECIPE" ] || echo "recipe $RECIPE"; } | sha256sum | cut -c1-12)
key=debug-$srcver-$hash
dir=$RIG/$key
build=$dir/build

mkdir -p "$RIG" 2>/dev/null || die "cannot create $RIG (run 'make deps' as root, or set LZCHAN_RIG_CACHE)"
# A read-only descriptor is enough for flock, so a cached build can be used
# by someone who cannot write the cache.
[ -e "$RIG/.lock" ] || : > "$RIG/.lock" || die "cannot write $RIG"
exec 9< "$RIG/.lock"
flock 9

if [ ! -f "$dir/.ready" ]; then
	say "building $key in $dir (about 20 minutes with 2 CPUs; cached afterwards)"
	start=$(date +%s)
	rm -rf "$dir"
	mkdir -p "$dir/src" "$build"
	tar -xf "$tarball" -C "$dir/src" --strip-components=1
	kmake() { make -C "$dir/src" O="$build" "$@"; }
	kmake -s x86_64_defconfig kvm_guest.config > "$dir/config.log" 2>&1
	"$dir/src/scripts/kconfig/merge_config.sh" -m -O "$build" \
		"$build/.config" "$frag" >> "$dir/config.log" 2>&1
	kmake -s olddefconfig >> "$dir/config.log" 2>&1
	# Every symbol the fragment sets must have stuck.
	bad=0
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*) want=$line ;;
		"# CONFIG_"*" is not set") want=$line ;;
		*) continue ;;
		esac
		sym=${want#\# }; sym=${sym%%[= ]*}
		got=$(grep -E "^($sym=|# $sym is not set)" "$build/.config" || true)
		# A symbol that is off and absent (its menu is off) is fine.
		if [ "$got" != "$want" ] && ! { [ -z "$got" ] && [ "${want#\#}" != "$want" ]; }; then
			say "config: wanted '$want', got '${got:-absent}'"
			bad=1
		fi
	done < "$frag"
	[ $bad = 0 ] || die "the config fragment did not apply (see above, $dir/config.log)"
	say "compiling (log: $dir/build.log)"
	if ! kmake -j"$(nproc)" bzImage modules > "$dir/build.log" 2>&1; then
		tail -n 40 "$dir/build.log" >&2
		die "kernel build failed (log: $dir/build.log)"
	fi
	# Out-of-tree modules need the tree, not the objects: keep it small.
	find "$build" -name '*.o' ! -path '*/scripts/*' ! -path '*/tools/*' -delete
	rm -f "$build/vmlinux.o" "$build/vmlinux.a"
	echo "$(( $(date +%s) - start ))" > "$dir/build-seconds"
	touch "$dir/.ready"
	say "built in $(cat "$dir/build-seconds") s"
	# Older keys (another fragment or source version): keep the newest
	# one besides this (another clone or branch may still use it).
	ls -dt "$RIG"/debug-* | grep -vxF "$dir" | tail -n +2 | xargs -r rm -rf || true
fi

kver=$(make -s -C "$dir/src" O="$build" kernelrelease 2>/dev/null | tail -n 1)
[ -n "$kver" ] || die "cannot read the kernel release of $build"
mkdir -p "$CACHE/vm/debug"
printf 'KVER=%s\nKDIR=%s\nVMLINUZ=%s\nROOT=\nDEBUG=1\n' "$kver" "$build" \
	"$build/arch/x86/boot/bzImage" > "$CACHE/vm/debug/kernel.env"
say "ok: $kver ($key)"
