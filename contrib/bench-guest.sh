#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs inside the VM (contrib/bench.sh): each measurement is a server and a
# client on rxe0's address; prints three markdown tables of the results:
# MSG, RDM (tagged, fi_rivet_rdm_bw, and an Open MPI ping-pong), and
# one-sided (fi_rivet_rdm_rma_bw against ib_write_bw, ib_read_bw,
# ib_read_lat, ib_atomic_lat). The guest's speed varies with the host's
# load: each MSG latency is the best of 3 runs, the RDM -m and raw send
# latencies of 5 and 6, the read and atomic latencies of 4, each other
# number the best of 2, the providers taking turns.
#
# usage: bench-guest.sh [ITERATIONS]   (1 MiB runs use a fifth of them)
#        bench-guest.sh --icount   (only the instruction counts per 8 B
#        message of raw verbs, rivet RDM and rivet;ofi_rxm, as "exact NAME
#        VALUE" lines: contrib/bench.sh --exact)
set -uo pipefail
icount_only=false
if [ "${1:-}" = --icount ]; then
	icount_only=true
	shift
fi
iters=${1:-1000}
big=$((iters / 5 > 20 ? iters / 5 : 20))
addr=10.77.0.1
top=$(cd "$(dirname "$0")/.." && pwd)
bw=$top/fabtests/fi_rivet_bw
rbw=$top/fabtests/fi_rivet_rdm_bw
rma=$top/fabtests/fi_rivet_rdm_rma_bw
gid=${RIVET_GID_INDEX:-1}	# rivet-vm checks it is the RoCE v2 IPv4 GID
out=${VM_OUT:-/tmp}/bench
mkdir -p "$out"

rxe_counters() {
	local d=/sys/class/infiniband/rxe0/ports/1/hw_counters
	echo "$(cat $d/rcvd_rnr_err 2>/dev/null)" \
		"$(cat $d/completer_retry_err 2>/dev/null)"
}

# pair TAG READY SERVER_CMD... -- CLIENT_CMD...: runs the server, waits
# until it is ready (READY: a TCP port it listens on, or "log": it printed
# "listening"), runs the client; prints the client's output. Both outputs
# stay in $out/TAG.{server,client}. Fails when either fails.
pair() {
	local log=$out/$1 ready=$2 s=() c=() spid rc=0 i rnr
	shift 2
	while [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	c=("$@")
	timeout 300 "${s[@]}" >"$log.server" 2>&1 &
	spid=$!
	for ((i = 0; i < 300; i++)); do
		if [ "$ready" = log ]; then
			grep -qs listening "$log.server" && break
		elif [ -n "$(ss -Hltn "sport = :$ready")" ]; then
			break
		fi
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	rnr=$(rxe_counters)
	timeout 300 "${c[@]}" >"$log.client" 2>&1 || rc=$?
	wait "$spid" || rc=$?
	cat "$log.client"
	# RNR NAKs stall a sender for the responder's min_rnr_timer
	echo "# rxe0 during this run (RNR NAKs, retransmissions): $rnr ->" \
		"$(rxe_counters)" >>"$log.client"
	if [ "$rc" != 0 ]; then
		echo "bench: failed ($rc): ${c[*]} (logs: $log.*)" >&2
		return "$rc"
	fi
}

# perftest: average one-way latency (usec; t_avg, the 6th column, like
# fi_pingpong's mean), average bandwidth converted from MiB/s to MB/s
perf_lat() {
	pair "$1-$2" 18515 "$1" -d rxe0 -x "$gid" -s "$2" -n "$iters" -F -- \
		"$1" -d rxe0 -x "$gid" -s "$2" -n "$iters" -F "$addr" |
		awk -v s="$2" '$1 == s && NF >= 6 { print $6; exit }'
}
perf_bw() {
	pair "$1-$2" 18515 "$1" -d rxe0 -x "$gid" -s "$2" -n "$3" -F -- \
		"$1" -d rxe0 -x "$gid" -s "$2" -n "$3" -F "$addr" |
		awk -v s="$2" '$1 == s && NF >= 4 {
			printf "%.2f\n", $4 * 1.048576; exit }'
}
# perftest's t_typical (5th column: the median) from the last run's log
perf_log_typ() {	# perf_log_typ PROGRAM SIZE
	awk -v s="$2" '$1 == s && NF >= 6 { print $5; exit }' \
		"$out/$1-$2.client" 2>/dev/null
}
# fi_pingpong: usec/xfer (one-way: time over 2 x iterations)
fi_lat() {
	pair "fi_pingpong-$1-$2" 47592 \
		fi_pingpong -p "$1" -e msg -S "$2" -I "$iters" -- \
		fi_pingpong -p "$1" -e msg -S "$2" -I "$iters" "$addr" |
		awk -v s="$2" '$1 == s && NF >= 8 { print $7; exit }'
}
fi_bw() {
	# -s: verbs needs a source address to open the server's domain
	pair "fi_rivet_bw-$1-$2" log \
		"$bw" -p "$1" -s "$addr" -S "$2" -I "$3" -- \
		"$bw" -p "$1" -S "$2" -I "$3" "$addr" |
		awk '$1 == "bw_MBps:" { print $2; exit }'
}

# User-space instructions per 8-byte message or operation: a ping-pong
# (fi_rivet_bw -C, fi_rivet_rdm_bw -C) or one read at a time
# (fi_rivet_rdm_rma_bw -C) whose client sleeps before each poll, so that
# polls find their completion; callgrind counts only inside the library
# calls (libfabric, the provider, the layers and libraries under it:
# libibverbs, librxe, the socket calls' user side).  A poll that found
# nothing is counted too, and how many there are depends on the host's
# load: so the client reports them (empty_polls), then makes 200 more
# where nothing is left to come, behind the same pause and through a
# wrapper of its own (*_probe_*: probe_polls), and each empty poll is
# taken out at the probes' cost per poll.  The figure is
# (Ir'(4000) - Ir'(2000)) / 2000 / (2 per ping-pong, 1 per read), where
# Ir' = Ir - probes' Ir - empty_polls * probes' Ir / probe_polls; marked
# "*" when a run's probes found something (not all empty).
# RIVET_ICOUNT_INSTR=1 records instruction addresses too (callgrind
# --dump-instr=yes) for contrib/cg-lines.py: costs per source line.
# cg_incl FILE PREFIX: the inclusive instructions of FILE's (a callgrind
# profile, one event) functions whose names start with PREFIX
cg_incl() {
	awk -v pre="$2" '
	function fname(s) {
		if (match(s, /^\([0-9]+\)/)) {
			if (length(s) > RLENGTH + 1)
				names[substr(s, 1, RLENGTH)] = substr(s, RLENGTH + 2)
			return names[substr(s, 1, RLENGTH)]
		}
		return s
	}
	/^fn=/ { cur = fname(substr($0, 4)); next }
	/^cfn=/ { fname(substr($0, 5)); next }
	/^[0-9+*-]/ { if (index(cur, pre) == 1) sum += $NF }
	END { printf "%.0f\n", sum }' "$1"
}
# icount_out FILE CLIENT_LOG PREFIX: "IR EMPTY_POLLS PROBE_POLLS PROBE_IR"
icount_out() {
	printf '%s %s %s %s\n' \
		"$(awk '$1 == "summary:" { print $2; exit }' "$1")" \
		"$(awk '$1 == "empty_polls:" { print $2 }' "$2")" \
		"$(awk '$1 == "probe_polls:" { print $2 }' "$2")" \
		"$(cg_incl "$1" "$3")"
}
icount_run() {	# icount_run KIND PROV ITERS: prints icount_out's line
	local kind=$1 prov=$2 n=$3 e=(env) args sargs cargs port f tag tog prog
	local cg=(valgrind --tool=callgrind)
	[ -z "${RIVET_ICOUNT_INSTR:-}" ] || cg+=(--dump-instr=yes)
	f=$out/callgrind.${prov//;/_}.$kind.$n
	tag=icount-${prov//;/_}-$kind-$n
	case $prov in
	*ofi_rxm*) e+=(FI_RIVET_UTIL_LAYERING=1) ;;
	esac
	if [ "${kind%%_*}" = raw ]; then
		# contrib/raw-pingpong: no libfabric (raw_write: its -W,
		# raw_split: its -F, raw_wr: its -X)
		case $kind in
		raw) args=() ;;
		raw_write) args=(-W) ;;
		raw_wr) args=(-X) ;;
		*) args=(-F) ;;
		esac
		port=$(next_port)
		pair "$tag" log "$top/contrib/raw-pingpong" -s "$addr" -p "$port" \
			-n "$n" "${args[@]}" -- "${cg[@]}" \
			--callgrind-out-file="$f" --collect-atstart=no \
			--toggle-collect='rp_lib_*' --toggle-collect='rp_probe_*' \
			"$top/contrib/raw-pingpong" \
			-c "$addr" -p "$port" -n "$n" -C 1000 "${args[@]}" \
			>/dev/null || return
		icount_out "$f" "$out/$tag.client" rp_probe_
		return
	fi
	case $kind in
	msg)  prog=$bw tog='bw_lib_*' args=(-p "$prov" -S 8) ;;
	rdm)  prog=$rbw tog='rb_lib_*' args=(-p "$prov" -S 8) ;;
	read) prog=$rma tog='rrb_lib_*' args=(-p "$prov" -o read -S 8) ;;
	esac
	sargs=("${args[@]}") cargs=("${args[@]}")
	if [ "$kind" != msg ]; then	# RDM: a fresh port (next_port)
		port=$(next_port)
		sargs+=(-B "$port") cargs+=(-s "$addr" -P "$port")
	fi
	# the server waits out valgrind's slow start (-T)
	pair "$tag" log "${e[@]}" "$prog" "${sargs[@]}" -s "$addr" -I "$n" \
		-C 1000 -T 120000 -- \
		"${e[@]}" "${cg[@]}" --callgrind-out-file="$f" \
		--collect-atstart=no --toggle-collect="$tog" \
		--toggle-collect="${tog%%lib_*}probe_*" \
		"$prog" "${cargs[@]}" -I "$n" -C 1000 -T 120000 "$addr" \
		>/dev/null || return
	icount_out "$f" "$out/$tag.client" "${tog%%lib_*}probe_"
}
icount() {	# icount KIND PROV
	local a b per=2
	[ "$1" != read ] || per=1
	a=$(icount_run "$1" "$2" 2000) && b=$(icount_run "$1" "$2" 4000) ||
		return 0
	echo "icount $1 $2: Ir empty_polls probe_polls probe_Ir:" \
		"2000: $a; 4000: $b" >&2
	awk -v a="$a" -v b="$b" -v per="$per" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		if (x[3] + 0 <= 0 || y[3] + 0 <= 0) exit 1
		# each run less its probes and its empty polls
		ra = x[1] - x[4] - x[2] * x[4] / x[3]
		rb = y[1] - y[4] - y[2] * y[4] / y[3]
		mark = (x[3] < 200 || y[3] < 200) ? "*" : ""
		printf "%.0f%s\n", (rb - ra) / 2000 / per, mark }'
}

# perftest message rate (MsgRate, the 5th column, in Mpps) in messages/s
perf_rate() {
	pair "$1-rate-$2" 18515 "$1" -d rxe0 -x "$gid" -s "$2" -n "$3" -F -- \
		"$1" -d rxe0 -x "$gid" -s "$2" -n "$3" -F "$addr" |
		awk -v s="$2" '$1 == s && NF >= 5 { printf "%.0f\n", $5 * 1e6; exit }'
}

# A fresh port per RDM run (tcp's listeners linger): a counter in $out,
# since each run is in a subshell.
next_port() {
	local n
	n=$(cat "$out/.rdm_port" 2>/dev/null || echo 0)
	echo $((n + 1)) >"$out/.rdm_port"
	echo $((47700 + 2 * (n % 200)))
}
# rdm PROV FIELD ARGS...: fi_rivet_rdm_bw's FIELD (bw_MBps, msg_rate,
# lat_us); "rivet;ofi_rxm" needs FI_RIVET_UTIL_LAYERING=1; "rivet-noyield"
# is rivet RDM polling without yielding (FI_RIVET_POLL_YIELD=0), as
# perftest does
rdm() {
	local prov=$1 field=$2 port e=(env) tag
	shift 2
	port=$(next_port)
	tag="fi_rivet_rdm_bw-${prov//;/_}-$field"
	case $prov in
	*ofi_rxm*) e+=(FI_RIVET_UTIL_LAYERING=1) ;;
	rivet-noyield) e+=(FI_RIVET_POLL_YIELD=0); prov=rivet ;;
	esac
	pair "$tag" log "${e[@]}" "$rbw" -p "$prov" -s "$addr" -B "$port" "$@" -- \
		"${e[@]}" "$rbw" -p "$prov" -s "$addr" -P "$port" "$@" "$addr" |
		awk -v f="$field:" '$1 == f { print $2; exit }'
}
# rdm_log PROV FIELD FIELD2: FIELD2 from the last "rdm PROV FIELD" run
rdm_log() {
	awk -v f="$3:" '$1 == f { print $2; exit }' \
		"$out/fi_rivet_rdm_bw-${1//;/_}-$2.client" 2>/dev/null
}

# rma FIELD ARGS...: rivet's fi_rivet_rdm_rma_bw FIELD (bw_MBps, lat_us)
rma() {
	local field=$1 port
	shift
	port=$(next_port)
	pair "$(rma_tag "$field" "$@")" log \
		"$rma" -p rivet -s "$addr" -B "$port" "$@" -- \
		"$rma" -p rivet -s "$addr" -P "$port" "$@" "$addr" |
		awk -v f="$field:" '$1 == f { print $2; exit }'
}
rma_tag() { local IFS=_; echo "fi_rivet_rdm_rma_bw-$*" | tr -c 'a-zA-Z0-9_\n-' _; }
# rma_log FIELD2 FIELD ARGS...: FIELD2 from the last "rma FIELD ARGS" run
rma_log() {
	local f2=$1
	shift
	awk -v f="$f2:" '$1 == f { print $2; exit }' \
		"$out/$(rma_tag "$@").client" 2>/dev/null
}
rma_native() { FI_RIVET_NATIVE_ATOMICS=1 rma "$@"; }
rma_noyield() { FI_RIVET_POLL_YIELD=0 rma "$@"; }
# perftest's read/atomic latency: t_avg (6th column), the whole round trip
perf_rtt() {
	local sz=(-s "$2")
	[ "$1" != ib_atomic_lat ] || sz=()
	pair "$1-$2" 18515 "$1" -d rxe0 -x "$gid" "${sz[@]}" -n "$iters" -F -- \
		"$1" -d rxe0 -x "$gid" "${sz[@]}" -n "$iters" -F "$addr" |
		awk -v s="$2" '$1 == s && NF >= 6 { print $6; exit }'
}

# Open MPI 8 B ping-pong (pml cm, mtl ofi on PROV): one-way usec, mean
mpi_src='#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	int rank, n = argc > 1 ? atoi(argv[1]) : 1000, warm = 16, i, peer;
	char buf[8] = { 0 };
	double t0 = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	peer = !rank;
	for (i = 0; i < n + warm; i++) {
		if (i == warm)
			t0 = MPI_Wtime();
		if (!rank) {
			MPI_Send(buf, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(buf, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
		}
	}
	if (!rank)
		printf("lat_us: %.2f\n", (MPI_Wtime() - t0) * 1e6 / (2.0 * n));
	MPI_Finalize();
	return 0;
}'
mpi_lat_prog=/tmp/bench_mpi_lat
mpi_lat() {
	local log=$out/mpi_lat-$1
	[ -x "$mpi_lat_prog" ] || return 0
	timeout 300 mpirun --oversubscribe -np 2 --mca pml cm --mca mtl ofi \
		--mca mtl_ofi_provider_include "$1" --mca btl self \
		-x FI_PROVIDER_PATH "$mpi_lat_prog" "$iters" >"$log" 2>&1 ||
		echo "bench: mpirun on $1 failed (log: $log)" >&2
	awk '$1 == "lat_us:" { print $2; exit }' "$log"
}

ratio() {
	awk -v a="${1%\*}" -v b="${2%\*}" 'BEGIN {
		if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'
}
row() {	# row LABEL RAW VERBS RIVET
	echo "| $1 | ${2:--} | ${3:--} | ${4:--} |" \
		"$(ratio "$4" "$2") | $(ratio "$4" "$3") |"
}

# best OP VAR CMD...: keeps in VAR the least (OP min) or
# greatest (max) number CMD printed so far
best() {
	local op=$1 var=$2 v
	shift 2
	v=$("$@")
	[ -n "$v" ] || return 0
	awk -v a="${!var}" -v b="$v" -v op="$op" 'BEGIN {
		exit !(a == "" || (op == "min" ? b + 0 < a + 0 : b + 0 > a + 0)) }' &&
		printf -v "$var" '%s' "$v"
}

# --icount: user-space instructions per 8 B message, exact (the polls
# that found nothing taken out: icount; "*" when a probe found something)
if $icount_only; then
	echo "exact raw_instr_per_msg $(icount raw raw)"
	# for information: raw verbs with RDMA writes into a ring that the
	# receiver polls in memory, an eager-RDMA floor (raw-pingpong -W: the
	# sequence number in the payload's write; -F: in a write of its own)
	echo "exact raw_write_instr_per_msg $(icount raw_write raw)"
	echo "exact raw_split_instr_per_msg $(icount raw_split raw)"
	# raw verbs whose sends go through ibv_wr_* (raw-pingpong -X), as
	# rivet's short injects do where the device offers it
	echo "exact raw_wr_instr_per_msg $(icount raw_wr raw)"
	echo "exact rivet_instr_per_msg $(icount rdm rivet)"
	echo "exact rxm_instr_per_msg $(icount rdm "rivet;ofi_rxm")"
	exit 0
fi

lat_raw='' lat_raw_t='' lat_verbs='' lat_rivet=''
for _ in 1 2 3; do
	best min lat_raw perf_lat ib_send_lat 8
	best min lat_raw_t perf_log_typ ib_send_lat 8
	best min lat_verbs fi_lat verbs 8
	best min lat_rivet fi_lat rivet 8
done
rows=("$(row "8 B ping-pong latency (usec, one-way mean; lower is better)" \
	"$lat_raw" "$lat_verbs" "$lat_rivet")")
for s in 65536 1048576; do
	if [ "$s" = 65536 ]; then i=$iters l="64 KiB"; else i=$big l="1 MiB"; fi
	b_raw='' b_verbs='' b_rivet=''
	for _ in 1 2; do
		best max b_raw perf_bw ib_send_bw "$s" "$i"
		best max b_verbs fi_bw verbs "$s" "$i"
		best max b_rivet fi_bw rivet "$s" "$i"
	done
	rows+=("$(row "$l send bandwidth (MB/s, $i msgs; higher is better)" \
		"$b_raw" "$b_verbs" "$b_rivet")")
	raw_1m=$b_raw
done
w_raw=''
for _ in 1 2; do
	best max w_raw perf_bw ib_write_bw 1048576 "$big"
done
rows+=("$(row "1 MiB RDMA write bandwidth (MB/s, $big msgs)" "$w_raw" "" "")")
ic_verbs=$(icount msg verbs)
ic_rivet=$(icount msg rivet)
rows+=("$(row "user-space instructions per 8 B message (callgrind; lower is better)" \
	"" "$ic_verbs" "$ic_rivet")")

# RDM: rivet's native RDM, rxm over rivet's MSG, tcp RDM (tcp;ofi_rxm);
# the raw latency and 1 MiB bandwidth are the MSG table's
rrow() {	# rrow LABEL RAW TCP RXM RIVET
	echo "| $1 | ${2:--} | ${3:--} | ${4:--} | ${5:--} |" \
		"$(ratio "$5" "$2") | $(ratio "$5" "$4") | $(ratio "$5" "$3") |"
}
rate_n=$((iters * 10))
provs=(rivet "rivet;ofi_rxm" tcp)
declare -A rl=() rm=() rmt=() rr=() rb=() ml=([rivet]='' [tcp]='')
ny_m='' ny_mt='' ny_r=''	# rivet-noyield
deep_m=''	# rivet, 10 000 unrelated receives posted on both sides
for p in "${provs[@]}"; do
	rl[$p]='' rm[$p]='' rmt[$p]='' rr[$p]='' rb[$p]=''
done
r_rate=''
for _ in 1 2; do
	best max r_rate perf_rate ib_send_bw 8 "$rate_n"
	for p in "${provs[@]}"; do
		best min "rl[$p]" rdm "$p" lat_us -l -S 8 -I "$iters"
		best min "rm[$p]" rdm "$p" lat_us -l -m -S 8 -I "$iters"
		best min "rmt[$p]" rdm_log "$p" lat_us lat_typical_us
		best max "rr[$p]" rdm "$p" msg_rate -S 8 -I "$rate_n"
		best max "rb[$p]" rdm "$p" bw_MBps -S 1m -I "$big"
	done
	best max ny_r rdm rivet-noyield msg_rate -S 8 -I "$rate_n"
done
# The ping-pong latencies are bimodal under TCG (where rxe's kworkers
# land: docs/performance.md): three more runs each of raw and the -m ping-pongs, so
# that "best" is less a matter of luck for every column alike.
for _ in 1 2 3; do
	best min lat_raw perf_lat ib_send_lat 8
	best min lat_raw_t perf_log_typ ib_send_lat 8
	for p in "${provs[@]}"; do
		best min "rm[$p]" rdm "$p" lat_us -l -m -S 8 -I "$iters"
		best min "rmt[$p]" rdm_log "$p" lat_us lat_typical_us
	done
	best min ny_m rdm rivet-noyield lat_us -l -m -S 8 -I "$iters"
	best min ny_mt rdm_log rivet-noyield lat_us lat_typical_us
	best min deep_m rdm rivet lat_us -l -m -S 8 -I "$iters" -D 10000
done
declare -A ic=()
for p in "${provs[@]}"; do
	ic[$p]=$(icount rdm "$p")
done
if command -v mpicc >/dev/null && command -v mpirun >/dev/null &&
   printf '%s\n' "$mpi_src" >/tmp/bench_mpi_lat.c &&
   mpicc -O2 -o "$mpi_lat_prog" /tmp/bench_mpi_lat.c >"$out/mpi_lat.build" 2>&1
then
	for _ in 1 2; do
		best min "ml[rivet]" mpi_lat rivet
		best min "ml[tcp]" mpi_lat tcp
	done
else
	echo "bench: no MPI latency (mpicc or mpirun missing?)" >&2
fi
rdm_rows=(
	"$(rrow "8 B tagged ping-pong latency (usec, one-way mean; lower is better)" \
		"$lat_raw" "${rl[tcp]:-}" "${rl[rivet;ofi_rxm]:-}" "${rl[rivet]:-}")"
	"$(rrow "8 B tagged latency, FI_PROGRESS_MANUAL asked for (-m; usec)" \
		"$lat_raw" "${rm[tcp]:-}" "${rm[rivet;ofi_rxm]:-}" "${rm[rivet]:-}")"
	"$(rrow "8 B tagged latency, typical (median one-way, -m; perftest's t_typical)" \
		"$lat_raw_t" "${rmt[tcp]:-}" "${rmt[rivet;ofi_rxm]:-}" "${rmt[rivet]:-}")"
	"$(rrow "8 B message rate (msgs/s, $rate_n msgs, 64 in flight; higher is better)" \
		"$r_rate" "${rr[tcp]:-}" "${rr[rivet;ofi_rxm]:-}" "${rr[rivet]:-}")"
	"$(rrow "8 B tagged latency, -m, 10 000 unrelated receives posted (-D 10000; usec)" \
		"$lat_raw" "" "" "$deep_m")"
	"$(rrow "8 B tagged latency, -m, FI_RIVET_POLL_YIELD=0 (usec, mean)" \
		"$lat_raw" "" "" "$ny_m")"
	"$(rrow "8 B tagged latency, -m, FI_RIVET_POLL_YIELD=0, typical" \
		"$lat_raw_t" "" "" "$ny_mt")"
	"$(rrow "8 B message rate, FI_RIVET_POLL_YIELD=0 (msgs/s)" \
		"$r_rate" "" "" "$ny_r")"
	"$(rrow "1 MiB tagged bandwidth (MB/s, $big msgs; higher is better)" \
		"$raw_1m" "${rb[tcp]:-}" "${rb[rivet;ofi_rxm]:-}" "${rb[rivet]:-}")"
	"$(rrow "Open MPI 8 B ping-pong latency (usec, one-way mean; pml cm, mtl ofi)" \
		"" "${ml[tcp]:-}" "" "${ml[rivet]:-}")"
	"$(rrow "user-space instructions per 8 B tagged message (callgrind; lower is better)" \
		"" "${ic[tcp]:-}" "${ic[rivet;ofi_rxm]:-}" "${ic[rivet]:-}")"
)

echo
echo "| measurement | raw verbs (perftest) | libfabric verbs MSG | rivet MSG | rivet / raw | rivet / verbs |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
case "$ic_verbs$ic_rivet" in
*\**) echo
      echo "\* the runs' empty polls differ by over 1%: the count is rough." ;;
esac
echo
echo "| RDM measurement | raw verbs (perftest) | tcp RDM (tcp;ofi_rxm) | rivet;ofi_rxm | rivet RDM | rivet / raw | rivet / rxm | rivet / tcp |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rdm_rows[@]}"
case "${ic[*]}" in
*\**) echo
      echo "\* the runs' empty polls differ by over 1%: the count is rough." ;;
esac
echo

# One-sided: rivet RDM (fi_rivet_rdm_rma_bw; its server sleeps with
# FI_PROGRESS_AUTO, as perftest's does) against perftest
a_wraw='' a_rraw='' a_lraw='' a_araw='' a_w='' a_r='' a_l='' a_a='' a_n=''
a_lraw_t='' a_araw_t='' a_l_t='' a_n_t='' a_l0='' a_l0_t=''
for _ in 1 2; do
	best max a_wraw perf_bw ib_write_bw 1048576 "$big"
	best max a_w rma bw_MBps -o write -S 1m -I "$big"
	best max a_rraw perf_bw ib_read_bw 1048576 "$big"
	best max a_r rma bw_MBps -o read -S 1m -I "$big"
	best min a_lraw perf_rtt ib_read_lat 8
	best min a_lraw_t perf_log_typ ib_read_lat 8
	best min a_l rma lat_us -o read -l -S 8 -I "$iters"
	best min a_l_t rma_log lat_typical_us lat_us -o read -l -S 8 -I "$iters"
	best min a_araw perf_rtt ib_atomic_lat 8
	best min a_araw_t perf_log_typ ib_atomic_lat 8
	best min a_a rma lat_us -o atomic -l -I "$iters"
	best min a_n rma_native lat_us -o atomic -l -I "$iters"
	best min a_n_t rma_log lat_typical_us lat_us -o atomic -l -I "$iters"
done
for _ in 1 2; do	# latencies: two more runs each (bimodal, as above)
	best min a_lraw perf_rtt ib_read_lat 8
	best min a_lraw_t perf_log_typ ib_read_lat 8
	best min a_l rma lat_us -o read -l -S 8 -I "$iters"
	best min a_l_t rma_log lat_typical_us lat_us -o read -l -S 8 -I "$iters"
	best min a_araw perf_rtt ib_atomic_lat 8
	best min a_araw_t perf_log_typ ib_atomic_lat 8
	best min a_n rma_native lat_us -o atomic -l -I "$iters"
	best min a_n_t rma_log lat_typical_us lat_us -o atomic -l -I "$iters"
	best min a_l0 rma_noyield lat_us -o read -l -S 8 -I "$iters"
	best min a_l0_t rma_log lat_typical_us lat_us -o read -l -S 8 -I "$iters"
done
ic_read=$(icount read rivet)
ic_read_rxm=$(icount read "rivet;ofi_rxm")
rma_rows=(
	"$(row "1 MiB RDMA write bandwidth (MB/s, $big ops, 64 in flight)" "$a_wraw" "" "$a_w")"
	"$(row "1 MiB RDMA read bandwidth (MB/s, $big ops, 64 in flight)" "$a_rraw" "" "$a_r")"
	"$(row "8 B read latency (usec, round trip; lower is better)" "$a_lraw" "" "$a_l")"
	"$(row "8 B read latency, typical (median round trip)" "$a_lraw_t" "" "$a_l_t")"
	"$(row "8 B read latency, FI_RIVET_POLL_YIELD=0 (usec, mean)" "$a_lraw" "" "$a_l0")"
	"$(row "8 B read latency, FI_RIVET_POLL_YIELD=0, typical" "$a_lraw_t" "" "$a_l0_t")"
	"$(row "8-byte fetch-add latency, computed by the target's CPU (usec)" "$a_araw" "" "$a_a")"
	"$(row "8-byte fetch-add latency, FI_RIVET_NATIVE_ATOMICS=1 (usec)" "$a_araw" "" "$a_n")"
	"$(row "8-byte native fetch-add latency, typical (median round trip)" "$a_araw_t" "" "$a_n_t")"
	"$(row "user-space instructions per 8 B read (callgrind; lower is better)" "" "$ic_read_rxm" "$ic_read")"
)
echo "| one-sided measurement | raw verbs (perftest) | rivet;ofi_rxm | rivet RDM | rivet / raw | rivet / rxm |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rma_rows[@]}"
echo
echo "bench: logs and callgrind profiles in $out" >&2
