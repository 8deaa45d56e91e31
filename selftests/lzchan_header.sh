#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The public header compiles without a warning for its users: C99/C11/C17
# and C++11/17 (gcc, g++, and clang when installed), under -Wall -Wextra
# -Wcast-qual -Wconversion -Wsign-conversion -pedantic -Werror, with the
# inline fast path and without it.  Prints TAP.
# usage: lzchan_header.sh TOP
top=${1:?usage: $0 TOP}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
warn="-Wall -Wextra -Wcast-qual -Wconversion -Wsign-conversion -pedantic -Werror"
inc="-I$top/libchan -I$top/kmod/uapi"

# Every inline function and macro of the fast path, as a user calls them.
cat > "$tmp/use.c" <<'C'
#include <lzchan.h>

int use(struct lzchan *tx, struct lzchan *rx);
int use(struct lzchan *tx, struct lzchan *rx)
{
	char buf[64];
	void *p;
	uint32_t lane;
	struct lzchan_msg m;
	int r = lzchan_send(tx, "x", 1);

	if (!r && !(r = lzchan_reserve(tx, 8, &p)))
		r = lzchan_commit(tx, 8);
	r += lzchan_recv(rx, buf, sizeof(buf), &lane);
	if (!lzchan_peek(rx, &m))
		lzchan_release(rx, &m);
	if (lzchan_recv_batch(rx, &m, 1) > 0)
		lzchan_release(rx, &m);
	return r + lzchan_recv_wait(rx, buf, sizeof(buf), NULL, -1) + lzchan_wake(rx) +
	       lzchan_flush(tx, 0);
}
C
cp "$tmp/use.c" "$tmp/use.cc"

tests=""
for cc in gcc clang; do
	command -v $cc >/dev/null 2>&1 || continue
	for std in c99 c11 c17; do tests="$tests $cc:$std:c"; done
done
for cxx in g++ clang++; do
	command -v $cxx >/dev/null 2>&1 || continue
	for std in c++11 c++17; do tests="$tests $cxx:$std:cc"; done
done
count=1
for t in $tests; do count=$((count + 2)); done
echo "TAP version 13"
echo "1..$count"
for t in $tests; do
	cc=${t%%:*} rest=${t#*:} std=${rest%%:*} ext=${t##*:}
	for mode in inline LZCHAN_NO_INLINE; do
		n=$((n + 1))
		def=""
		[ $mode = inline ] || def="-D$mode"
		if $cc -std=$std $warn $def $inc -c "$tmp/use.$ext" -o "$tmp/use.o" >"$tmp/log" 2>&1; then
			echo "ok $n $cc -std=$std ($mode): no warning"
		else
			echo "not ok $n $cc -std=$std ($mode): warnings"
			sed 's/^/# /' "$tmp/log" | head -20
			failed=1
		fi
	done
done
# A program whose inline code calls into the library needs the library's
# one version node (LZCHAN_0.3: the inline code relies on handle fields
# and a gate that only such a library keeps), so that it refuses to load
# against another library rather than misread it; and no other node is
# left (the unreleased 0.1 to 0.3.2 were collapsed into it).
n=$((n + 1))
printf 'int use(void *, void *);\nint main(void) { return use(0, 0) == 12345; }\n' >"$tmp/main.c"
if gcc $inc -O2 -c "$tmp/use.c" -o "$tmp/use_i.o" >"$tmp/log" 2>&1 &&
   gcc -o "$tmp/prog" "$tmp/main.c" "$tmp/use_i.o" -L"$top/libchan" -llzchan >>"$tmp/log" 2>&1 &&
   objdump -p "$tmp/prog" | grep -q 'LZCHAN_0\.3$' &&
   ! objdump -T "$top/libchan/liblzchan.so.1" | grep LZCHAN_ | grep -qv 'LZCHAN_0\.3 '; then
	echo "ok $n inline code requires LZCHAN_0.3, the library's one version node"
else
	echo "not ok $n inline code requires LZCHAN_0.3, the library's one version node"
	sed 's/^/# /' "$tmp/log" | head -20
	objdump -p "$tmp/prog" 2>/dev/null | grep -A3 'Version References' | sed 's/^/# /'
	failed=1
fi

# Floors: lzchan.h is the API and the inline calls' declarations; their
# bodies, the handle prefix and the library's entry points behind them are
# lzchan_fast.h's, which refuses to be included on its own.
n=$((n + 1))
if grep -n -e 'struct __lzchan' -e '__lzchan_slow_' -e '^static inline.*[^;]$' \
	"$top/libchan/lzchan.h" >"$tmp/log"; then
	echo "not ok $n lzchan.h holds only the API and the inline calls' declarations"
	sed 's/^/# /' "$tmp/log" | head -10
	failed=1
else
	echo "ok $n lzchan.h holds only the API and the inline calls' declarations"
fi
n=$((n + 1))
printf '#include <lzchan_fast.h>\n' >"$tmp/alone.c"
if ! gcc $inc -fsyntax-only "$tmp/alone.c" >"$tmp/log" 2>&1 &&
   grep -q 'include <lzchan.h>, not <lzchan_fast.h>' "$tmp/log"; then
	echo "ok $n lzchan_fast.h refuses to be included on its own"
else
	echo "not ok $n lzchan_fast.h refuses to be included on its own"
	sed 's/^/# /' "$tmp/log" | head -5
	failed=1
fi
exit $failed
