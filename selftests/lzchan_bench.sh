#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Smoke run of every lzchan-bench experiment: --quick in human, --csv and
# --json form.  Checks the harness (exit 0, which includes each experiment's
# own check that no message was lost, duplicated or corrupted; the tables;
# JSON that parses), never a timing.  Then the plot command.  Prints TAP.
# usage: lzchan_bench.sh PATH-TO-lzchan-bench
tool=${1:?usage: $0 PATH-TO-lzchan-bench}
n=0
failed=0
echo "TAP version 13"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out
err=$tmp/err

ok() { n=$((n + 1)); echo "ok $n $*"; }
notok() {
	n=$((n + 1)); echo "not ok $n $*"; failed=1
	sed 's/^/# stderr: /' "$err" | tail -5
}
skip() { n=$((n + 1)); echo "ok $n # SKIP $*"; }

# The experiments, as the tool lists them (the plot command is tested below).
cmds=$("$tool" --help | awk '/Commands:/ { on = 1; next } on && /^$/ { exit }
	on && /^  [a-z0-9]+ / { print $1 }')
[ -n "$cmds" ] && ok "--help lists the commands" || notok "--help lists the commands"

for c in $cmds; do
	[ "$c" = plot ] && continue
	if ! "$tool" "$c" --help >/dev/null 2>&1; then
		for f in human csv json; do skip "$c $f: not implemented yet ('$c --help' fails)"; done
		continue
	fi
	# Human tables: facts first, then at least one table.
	"$tool" "$c" --quick --no-progress >"$out" 2>"$err"
	rc=$?
	if [ $rc = 0 ] && grep -q '^lzchan-bench [0-9]' "$out" && grep -q -- '-|-' "$out"; then
		ok "$c --quick: tables"
	else
		notok "$c --quick: tables (status $rc)"
	fi
	# CSV: facts as comments, a header and rows.
	"$tool" "$c" --quick --no-progress --csv >"$out" 2>"$err"
	rc=$?
	if [ $rc = 0 ] && grep -q '^# kernel: ' "$out" && grep -q '^table,' "$out" &&
	   [ "$(grep -cv -e '^#' -e '^table,' "$out")" -gt 0 ]; then
		ok "$c --quick --csv"
		cp "$out" "$tmp/$c.csv"
	else
		notok "$c --quick --csv (status $rc)"
	fi
	# JSON: one object that parses, with tables.
	"$tool" "$c" --quick --no-progress --json >"$out" 2>"$err"
	rc=$?
	if [ $rc = 0 ] && python3 -c 'import json,sys; d = json.load(sys.stdin); assert d["tables"] and d["facts"]' <"$out" 2>>"$err"; then
		ok "$c --quick --json parses"
	else
		notok "$c --quick --json (status $rc)"
	fi
done

# ipm: counted where valgrind is installed, else n/a with the reason.
if [ -s "$tmp/ipm.csv" ]; then
	if ! command -v valgrind >/dev/null 2>&1; then
		grep -q 'valgrind is not installed' "$tmp/ipm.csv" &&
			ok "ipm without valgrind: n/a and why" || notok "ipm without valgrind: n/a and why"
	elif grep -q '^ipm,send,[0-9]' "$tmp/ipm.csv" && grep -q '^ipm,recv_batch,[0-9]' "$tmp/ipm.csv" &&
	     grep -q '^ipm,lazy-recv,[0-9]' "$tmp/ipm.csv"; then
		ok "ipm counts every path"
	else
		notok "ipm counts every path"
	fi
fi

# ring's instruction column: counted where valgrind is installed (--instr,
# as without --quick), else n/a with the reason.
"$tool" ring --quick --instr -n 2 -i lazy-fair,libchan -M threads --no-progress --csv >"$out" 2>"$err"
rc=$?
if [ $rc != 0 ]; then
	notok "ring --instr (status $rc)"
elif ! command -v valgrind >/dev/null 2>&1; then
	grep -q 'rx instr/msg n/a: valgrind is not installed' "$out" &&
		ok "ring --instr without valgrind: n/a and why" || notok "ring --instr without valgrind: n/a and why"
elif grep -q '^ring,lazy-fair,threads,2,[0-9.]*,[0-9]' "$out" &&
     grep -q '^ring,libchan,threads,2,[0-9.]*,[0-9]' "$out"; then
	ok "ring --instr counts each receive loop"
else
	notok "ring --instr counts each receive loop"
fi

# msgrate's -o is the page's machine-readable switch: CSV.
if "$tool" msgrate --help >/dev/null 2>&1; then
	"$tool" msgrate --quick -o >"$out" 2>"$err"
	rc=$?
	[ $rc = 0 ] && grep -q '^table,pattern,' "$out" && ok "msgrate -o writes CSV" ||
		notok "msgrate -o writes CSV (status $rc)"
	"$tool" msgrate -p 0 >"$out" 2>"$err"
	rc=$?
	[ $rc = 2 ] && grep -q '^lzchan-bench msgrate: -p wants' "$err" && ok "msgrate -p 0 is a usage error (2)" ||
		notok "msgrate -p 0 is a usage error (status $rc)"
fi

# plot: PNGs from the CSVs above, and a clear error without gnuplot.
png_ok() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '211PNG' ]; }
if ! "$tool" plot --help >/dev/null 2>&1; then
	skip "plot: not implemented yet"
elif ! command -v gnuplot >/dev/null 2>&1; then
	skip "plot: gnuplot is not installed (apt-get install gnuplot-nox)"
else
	for c in $cmds; do
		[ -s "$tmp/$c.csv" ] || continue
		case $c in
		alt) set -- -x size -y half_RTT,msgs/s --series transport --logx ;;
		*) set -- ;;
		esac
		"$tool" plot "$@" --out "$tmp/$c.png" "$tmp/$c.csv" >"$out" 2>"$err"
		rc=$?
		[ $rc = 0 ] && png_ok "$tmp/$c.png" && ok "plot ${*:+$* }$c.csv writes a PNG" ||
			notok "plot ${*:+$* }$c.csv writes a PNG (status $rc)"
	done
fi
if "$tool" plot --help >/dev/null 2>&1; then
	for f in "$tmp"/*.csv; do :; done
	env PATH="$tmp/nowhere" "$tool" plot "$f" >"$out" 2>"$err"
	rc=$?
	[ $rc = 1 ] && grep -qx 'lzchan-bench plot: gnuplot not found: apt-get install gnuplot-nox' "$err" &&
		ok "plot without gnuplot: one-line error, exit 1" ||
		notok "plot without gnuplot: one-line error, exit 1 (status $rc)"
	printf 'no,table\nhere\n' >"$tmp/bad.txt"
	"$tool" plot "$tmp/bad.txt" >"$out" 2>"$err"
	rc=$?
	[ $rc = 1 ] && [ "$(wc -l <"$err")" = 1 ] && grep -q '^lzchan-bench plot: .*\(no table rows\|no header line\)' "$err" &&
		ok "plot of a file that is not a CSV table: error, exit 1" ||
		notok "plot of a file that is not a CSV table (status $rc)"
fi

echo "1..$n"
exit $failed
