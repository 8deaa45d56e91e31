#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Run every test suite and print one verdict (called by 'make check' after
# 'make deps' and the build):
#   host suites: libchan and the tools, no module needed;
#   VM suites:   the module and libchan on Debian's 6.1, 6.12 and 7.3
#                (trixie-backports) kernels and on the project's debug
#                build of 6.1 (KASAN, lockdep, kmemleak, ...): scripts/vm-run.sh.
# Each suite's TAP is printed as it runs; the last line is
# "N passed, N failed, N skipped".  A VM that cannot run counts as failed.
#
#   LZCHAN_KERNELS="bookworm trixie trixie-backports debug"   which VM
#   kernels to boot (the default; make deps reads the same variable)
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$top/.cache}
export CACHE
kernels=${LZCHAN_KERNELS-bookworm trixie trixie-backports debug}
mkdir -p "$CACHE"

suite() {	# name, command...: run one host suite framed for tap-summary.awk
	local name=$1; shift
	echo "=== LZCHAN-SUITE $name"
	(cd "$top/selftests" && timeout -s KILL 600 "$@") 2>&1
	echo "=== LZCHAN-EXIT $?"
}

{
	suite host/lzchan_api ./lzchan_api
	suite host/lzchan_stress ./lzchan_stress
	suite host/lzchan_hostile ./lzchan_hostile
	suite host/lzchan_threads ./lzchan_threads
	suite host/lzchan_stat ./lzchan_stat
	suite host/lzchan_shm ./lzchan_shm
	suite host/lzchan_pubsub ./lzchan_pubsub
	# ... and the library's calls for every message (LZCHAN_NO_INLINE).
	suite host/noinline/lzchan_api ./noinline/lzchan_api
	suite host/noinline/lzchan_stress ./noinline/lzchan_stress
	suite host/noinline/lzchan_shm ./noinline/lzchan_shm
	suite host/noinline/lzchan_pubsub ./noinline/lzchan_pubsub
	suite host/noinline/lzchan_hostile ./noinline/lzchan_hostile
	suite host/lzchan_header sh ./lzchan_header.sh "$top"
	suite host/lzchan_floors sh ./lzchan_floors.sh "$top"
	# The library under the sanitizers: ASan+UBSan for the calls, the
	# stress, the hostile peer and the shm backend; TSan for the threads.
	suite host/asan/lzchan_api ./san/lzchan_api.asan
	suite host/asan/lzchan_stress env LZCHAN_STRESS_MSGS=200000 LZCHAN_WAKE_MSGS=20000 \
		./san/lzchan_stress.asan
	suite host/asan/lzchan_hostile ./san/lzchan_hostile.asan
	# The shm backend's own suite: truncations, forgeries, the hostile
	# writer.  Its SIGBUS guard must see the signal itself (ASan would
	# report and exit instead of dying of a SIGBUS that is not ours).
	suite host/asan/lzchan_shm env ASAN_OPTIONS=handle_sigbus=0 ./san/lzchan_shm.asan
	suite host/asan/lzchan_pubsub env ASAN_OPTIONS=handle_sigbus=0 ./san/lzchan_pubsub.asan
	suite host/tsan/lzchan_threads env LZCHAN_THREAD_MSGS=50000 ./san/lzchan_threads.tsan
	suite host/lzchan_tool sh ./lzchan_tool.sh "$top/tools/lzchan"
	suite host/make_run sh ./lzchan_run.sh "$top"
	suite host/first_run bash ./lzchan_firstrun.sh "$top"
	suite host/lzchan_install sh ./lzchan_install.sh "$top"
	suite host/lzchan_dkms bash ./lzchan_dkms.sh "$top" "$CACHE"
	suite host/lzchan_docs sh ./lzchan_docs.sh "$top"
	suite host/lzchan_bench sh ./lzchan_bench.sh "$top/tools/lzchan-bench"
	# The bridge between hosts: three network namespaces, UCX over TCP.
	suite host/lzchan_bridge bash ./lzchan_bridge.sh "$top"
	# ... and the bridge under ASan+UBSan through the same suite, every
	# hostile scenario included (where UCX and libsodium are installed).
	if [ -x "$top/selftests/san/lzchan-bridged.asan" ]; then
		suite host/asan/lzchan_bridge env LZCHAN_BRIDGED="$top/selftests/san/lzchan-bridged.asan" \
			LZCHAN_BRIDGE_MSGS=50000 bash ./lzchan_bridge.sh "$top"
	fi
	for k in $kernels; do
		"$top/scripts/vm-run.sh" "$k" 2>&1
	done
} | tee "$CACHE/check.log" | awk -f "$top/scripts/tap-summary.awk"
