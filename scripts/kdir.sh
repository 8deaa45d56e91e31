#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Print the kernel build directory to build lzchan.ko against: the running
# kernel's if its headers are installed, else the newest installed headers.
running=/lib/modules/$(uname -r)/build
if [ -f "$running/Makefile" ]; then
	echo "$running"
	exit 0
fi
for d in $(ls -d /lib/modules/*/build 2>/dev/null | sort -V -r); do
	if [ -f "$d/Makefile" ]; then
		echo "$d"
		exit 0
	fi
done
