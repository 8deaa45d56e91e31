#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Install and cache everything lzchan's build and tests need, on Debian
# bookworm, as root.  Idempotent: a second run checks and returns quickly.
#
#   - build tools, libraries and qemu from Debian's archive (apt-get);
#   - the kselftest harness headers, from Debian's linux-source-6.1 tarball;
#   - the two kernels the VM rig boots, each with headers to build against:
#       bookworm: linux-image/headers-cloud-amd64 (6.1), headers on the host;
#       trixie:   the 6.12 cloud kernel, built against inside a debootstrap'd
#                 trixie root (its headers need gcc-14 and pahole).
#
# Everything downloaded or built lands under $CACHE (default .cache/).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$top/.cache}
MIRROR=${LZCHAN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
export DEBIAN_FRONTEND=noninteractive

say() { echo "deps: $*" >&2; }
die() { echo "deps: error: $*" >&2; exit 1; }

PKGS=(gcc make libc6-dev pkg-config kmod cpio xz-utils zstd
      linux-headers-cloud-amd64 linux-source-6.1
      qemu-system-x86 busybox-static debootstrap
      libnuma-dev libpapi-dev gnuplot-nox)
PKGS+=(dkms)	# the DKMS test, for the host's 6.1 headers
# The documentation checks: man -l, groff -ww, sphinx-build -W.
PKGS+=(man-db groff-base python3-sphinx)

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

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

# --- kselftest harness headers (not committed: extracted at build time) ---
ksft=$CACHE/kselftest
if [ ! -s "$ksft/kselftest_harness.h" ] || [ ! -s "$ksft/kselftest.h" ]; then
	tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1)
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

# Extract vmlinuz of image package $2 (downloaded in directory $1) into $3.
extract_vmlinuz() {
	local dir=$1 pkg=$2 dest=$3 kver=$4 x
	x=$(mktemp -d)
	dpkg-deb -x "$dir"/"$pkg"_*.deb "$x"
	mkdir -p "$(dirname "$dest")"
	cp "$x/boot/vmlinuz-$kver" "$dest.tmp" && mv "$dest.tmp" "$dest"
	rm -rf "$x"
}

# --- bookworm 6.1: headers on the host, image downloaded next to them ---
hdr=$(dpkg-query -W -f='${Depends}' linux-headers-cloud-amd64 | grep -o 'linux-headers-[^ ,]*')
kver_b=${hdr#linux-headers-}
kdir_b=/usr/src/$hdr
[ -f "$kdir_b/Makefile" ] || die "headers for $kver_b not found at $kdir_b"
vm_b=$CACHE/vm/bookworm
if [ ! -s "$CACHE/kernels/$kver_b/vmlinuz" ]; then
	say "fetching linux-image-$kver_b"
	dl=$(mktemp -d); chmod 755 "$dl"
	(cd "$dl" && apt-get download -qq "linux-image-$kver_b" >/dev/null 2>&1) ||
		(apt-get update -qq || true; cd "$dl" && apt-get download -qq "linux-image-$kver_b") ||
		die "cannot download linux-image-$kver_b"
	extract_vmlinuz "$dl" "linux-image-$kver_b" "$CACHE/kernels/$kver_b/vmlinuz" "$kver_b"
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
kver_t=$(ls "$root/lib/modules" | head -n 1)
[ -n "$kver_t" ] || die "no kernel headers in $root"
vm_t=$CACHE/vm/trixie
if [ ! -s "$CACHE/kernels/$kver_t/vmlinuz" ]; then
	say "fetching linux-image-$kver_t"
	chroot "$root" sh -c "rm -rf /tmp/dl && mkdir -p /tmp/dl && chmod 755 /tmp/dl && cd /tmp/dl && \
		(apt-get download -qq linux-image-$kver_t || (apt-get update -qq && apt-get download -qq linux-image-$kver_t))" \
		>/dev/null 2>&1 || die "cannot download linux-image-$kver_t in the trixie root"
	extract_vmlinuz "$root/tmp/dl" "linux-image-$kver_t" "$CACHE/kernels/$kver_t/vmlinuz" "$kver_t"
	rm -rf "$root/tmp/dl"
fi
mkdir -p "$vm_t"
printf 'KVER=%s\nKDIR=/usr/src/linux-headers-%s\nVMLINUZ=%s\nROOT=%s\n' "$kver_t" \
	"$kver_t" "$CACHE/kernels/$kver_t/vmlinuz" "$root" > "$vm_t/kernel.env"

say "ok: bookworm $kver_b, trixie $kver_t"
