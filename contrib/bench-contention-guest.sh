#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs inside the VM (contrib/bench.sh --contention): latency when more
# processes want the CPUs than there are CPUs, rivet against libfabric's
# own verbs and tcp providers in the same boot.
#
# - MSG: Debian's fi_pingpong -e msg -S 8 (one-way usec/xfer) on an idle
#   guest for reference, with one busy loop per guest CPU besides the two
#   measured processes, and, when contrib/bench.sh --contention runs it,
#   with one busy loop per host CPU outside the guest (a loaded host:
#   the guest's CPUs are descheduled; the file HOST_LOAD_FILE asks the
#   host for it).
# - Open MPI (pml cm, mtl ofi): fabtests/mpi/mpi_rivet_lat with 4 ranks
#   (two pairs ping-pong at once) on the guest's CPUs, and with 2.
#
# Each figure is the median of ROUNDS interleaved rounds (the providers
# take turns in each round): the guest's speed moves with the host's load.
# Variants of rivet are measured beside it when named in
# RIVET_VARIANTS="NAME=VAR=VALUE ..." (e.g. noyield=FI_RIVET_POLL_YIELD=0).
#
# usage: bench-contention-guest.sh [ITERATIONS [ROUNDS]]
set -uo pipefail
iters=${1:-500}
rounds=${2:-5}
addr=10.77.0.1
top=$(cd "$(dirname "$0")/.." && pwd)
out=${VM_OUT:-/tmp}/bench-contention
ncpu=$(nproc)
mkdir -p "$out"
lat_prog=$top/fabtests/mpi/mpi_rivet_lat
if [ ! -x "$lat_prog" ]; then
	lat_prog=$out/mpi_rivet_lat
	mpicc -O2 -o "$lat_prog" "$top/fabtests/mpi/mpi_rivet_lat.c" ||
		{ echo "bench: mpicc failed" >&2; exit 1; }
fi

# load KIND on|off: none, guest (busy loops here) or host (outside)
load() {
	local i
	case $1-$2 in
	guest-on) hogs_start "$ncpu" ;;
	guest-off) hogs_stop ;;
	host-on | host-off)
		if [ "$2" = on ]; then touch "$HOST_LOAD_FILE"; else rm -f "$HOST_LOAD_FILE"; fi
		for ((i = 0; i < 100; i++)); do	# the host acknowledges
			if [ "$2" = on ]; then [ -e "$HOST_LOAD_FILE.on" ] && break
			else [ -e "$HOST_LOAD_FILE.on" ] || break; fi
			sleep 0.1
		done ;;
	esac
}
loads=(none guest)
[ -z "${HOST_LOAD_FILE:-}" ] || loads+=(host)
declare -A load_name=([none]="idle" [guest]="$ncpu busy loops in the guest"
	[host]="busy loops on the host")

hogs=()
hogs_start() {
	local i
	for ((i = 0; i < $1; i++)); do
		bash -c 'while :; do :; done' &
		hogs+=($!)
	done
}
hogs_stop() {
	[ ${#hogs[@]} = 0 ] || kill "${hogs[@]}" 2>/dev/null
	wait "${hogs[@]}" 2>/dev/null
	hogs=()
}
trap 'hogs_stop; [ -z "${HOST_LOAD_FILE:-}" ] || rm -f "$HOST_LOAD_FILE"' EXIT

# msg_lat TAG PROV [VAR=VALUE]: fi_pingpong's one-way usec for 8 B
msg_lat() {
	local log=$out/msg-$1 p=$2 s i rc=0
	shift 2
	env "$@" timeout 300 fi_pingpong -p "$p" -e msg -S 8 -I "$iters" \
		>"$log.server" 2>&1 &
	s=$!
	for ((i = 0; i < 300; i++)); do
		[ -n "$(ss -Hltn 'sport = :47592')" ] && break
		kill -0 "$s" 2>/dev/null || break
		sleep 0.1
	done
	env "$@" timeout 300 fi_pingpong -p "$p" -e msg -S 8 -I "$iters" \
		"$addr" >"$log.client" 2>&1 || rc=$?
	wait "$s" || rc=$?
	[ "$rc" = 0 ] || { echo "bench: fi_pingpong $1 failed ($rc)" >&2; return; }
	awk '$1 == 8 && NF >= 8 { print $7; exit }' "$log.client"
}

# mpi_lat TAG PROV NP [VAR=VALUE]: mpi_rivet_lat's one-way usec for 8 B
mpi_lat() {
	local log=$out/mpi-$1-$3 x=(-x FI_PROVIDER_PATH)
	[ -z "${4:-}" ] || x+=(-x "$4")
	timeout 300 mpirun --oversubscribe -np "$3" --mca pml cm \
		--mca mtl ofi --mca mtl_ofi_provider_include "$2" \
		--mca btl self "${x[@]}" "$lat_prog" "$iters" 8 >"$log" 2>&1 ||
		{ echo "bench: mpirun $1 -np $3 failed (log: $log)" >&2; return; }
	awk '$1 == "lat_us:" { print $2; exit }' "$log"
}

declare -A v=()
add() { v[$1]+="${2:+$2 }"; }	# add KEY VALUE: one more round's value
median() {
	tr ' ' '\n' <<<"${v[$1]:-}" | grep . | sort -g | awk '
		{ a[NR] = $1 }
		END {
			if (!NR) print "-"
			else if (NR % 2) print a[(NR + 1) / 2]
			else print (a[NR / 2] + a[NR / 2 + 1]) / 2
		}'
}
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'
}

provs=(rivet verbs tcp)
variants=(${RIVET_VARIANTS:-})
for ((r = 1; r <= rounds; r++)); do
	for h in "${loads[@]}"; do
		load "$h" on
		for p in "${provs[@]}"; do
			add "msg $h $p" "$(msg_lat "$p-$h-r$r" "$p")"
		done
		for var in "${variants[@]}"; do
			add "msg $h rivet-${var%%=*}" \
			    "$(msg_lat "${var%%=*}-$h-r$r" rivet "${var#*=}")"
		done
		load "$h" off
	done
	for np in 2 4; do
		for p in rivet tcp; do
			add "mpi $np $p" "$(mpi_lat "$p-r$r" "$p" "$np")"
		done
		for var in "${variants[@]}"; do
			add "mpi $np rivet-${var%%=*}" \
			    "$(mpi_lat "${var%%=*}-r$r" rivet "$np" "${var#*=}")"
		done
	done
	echo "bench: round $r of $rounds done" >&2
done

echo
echo "CPU contention, $ncpu CPUs, 8 B, one-way usec, median of $rounds" \
	"interleaved rounds ($iters round trips each)"
echo
echo "| measurement | rivet | verbs | tcp | rivet / verbs | rivet / tcp |"
echo "|---|---|---|---|---|---|"
for h in "${loads[@]}"; do
	a=$(median "msg $h rivet") b=$(median "msg $h verbs") c=$(median "msg $h tcp")
	echo "| fi_pingpong -e msg, ${load_name[$h]} | $a | $b | $c |" \
		"$(ratio "$a" "$b") | $(ratio "$a" "$c") |"
	for var in "${variants[@]}"; do
		a=$(median "msg $h rivet-${var%%=*}")
		echo "| the same, rivet with ${var#*=} | $a | $b | $c |" \
			"$(ratio "$a" "$b") | $(ratio "$a" "$c") |"
	done
done
for np in 2 4; do
	a=$(median "mpi $np rivet") c=$(median "mpi $np tcp")
	echo "| Open MPI ping-pong, $np ranks on $ncpu CPUs | $a | - | $c | - |" \
		"$(ratio "$a" "$c") |"
	for var in "${variants[@]}"; do
		a=$(median "mpi $np rivet-${var%%=*}")
		echo "| the same, rivet with ${var#*=} | $a | - | $c | - |" \
			"$(ratio "$a" "$c") |"
	done
done
echo
echo "raw values and logs: $out"
for k in "${!v[@]}"; do echo "# $k: ${v[$k]}"; done | sort
