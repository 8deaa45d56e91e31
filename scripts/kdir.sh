#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The kernel build directory lzchan.ko is built against by default: the
# running kernel's, when its headers are installed.
#
#   kdir.sh            print it; print nothing (exit 1) when there is none
#   kdir.sh --release DIR   the kernel release DIR builds for
#   kdir.sh --why      why there is none, and what to do (for make modules)
release() {	# what the module's vermagic will say (Debian's kernel.release differs)
	if [ -f "$1/include/generated/utsrelease.h" ]; then
		sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$1/include/generated/utsrelease.h"
	elif [ -f "$1/include/config/kernel.release" ]; then
		cat "$1/include/config/kernel.release"
	else
		make -s -C "$1" kernelrelease 2>/dev/null
	fi
}

running=/lib/modules/$(uname -r)/build
case "$1" in
--release)
	release "$2"
	;;
--why)
	echo "make modules: no kernel headers for the running kernel $(uname -r)" \
	     "($running is missing)."
	echo "  On Debian: apt-get install linux-headers-$(uname -r)"
	echo "  (a kernel Debian does not package needs its vendor's headers or build tree)."
	other=
	for d in $(ls -d /lib/modules/*/build 2>/dev/null | sort -V -r); do
		[ -f "$d/Makefile" ] && other="$other $d"
	done
	if [ -n "$other" ]; then
		echo "  To build for another kernel (its module will not load into this one):"
		for d in $other; do
			echo "    make modules KDIR=$d"
		done
	fi
	;;
*)
	[ -f "$running/Makefile" ] || exit 1
	echo "$running"
	;;
esac
