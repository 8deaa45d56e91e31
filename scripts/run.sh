#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# make run: two unrelated processes -- started separately, neither the
# other's parent, sharing nothing but a channel name -- exchange messages;
# then the benchmark headline (lzchan-bench headline).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
demo=$top/tools/lzchan-demo
name=demo.$$
log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "lzchan run: server and client as separate processes on channel '$name'"
# The server runs in its own session: it is not a child of the client
# and shares no memory or descriptors with it.
setsid "$demo" serve "$name" >"$log" 2>&1 < /dev/null &
server=$!
status=0
"$demo" client "$name" || status=$?
wait "$server" || status=$?
cat "$log"
[ $status = 0 ] || exit $status

# The headline: the physical limit, libchan against the Intel article's
# rings, ping-pong against the limit, a pipe and a socket for contrast --
# every ratio measured in this run (under a minute).  LZCHAN_HEADLINE_ARGS
# passes options (the test suite uses --quick).
echo
# shellcheck disable=SC2086
"$top/tools/lzchan-bench" headline ${LZCHAN_HEADLINE_ARGS:-}
