#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The first run, as a new user makes it: on a fresh Debian bookworm that has
# gcc, make and git and nothing else (an image 'make deps' keeps outside the
# clone, unpacked anew here), a copy of this tree runs 'make run', which
# must install what it needs (userspace packages only) and succeed.  Prints
# TAP.  Needs root (chroot) and Debian's archive.
#
#   lzchan_firstrun.sh REPO-TOP
set -uo pipefail
top=${1:?usage: $0 REPO-TOP}
RIG=${LZCHAN_RIG_CACHE:-/var/cache/lzchan-rig}
fresh=$RIG/fresh-bookworm-gcc-make-git.tar

echo "TAP version 13"
echo "1..5"
if [ "$(id -u)" != 0 ] || [ ! -s "$fresh" ]; then
	echo "ok 1 # SKIP needs root and $fresh ('make deps')"
	for n in 2 3 4 5; do echo "ok $n # SKIP"; done
	exit 0
fi

root=$(mktemp -d /var/tmp/lzchan-firstrun.XXXXXX)
cleanup() {
	for m in dev/shm dev/pts dev proc; do
		umount "$root/$m" 2>/dev/null
	done
	rm -rf --one-file-system "$root"
}
trap cleanup EXIT

tar -C "$root" -xf "$fresh"
n=0
t() { n=$((n + 1)); if eval "$1"; then echo "ok $n $2"; else echo "not ok $n $2"; fi; }
# Nothing of what the build needs beyond gcc, make and git is there.
t '! chroot "$root" dpkg-query -W -f="\${Status}" libnuma-dev 2>/dev/null | grep -q "ok installed"' \
	"the fresh machine lacks libnuma-dev (a fresh start)"

# The tree as it stands (tracked and new files, nothing ignored).
mkdir -p "$root/root/lzchan"
(cd "$top" && git ls-files -z -co --exclude-standard | cpio -0pdm --quiet "$root/root/lzchan")
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
mount -t proc proc "$root/proc" && mount --bind /dev "$root/dev" &&
	mount --bind /dev/pts "$root/dev/pts" && mount --bind /dev/shm "$root/dev/shm"
t '[ -d "$root/root/lzchan/libchan" ]' "a copy of the tree on the fresh machine"

log=$(mktemp)
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
	LZCHAN_HEADLINE_ARGS=--quick sh -c 'cd /root/lzchan && make run' > "$log" 2>&1
rc=$?
sed 's/^/# /' "$log" | tail -n 40
t '[ $rc = 0 ]' "make run exits 0 on the fresh machine (status $rc)"
t 'grep -q "^lzchan headline: " "$log"' "it ran the job and the headline"
t 'chroot "$root" dpkg-query -W -f="\${Status}\n" libnuma-dev libpapi-dev | grep -c "ok installed" | grep -qx 2' \
	"it installed the userspace packages it needs"
rm -f "$log"
