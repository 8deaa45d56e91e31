#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Install and cache everything lzchan's build and tests need, on Debian
# bookworm, as root.  Idempotent: a second run checks and returns quickly.
#
#   - build tools, libraries and qemu from Debian's archive (apt-get);
#   - the kselftest harness headers, from Debian's linux-source-6.1 tarball;
#   - the four kernels the VM rig boots, each with headers to build against:
#       bookworm: linux-image/headers-cloud-amd64 (6.1), headers on the host;
#       trixie:   the 6.12 cloud kernel, built against inside a debootstrap'd
#                 trixie root (its headers need gcc-14 and pahole);
#       trixie-backports: the newest cloud kernel of trixie-backports (7.3
#                 when this was written), headers in the same trixie root;
#                 the backports suite is added to that root only, never to
#                 the host's apt sources;
#       debug:    Debian's linux-source-6.1 built with KASAN, lockdep,
#                 KFENCE, UBSAN, kmemleak and friends (scripts/debug-kernel.sh;
#                 cached outside the clone, in /var/cache/lzchan-rig).
#
# Everything else downloaded or built lands under $CACHE (default .cache/).
#
#   LZCHAN_KERNELS="bookworm trixie trixie-backports debug"   the kernels to
#   prepare (as for scripts/check.sh); bookworm and trixie are always prepared.
#
#   deps.sh --userspace   only the packages the library and the tools need
#   (make run): quick, no kernels.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$top/.cache}
MIRROR=${LZCHAN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
export DEBIAN_FRONTEND=noninteractive

say() { echo "deps: $*" >&2; }
die() { echo "deps: error: $*" >&2; exit 1; }

# What the library and the tools need to build (make run): the same
# packages 'make check' installs, without kernels, qemu or documentation.
USER_PKGS=(gcc make libc6-dev pkg-config libnuma-dev libpapi-dev libucx-dev libsodium-dev)
userspace=
if [ "${1:-}" = --userspace ]; then
	userspace=1
fi

PKGS=(gcc make libc6-dev pkg-config kmod cpio xz-utils zstd
      linux-headers-cloud-amd64 linux-source-6.1
      qemu-system-x86 busybox-static debootstrap
      libnuma-dev libpapi-dev gnuplot-nox)
# lzchan-bench ipm counts instructions per message with callgrind.
PKGS+=(valgrind)
PKGS+=(dkms)	# the DKMS test, for the host's 6.1 headers
# The documentation checks: man -l, groff -ww, sphinx-build -W.
PKGS+=(man-db groff-base python3-sphinx)
# The debug kernel's build (scripts/debug-kernel.sh).
PKGS+=(flex bison bc libelf-dev libssl-dev)
# The public header, compiled as C++ users compile it (lzchan_header.sh).
PKGS+=(g++)
# The bridge between hosts (tools/bridge): UCX and libsodium; its tests
# run hosts as network namespaces (ip) and compare with ucx_perftest.
PKGS+=(libucx-dev libsodium-dev ucx-utils iproute2)
# The bridge's WireGuard deployment, tested end to end in the VM rig
# (selftests/lzchan_bridge_wg_vm.sh): wg and ip go into the initramfs.
PKGS+=(wireguard-tools)
# iceoryx classic, which lzchan-bench pubsub runs beside lzchan's
# pub/sub (its C binding and RouDi daemon; Debian bookworm's 2.0.3).
PKGS+=(iceoryx libiceoryx-binding-c-dev)
kernels=${LZCHAN_KERNELS-bookworm trixie trixie-backports debug}
wants() { case " $kernels " in *" $1 "*) return 0 ;; esac; return 1; }

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

[ -z "$userspace" ] || PKGS=("${USER_PKGS[@]}")
missing=()
for p in "${PKGS[@]}"; do
	installed "$p" || missing+=("$p")
done
if ((${#missing[@]})); then
	[ "$(id -u)" = 0 ] || die "missing packages: ${missing[*]} (run 'make deps' as root, or install them)"
	say "installing ${missing[*]}"
	# A stale or unreachable third-party source must not stop us: the
	# install below fails clearly if Debian's archive itself is missing.
	apt-get -o Acquire::Retries=3 update -qq || say "warning: apt-get update reported errors"
	apt-get -o Acquire::Retries=3 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ -z "$userspace" ] || exit 0

# --- kselftest harness headers (not committed: extracted at build time) ---
ksft=$CACHE/kselftest
if [ ! -s "$ksft/kselftest_harness.h" ] || [ ! -s "$ksft/kselftest.h" ]; then
	tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1) || true
	[ -n "$tarball" ] || die "linux-source-6.1 tarball not found in /usr/src"
	say "extracting kselftest headers from $tarball"
	tmp=$(mktemp -d)
	tar -xf "$tarball" -C "$tmp" --wildcards \
		'*/tools/testing/selftests/kselftest_harness.h' \
		'*/tools/testing/selftests/kselftest.h'
	mkdir -p "$ksft"
	cp "$tmp"/*/tools/testing/selftests/kselftest*.h "$ksft/"
	rm -rf "$tmp"
fi

# The modules the VM rig's slow disk needs (a virtio-blk PCI device), for
# the Debian kernels that build them as modules (6.1: virtio, virtio_pci
# and virtio_blk; 6.12 and 7.x: virtio_blk alone), and the bridge's
# WireGuard test's (veth pairs between namespaces, wireguard).  What a
# kernel has built in has no file and is skipped.
RIG_MODULES="virtio_pci virtio_blk veth wireguard"

# Copy the modules of kernel $2 named in RIG_MODULES, with everything they
# depend on, from the unpacked packages in $1 into $3/, decompressed
# (busybox's insmod in the initramfs reads plain ELF only), and write their
# load order, dependencies first, to $3/load.  The packages carry no
# modules.dep (depmod writes it when the package is installed); it is made
# of the same thing, each module's "depends" field, which modinfo reads.
extract_modules() {
	local x=$1 kver=$2 dest=$3 mdir="" d f n m
	local -A path=() seen=()
	local -a order=()
	for d in "$x/lib/modules/$kver" "$x/usr/lib/modules/$kver"; do
		[ -d "$d/kernel" ] && mdir=$d
	done
	[ -n "$mdir" ] || die "no modules of $kver in its packages"
	while IFS= read -r f; do
		n=${f##*/}; n=${n%%.ko*}
		path[${n//-/_}]=$f
	done < <(find "$mdir/kernel" -name '*.ko*')
	add_module() {	# dependencies first; a name without a file is built in
		local m=$1 dep
		[ -z "${seen[$m]:-}" ] || return 0
		seen[$m]=1
		[ -n "${path[$m]:-}" ] || return 0
		for dep in $(modinfo -F depends "${path[$m]}" | tr ',' ' '); do
			add_module "${dep//-/_}"
		done
		order+=("$m")
	}
	for m in $RIG_MODULES; do
		add_module "$m"
	done
	rm -rf "$dest.tmp" && mkdir -p "$dest.tmp" || die "cannot write $dest.tmp"
	for m in "${order[@]}"; do
		f=${path[$m]}
		case $f in
		*.ko.xz) xz -dc "$f" ;;
		*.ko.zst) zstd -qdc "$f" ;;
		*.ko.gz) gzip -dc "$f" ;;
		*) cat "$f" ;;
		esac > "$dest.tmp/$m.ko" || die "cannot decompress $f"
		echo "$m.ko" >> "$dest.tmp/load"
	done
	touch "$dest.tmp/load"
	echo "$RIG_MODULES" > "$dest.tmp/wanted"
	rm -rf "$dest" && mv "$dest.tmp" "$dest" || die "cannot write $dest"
}

# Extract the vmlinuz of kernel $4 from the packages downloaded in $1 into
# $3 ($2, the image package, names the kernel in messages), and the slow
# disk's modules into modules/ beside it.  Up to 6.x the image package
# holds /boot/vmlinuz-KVER and the modules; from 7.x Debian ships the
# former as /usr/lib/modules/KVER/vmlinuz in linux-binary-KVER and the
# latter in linux-modules-KVER, both of which the image package depends on.
extract_kernel() {
	local dir=$1 pkg=$2 dest=$3 kver=$4 x deb f
	x=$(mktemp -d)
	for deb in "$dir"/*.deb; do
		dpkg-deb -x "$deb" "$x" || die "cannot unpack $deb"
	done
	mkdir -p "$(dirname "$dest")"
	for f in "$x/boot/vmlinuz-$kver" "$x/usr/lib/modules/$kver/vmlinuz"; do
		if [ -s "$f" ]; then
			cp "$f" "$dest.tmp" && mv "$dest.tmp" "$dest" || die "cannot write $dest"
			break
		fi
	done
	[ -s "$dest" ] || die "no vmlinuz for $kver in $pkg (nor in linux-binary-$kver)"
	extract_modules "$x" "$kver" "$(dirname "$dest")/modules"
	rm -rf "$x"
}

# Is kernel $1's cache complete (vmlinuz, and the modules of RIG_MODULES:
# a cache made for another list -- before the slow disk, before WireGuard --
# is filled in again)?
kernel_cached() {
	[ -s "$CACHE/kernels/$1/vmlinuz" ] && [ -f "$CACHE/kernels/$1/modules/load" ] &&
		[ "$(cat "$CACHE/kernels/$1/modules/wanted" 2>/dev/null)" = "$RIG_MODULES" ]
}

# --- bookworm 6.1: headers on the host, image downloaded next to them ---
hdr=$(dpkg-query -W -f='${Depends}' linux-headers-cloud-amd64 | grep -o 'linux-headers-[^ ,]*')
kver_b=${hdr#linux-headers-}
kdir_b=/usr/src/$hdr
[ -f "$kdir_b/Makefile" ] || die "headers for $kver_b not found at $kdir_b"
vm_b=$CACHE/vm/bookworm
if ! kernel_cached "$kver_b"; then
	say "fetching linux-image-$kver_b"
	dl=$(mktemp -d); chmod 755 "$dl"
	(cd "$dl" && apt-get download -qq "linux-image-$kver_b" >/dev/null 2>&1) ||
		(apt-get update -qq || true; cd "$dl" && apt-get download -qq "linux-image-$kver_b") ||
		die "cannot download linux-image-$kver_b"
	extract_kernel "$dl" "linux-image-$kver_b" "$CACHE/kernels/$kver_b/vmlinuz" "$kver_b"
	rm -rf "$dl"
fi
mkdir -p "$vm_b"
printf 'KVER=%s\nKDIR=%s\nVMLINUZ=%s\nROOT=\n' "$kver_b" "$kdir_b" \
	"$CACHE/kernels/$kver_b/vmlinuz" > "$vm_b/kernel.env"

# --- trixie 6.12: a debootstrap'd root holds gcc-14, pahole and headers ---
root=$CACHE/trixie-root
if [ ! -f "$root/.lzchan-ready" ]; then
	[ "$(id -u)" = 0 ] || die "building the trixie root needs root"
	say "debootstrap trixie into $root (about a minute)"
	rm -rf "$root"
	debootstrap --variant=minbase \
		--include=gcc-14,make,libc6-dev,dwarves,linux-headers-cloud-amd64 \
		trixie "$root" "$MIRROR" > "$CACHE/debootstrap.log" 2>&1 ||
		die "debootstrap failed; see $CACHE/debootstrap.log"
	touch "$root/.lzchan-ready"
fi
# Debian's dkms in the trixie root, for the DKMS test (selftests/lzchan_dkms.sh).
if [ ! -x "$root/usr/sbin/dkms" ]; then
	[ "$(id -u)" = 0 ] || die "installing dkms in the trixie root needs root"
	say "installing dkms in $root"
	chroot "$root" sh -c 'export DEBIAN_FRONTEND=noninteractive;
		apt-get -o Acquire::Retries=3 update -qq &&
		apt-get -o Acquire::Retries=3 install -y -qq --no-install-recommends dkms' \
		> "$CACHE/dkms-root.log" 2>&1 ||
		die "cannot install dkms in $root; see $CACHE/dkms-root.log"
fi
# Download linux-image-$1 inside the trixie root and extract its vmlinuz
# and the slow disk's modules (7.x: from linux-binary and linux-modules).
root_image() {
	local kver=$1
	kernel_cached "$kver" && return 0
	say "fetching linux-image-$kver"
	chroot "$root" sh -c "rm -rf /tmp/dl && mkdir -p /tmp/dl && chmod 755 /tmp/dl && cd /tmp/dl && \
		(apt-get download -qq linux-image-$kver || (apt-get update -qq && apt-get download -qq linux-image-$kver)) && \
		{ dpkg-deb -c linux-image-*.deb | grep -q vmlinuz || apt-get download -qq linux-binary-$kver; } && \
		{ dpkg-deb -c linux-image-*.deb | grep -q '\\.ko' || apt-get download -qq linux-modules-$kver; }" \
		>/dev/null 2>&1 || die "cannot download linux-image-$kver in the trixie root"
	extract_kernel "$root/tmp/dl" "linux-image-$kver" "$CACHE/kernels/$kver/vmlinuz" "$kver"
	rm -rf "$root/tmp/dl"
}

# The root's own (trixie) headers: the version its metapackage depends on.
kver_t=$(chroot "$root" dpkg-query -W -f='${Depends}' linux-headers-cloud-amd64 |
	grep -o 'linux-headers-[^ ,]*' | head -n 1)
kver_t=${kver_t#linux-headers-}
[ -n "$kver_t" ] && [ -d "$root/usr/src/linux-headers-$kver_t" ] || die "no trixie kernel headers in $root"
vm_t=$CACHE/vm/trixie
root_image "$kver_t"
mkdir -p "$vm_t"
printf 'KVER=%s\nKDIR=/usr/src/linux-headers-%s\nVMLINUZ=%s\nROOT=%s\n' "$kver_t" \
	"$kver_t" "$CACHE/kernels/$kver_t/vmlinuz" "$root" > "$vm_t/kernel.env"

# --- trixie-backports: the newest Debian kernel, headers in the same root ---
summary="bookworm $kver_b, trixie $kver_t"
if wants trixie-backports; then
	bpo=$CACHE/vm/trixie-backports
	list=$root/etc/apt/sources.list.d/trixie-backports.list
	line="deb $MIRROR trixie-backports main"
	if [ ! -f "$bpo/kernel.env" ] || [ "$(cat "$list" 2>/dev/null)" != "$line" ]; then
		[ "$(id -u)" = 0 ] || die "adding trixie-backports to the trixie root needs root"
		echo "$line" > "$list"
		chroot "$root" apt-get -o Acquire::Retries=3 update -qq > "$CACHE/backports.log" 2>&1 ||
			die "apt-get update in the trixie root failed; see $CACHE/backports.log"
		# The newest cloud headers trixie-backports has, by exact name: the
		# metapackage itself stays trixie's (6.12), or kver_t would move.
		v=$(chroot "$root" apt-cache madison linux-headers-cloud-amd64 |
			awk -F'|' '/trixie-backports/ { gsub(/ /, "", $2); print $2; exit }')
		[ -n "$v" ] || die "trixie-backports has no linux-headers-cloud-amd64"
		pkg=$(chroot "$root" apt-cache show "linux-headers-cloud-amd64=$v" |
			sed -n 's/^Depends:.*\(linux-headers-[0-9][^ ,]*-cloud-amd64\).*/\1/p' | head -n 1)
		[ -n "$pkg" ] || die "cannot find the headers package of linux-headers-cloud-amd64 $v"
		kver_p=${pkg#linux-headers-}
		if [ ! -d "$root/usr/src/$pkg" ]; then
			say "installing $pkg in $root"
			chroot "$root" sh -c "export DEBIAN_FRONTEND=noninteractive;
				apt-get -o Acquire::Retries=3 install -y -qq --no-install-recommends $pkg" \
				>> "$CACHE/backports.log" 2>&1 ||
				die "cannot install $pkg in $root; see $CACHE/backports.log"
		fi
		root_image "$kver_p"
		mkdir -p "$bpo"
		printf 'KVER=%s\nKDIR=/usr/src/linux-headers-%s\nVMLINUZ=%s\nROOT=%s\n' "$kver_p" \
			"$kver_p" "$CACHE/kernels/$kver_p/vmlinuz" "$root" > "$bpo/kernel.env"
	fi
	# A cache from before the slow disk has its vmlinuz but no modules.
	root_image "$(sed -n 's/^KVER=//p' "$bpo/kernel.env")"
	summary="$summary, trixie-backports $(sed -n 's/^KVER=//p' "$bpo/kernel.env")"
fi

# --- debug: our own build of 6.1 with the checkers (cached outside) ---
if wants debug; then
	CACHE=$CACHE "$top/scripts/debug-kernel.sh"
	summary="$summary, debug $(sed -n 's/^KVER=//p' "$CACHE/vm/debug/kernel.env")"
fi

# --- a fresh Debian machine for the first-run test (selftests/lzchan_firstrun.sh):
# bookworm with gcc, make and git and nothing else, as a tarball kept
# outside the clone (unpacked anew for every run, so it stays fresh) ---
RIG=${LZCHAN_RIG_CACHE:-/var/cache/lzchan-rig}
fresh=$RIG/fresh-bookworm-gcc-make-git.tar
if [ ! -s "$fresh" ]; then
	[ "$(id -u)" = 0 ] || die "building the fresh-machine image needs root"
	mkdir -p "$RIG" || die "cannot create $RIG (or set LZCHAN_RIG_CACHE)"
	say "debootstrap a fresh bookworm (gcc, make, git) for the first-run test"
	x=$(mktemp -d)
	debootstrap --variant=minbase --include=gcc,make,git,libc6-dev \
		bookworm "$x" "$MIRROR" > "$CACHE/fresh.log" 2>&1 ||
		die "debootstrap failed; see $CACHE/fresh.log"
	rm -rf "$x"/var/cache/apt/archives/*.deb "$x"/var/lib/apt/lists/*
	tar -C "$x" -cf "$fresh.tmp" . && mv "$fresh.tmp" "$fresh" || die "cannot write $fresh"
	rm -rf "$x"
fi
summary="$summary, fresh machine $(du -h "$fresh" | cut -f1)"

say "ok: $summary"
