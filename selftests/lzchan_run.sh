#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The main job (scripts/run.sh, as 'make run'): two unrelated processes
# exchange messages; check what it reports.  Prints TAP.
top=${1:?usage: $0 REPO-TOP}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "TAP version 13"
echo "1..7"
LZCHAN_HEADLINE_ARGS=--quick "$top/scripts/run.sh" >"$out" 2>&1
rc=$?
sed 's/^/# /' "$out"
n=0
t() { n=$((n + 1)); if grep -qE "$1" "$out"; then echo "ok $n $2"; else echo "not ok $n $2"; fi; }
if [ $rc = 0 ]; then echo "ok 1 exits 0"; else echo "not ok 1 exits 0 (status $rc)"; fi
n=1
t '^backend: (dev|shm)' "names the backend"
t '^ping-pong: 200000 round trips of 64 bytes, [0-9]+ ns half round trip$' "reports the ping-pong"
t '^stream: 2000000 messages of 64 bytes, [0-9.]+ M msgs/s' "reports the stream rate"
t '^server: answered 200000 requests, took 2000000 one-way messages$' "the server saw everything"
t '^lzchan headline: ' "prints the benchmark headline"
t '^libchan stream 1->1 +\| +[0-9.]+ \| +M msgs/s \| +lazy ring' "the headline compares libchan with the lazy ring"
