#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# make install / uninstall / dkms-install into a scratch DESTDIR: every file
# where it belongs with its mode, a program built against the installed
# tree with pkg-config (shared and static) runs, and uninstall leaves
# nothing behind; the install parts as an unprivileged user; what make
# modules says about the kernel it builds for.  Prints TAP.  Needs a built
# tree ('make lib tools').
# usage: lzchan_install.sh TOP-OF-THE-SOURCE-TREE
top=${1:?usage: $0 TOP-OF-THE-SOURCE-TREE}
n=0 failed=0
echo "TAP version 13"
echo "1..29"

check() { # description, then the test as a command
	desc=$1; shift
	n=$((n + 1))
	if "$@"; then echo "ok $n $desc"; else echo "not ok $n $desc"; failed=1; fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
d=$tmp/root
mk() { make -s -C "$top" "$@" >>"$tmp/make.log" 2>&1; }
version=$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' "$top/Makefile")

mk install dkms-install DESTDIR="$d" PREFIX=/usr
check "make install dkms-install DESTDIR= PREFIX=/usr succeeds" [ $? = 0 ]
[ $? = 0 ] || sed 's/^/# /' "$tmp/make.log"

# path and octal mode of every file install must produce
cat >"$tmp/expect" <<EOF
usr/lib/liblzchan.so.1 755
usr/lib/liblzchan.a 644
usr/lib/pkgconfig/lzchan.pc 644
usr/include/lzchan.h 644
usr/include/lzchan_fast.h 644
usr/include/linux/lzchan.h 644
usr/lib/udev/rules.d/60-lzchan.rules 644
usr/lib/modules-load.d/lzchan.conf 644
usr/lib/sysusers.d/lzchan.conf 644
usr/share/doc/lzchan/modprobe-lzchan.conf 644
usr/src/lzchan-$version/dkms.conf 644
usr/src/lzchan-$version/Kbuild 644
usr/src/lzchan-$version/kmod/Kbuild 644
usr/src/lzchan-$version/kmod/uapi/linux/lzchan.h 644
EOF
# The Makefile's own list of tools to install (INSTALL_TOOLS).
tools=$(echo 'lz-print-tools: ; @echo $(INSTALL_TOOLS)' |
	make -s --no-print-directory -C "$top" -f Makefile -f - lz-print-tools)
for t in $tools; do
	echo "usr/bin/${t##*/} 755" >>"$tmp/expect"
done
# The bridge, where it was built: its man page (section 8) and its unit.
case " $tools " in *lzchan-bridged*)
	echo "usr/share/man/man8/lzchan-bridged.8 644" >>"$tmp/expect"
	echo "usr/lib/systemd/system/lzchan-bridged.service 644" >>"$tmp/expect" ;;
esac
for m in "$top"/man/man1/*.1 "$top"/man/man3/*.3 "$top"/man/man7/*.7; do
	[ -f "$m" ] || continue
	s=${m##*.}
	echo "usr/share/man/man$s/${m##*/} 644" >>"$tmp/expect"
done
for k in "$top"/kmod/*.c "$top"/kmod/*.h; do
	case $k in *.mod.c) continue ;; esac
	echo "usr/src/lzchan-$version/kmod/${k##*/} 644" >>"$tmp/expect"
done
sort -u "$tmp/expect" -o "$tmp/expect"
: >"$tmp/bad"
while read -r path mode; do
	if [ ! -f "$d/$path" ]; then
		echo "# missing: /$path" >>"$tmp/bad"
	elif [ "$(stat -c %a "$d/$path")" != "$mode" ]; then
		echo "# /$path: mode $(stat -c %a "$d/$path"), want $mode" >>"$tmp/bad"
	fi
done <"$tmp/expect"
cat "$tmp/bad"
check "$(wc -l <"$tmp/expect") files installed with their modes (tools, man pages, module sources by wildcard)" \
	[ ! -s "$tmp/bad" ]
check "the tools installed include lzchan and lzchan-demo" \
	sh -c "grep -qx 'usr/bin/lzchan 755' '$tmp/expect' && grep -qx 'usr/bin/lzchan-demo 755' '$tmp/expect'"

check "liblzchan.so is a symlink to the soname liblzchan.so.1" \
	[ "$(readlink "$d/usr/lib/liblzchan.so")" = liblzchan.so.1 ]
check "the installed library's SONAME is liblzchan.so.1" \
	sh -c "readelf -d '$d/usr/lib/liblzchan.so.1' | grep -q 'SONAME.*\[liblzchan.so.1\]'"
check "dkms.conf's PACKAGE_VERSION is the Makefile's VERSION ($version), in the tree and installed" \
	sh -c "grep -qx 'PACKAGE_VERSION=\"$version\"' '$top/dkms.conf' &&
	       grep -qx 'PACKAGE_VERSION=\"$version\"' '$d/usr/src/lzchan-$version/dkms.conf'"
check "no build products among the DKMS sources" \
	sh -c "! find '$d/usr/src' -name '*.o' -o -name '*.ko' -o -name '*.mod*' -o -name '.*.cmd' | grep -q ."
check "the udev rule gives /dev/lzchan to group lzchan, mode 0660" \
	sh -c "grep -v '^#' '$d/usr/lib/udev/rules.d/60-lzchan.rules' |
	       grep 'KERNEL==\"lzchan\"' | grep 'GROUP=\"lzchan\"' | grep -q 'MODE=\"0660\"'"
check "modules-load.d names the module; sysusers.d makes the group" \
	sh -c "grep -qx lzchan '$d/usr/lib/modules-load.d/lzchan.conf' &&
	       grep -qx 'g lzchan -' '$d/usr/lib/sysusers.d/lzchan.conf'"
# Each parameter in the modprobe.d example, with the module's own default.
ok=1
for p in max_channels max_channel_bytes max_ns_channels max_ns_bytes max_user_channels max_user_bytes; do
	def=$(sed -n "s/^[a-z ]*lzchan_$p = \(.*\);$/\1/p" "$top/kmod/lzchan_main.c")
	case $def in *'<<'*) def=$(( $(echo "$def" | tr -d 'UL') )) ;; esac
	grep -qx "#options lzchan $p=$def" "$d/usr/share/doc/lzchan/modprobe-lzchan.conf" ||
		{ echo "# modprobe.d example lacks '#options lzchan $p=$def'"; ok=0; }
done
check "the modprobe.d example shows every parameter with its default" [ $ok = 1 ]

# pkg-config against the installed tree, as a packager's sysroot.
export PKG_CONFIG_SYSROOT_DIR="$d" PKG_CONFIG_LIBDIR="$d/usr/lib/pkgconfig" PKG_CONFIG_PATH=
check "pkg-config: lzchan $version, -I and -L inside the tree" \
	sh -c "[ \"\$(pkg-config --modversion lzchan)\" = '$version' ] &&
	       [ \"\$(echo \$(pkg-config --cflags --libs lzchan))\" = '-I$d/usr/include -L$d/usr/lib -llzchan' ]"

cat >"$tmp/hello.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <lzchan.h>

int main(int argc, char **argv)
{
	struct lzchan *rx, *tx;
	char buf[64];
	uint32_t lane;
	int ret, status;
	pid_t pid;

	ret = lzchan_open(&rx, argv[1], LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, NULL);
	if (ret) {
		fprintf(stderr, "open receiver: %s\n", strerror(-ret));
		return 1;
	}
	pid = fork();
	if (pid == 0) {
		if (lzchan_open(&tx, argv[1], LZCHAN_SENDER, NULL) ||
		    lzchan_send_wait(tx, "hello", 5, -1))
			_exit(1);
		lzchan_close(tx);
		_exit(0);
	}
	ret = lzchan_recv_wait(rx, buf, sizeof(buf), &lane, 60LL * 1000000000);
	waitpid(pid, &status, 0);
	lzchan_unlink(argv[1]);
	lzchan_close(rx);
	if (ret != 5 || !WIFEXITED(status) || WEXITSTATUS(status))
		return 2;
	printf("%.*s v%d.%d %d\n", ret, buf, lzchan_version_major(),
	       lzchan_version_minor(), argc);
	return 0;
}
EOF
export LZCHAN_BACKEND=shm LZCHAN_SHM_DIR="$tmp"
cc -Wall -Wextra -Werror $(pkg-config --cflags lzchan) -o "$tmp/hello" "$tmp/hello.c" \
	$(pkg-config --libs lzchan) >"$tmp/cc.log" 2>&1
rc=$?
sed 's/^/# /' "$tmp/cc.log"
check "a program builds against the installed headers and library (-Wall -Wextra -Werror)" [ $rc = 0 ]
check "it loads the installed liblzchan.so.1" \
	sh -c "LD_LIBRARY_PATH='$d/usr/lib' ldd '$tmp/hello' 2>&1 | grep -q '=> $d/usr/lib/liblzchan.so.1 '"
# The version the library reports: the Makefile's major.minor.
ver=$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*\([0-9]*\.[0-9]*\).*/\1/p' "$top/Makefile")
check "it runs: a message from a forked sender arrives (shm backend)" \
	sh -c "[ \"\$(LD_LIBRARY_PATH='$d/usr/lib' '$tmp/hello' inst.$$ 2>&1)\" = 'hello v$ver 2' ]"
cc -Wall -Werror $(pkg-config --cflags lzchan) -o "$tmp/hello-static" "$tmp/hello.c" \
	"$d/usr/lib/liblzchan.a" >"$tmp/cc.log" 2>&1
rc=$?
sed 's/^/# /' "$tmp/cc.log"
check "linked with the installed liblzchan.a, it runs without the shared library" \
	sh -c "[ $rc = 0 ] && ! ldd '$tmp/hello-static' | grep -q liblzchan &&
	       [ \"\$(LD_LIBRARY_PATH=/nonexistent '$tmp/hello-static' inst2.$$)\" = 'hello v$ver 2' ]"
check "the installed lzchan command runs" \
	sh -c "'$d/usr/bin/lzchan' --version | grep -q '^lzchan [0-9]'"

mk uninstall dkms-uninstall DESTDIR="$d" PREFIX=/usr
rc=$?
left=$(cd "$d" && find . ! -type d | sed 's/^\.//')
[ -z "$left" ] || echo "$left" | sed 's/^/# left behind: /'
check "make uninstall dkms-uninstall removes every file" [ "$rc:$left" = 0: ]

# Default PREFIX (/usr/local); udev and modules-load.d stay in /usr/lib.
d2=$tmp/root2
mk install DESTDIR="$d2"
check "default PREFIX: /usr/local for the library, pkg-config says so" \
	sh -c "[ -f '$d2/usr/local/lib/liblzchan.so.1' ] && [ -f '$d2/usr/local/bin/lzchan' ] &&
	       grep -qx 'prefix=/usr/local' '$d2/usr/local/lib/pkgconfig/lzchan.pc' &&
	       grep -qx 'libdir=/usr/local/lib' '$d2/usr/local/lib/pkgconfig/lzchan.pc'"
check "default PREFIX: the udev rule still goes where udev reads it" \
	[ -f "$d2/usr/lib/udev/rules.d/60-lzchan.rules" ]
check "default PREFIX: nothing of the tools outside /usr/local (the bridge's unit included)" \
	sh -c "! find '$d2/usr/lib' -path '*systemd*' | grep -q ."
d3=$tmp/root3
mk install DESTDIR="$d3" PREFIX=/opt/lz UDEVRULESDIR= MODULESLOADDIR= SYSUSERSDIR=
check "UDEVRULESDIR= MODULESLOADDIR= SYSUSERSDIR= skip the system files (not DKMS's sources)" \
	sh -c "[ -f '$d3/opt/lz/lib/liblzchan.so.1' ] && [ ! -e '$d3/usr/lib' ] &&
	       [ -f '$d3/usr/src/lzchan-$version/dkms.conf' ]"

# pkg-config as the build sees it again (not the installed tree's): the
# bridge is among the tools wherever UCX and libsodium are installed.
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR PKG_CONFIG_PATH

# The parts, as an unprivileged user into a home prefix: nothing outside
# it is written (as "nobody" it could not be), no group, no ldconfig.
u=$tmp/home
mkdir -p "$u" && chown nobody "$u" && chmod 755 "$tmp"
asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# A checkout "nobody" cannot enter (under a 0700 home, as Debian makes
# them): that user installs from a copy of the built tree it can read.
src=$top
if ! asnobody test -r "$top/Makefile"; then
	src=$tmp/src
	mkdir -p "$src" &&
	tar -C "$top" --exclude=./.cache --exclude=./.git -cf - . | tar -C "$src" -xpf - &&
	chmod -R a+rX "$src" && chown -R nobody "$src" ||
		echo "# could not copy the tree for the unprivileged install"
	echo "# $top is not readable by nobody: the unprivileged install runs from a copy"
fi
asnobody make -s -C "$src" install-lib PREFIX="$u/.local" >"$tmp/user.log" 2>&1
rc=$?
sed 's/^/# /' "$tmp/user.log"
check "make install-lib as an unprivileged user into PREFIX=~/.local" \
	sh -c "[ $rc = 0 ] && [ -f '$u/.local/lib/liblzchan.so.1' ] &&
	       [ -f '$u/.local/include/lzchan.h' ] && [ -f '$u/.local/include/lzchan_fast.h' ] &&
	       [ -f '$u/.local/include/linux/lzchan.h' ] &&
	       [ -f '$u/.local/lib/pkgconfig/lzchan.pc' ] &&
	       [ -f '$u/.local/share/man/man3/lzchan_open.3' ] && [ ! -e '$u/.local/bin' ]"
asnobody make -s -C "$src" install-tools PREFIX="$u/.local" >"$tmp/user.log" 2>&1
rc=$?
sed 's/^/# /' "$tmp/user.log"
check "make install-tools as that user: the tools and section 1, nothing of the module" \
	sh -c "[ $rc = 0 ] && [ -x '$u/.local/bin/lzchan' ] &&
	       [ -f '$u/.local/share/man/man1/lzchan.1' ] &&
	       [ ! -e '$u/.local/share/doc' ] && [ ! -e '$u/.local/src' ]"
# The bridge's unit goes under PREFIX with the tools, nowhere else.
case " $tools " in
*lzchan-bridged*)
	check "where the bridge is built, its systemd unit goes under PREFIX, pointing into it" \
		sh -c "grep -q '^ExecStart=$u/.local/bin/lzchan-bridged' \
			'$u/.local/lib/systemd/system/lzchan-bridged.service'" ;;
*)	echo "ok $((n += 1)) # SKIP the bridge is not built here (UCX or libsodium missing)" ;;
esac
d4=$tmp/root4
mk install-module DESTDIR="$d4" PREFIX=/usr
check "make install-module: the DKMS sources and the system files, no library or tools" \
	sh -c "[ -f '$d4/usr/src/lzchan-$version/dkms.conf' ] &&
	       [ -f '$d4/usr/lib/udev/rules.d/60-lzchan.rules' ] &&
	       [ -f '$d4/usr/lib/modules-load.d/lzchan.conf' ] &&
	       [ ! -e '$d4/usr/lib/liblzchan.so.1' ] && [ ! -e '$d4/usr/bin' ]"
asnobody make -s -C "$src" uninstall-lib uninstall-tools PREFIX="$u/.local" >"$tmp/user.log" 2>&1
rc=$?
left=$(cd "$u" && find . ! -type d | sed 's/^\.//')
[ -z "$left" ] || echo "$left" | sed 's/^/# left behind: /'
check "make uninstall-lib uninstall-tools as that user removes every file" [ "$rc:$left" = 0: ]

# make modules: which kernel, and a clear failure without headers.
make -C "$top" modules KDIR="$tmp/nothing" >"$tmp/mod.log" 2>&1
rc=$?
check "make modules KDIR=<not a kernel tree> fails and says so" \
	sh -c "[ $rc != 0 ] && grep -q 'is not a kernel build directory' '$tmp/mod.log'"
run=$(uname -r)
if [ -f "/lib/modules/$run/build/Makefile" ]; then
	echo "ok $((n += 1)) # SKIP the running kernel $run has headers"
else
	make -C "$top" modules >"$tmp/mod.log" 2>&1
	rc=$?
	sed 's/^/# /' "$tmp/mod.log"
	check "make modules without headers for the running kernel fails, naming the package" \
		sh -c "[ $rc != 0 ] && grep -q 'no kernel headers for the running kernel $run' '$tmp/mod.log' &&
		       grep -q 'apt-get install linux-headers-$run' '$tmp/mod.log'"
fi
other=$(ls -d /lib/modules/*/build 2>/dev/null | while read -r k; do
	[ -f "$k/Makefile" ] && [ "$k" != "/lib/modules/$run/build" ] && echo "$k"; done | head -n 1)
if [ -z "$other" ]; then
	echo "ok $((n += 1)) # SKIP no headers of another kernel installed"
else
	rel=$(sh "$top/scripts/kdir.sh" --release "$other")
	make -C "$top" modules KDIR="$other" >"$tmp/mod.log" 2>&1
	rc=$?
	tail -n 3 "$tmp/mod.log" | sed 's/^/# /'
	check "make modules KDIR=<another kernel> builds for $rel, says so and that it will not load here" \
		sh -c "[ $rc = 0 ] && grep -q 'built kmod/lzchan.ko for kernel $rel ' '$tmp/mod.log' &&
		       grep -q 'will not load into the running kernel $run' '$tmp/mod.log' &&
		       [ \"\$(modinfo -F vermagic '$top/kmod/lzchan.ko' | cut -d' ' -f1)\" = '$rel' ]"
fi
exit $failed
