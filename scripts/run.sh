#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# make run: two unrelated processes -- started separately, neither the
# other's parent, sharing nothing but a channel name -- exchange messages.
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
exit $status
