#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Prove the debug kernel catches the bugs it is there for: boot it once per
# deliberately broken copy of the module (selftests/vm/breakage/*.patch)
# and require that the run fails with the report the patch names.
#
#   scripts/rig-breakage.sh [PATCH...]     default: every patch
#
# Each patch's header names the report ("Expect:", an extended regex over
# vm-run.sh's output), the suites that reach the broken code ("Tests:") and
# optionally qemu's time limit ("Timeout:", seconds; for a bug that hangs
# the guest after its report, which the console log then holds).
# Needs 'make deps' (the debug kernel) and 'make lib selftests'.  Not part
# of 'make check' (each boot takes minutes); the building page has the
# results.  The working tree is never touched: each patch is applied to a
# copy of Kbuild and kmod/.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$top/.cache}
export CACHE
[ $# -gt 0 ] || set -- "$top"/selftests/vm/breakage/*.patch
[ -f "$CACHE/vm/debug/kernel.env" ] || { echo "rig-breakage: no debug kernel: run 'make deps'" >&2; exit 2; }

failed=0
for patch in "$@"; do
	name=$(basename "$patch" .patch)
	expect=$(sed -n 's/^Expect: //p' "$patch" | head -n 1)
	tests=$(sed -n 's/^Tests: //p' "$patch" | head -n 1)
	limit=$(sed -n 's/^Timeout: //p' "$patch" | head -n 1)
	tmp=$(mktemp -d)
	(cd "$top" && tar -c Kbuild kmod) | tar -x -C "$tmp"
	if ! patch -d "$tmp" -s -p1 < "$patch"; then
		echo "not ok - $name: the patch no longer applies to kmod/"
		failed=1; rm -rf "$tmp"; continue
	fi
	out=$CACHE/vm/breakage-$name.log
	LZCHAN_KMOD_SRC=$tmp LZCHAN_VM_TESTS=${tests:-lzchan_dev} \
		LZCHAN_VM_TIMEOUT=${limit:-${LZCHAN_VM_TIMEOUT:-600}} \
		"$top/scripts/vm-run.sh" debug > "$out" 2>&1
	rm -rf "$tmp"
	if ! grep -q '^not ok' "$out"; then
		echo "not ok - $name: the debug run passed with the bug in (log: $out)"
		failed=1
	elif ! grep -Eq "$expect" "$out"; then
		echo "not ok - $name: the run failed, but without /$expect/ (log: $out)"
		failed=1
	else
		echo "ok - $name: $(grep -Em1 -o "$expect" "$out")"
		grep '^not ok' "$out" | sed 's/^/#   /'
	fi
done
exit $failed
