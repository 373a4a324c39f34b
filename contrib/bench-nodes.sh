#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rivet against raw verbs between two nodes of the Soft-RoCE bed
# (contrib/vm/rivet-vm -N 2), in one boot: perftest's ib_send_lat,
# ib_write_bw and ib_read_lat beside rivet's RDM tagged latency, 1 MiB
# bandwidth and RMA read latency, on a clean network and under
# `rivet-fault loss 1`. Servers on node0, clients on node1; ROUNDS
# interleaved rounds (default 3), the median of each figure. Under TCG only
# the ratios mean anything, and they move by 0.1-0.5 between boots.
#
# usage: contrib/bench-nodes.sh [ROUNDS]      (on the host; builds nothing:
#                                             run contrib/build.sh first)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${RIVET_VM:-}" ]; then
	out=${VM_OUT:-/var/tmp/rivet-bench-nodes}
	mkdir -p "$out"
	exec "$top/contrib/vm/rivet-vm" -N 2 -t 3000 -o "$out" \
		-e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
		-- bash "$top/contrib/bench-nodes.sh" "${1:-3}"
fi

rounds=${1:-3}
out=$VM_OUT/bench-nodes
mkdir -p "$out"
gid=${RIVET_GID_INDEX:-1}
rbw=$top/fabtests/fi_rivet_rdm_bw
rma=$top/fabtests/fi_rivet_rdm_rma_bw
port=47900

# pair TAG -- SERVER... -- CLIENT...: the server here, the client on node1;
# prints the client's output
pair() {
	local tag=$1 srv=() spid
	shift 2
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	timeout 600 "${srv[@]}" >"$out/$tag.server" 2>&1 &
	spid=$!
	sleep 2
	timeout 600 rivet-node 1 "$@" >"$out/$tag.client" 2>&1 || true
	wait "$spid" || true
	cat "$out/$tag.client"
}
perf() { # perf TOOL SIZE ITERS COLUMN
	pair "$1-$2" -- "$1" -d rxe0 -x "$gid" -s "$2" -n "$3" -F -- \
		"$1" -d rxe0 -x "$gid" -s "$2" -n "$3" -F node0 |
		awk -v s="$2" -v c="$4" '$1 == s && NF >= c { print $c; exit }'
}
rivet_rdm() { # FIELD ARGS...
	local f=$1
	shift
	port=$((port + 2))
	pair "rdm-$f-$port" -- "$rbw" -p rivet -s 10.77.0.1 -B "$port" "$@" -- \
		"$rbw" -p rivet -s 10.77.0.2 -P "$port" "$@" 10.77.0.1 |
		awk -v f="$f:" '$1 == f { print $2; exit }'
}
rivet_read_lat() {
	port=$((port + 2))
	pair "rma-read-$port" -- "$rma" -p rivet -s 10.77.0.1 -B "$port" -o read -l -S 8 -I 200 -- \
		"$rma" -p rivet -s 10.77.0.2 -P "$port" -o read -l -S 8 -I 200 10.77.0.1 |
		awk '$1 == "lat_us:" { print $2; exit }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

declare -A vals
for fault in clean loss1; do
	if [ "$fault" = loss1 ]; then rivet-fault loss 1; else rivet-fault clear; fi
	for ((r = 1; r <= rounds; r++)); do
		vals[$fault,send_lat]+="$(perf ib_send_lat 8 200 6) "
		vals[$fault,rdm_lat]+="$(rivet_rdm lat_us -l -S 8 -I 200) "
		vals[$fault,write_bw]+="$(perf ib_write_bw 1048576 100 4) "
		vals[$fault,rdm_bw]+="$(rivet_rdm bw_MBps -S 1m -I 100) "
		vals[$fault,read_lat]+="$(perf ib_read_lat 8 200 6) "
		vals[$fault,rma_read_lat]+="$(rivet_read_lat) "
	done
done
rivet-fault clear >/dev/null

echo "# node0 <-> node1, medians of $rounds interleaved rounds (TCG: ratios only)"
printf '%-7s %-34s %10s %10s %7s\n' fault figure raw rivet ratio
for fault in clean loss1; do
	for pairs in "send_lat rdm_lat 8 B latency (us): ib_send_lat vs tagged" \
		"write_bw rdm_bw 1 MiB bandwidth (MB/s): ib_write_bw vs tagged" \
		"read_lat rma_read_lat 8 B read latency (us): ib_read_lat vs fi_read"; do
		read -r a b label <<<"$pairs"
		x=$(tr ' ' '\n' <<<"${vals[$fault,$a]}" | grep . | median)
		y=$(tr ' ' '\n' <<<"${vals[$fault,$b]}" | grep . | median)
		ratio=$(awk -v x="$x" -v y="$y" 'BEGIN { if (x + 0 > 0 && y + 0 > 0) printf "%.2f", y / x; else print "-" }')
		printf '%-7s %-34s %10s %10s %7s\n' "$fault" "${label%%:*}" "$x" "$y" "$ratio"
	done
done
