#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs inside the VM (contrib/demo.sh): fi_info, fi_pingpong and a
# bandwidth run on rivet over rxe0 (client and server on 10.77.0.1).
set -euo pipefail
addr=10.77.0.1
top=$(cd "$(dirname "$0")/.." && pwd)

echo "== fi_info -p rivet"
fi_info -p rivet

# pair TIMEOUT PORT SERVER_CMD... -- CLIENT_CMD...: runs the server, waits
# until it listens on TCP PORT ("-": the client retries by itself), then
# runs the client; fails when either fails.
pair() {
	local t=$1 port=$2 s=() c=() i
	shift 2
	while [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	c=("$@")
	timeout "$t" "${s[@]}" &
	local spid=$!
	for ((i = 0; i < 300; i++)); do
		[ "$port" != - ] || break
		[ -z "$(ss -Hltn "sport = :$port")" ] || break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	local rc=0
	timeout "$t" "${c[@]}" || rc=$?
	wait "$spid" || rc=$?
	return "$rc"
}

echo "== fi_pingpong -p rivet -e msg (8 bytes to 1 MiB)"
for s in 8 4096 65536 1048576; do
	pair 60 47592 fi_pingpong -p rivet -e msg -S "$s" -I 200 -- \
		fi_pingpong -p rivet -e msg -S "$s" -I 200 "$addr"
done

bw=$top/fabtests/fi_rivet_bw
echo "== fi_rivet_bw -p rivet (64 KiB and 1 MiB sends, window 64)"
for s in 65536 1048576; do
	pair 120 - "$bw" -p rivet -S "$s" -I 200 -- \
		"$bw" -p rivet -S "$s" -I 200 "$addr"
done
