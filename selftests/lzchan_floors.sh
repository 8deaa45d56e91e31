#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# libchan is built in floors (Documentation/libchan/design.rst, "The
# library's floors"): each source file names its floor in its opening
# comment ("Floor N"), and calls only functions defined in files of lower
# floors, so there is no circle among the files and a reader can take them
# bottom up.  The headers form a chain: each .c includes
# lzchan_internal.h, which includes lzchan.h, which includes
# lzchan_fast.h, which includes no header of libchan.  Reads the calls
# from the built objects (nm), so run it after 'make'.  Prints TAP.
# usage: lzchan_floors.sh TOP
top=${1:?usage: $0 TOP}
lib=$top/libchan
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0

ok() {	# description, status
	n=$((n + 1))
	if [ "$2" = 0 ]; then
		echo "ok $n $1"
	else
		echo "not ok $n $1"
		sed 's/^/# /' "$tmp/why" | head -20
		failed=1
	fi
}

# 1. Every source file names its floor, and its object is built.
: >"$tmp/why"
: >"$tmp/floor"
for c in "$lib"/*.c; do
	f=$(basename "$c" .c)
	fl=$(sed -n '1,60{s/^ \* Floor \([0-9][0-9]*\)\b.*/\1/p}' "$c" | head -1)
	if [ -z "$fl" ]; then
		echo "$f.c names no floor (' * Floor N' in its opening comment)" >>"$tmp/why"
	elif [ ! -f "$lib/$f.o" ]; then
		echo "$f.o is not built (run make first)" >>"$tmp/why"
	else
		echo "$f $fl" >>"$tmp/floor"
	fi
done
[ -s "$tmp/floor" ] || echo "no source file in $lib" >>"$tmp/why"
ok "every libchan source file names its floor" "$([ -s "$tmp/why" ]; echo $((!$?)))"

# 2. Calls go down only: for every symbol a file uses that another file
# defines, the definer's floor is below the user's.
: >"$tmp/defs"
while read -r f fl; do
	nm --defined-only "$lib/$f.o" | awk -v f="$f" '$2 ~ /^[A-Z]$/ { print $3, f }' >>"$tmp/defs"
done <"$tmp/floor"
: >"$tmp/why"
: >"$tmp/edges"
while read -r f fl; do
	nm --undefined-only "$lib/$f.o" | awk '{ print $NF }' | while read -r s; do
		d=$(awk -v s="$s" '$1 == s { print $2; exit }' "$tmp/defs")
		[ -n "$d" ] || continue
		dl=$(awk -v d="$d" '$1 == d { print $2 }' "$tmp/floor")
		echo "$f $d" >>"$tmp/edges"
		[ "$dl" -lt "$fl" ] ||
			echo "$f.c (floor $fl) calls $s of $d.c (floor $dl)" >>"$tmp/why"
	done
done <"$tmp/floor"
[ -s "$tmp/edges" ] || echo "no call between files found: is nm working?" >>"$tmp/why"
ok "every call between libchan's files goes to a lower floor" "$([ -s "$tmp/why" ]; echo $((!$?)))"

# 3. ... so the file graph has no circle (tsort says so independently).
sort -u "$tmp/edges" | tsort >/dev/null 2>"$tmp/why"
ok "no circle among libchan's files in their call graph" "$([ -s "$tmp/why" ]; echo $((!$?)))"

# 4. The include chain.
: >"$tmp/why"
incs() { sed -n 's/^#[ \t]*include[ \t]*[<"]\(lzchan[a-z_]*\.h\)[>"].*/\1/p' "$1"; }
for c in "$lib"/*.c; do
	i=$(incs "$c" | tr '\n' ' ')
	[ "$i" = "lzchan_internal.h " ] ||
		echo "$(basename "$c") includes '$i' (only lzchan_internal.h)" >>"$tmp/why"
done
[ "$(incs "$lib/lzchan_internal.h" | tr '\n' ' ')" = "lzchan.h " ] ||
	echo "lzchan_internal.h must include lzchan.h only" >>"$tmp/why"
[ "$(incs "$lib/lzchan.h" | tr '\n' ' ')" = "lzchan_fast.h " ] ||
	echo "lzchan.h must include lzchan_fast.h only" >>"$tmp/why"
[ -z "$(incs "$lib/lzchan_fast.h")" ] ||
	echo "lzchan_fast.h includes a header of libchan" >>"$tmp/why"
ok "libchan's headers form one chain: internal, API, fast path" "$([ -s "$tmp/why" ]; echo $((!$?)))"

echo "1..$n"
exit $failed
