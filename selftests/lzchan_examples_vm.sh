#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The guide's examples on the dev backend: the VM rig runs this (busybox
# sh) with lzchan.ko loaded; the host's lzchan_docs.sh runs them on the
# shm backend.  Static builds of the examples sit beside it.  Prints TAP.
here=$(cd "$(dirname "$0")" && pwd)
plan=3
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
# Endpoints: containers with no /dev/lzchan (user, mount and IPC
# namespaces of their own) send over endpoints granted through a
# bind-mounted socket; the service names each sender as the kernel
# stamped it (a rootless runtime's user: uid 1000 on the host).
grant() {
	timeout 120 "$here/lzchan_grant-static" grdev$$ 2 5000 >"$tmp/gr" 2>&1
	s=$?
	sed 's/^/# /' "$tmp/gr"
	[ $s = 0 ] && grep -q '^container: uid 0 inside, no /dev/lzchan; opening "grdev[0-9]*" by name: ' "$tmp/gr" &&
		[ "$(grep -c '^lane [0-9]*: container [01], endpoint [12]: pid [1-9][0-9]* uid 1000 gid 1000$' "$tmp/gr")" = 2 ] &&
		grep -q '^2 containers, 5000 messages each over granted endpoints: received and checked in order' "$tmp/gr"
}
check "grant example on dev: 2 containers without the device, 5000 messages each, credentials" grant
exit $failed
