#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The documentation: man pages render without warnings, every public libchan
# function has its man page, the examples build warning-free and run to
# completion exchanging checked messages, Sphinx builds the RST (-W).
# Prints TAP.  usage: lzchan_docs.sh REPO-TOP
top=${1:?usage: $0 REPO-TOP}
cd "$top" || exit 1
tmp=$(mktemp -d)
shmdir=$(mktemp -d /dev/shm/lzchan-docs.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$tmp" "$shmdir"' EXIT
export LZCHAN_SHM_DIR=$shmdir
export MANWIDTH=80 LC_ALL=C.UTF-8

# Functions the header declares: a declaration starts in column 0 (comments,
# macros and struct members do not); "static inline" ones count too.  And
# whatever the version script exports.
funcs=$( { grep -E '^[a-z].*[^_a-z0-9]lzchan_[a-z0-9_]+\(' libchan/lzchan.h |
	   grep -oE '[^_a-z0-9]lzchan_[a-z0-9_]+\(' | tr -d ' (*\t'
	   sed -n 's/^[[:space:]]*\(lzchan_[a-z0-9_]*\);.*/\1/p' libchan/liblzchan.map; } |
	 sort -u)
pages=$(ls man/man*/*.[1-9] 2>/dev/null)
nfuncs=$(echo "$funcs" | grep -c .)
npages=$(echo "$pages" | grep -c .)

n=0 failed=0
echo "TAP version 13"
# The plan comes last (TAP allows it): the checks are counted as they run.
ok() { n=$((n + 1)); echo "ok $n $*"; }
notok() { n=$((n + 1)); echo "not ok $n $*"; failed=1; }
skip() { n=$((n + 1)); echo "ok $n $* # SKIP"; }
check() { # description, then the test as a command
	desc=$1; shift
	if "$@"; then ok "$desc"; else notok "$desc"; fi
}

# --- man pages --------------------------------------------------------
# groff with every warning, and man-db's own checks (which also follow the
# aliases, symlinks here, from any directory).
renders() {
	groff -ww -t -man -z "$1" >"$tmp/w" 2>&1 &&
	man --warnings -l "$1" 2>>"$tmp/w" >"$tmp/page" &&
	[ ! -s "$tmp/w" ] && [ -s "$tmp/page" ] && return 0
	sed 's/^/# /' "$tmp/w"
	return 1
}
for p in $pages; do
	check "man -l $p renders without warnings" renders "$p"
done

# The header parse must have found the API, or the checks below prove nothing.
check "found the public functions in lzchan.h ($nfuncs)" [ "$nfuncs" -ge 20 ]

# Every function: its own name as a page, which names it in NAME.
documented() {
	f=man/man3/$1.3
	[ -e "$f" ] || { echo "# no man/man3/$1.3: write a page (or a symlink to the page that documents it)"; return 1; }
	sed -n '/^\.SH NAME/{n;p;}' "$f" | tr ',' ' ' | grep -qw -- "$1" && return 0
	echo "# $f does not list $1 in its NAME section"
	return 1
}
for fn in $funcs; do
	check "$fn has a man page" documented "$fn"
done

# Every function is in lzchan(7)'s list, and every page a page refers to
# in section 3 exists.
inlist() {
	bad=0
	for fn in $funcs; do
		grep -q "^\.BR $fn (3)" man/man7/lzchan.7 || { echo "# lzchan.7 lacks $fn"; bad=1; }
	done
	return $bad
}
check "lzchan(7) lists every function" inlist
refs() {
	bad=0
	for r in $(cat man/man3/*.3 man/man7/*.7 | sed -n 's/^\.BR \(lzchan_[a-z0-9_]*\) (3).*/\1/p' | sort -u); do
		[ -e "man/man3/$r.3" ] || { echo "# see-also to missing $r(3)"; bad=1; }
	done
	return $bad
}
check "every lzchan_*(3) reference resolves" refs

# --- the public header: inline fast path off, and as C++ ---------------
hdr_noinline() {
	cc -DLZCHAN_NO_INLINE -D_GNU_SOURCE -std=gnu11 -Wall -Wextra -Werror \
		-I"$top/libchan" -I"$top/kmod/uapi" -o "$tmp/fanin-noinline" \
		"$top/examples/lzchan_fanin.c" "$top/libchan/liblzchan.a"
}
check "the examples build with LZCHAN_NO_INLINE (the library for every call)" hdr_noinline
hdr_cxx() {
	printf '#include <lzchan.h>\nint main(){char b[8]={0}; struct lzchan *c=0;\n  return lzchan_send(c,b,8)+lzchan_recv(c,b,8,0);}\n' > "$tmp/hdr.cc"
	g++ -Wall -Wextra -Werror -I"$top/libchan" -I"$top/kmod/uapi" -c -o "$tmp/hdr.o" "$tmp/hdr.cc"
}
if command -v g++ >/dev/null; then
	check "lzchan.h (with its inline fast path) compiles as C++ warning-free" hdr_cxx
else
	skip "lzchan.h compiles as C++ (no g++ here)"
fi

# --- examples ---------------------------------------------------------
cp examples/Makefile examples/*.c "$tmp/"
if make -s -C "$tmp" TOP="$top" >"$tmp/build.log" 2>&1; then
	ok "examples build with -Wall -Wextra -Werror"
else
	sed 's/^/# /' "$tmp/build.log"
	notok "examples build with -Wall -Wextra -Werror"
fi
run() { # output-file, expected-output-regex, command...: exit 0, print it
	out=$1 want=$2; shift 2
	timeout -s KILL 120 "$@" >"$out" 2>&1
	rc=$?
	sed 's/^/# /' "$out"
	[ $rc = 0 ] || { echo "# $(basename "$1"): exit status $rc"; return 1; }
	grep -qE "$want" "$out" || { echo "# $(basename "$1"): expected: $want"; return 1; }
}

reqresp() {
	timeout -s KILL 120 "$tmp/lzchan_reqresp" server rr 2 >"$tmp/server" 2>&1 &
	server=$!
	run "$tmp/c1" '^client: 500 requests answered and checked$' \
		"$tmp/lzchan_reqresp" client rr 500 &
	c1=$!
	run "$tmp/c2" '^client: 300 requests answered and checked$' \
		"$tmp/lzchan_reqresp" client rr 300
	s2=$?
	wait $c1; s1=$?
	wait $server; s=$?
	sed 's/^/# /' "$tmp/server"
	[ $s1 = 0 ] && [ $s2 = 0 ] && [ $s = 0 ] &&
		grep -q '^server: 2 client(s) served$' "$tmp/server"
}
check "request/response: 2 clients, every reply checked" reqresp

# The event fd on both backends: here the host's (shm; the VM rig runs the
# example on dev, lzchan_examples_vm.sh).
how='^event fd [0-9]+ on ' what="the event fd, armed and woken"
epoll() {
	run "$tmp/ep" "$how" "$tmp/lzchan_epoll" ep 20000 &&
	grep -q '^received and checked 20000 messages in order; armed and waited' "$tmp/ep"
}
check "epoll receiver: 20000 messages in order ($what)" epoll

check "many senders: 4 x 20000 messages checked, 4 ends of stream" \
	run "$tmp/fan" '^4 senders, 80000 messages received and checked, 4 ends of stream$' \
	"$tmp/lzchan_fanin" fan 4 20000

check "publish/subscribe: 4 subscriber processes, every tick checked (back-pressure)" \
	run "$tmp/ps" '^4 subscribers, 20000 ticks each, every one accounted for$' \
	"$tmp/lzchan_pubsub" ps 4 20000 backpressure
check "publish/subscribe: 3 subscribers, ticks received plus told lost = all (overwrite)" \
	run "$tmp/ps2" '^3 subscribers, 20000 ticks each, every one accounted for$' \
	"$tmp/lzchan_pubsub" ps2 3 20000 overwrite

# Endpoints need the module (with LZCHAN_FEAT_ENDPOINT): without it (the
# host's usual case, shm) the example must say so and stop with status 3;
# with it, run whole.  The VM rig runs it on the module
# (lzchan_examples_vm.sh).
grant() {
	timeout -s KILL 120 "$tmp/lzchan_grant" gr 2 2000 >"$tmp/gr" 2>&1
	rc=$?
	sed 's/^/# /' "$tmp/gr"
	if [ $rc = 3 ]; then
		grep -q '^lzchan_grant: no endpoints here: they need the lzchan module' "$tmp/gr"
	else
		[ $rc = 0 ] && grep -q '^2 containers, 2000 messages each over granted endpoints' "$tmp/gr"
	fi
}
check "endpoints: containers without the device send over granted endpoints, or (no module) the example says why not" grant

leftover=$(ls "$shmdir")
check "the examples removed their channels" [ -z "$leftover" ]

# --- Sphinx -----------------------------------------------------------
if command -v sphinx-build >/dev/null 2>&1; then
	if sphinx-build -W -q -b html Documentation "$tmp/html" >"$tmp/sphinx.log" 2>&1; then
		ok "sphinx-build -W Documentation"
	else
		sed 's/^/# /' "$tmp/sphinx.log"
		notok "sphinx-build -W Documentation"
	fi
else
	skip "sphinx-build -W Documentation (sphinx-build not installed: apt-get install python3-sphinx)"
fi
echo "1..$n"
exit $failed
