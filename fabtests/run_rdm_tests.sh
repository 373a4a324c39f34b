#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs rivet's RDM conformance programs, the MPI checks over Open MPI's
# mtl/ofi and Debian's fi_pingpong against one provider on one host.
set -u

usage() {
	cat <<EOF
Usage: $0 [-a ADDR] [-b BINDIR] [-o LOGDIR] [-t SECS] [-S SIZE|all]
          [-M MAX] [-I ITERS] [-n NPROCS] [-m RANKS] [-r NODE] [-x STEP]... PROV

Runs fi_rivet_rdm (as it is, with -A: FI_PROGRESS_AUTO, and with -D:
FI_THREAD_DOMAIN) and
fi_rivet_rdm_rma (server/client), fi_rivet_rdm_bw with 2000 receives
posted that nothing matches (deep matching queues), fi_rivet_rdm_atomic (4 processes; for
rivet again with FI_RIVET_NATIVE_ATOMICS=1), both again with offset
addressing (-O),
fi_rivet_rdm_multi, fi_rivet_rdm_harden (misuse and failure containment),
fi_rivet_pollset (poll sets and wait sets; rivet only),
fi_rivet_rdm_mrcache (memory freed and reused under the registration
cache; for rivet also ibv_reg_mr calls per 1000 rendezvous sends),
fi_rivet_rdm_shared_av (a named AV between two processes; rivet only),
fi_rivet_shared_ctx (shared receive and transmit contexts; rivet only),
fi_rivet_sep (scalable endpoints; rivet only),
fi_rivet_trigger (triggered operations, fi_ep_alias; rivet only),
fi_rivet_rdm_rawpeer (a raw verbs peer speaking rivet's protocol badly;
rivet only),
fi_rivet_rdm_mesh (NPROCS processes), fi_rivet_rdm_kill (a victim that dies
mid-transfer, a survivor, a client), the MPI programs of fabtests/mpi
(mpirun -np RANKS, pml cm, mtl ofi restricted to PROV), MPI one-sided
(mpi_rivet_osc: osc rdma on btl ofi with pml cm and ob1, with Open MPI's
native atomics, and osc pt2pt) and
fi_pingpong -e rdm, against provider PROV (tcp, "verbs;ofi_rxm", rivet, ...). Prints
"ok STEP" or "FAIL STEP: why" per step, then "N passed, M failed"; exits
non-zero on any failure. Meant for the Soft-RoCE VM (contrib/vm/rivet-vm),
where all processes share the address of rxe0; about 5 minutes there with
tcp. fi_rivet_rdm_rma assumes RC semantics (a completed write is visible
at the target, bad keys fail): "tcp;ofi_rxm" 1.17 fails several of its
checks.

  -a ADDR    address to bind and reach (default \$FT_ADDR or 10.77.0.1)
  -b BINDIR  where the fi_rivet_* programs are (default: this script's dir)
  -o LOGDIR  logs (default \$VM_OUT/rdmtests-PROV, else /tmp/rdmtests-PROV)
  -t SECS    time limit per step (default \$FT_TIMEOUT or 240)
  -S SIZES   size argument of fi_rivet_rdm (default all: 0 to 64 MiB)
  -M MAX     largest size of -S all in fi_rivet_rdm and fi_rivet_rdm_rma
  -I ITERS   ping-pong iterations of fi_rivet_rdm (default 10)
  -n NPROCS  processes of the mesh (default 8)
  -m RANKS   MPI ranks (default 4)
  -r NODE    across nodes (in a guest of contrib/vm/rivet-vm -N): the
             clients, the odd ranks of the mesh and the atomics and half
             of the MPI ranks run on node NODE (rivet-node), with its own
             address; the servers here, on ADDR
  -x STEP    skip a step: rdm rdm_auto rdm_domain rdm_tagdir rdm_rma deep wrapi tclass
             atomic native offset
             multi harden pollset mrcache rawpeer av shared_av shared_ctx sep
             trigger mesh kill mpi osc pingpong pingpong_msg
             (repeatable)

The environment goes to every program; FI_* variables also to the MPI
ranks (mpirun -x). For PROV=rivet set FI_PROVIDER_PATH to the folder of
librivet-fi.so; for "verbs;ofi_rxm" on rxe set FI_UNIVERSE_SIZE=64.

MPI: the programs come from BINDIR/mpi (make fabtests-mpi) or are built
here with mpicc into LOGDIR/mpi. They run with
  mpirun --oversubscribe -np RANKS --mca pml cm --mca mtl ofi \\
         --mca mtl_ofi_provider_include PROV --mca btl self [-x FI_...]
mtl_ofi_provider_include takes the provider name as fi_info prints it
("tcp" selects tcp;ofi_rxm, which is Debian 1.17's tcp RDM; its native
xnet RDM is not offered). FI_TCP_IFACE is not needed in the VM: tcp picks
an interface that reaches every rank of one host.
EOF
}

addr=${FT_ADDR:-10.77.0.1}
bindir=$(cd "$(dirname "$0")" && pwd)
logdir=
limit=${FT_TIMEOUT:-240}
sizes=all
iters=10
nprocs=8
ranks=4
rnode=
maxsz=
skip=" "
while getopts "a:b:o:t:S:M:I:n:m:r:x:h" op; do
	case $op in
	a) addr=$OPTARG ;;
	b) bindir=$OPTARG ;;
	o) logdir=$OPTARG ;;
	t) limit=$OPTARG ;;
	S) sizes=$OPTARG ;;
	M) maxsz=$OPTARG ;;
	I) iters=$OPTARG ;;
	n) nprocs=$OPTARG ;;
	m) ranks=$OPTARG ;;
	r) rnode=$OPTARG ;;
	x) skip="$skip$OPTARG " ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { usage >&2; exit 2; }
prov=$1
logdir=${logdir:-${VM_OUT:-/tmp}/rdmtests-${prov//;/_}}

if [ "$prov" = rivet ] && [ -z "${FI_PROVIDER_PATH:-}" ]; then
	echo "$0: set FI_PROVIDER_PATH to the folder holding librivet-fi.so" >&2
	exit 2
fi
mkdir -p "$logdir" || exit 2
ulimit -l unlimited 2>/dev/null || true

# The address of the clients (and of the remote ranks with -r).
caddr=$addr
if [ -n "$rnode" ]; then
	command -v rivet-node >/dev/null ||
		{ echo "$0: -r needs rivet-node (a guest of rivet-vm -N)" >&2; exit 2; }
	caddr=$(getent hosts "node$rnode" | awk '{print $1; exit}')
	[ -n "$caddr" ] || { echo "$0: no address for node$rnode" >&2; exit 2; }
fi

passed=0
failed=0
port=48100
t0=$SECONDS

pass() { echo "ok $1 ($((SECONDS - t0)) s)"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2 ($((SECONDS - t0)) s)"; failed=$((failed + 1)); }
skipped() { case $skip in *" $1 "*) return 0 ;; esac; return 1; }
run() { timeout -k 10 "$limit" "$@"; }
# A client (rank) of the pair or group: on node -r with the FI_* variables
# of this script, else here.
crun() {
	local v envs=()
	if [ -z "$rnode" ]; then
		run "$@"
		return
	fi
	for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\)=.*/\1/p'); do
		envs+=("$v=${!v}")
	done
	run rivet-node "$rnode" env "${envs[@]}" timeout -k 10 "$limit" "$@"
}
# Rank I of a group: the odd ones on node -r.
grun() {
	local i=$1
	shift
	if [ $((i % 2)) = 1 ]; then crun "$@"; else run "$@"; fi
}
gaddr() { if [ $(($1 % 2)) = 1 ]; then echo "$caddr"; else echo "$addr"; fi; }

# The failing cases of a log, indented.
show_failures() {
	grep -E '^(FAIL|skip) |terminated with signal|rank [0-9]+:' "$1" \
		2>/dev/null | sed 's/^/    /' | head -30
}

prog() {
	if [ -x "$bindir/$1" ]; then
		echo "$bindir/$1"
	else
		command -v "$1" 2>/dev/null
	fi
}

# Wait until a TCP port listens (or the process dies).
wait_port() {
	local pid=$1 tcp_port=$2 i
	for i in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || return 1
		ss -ltn 2>/dev/null | grep -q ":$tcp_port " && return 0
		sleep 0.1
	done
	return 0	# no ss: let the client's retries cope
}

# run_pair LABEL PROGRAM OOB_PORT -- SERVER_ARGS... -- CLIENT_ARGS...
run_pair() {
	local label=$1 p tcp=$3 srv=() spid src crc
	p=$(prog "$2")
	shift 4
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	local slog=$logdir/$label.server.log clog=$logdir/$label.client.log
	t0=$SECONDS
	if [ -z "$p" ]; then
		fail "$label" "program not found"
		return
	fi
	run "$p" "${srv[@]}" >"$slog" 2>&1 &
	spid=$!
	wait_port "$spid" "$tcp"
	crun "$p" "$@" >"$clog" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	if [ $src -eq 0 ] && [ $crc -eq 0 ]; then
		pass "$label"
	else
		fail "$label" "server exit $src, client exit $crc: $(tail -n 1 \
			"$clog") (logs: $slog $clog)"
		show_failures "$slog"
		show_failures "$clog"
	fi
}

step_rdm() {
	port=$((port + 2))
	run_pair fi_rivet_rdm fi_rivet_rdm $((port + 1000)) -- \
		-p "$prov" -e rdm -s "$addr" -B "$port" -S "$sizes" -I "$iters" \
		${maxsz:+-M "$maxsz"} -- -p "$prov" -e rdm -s "$caddr" -P "$port" \
		-S "$sizes" -I "$iters" ${maxsz:+-M "$maxsz"} "$addr"
}

# rdm_again NAME FLAG: every fi_rivet_rdm case again (sizes up to 1 MiB)
# with FLAG given to both sides, as step NAME.
rdm_again() {
	port=$((port + 2))
	run_pair "$1" fi_rivet_rdm $((port + 1000)) -- \
		-p "$prov" -e rdm "$2" -s "$addr" -B "$port" -S all -M 1m \
		-I "$iters" -- -p "$prov" -e rdm "$2" -s "$caddr" -P "$port" \
		-S all -M 1m -I "$iters" "$addr"
}

# FI_PROGRESS_AUTO asked for: rdm_auto_progress checks that the provider
# progresses by itself.
step_rdm_auto() { rdm_again fi_rivet_rdm_auto -A; }

# FI_THREAD_DOMAIN asked for: the provider's unlocked paths (no endpoint
# or CQ lock: fi_cq_read going straight to the endpoint's own read,
# docs/performance.md).
step_rdm_domain() { rdm_again fi_rivet_rdm_domain -D; }

# libfabric 2.x: FI_TAGGED_DIRECTED_RECV instead of FI_DIRECTED_RECV
# (fi_rivet_rdm -G): untagged receives then take any source
# (rdm_directed_msg), tagged ones still only the one they name.
step_rdm_tagdir() {
	if ! fi_info --version 2>/dev/null | grep -q '^libfabric: [2-9]'; then
		echo "# rdm_tagdir: libfabric 1.x has no FI_TAGGED_DIRECTED_RECV"
		return
	fi
	rdm_again fi_rivet_rdm_tagdir -G
}

step_rdm_rma() {
	port=$((port + 2))
	run_pair fi_rivet_rdm_rma fi_rivet_rdm_rma $((port + 1000)) -- \
		-p "$prov" -e rdm -s "$addr" -B "$port" -S "$sizes" \
		${maxsz:+-M "$maxsz"} -- -p "$prov" -e rdm -s "$caddr" -P "$port" \
		-S "$sizes" ${maxsz:+-M "$maxsz"} "$addr"
}

# Deep matching queues through the provider: 2000 receives that nothing
# matches posted first on both sides (fi_rivet_rdm_bw -D), then a
# stream of eager and rendezvous messages (64 in flight, edges checked)
# and a ping-pong that must each find their own receive among them.
step_deep() {
	local sz
	for sz in 64 64k; do
		port=$((port + 2))
		run_pair "deep_stream_$sz" fi_rivet_rdm_bw $((port + 1000)) -- \
			-p "$prov" -s "$addr" -B "$port" -D 2000 -S "$sz" \
			-I 400 -- -p "$prov" -s "$caddr" -P "$port" -D 2000 \
			-S "$sz" -I 400 "$addr"
	done
	port=$((port + 2))
	run_pair deep_pingpong fi_rivet_rdm_bw $((port + 1000)) -- \
		-p "$prov" -s "$addr" -B "$port" -D 2000 -l -S 8 -I 400 -- \
		-p "$prov" -s "$caddr" -P "$port" -D 2000 -l -S 8 -I 400 "$addr"
	# short queues as lists (FI_RIVET_MATCH_LIST_MAX): 64 in flight take
	# each side past 16 into the tables and back to a list when empty
	[ "$prov" = rivet ] || return 0
	port=$((port + 2))
	FI_RIVET_MATCH_LIST_MAX=16 run_pair deep_lists_stream_64 \
		fi_rivet_rdm_bw $((port + 1000)) -- \
		-p "$prov" -s "$addr" -B "$port" -S 64 -I 400 -- \
		-p "$prov" -s "$caddr" -P "$port" -S 64 -I 400 "$addr"
}

# Injects through ibv_wr_* (FI_RIVET_WR_API, on by default): tagged
# ping-pongs by fi_tinject of 8 and 200 B (header and payload in one
# inline piece) whose connections must say they post them so, and one of
# 200 B through ibv_post_send (FI_RIVET_WR_API=0: header and payload in
# two pieces).
step_wrapi() {
	local label want api logs
	[ "$prov" = rivet ] || return 0
	for label in wrapi_8 wrapi_200 wrapi_off_200; do
		port=$((port + 2))
		want="short injects by ibv_wr_send" api=1
		[ "${label#wrapi_off}" = "$label" ] ||
			want="short injects by ibv_post_send" api=0
		FI_RIVET_WR_API=$api FI_LOG_LEVEL=info FI_LOG_PROV=rivet \
			run_pair "$label" fi_rivet_rdm_bw $((port + 1000)) -- \
			-p "$prov" -s "$addr" -B "$port" -l -S "${label##*_}" \
			-I 200 -- -p "$prov" -s "$caddr" -P "$port" -l \
			-S "${label##*_}" -I 200 "$addr"
		logs=("$logdir/$label.server.log" "$logdir/$label.client.log")
		[ "$(cat "${logs[@]}" | grep -c "$want")" -ge 2 ] ||
			fail "${label}_log" "no \"$want\" in ${logs[*]}"
	done
}

# RDM connections made with a traffic class (the GRH's TOS on RoCE)
step_tclass() {
	port=$((port + 2))
	run_pair fi_rivet_rdm_rma_tclass fi_rivet_rdm_rma $((port + 1000)) -- \
		-p "$prov" -e rdm -s "$addr" -B "$port" -S 4096 -c bulk_data \
		-- -p "$prov" -e rdm -s "$caddr" -P "$port" -S 4096 \
		-c bulk_data "$addr"
}

# ofi_rxm pre-allocates some 70 MB per endpoint for its connections
# receive buffers (FI_OFI_RXM_MSG_RX_SIZE, default 128): 32 endpoints
# would not fit a 2 GiB guest, so fewer per connection here.
step_multi() {
	local log=$logdir/fi_rivet_rdm_multi.log p env=()
	p=$(prog fi_rivet_rdm_multi)
	t0=$SECONDS
	case $prov in
	tcp | *ofi_rxm*)
		env=("FI_OFI_RXM_MSG_RX_SIZE=${FI_OFI_RXM_MSG_RX_SIZE:-16}") ;;
	esac
	if run env "${env[@]}" "$p" -p "$prov" -e rdm -s "$addr" >"$log" 2>&1
	then
		pass fi_rivet_rdm_multi
	else
		fail fi_rivet_rdm_multi "$(tail -n 1 "$log") (log: $log)"
		show_failures "$log"
	fi
}

# One process, its cases forked: fi_rivet_rdm_harden (misuse, failure
# containment) for every provider; fi_rivet_rdm_rawpeer speaks rivet's own
# wire protocol, so rivet only.
# step_single PROGRAM [ARGS...]: one process, ARGS after the usual ones
# (the step is named after both: "fi_rivet_sep -A", log fi_rivet_sep_A.log)
step_single() {
	local name=$1 label log p
	shift
	label="$name${1:+ $*}"
	log=$logdir/$(echo "$label" | tr -c 'A-Za-z0-9_\n' _).log
	p=$(prog "$name")
	t0=$SECONDS
	if run "$p" -p "$prov" -e rdm -s "$addr" "$@" >"$log" 2>&1; then
		pass "$label"
	else
		fail "$label" "$(tail -n 1 "$log") (log: $log)"
		show_failures "$log"
	fi
}

step_harden() { step_single fi_rivet_rdm_harden; }

# fi_rivet_pollset: poll sets and wait sets over two RDM endpoints of one
# process; its error cases check rivet's answers, so rivet only.
step_pollset() {
	[ "$prov" = rivet ] && step_single fi_rivet_pollset
}

# fi_rivet_rdm_mrcache: buffers without descriptors freed, unmapped,
# moved and discarded under the registration cache, a cache of 8 entries
# stormed, threads; for rivet then the exact figure: ibv_reg_mr calls of
# 1000 rendezvous sends from one buffer (from the provider's log at
# domain close), with the cache and without, and their wall time.
mrcache_bench() {
	local log=$logdir/fi_rivet_rdm_mrcache_bench$1.log p regs secs
	p=$(prog fi_rivet_rdm_mrcache)
	shift
	run env FI_LOG_LEVEL=info "$@" "$p" -p "$prov" -e rdm -s "$addr" \
		-b 1000 >"$log" 2>&1 || { echo "bench failed (log: $log)"; return 1; }
	regs=$(sed -n 's/.*registrations: \([0-9]*\) ibv_reg_mr.*/\1/p' "$log")
	secs=$(sed -n 's/^mrcache_bench: .*: \([0-9.]*\) s$/\1/p' "$log")
	echo "${regs:-?} ${secs:-?}"
}

step_mrcache() {
	local on off
	# huge pages for the huge-buffer case, in the test VM only
	if [ -n "${VM_OUT:-}" ] && [ -w /proc/sys/vm/nr_hugepages ] &&
	   [ "$(cat /proc/sys/vm/nr_hugepages)" = 0 ]; then
		echo 8 >/proc/sys/vm/nr_hugepages 2>/dev/null
	fi
	step_single fi_rivet_rdm_mrcache
	[ "$prov" = rivet ] || return 0
	t0=$SECONDS
	# a first run loads the programs and libraries (over 9p in the VM)
	mrcache_bench _warm >/dev/null
	on=$(mrcache_bench _on) && off=$(mrcache_bench _off \
		FI_RIVET_MR_CACHE_MONITOR=disabled)
	echo "# reg_per_1000_rndv_sends ${on%% *} (cache on, ${on##* } s)," \
		"${off%% *} (cache off, ${off##* } s)"
	if [ "${on%% *}" = 1 ] && [ "${off%% *}" = 1000 ]; then
		pass mrcache_reg_per_1000_sends
	else
		fail mrcache_reg_per_1000_sends "want 1 and 1000: on '$on', off '$off'"
	fi
}

step_rawpeer() {
	[ "$prov" = rivet ] && step_single fi_rivet_rdm_rawpeer
}

# FI_SHARED_AV between two processes (rivet only: which other providers
# offer named AVs is theirs to say)
step_shared_av() {
	[ "$prov" = rivet ] && step_single fi_rivet_rdm_shared_av
}

# address vectors: per-entry insert errors, insertsvc, insertsym, lookup,
# straddr, remove, FI_EVENT on an EQ, close while bound; on an RDM domain
# and on a MSG one (rivet only: its error cases check rivet's answers)
step_av() {
	[ "$prov" = rivet ] || return 0
	step_single fi_rivet_av
	FT_AV_DOMAIN_EP=msg step_single fi_rivet_av -e msg
}

# shared receive and transmit contexts (rivet only: fi_shared_ctx upstream)
step_shared_ctx() {
	[ "$prov" = rivet ] && step_single fi_rivet_shared_ctx
}

# scalable endpoints (rivet only: fi_scalable_ep upstream)
step_sep() {
	[ "$prov" = rivet ] || return 0
	step_single fi_rivet_sep
	step_single fi_rivet_sep -A
}

# triggered operations and aliases (rivet only: fi_rdm_rma_trigger upstream)
step_trigger() {
	[ "$prov" = rivet ] || return 0
	step_single fi_rivet_trigger
	step_single fi_rivet_trigger -A
}

step_mesh() {
	local dir=$logdir/mesh p i pids=() bad=""
	p=$(prog fi_rivet_rdm_mesh)
	rm -rf "$dir" && mkdir -p "$dir"
	t0=$SECONDS
	for i in $(seq 0 $((nprocs - 1))); do
		grun "$i" "$p" -p "$prov" -e rdm -s "$(gaddr "$i")" -n "$nprocs" \
			-i "$i" -D "$dir" >"$logdir/mesh.$i.log" 2>&1 &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || bad="$bad $i"
	done
	if [ -z "$bad" ]; then
		pass "fi_rivet_rdm_mesh ($nprocs processes)"
	else
		fail fi_rivet_rdm_mesh "ranks$bad failed (logs: $logdir/mesh.*.log)"
		for i in $bad; do show_failures "$logdir/mesh.$i.log"; done
	fi
}

# Atomics: rank 0 owns the target, rank 1 sweeps every op x datatype and
# the error cases, ranks 1..N-1 hammer shared locations at once.
# run_atomic LABEL N ARGS...
run_atomic() {
	local label=$1 n=$2 dir=$logdir/$1 p i pids=() bad=""
	shift 2
	p=$(prog fi_rivet_rdm_atomic)
	rm -rf "$dir" && mkdir -p "$dir"
	t0=$SECONDS
	for i in $(seq 0 $((n - 1))); do
		grun "$i" "$p" -p "$prov" -e rdm -s "$(gaddr "$i")" -n "$n" \
			-i "$i" -D "$dir" "$@" >"$logdir/$label.$i.log" 2>&1 &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || bad="$bad $i"
	done
	if [ -z "$bad" ]; then
		pass "$label ($n processes)"
	else
		fail "$label" "ranks$bad failed (logs: $logdir/$label.*.log)"
		for i in $bad; do show_failures "$logdir/$label.$i.log"; done
	fi
}

# -E: with FI_RMA_EVENT, rank 0's remote counters and CQ events checked
step_atomic() {
	run_atomic fi_rivet_rdm_atomic 4 -E
}

# rivet with FI_RIVET_NATIVE_ATOMICS: verbs atomics (the 64-bit FI_SUM
# and FI_CSWAP it then offers), with RMA events.
step_native() {
	if [ "$prov" != rivet ]; then
		return
	fi
	FI_RIVET_NATIVE_ATOMICS=1 run_atomic fi_rivet_rdm_atomic_native 3 -E
}

# Offset addressing (-O: no FI_MR_VIRT_ADDR): RMA and atomics again.
step_offset() {
	port=$((port + 2))
	run_pair fi_rivet_rdm_rma_offset fi_rivet_rdm_rma $((port + 1000)) -- \
		-p "$prov" -e rdm -O -s "$addr" -B "$port" -S all -M 1m \
		-- -p "$prov" -e rdm -O -s "$caddr" -P "$port" -S all -M 1m \
		"$addr"
	run_atomic fi_rivet_rdm_atomic_offset 3 -O
}

# The victim SIGKILLs itself (exit 137 by design) once it has taken some
# messages; the survivor echoes until the client tells it to quit.
step_kill() {
	local dir=$logdir/kill p vpid spid vrc src crc
	p=$(prog fi_rivet_rdm_kill)
	rm -rf "$dir" && mkdir -p "$dir"
	t0=$SECONDS
	local args=(-p "$prov" -e rdm -s "$addr" -D "$dir")
	run "$p" "${args[@]}" -R victim >"$logdir/kill.victim.log" 2>&1 &
	vpid=$!
	run "$p" "${args[@]}" -R survivor >"$logdir/kill.survivor.log" 2>&1 &
	spid=$!
	run "$p" "${args[@]}" -R client >"$logdir/kill.client.log" 2>&1
	crc=$?
	wait "$vpid"; vrc=$?
	wait "$spid"; src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ $vrc -eq 137 ] &&
	   grep -q '^ok kill_victim_received' "$logdir/kill.victim.log"; then
		pass fi_rivet_rdm_kill
	else
		fail fi_rivet_rdm_kill "client exit $crc, survivor $src, victim \
$vrc (137 expected) (logs: $logdir/kill.*.log)"
		show_failures "$logdir/kill.client.log"
		show_failures "$logdir/kill.survivor.log"
		show_failures "$logdir/kill.victim.log"
	fi
}

# The MPI programs: prebuilt in BINDIR/mpi, else built with mpicc.
mpi_prog() {
	local name=$1 src=$bindir/mpi/$1.c out=$logdir/mpi/$1
	if [ -x "$bindir/mpi/$name" ]; then
		echo "$bindir/mpi/$name"
	elif [ -f "$src" ] && command -v mpicc >/dev/null &&
	     mkdir -p "$logdir/mpi" &&
	     mpicc -O2 -o "$out" "$src" >"$logdir/mpi/$name.build.log" 2>&1; then
		echo "$out"
	fi
}

step_mpi() {
	local name p log xenv=() v
	if ! command -v mpirun >/dev/null; then
		fail mpi "mpirun not installed (apt-get install openmpi-bin)"
		return
	fi
	for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\)=.*/\1/p'); do
		xenv+=(-x "$v")
	done
	# then matching and collectives on mtl ofi's scalable endpoint:
	# a context per communicator (thread grouping), 4 of them
	for name in mpi_rivet_pingpong mpi_rivet_match mpi_rivet_coll \
		    mpi_rivet_match:sep mpi_rivet_coll:sep; do
		local sep=()
		[ "${name#*:}" = sep ] && sep=(--mca mtl_ofi_enable_sep 1
			--mca mtl_ofi_thread_grouping 1
			--mca mtl_ofi_num_ctxts 4)
		t0=$SECONDS
		log=$logdir/${name/:/_}.log
		p=$(mpi_prog "${name%:*}")
		if [ -z "$p" ]; then
			fail "$name" "not built (mpicc missing?)"
			continue
		fi
		if run mpirun "${mpihosts[@]}" -np "$ranks" --mca pml cm \
			--mca mtl ofi --mca mtl_ofi_provider_include "$prov" \
			"${sep[@]}" --mca btl self "${xenv[@]}" "$p" \
			>"$log" 2>&1; then
			pass "$name"
		else
			fail "$name" "$(tail -n 1 "$log") (log: $log)"
			show_failures "$log"
		fi
	done
}

# MPI one-sided: osc rdma over btl ofi on PROV, two-sided on mtl ofi (pml
# cm) and then on btl ofi itself (pml ob1, btl_ofi_mode 2: one- and
# two-sided), accumulates by compare-and-swap (osc_rdma_acc_use_amo false:
# Open MPI 4.1's btl ofi maps MPI_SUM and MPI_REPLACE only and aborts on
# MPI_MAX in to_fi_op); then (amo) with Open MPI's default, every
# accumulate a native atomic of rivet's, the MPI_MAX accumulate left out
# (MPI_RIVET_OSC_AMO=1); then (pt2pt) osc pt2pt over rivet's tagged
# messages, the target's compare-and-swaps on its own window included
# even on one node (where osc rdma of Open MPI < 4.1.5 crashes on them).
# Open MPI 5 (Debian 13) has no osc pt2pt and needs no workaround: osc rdma
# with its defaults on btl ofi (pml ob1), every accumulate and the target's
# own compare-and-swaps included, with every rank on one node.  Not with
# pml cm: Open MPI 5.0.7's osc rdma then finds no initialized btl and
# MPI_Win_create fails whatever the provider (open-mpi/ompi#13298, fixed
# after 5.0.7).
step_osc() {
	local name=mpi_rivet_osc p log xenv=() v cfg
	local common=(--mca btl_ofi_provider_include "$prov")
	local cm="--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include $prov --mca btl ofi,self"
	local -A cfgs=(
		[cm]="$cm --mca osc rdma --mca osc_rdma_acc_use_amo false"
		[ob1]="--mca pml ob1 --mca btl ofi,self --mca btl_ofi_mode 2 --mca osc rdma --mca osc_rdma_acc_use_amo false"
		[amo]="$cm --mca osc rdma -x MPI_RIVET_OSC_AMO=1"
		[pt2pt]="$cm --mca osc pt2pt -x MPI_RIVET_OSC_SELF_CAS=1"
	)
	local order=(cm ob1 amo pt2pt)
	if ! command -v mpirun >/dev/null; then
		fail osc "mpirun not installed (apt-get install openmpi-bin)"
		return
	fi
	if mpirun --version 2>/dev/null | grep -q 'Open MPI) [5-9]'; then
		cfgs=([ob1]="--mca pml ob1 --mca btl ofi,self --mca btl_ofi_mode 2 --mca osc rdma")
		order=(ob1)
	fi
	for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\)=.*/\1/p'); do
		xenv+=(-x "$v")
	done
	p=$(mpi_prog "$name")
	for cfg in "${order[@]}"; do
		t0=$SECONDS
		log=$logdir/$name.$cfg.log
		if [ -z "$p" ]; then
			fail "$name ($cfg)" "not built (mpicc missing?)"
			continue
		fi
		# shellcheck disable=SC2086
		if run mpirun "${mpihosts[@]}" -np "$ranks" \
			${cfgs[$cfg]} "${common[@]}" "${xenv[@]}" "$p" >"$log" 2>&1; then
			grep '^#' "$log" | sort -u
			pass "$name ($cfg)"
		else
			fail "$name ($cfg)" "$(tail -n 1 "$log") (log: $log)"
			show_failures "$log"
		fi
	done
}

step_pingpong() {
	if [ -z "$(prog fi_pingpong)" ]; then
		fail fi_pingpong_rdm "not installed (apt-get install libfabric-bin)"
		return
	fi
	port=$((port + 2))
	run_pair fi_pingpong_rdm fi_pingpong "$port" -- \
		-p "$prov" -e rdm -I 10 -S all -c -B "$port" -- \
		-p "$prov" -e rdm -I 10 -S all -c -P "$port" "$addr"
}

# Debian's fi_pingpong on MSG endpoints (with -r: across nodes).
step_pingpong_msg() {
	if [ -z "$(prog fi_pingpong)" ]; then
		fail fi_pingpong_msg "not installed (apt-get install libfabric-bin)"
		return
	fi
	port=$((port + 2))
	run_pair fi_pingpong_msg fi_pingpong "$port" -- \
		-p "$prov" -e msg -I 10 -S all -c -B "$port" -- \
		-p "$prov" -e msg -I 10 -S all -c -P "$port" "$addr"
}

# Where mpirun puts the ranks: here, or half of them on node -r.
mpihosts=(--oversubscribe)
[ -z "$rnode" ] ||
	mpihosts=(-H "node0:$((ranks / 2)),node$rnode:$((ranks - ranks / 2))")

echo "# provider $prov, address $addr${rnode:+, clients on node$rnode ($caddr)}, logs in $logdir"
fi_info -p "$prov" -t FI_EP_RDM >"$logdir/fi_info.log" 2>&1 ||
	echo "# warning: fi_info -p $prov -t FI_EP_RDM found nothing"

for s in rdm rdm_auto rdm_domain rdm_tagdir rdm_rma deep wrapi tclass atomic native offset multi harden \
	pollset mrcache rawpeer av shared_av shared_ctx sep trigger mesh kill mpi \
	osc pingpong \
	pingpong_msg; do
	skipped "$s" || "step_$s"
done

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
