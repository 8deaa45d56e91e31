#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The lzchan command: exit codes and messages.  Prints TAP.
# usage: lzchan_tool.sh PATH-TO-lzchan
tool=${1:?usage: $0 PATH-TO-lzchan}
n=0 failed=0
echo "TAP version 13"
echo "1..5"

check() { # description, then the test as a command
	desc=$1; shift
	n=$((n + 1))
	if "$@"; then echo "ok $n $desc"; else echo "not ok $n $desc"; failed=1; fi
}

out=$(mktemp); err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
run() { "$tool" "$@" >"$out" 2>"$err"; echo $? >"$out.rc"; }
rc() { cat "$out.rc"; }

run --version
check "--version prints the version" sh -c "[ $(rc) = 0 ] && grep -q '^lzchan [0-9]*\.[0-9]*$' '$out'"
run --help
check "--help exits 0 with usage" sh -c "[ $(rc) = 0 ] && grep -q '^usage:' '$out'"
run
check "no command is a usage error (2)" sh -c "[ $(rc) = 2 ] && grep -q '^usage:' '$err'"
run frobnicate
check "unknown command is a usage error (2)" sh -c "[ $(rc) = 2 ] && grep -q \"unknown command 'frobnicate'\" '$err'"
run features
if [ -e /dev/lzchan ]; then
	check "features reports the ABI" sh -c "[ $(rc) = 0 ] && grep -q '^abi_version 1$' '$out'"
else
	check "features without the module: ENOENT and how to load it" \
		sh -c "[ $(rc) = 1 ] && grep -q '(ENOENT).*modprobe lzchan' '$err'"
fi
rm -f "$out.rc"
exit $failed
