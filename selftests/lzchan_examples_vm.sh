#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The guide's examples on the dev backend: the VM rig runs this (busybox
# sh) with lzchan.ko loaded; the host's lzchan_docs.sh runs them on the
# shm backend.  Static builds of the examples sit beside it.  Prints TAP.
here=$(cd "$(dirname "$0")" && pwd)
plan=2
. "$here/lzchan_vm_tap.sh"
need_dev
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset LZCHAN_BACKEND LZCHAN_SHM_DIR
epoll() {
	timeout 120 "$here/lzchan_epoll-static" exdev$$ 20000 >"$tmp/ep" 2>&1
	s=$?
	sed 's/^/# /' "$tmp/ep"
	[ $s = 0 ] && grep -q '^event fd [0-9]* on dev' "$tmp/ep" &&
		grep -q '^received and checked 20000 messages in order; armed and waited' "$tmp/ep"
}
check "epoll example on dev: the event fd, 20000 messages in order" epoll
fanin() {
	timeout 120 "$here/lzchan_fanin-static" fandev$$ 4 20000 >"$tmp/fan" 2>&1
	s=$?
	sed 's/^/# /' "$tmp/fan"
	[ $s = 0 ] && grep -q '^4 senders, 80000 messages received and checked, 4 ends of stream$' "$tmp/fan"
}
check "fan-in example on dev: 4 x 20000 messages, 4 ends" fanin
exit $failed
