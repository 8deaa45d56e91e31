# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the VM rig's shell tests (busybox sh): TAP with a plan, and
# the module's presence.  Set plan=N before sourcing; then call
#   check DESCRIPTION CMD...   one test: CMD's status decides
#   skip_all REASON            every test of the plan SKIPped, exit 0
#   need_dev                   /dev/lzchan, or skip_all -- not ok instead
#                              when LZCHAN_EXPECT_DEV=1 says it must be there
# and end with 'exit $failed'.
n=0 failed=0
echo "TAP version 13"
echo "1..$plan"

check() {
	desc=$1; shift
	n=$((n + 1))
	if "$@"; then printf 'ok %s %s\n' $n "$desc"
	else printf 'not ok %s %s\n' $n "$desc"; failed=1; fi
}
skip_all() {
	i=0
	while [ $i -lt $plan ]; do
		i=$((i + 1))
		echo "ok $i # SKIP $1"
	done
	exit 0
}
need_dev() {
	[ -c /dev/lzchan ] && return 0
	if [ "$LZCHAN_EXPECT_DEV" = 1 ]; then
		echo "not ok 1 /dev/lzchan exists"
		exit 1
	fi
	skip_all "/dev/lzchan absent: lzchan.ko not loaded"
}
