#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs inside the VM (contrib/demo.sh): fi_info -p rivet, an RDM tagged
# ping-pong and bandwidth run on rivet and a short Open MPI job on rivet,
# each beside raw verbs (perftest) in the same boot, then a table of the
# numbers. Server and client share rxe0's address; every server is waited
# for before its client starts. Logs in $VM_OUT/demo.
set -euo pipefail
addr=10.77.0.1
top=$(cd "$(dirname "$0")/.." && pwd)
gid=${RIVET_GID_INDEX:-1}	# rivet-vm checks it is the RoCE v2 IPv4 GID
log=${VM_OUT:-/tmp}/demo
rbw=$top/fabtests/fi_rivet_rdm_bw
mpi=$top/fabtests/mpi
iters=1000
mkdir -p "$log"
# shellcheck source=contrib/guest-pair.sh
. "$top/contrib/guest-pair.sh"

field() { awk -v f="$1:" '$1 == f { print $2; exit }' "$2"; }
# perftest's result line for SIZE: column N (t_avg 6, t_typical 5, BW 4)
perf_col() { awk -v s="$2" -v n="$3" '$1 == s && NF >= n { print $n; exit }' "$1"; }
mib_to_mb() { awk -v x="$1" 'BEGIN { printf "%.2f", x * 1.048576 }'; }
show() { printf '%-36s %s\n' "$1:" "$2"; }
human_size() { [ "$1" -ge 1048576 ] && echo "$(($1 >> 20)) MiB" || echo "$(($1 >> 10)) KiB"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }

perftest() {	# perftest PROGRAM SIZE ITERS: runs it; the log is $log/PROGRAM-SIZE
	pair "$log/$1-$2" 120 18515 "$1" -d rxe0 -x "$gid" -s "$2" -n "$3" -F -- \
		"$1" -d rxe0 -x "$gid" -s "$2" -n "$3" -F "$addr" >/dev/null
}
port=47700
rdm_bw() {	# rdm_bw TAG ARGS...: fi_rivet_rdm_bw on rivet; log $log/TAG
	local tag=$1
	shift
	port=$((port + 2))
	pair "$log/$tag" 120 log "$rbw" -p rivet -s "$addr" -B "$port" "$@" -- \
		"$rbw" -p rivet -s "$addr" -P "$port" "$@" "$addr" >/dev/null
}

echo "== fi_info -p rivet"
fi_info -p rivet

echo
echo "== fi_pingpong -p rivet -e rdm -m tagged (libfabric's own ping-pong)"
first=1
for s in 8 1024 65536; do
	pair "$log/fi_pingpong-$s" 120 47592 \
		fi_pingpong -p rivet -e rdm -m tagged -S "$s" -I 500 -- \
		fi_pingpong -p rivet -e rdm -m tagged -S "$s" -I 500 "$addr" |
		awk -v first="$first" 'first || !/^bytes/'
	first=0
done

echo
echo "== 8 B ping-pong: raw verbs (ib_send_lat) and rivet RDM tagged (fi_rivet_rdm_bw -l)"
perftest ib_send_lat 8 "$iters"
raw_lat=$(perf_col "$log/ib_send_lat-8.client" 8 6)
raw_typ=$(perf_col "$log/ib_send_lat-8.client" 8 5)
show "ib_send_lat -s 8 -n $iters" "$raw_lat usec one-way mean, $raw_typ typical"
rdm_bw lat -l -S 8 -I "$iters"
r_lat=$(field lat_us "$log/lat.client")
r_typ=$(field lat_typical_us "$log/lat.client")
show "fi_rivet_rdm_bw -l -S 8 -I $iters" "$r_lat usec one-way mean, $r_typ typical"

echo
echo "== bandwidth, 64 sends in flight: raw verbs (ib_send_bw) and rivet RDM tagged (fi_rivet_rdm_bw)"
declare -A raw_bw r_bw
for s in 65536 1048576; do
	n=$((s > 65536 ? 200 : iters))
	perftest ib_send_bw "$s" "$n"
	raw_bw[$s]=$(mib_to_mb "$(perf_col "$log/ib_send_bw-$s.client" "$s" 4)")
	show "ib_send_bw -s $s -n $n" "${raw_bw[$s]} MB/s"
	rdm_bw "bw-$s" -S "$s" -I "$n"
	r_bw[$s]=$(field bw_MBps "$log/bw-$s.client")
	show "fi_rivet_rdm_bw -S $s -I $n" "${r_bw[$s]} MB/s"
done

echo
mpirun_rivet=(timeout 180 mpirun --oversubscribe -np 2 --mca pml cm
	--mca mtl ofi --mca mtl_ofi_provider_include rivet --mca btl self)
[ -z "${FI_PROVIDER_PATH:-}" ] || mpirun_rivet+=(-x FI_PROVIDER_PATH)
echo "== Open MPI on rivet: mpirun -np 2 --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include rivet"
echo "mpi_rivet_pingpong (0 B to 1 MiB, data checked both ways):"
"${mpirun_rivet[@]}" "$mpi/mpi_rivet_pingpong" 1048576
echo "mpi_rivet_lat (8 B, $iters round trips):"
"${mpirun_rivet[@]}" "$mpi/mpi_rivet_lat" "$iters" 8 | tee "$log/mpi_lat"
m_lat=$(field lat_us "$log/mpi_lat")

echo
echo "== summary (one boot; qemu TCG and Soft-RoCE make every number slow and"
echo "   load-dependent: compare the columns, not the absolute values)"
echo "| measurement | raw verbs (perftest) | rivet | rivet / raw |"
echo "|---|---|---|---|"
echo "| 8 B ping-pong, one-way mean (usec) | $raw_lat | $r_lat | $(ratio "$r_lat" "$raw_lat") |"
echo "| 8 B ping-pong, typical (usec) | $raw_typ | $r_typ | $(ratio "$r_typ" "$raw_typ") |"
for s in 65536 1048576; do
	echo "| $(human_size "$s") bandwidth (MB/s) | ${raw_bw[$s]} | ${r_bw[$s]} | $(ratio "${r_bw[$s]}" "${raw_bw[$s]}") |"
done
echo "| Open MPI 8 B ping-pong, one-way mean (usec) | $raw_lat | $m_lat | $(ratio "$m_lat" "$raw_lat") |"
