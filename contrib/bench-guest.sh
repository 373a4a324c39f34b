#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs inside the VM (contrib/bench.sh): each measurement is a server and a
# client on rxe0's address; prints one markdown table of the results.
set -uo pipefail
iters=${1:-1000}
addr=10.77.0.1
top=$(cd "$(dirname "$0")/.." && pwd)
bw=$top/fabtests/fi_rivet_bw
# RoCE v2 over IPv4: the GID whose type is "RoCE v2" and which maps the IP
gid=$(for g in /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/*; do
	i=${g##*/}
	[ "$(cat "$g" 2>/dev/null)" = "RoCE v2" ] &&
		grep -q ffff "/sys/class/infiniband/rxe0/ports/1/gids/$i" &&
		{ echo "$i"; break; }
done)
gid=${gid:-1}

pair() {	# pair SERVER_CMD... -- CLIENT_CMD...: prints the client's output
	local s=() c=()
	while [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	c=("$@")
	timeout 300 "${s[@]}" >/dev/null 2>&1 &
	local spid=$!
	sleep 1
	timeout 300 "${c[@]}" 2>&1
	wait "$spid" 2>/dev/null
}

# perftest: the typical latency (usec) or average bandwidth (MB/s)
perf_lat() {
	pair "$1" -d rxe0 -x "$gid" -s "$2" -n "$iters" -F -- \
		"$1" -d rxe0 -x "$gid" -s "$2" -n "$iters" -F "$addr" |
		awk '$1 == "'"$2"'" && NF >= 5 { print $5; exit }'
}
perf_bw() {
	pair "$1" -d rxe0 -x "$gid" -s "$2" -n "$iters" -F -- \
		"$1" -d rxe0 -x "$gid" -s "$2" -n "$iters" -F "$addr" |
		awk '$1 == "'"$2"'" && NF >= 4 { print $4; exit }'
}
# fi_pingpong: usec/xfer of the client
fi_lat() {
	pair fi_pingpong -p "$1" -e msg -S "$2" -I "$iters" -- \
		fi_pingpong -p "$1" -e msg -S "$2" -I "$iters" "$addr" |
		awk '$1 == "'"$2"'" { print $7; exit }'
}
fi_bw() {
	[ -x "$bw" ] || return 0
	pair "$bw" -p "$1" -S "$2" -I "$iters" -- \
		"$bw" -p "$1" -S "$2" -I "$iters" "$addr" |
		awk '/^bw_MBps/ { print $2; exit }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }

lat_raw=$(perf_lat ib_send_lat 8)
lat_verbs=$(fi_lat verbs 8)
lat_rivet=$(fi_lat rivet 8)
echo
echo "| measurement | raw verbs (perftest) | libfabric verbs MSG | rivet MSG | rivet / raw | rivet / verbs |"
echo "|---|---|---|---|---|---|"
echo "| 8 B ping-pong latency (usec, lower is better) | ${lat_raw:--} | ${lat_verbs:--} | ${lat_rivet:--} | $(ratio "$lat_rivet" "$lat_raw") | $(ratio "$lat_rivet" "$lat_verbs") |"
for s in 65536 1048576; do
	b_raw=$(perf_bw ib_send_bw "$s")
	b_verbs=$(fi_bw verbs "$s")
	b_rivet=$(fi_bw rivet "$s")
	echo "| $((s / 1024)) KiB send bandwidth (MB/s, higher is better) | ${b_raw:--} | ${b_verbs:--} | ${b_rivet:--} | $(ratio "$b_rivet" "$b_raw") | $(ratio "$b_rivet" "$b_verbs") |"
done
w_raw=$(perf_bw ib_write_bw 1048576)
echo "| 1 MiB RDMA write bandwidth, raw (MB/s) | ${w_raw:--} | | | | |"
