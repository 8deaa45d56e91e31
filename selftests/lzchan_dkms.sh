#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# DKMS, with Debian's dkms package, as an administrator would use it:
#   - in the debootstrap'd trixie root (the VM rig's 6.12 kernel headers):
#     'make dkms-install', then dkms add, build, install; the module has the
#     kernel's vermagic and modprobe finds it; 'dkms autoinstall' (what a new
#     kernel's postinst runs) puts it back; dkms remove takes it away;
#   - on this host, for the bookworm 6.1 headers, in scratch DKMS trees
#     (--dkmstree/--sourcetree/--installtree) so the host is not changed.
# Prints TAP.  Needs root and 'make deps' (which installs dkms in both).
# usage: lzchan_dkms.sh TOP-OF-THE-SOURCE-TREE [CACHE]
top=${1:?usage: $0 TOP-OF-THE-SOURCE-TREE [CACHE]}
CACHE=${2:-$top/.cache}
plan=15
n=0 failed=0
echo "TAP version 13"
echo "1..$plan"

check() { # description, then the test as a command
	desc=$1; shift
	n=$((n + 1))
	if "$@"; then echo "ok $n $desc"; return 0; fi
	echo "not ok $n $desc"
	failed=1
	return 1
}
skip_rest() { # reason
	while [ $n -lt $plan ]; do
		n=$((n + 1))
		echo "ok $n # SKIP $1"
	done
	exit $failed
}
show() { sed 's/^/# /' "$log"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
version=$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' "$top/Makefile")
mod=lzchan/$version

[ "$(id -u)" = 0 ] || skip_rest "needs root (chroot, dkms)"
ROOT= KVER=
[ -f "$CACHE/vm/trixie/kernel.env" ] && . "$CACHE/vm/trixie/kernel.env"
[ -n "$ROOT" ] && [ -x "$ROOT/usr/sbin/dkms" ] ||
	skip_rest "no trixie root with dkms (run 'make deps')"
kt=$KVER
in_root() { chroot "$ROOT" "$@" >"$log" 2>&1; }

# A run that died half-way must not make this one fail.
in_root dkms remove "$mod" --all
rm -rf "$ROOT/usr/src/lzchan-$version"

make -s -C "$top" dkms-install DESTDIR="$ROOT" >"$log" 2>&1
check "make dkms-install DESTDIR=<trixie root> puts the sources in /usr/src/lzchan-$version" \
	[ -f "$ROOT/usr/src/lzchan-$version/dkms.conf" ] || show
in_root dkms add "$mod"
check "dkms add $mod" [ $? = 0 ] || show
in_root dkms build "$mod" -k "$kt"
check "dkms build $mod -k $kt" [ $? = 0 ] || show
in_root dkms install "$mod" -k "$kt"
rc=$?
[ $rc = 0 ] || show
in_root dkms status "$mod" -k "$kt"
check "dkms install $mod -k $kt: status 'installed'" \
	sh -c "[ $rc = 0 ] && grep -q '$kt.*: installed' '$log'" || show
ko=$(cd "$ROOT" && ls lib/modules/"$kt"/updates/dkms/lzchan.ko* 2>/dev/null | head -n 1)
check "the module is in /lib/modules/$kt/updates/dkms" [ -n "$ko" ]
vm=$(chroot "$ROOT" modinfo -F vermagic "/$ko" 2>&1)
check "its vermagic is the kernel's ($kt)" [ "${vm%% *}" = "$kt" ] || echo "# vermagic: $vm"
parm=$(chroot "$ROOT" modinfo -F parm "/$ko" 2>&1 | cut -d: -f1 | sort | tr '\n' ' ')
want="max_channel_bytes max_channels max_ns_bytes max_ns_channels max_user_bytes max_user_channels "
check "its parameters: $want" [ "$parm" = "$want" ] || echo "# parm: $parm"
in_root modprobe -n -v -S "$kt" lzchan
check "depmod indexed it: 'modprobe lzchan' would load it" grep -q "insmod /$ko" "$log" || show

# What a new kernel's postinst hook runs: AUTOINSTALL="yes" must bring it back.
in_root dkms uninstall "$mod" -k "$kt"
gone=$(ls "$ROOT"/lib/modules/"$kt"/updates/dkms/lzchan.ko* 2>/dev/null)
in_root dkms autoinstall -k "$kt"
check "after dkms uninstall, dkms autoinstall -k $kt installs it again" \
	sh -c "[ -z '$gone' ] && ls '$ROOT'/lib/modules/'$kt'/updates/dkms/lzchan.ko* >/dev/null 2>&1" || show

in_root dkms remove "$mod" --all
rc=$?
chroot "$ROOT" modprobe -n -S "$kt" lzchan >/dev/null 2>&1
still=$?
check "dkms remove $mod --all: the module is gone, modprobe no longer finds it" \
	sh -c "[ $rc = 0 ] && [ $still != 0 ] && ! ls '$ROOT'/lib/modules/'$kt'/updates/dkms/lzchan.ko* >/dev/null 2>&1 &&
	       [ ! -e '$ROOT/var/lib/dkms/lzchan' ]" || show
make -s -C "$top" dkms-uninstall DESTDIR="$ROOT" >"$log" 2>&1
check "make dkms-uninstall removes /usr/src/lzchan-$version" [ ! -e "$ROOT/usr/src/lzchan-$version" ]

# --- the host's bookworm 6.1 headers, in scratch DKMS trees ---
KVER= KDIR=
[ -f "$CACHE/vm/bookworm/kernel.env" ] && . "$CACHE/vm/bookworm/kernel.env"
command -v dkms >/dev/null && [ -n "$KDIR" ] || skip_rest "no dkms or 6.1 headers on the host (run 'make deps')"
kb=$KVER
s=$tmp/s
before=$(ls -A /lib/modules/"$kb" 2>&1)
mkdir -p "$s/dkms" "$s/lib/$kb"
make -s -C "$top" dkms-install DESTDIR="$s" DKMS_SRCDIR=/src/lzchan-"$version" >"$log" 2>&1
dk() { dkms --dkmstree "$s/dkms" --sourcetree "$s/src" --installtree "$s/lib" --no-depmod "$@" >"$log" 2>&1; }
dk add "$mod" && dk build "$mod" -k "$kb" --kernelsourcedir "$KDIR" &&
	dk install "$mod" -k "$kb" --kernelsourcedir "$KDIR"
check "host: dkms add, build, install $mod for $kb (scratch trees)" [ $? = 0 ] || show
ko=$(ls "$s/lib/$kb"/updates/dkms/lzchan.ko* 2>/dev/null | head -n 1)
vm=$(modinfo -F vermagic "$ko" 2>&1)
check "host: its vermagic is $kb" [ -n "$ko" -a "${vm%% *}" = "$kb" ] || echo "# vermagic: $vm"
dk remove "$mod" --all
rc=$?
check "host: dkms remove --all leaves no module and no DKMS state" \
	sh -c "[ $rc = 0 ] && [ -z \"\$(find '$s/lib' '$s/dkms' -type f)\" ]" || show
check "host: /lib/modules/$kb untouched" [ "$(ls -A /lib/modules/"$kb" 2>&1)" = "$before" ]
exit $failed
