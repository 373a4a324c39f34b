#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark: in one Soft-RoCE VM boot, rivet MSG against libfabric's own
# verbs MSG and raw verbs (perftest): latency, send bandwidth (fi_rivet_bw),
# and user-space instructions per message (callgrind); then RDM (tagged
# fi_rivet_rdm_bw: rivet, rivet;ofi_rxm, tcp), an Open MPI ping-pong, and
# one-sided RDM (fi_rivet_rdm_rma_bw) against perftest's write, read and
# atomic tests.
# Prints markdown tables with ratios; the logs and callgrind profiles stay
# in the folder it names at the end. Times under qemu TCG are slow and noisy: read the
# ratios, not the values. About 13 minutes on an idle 2-CPU host (20 under
# load).
#
# With --exact: no timing, only figures that are counted exactly: by
# callgrind on the host, and one counter that needs the VM (a short
# boot), minutes in all; one "exact NAME VALUE" line each on stdout; a
# new figure is one more exact_* function in exact_figures.
#
# With --contention: latency under CPU contention (busy loops in the
# guest, on the host, Open MPI with more ranks than CPUs), rivet against
# libfabric's verbs and tcp in one boot (contrib/bench-contention-guest.sh;
# about 15 minutes). RIVET_VARIANTS names rivet settings measured beside.
#
# usage: contrib/bench.sh [ITERATIONS]   (default 1000; 1 MiB runs: 1/5)
#        contrib/bench.sh --exact
#        contrib/bench.sh --contention [ITERATIONS [ROUNDS]]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

# ---- --exact: each figure is one exact_* function, run in this order ----

# callgrind_ir TOGGLE CMD...: the instructions callgrind counts inside
# the functions TOGGLE names (a --toggle-collect pattern) while CMD runs
callgrind_ir() {
	local toggle=$1 f
	shift
	f=$(mktemp "${TMPDIR:-/tmp}/rivet-exact.XXXXXX")
	valgrind --tool=callgrind --callgrind-out-file="$f" \
		--collect-atstart=no --toggle-collect="$toggle" "$@" \
		>/dev/null 2>"$f.log" ||
		{ echo "bench: failed: $* (see $f.log)" >&2; return 1; }
	awk '$1 == "summary:" { print $2 }' "$f"
	rm -f "$f" "$f.log"
}

# User-space instructions per match of the tag matching engine alone
# (contrib/bench-match.c: post a receive, a message takes it), with
# DEPTH - 1 receives that nothing matches queued before it; a new tag
# for each message, as fi_rivet_rdm_bw sends.
exact_match() {
	local d n=1000 ir
	for d in 1 100 10000; do
		ir=$(callgrind_ir 'bm_count_*' contrib/bench-match -q posted \
			-d "$d" -n "$n") || return 1
		echo "exact match_instr_depth_$d $((ir / n))"
	done
}

# The same for the unexpected queue: DEPTH - 1 messages nobody asks for,
# then a message arrives and a receive finds it.
exact_unexp_match() {
	local d n=1000 ir
	for d in 1 100 10000; do
		ir=$(callgrind_ir 'bm_count_*' contrib/bench-match -q unexp \
			-d "$d" -n "$n") || return 1
		echo "exact unexp_match_instr_depth_$d $((ir / n))"
	done
}

# ibv_reg_mr calls of 1000 rendezvous sends (256 KiB) from one buffer
# without a descriptor: the registration cache's figure (goal 1; 1000
# without it).  Registration needs a device: a short VM boot (about a
# minute); the count is the provider's own, from its log at domain close.
exact_reg() {
	local out n
	[ -e "$top/_inst/lib/libfabric/librivet-fi.so" ] ||
		"$top/contrib/build.sh" >&2
	out=$("$top/contrib/vm/rivet-vm" -t 300 \
		-e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
		-e FI_LOG_LEVEL=info -- fabtests/fi_rivet_rdm_mrcache -p rivet \
		-e rdm -s 10.77.0.1 -b 1000 2>&1) ||
		{ echo "bench: fi_rivet_rdm_mrcache -b 1000 failed" >&2; return 1; }
	n=$(sed -n 's/.*registrations: \([0-9]*\) ibv_reg_mr.*/\1/p' \
		<<<"$out" | head -n 1)
	echo "exact reg_per_1000_rndv_sends ${n:-?}"
	[ -n "$n" ]
}

# User-space instructions per 8 B message: raw verbs (contrib/raw-pingpong:
# an inline send, a poll, a receive reposted), rivet's RDM tagged message
# (fi_tinject, fi_cq_read, fi_trecv) and rivet;ofi_rxm's, by callgrind in
# one VM boot (contrib/bench-guest.sh --icount; a few minutes under
# valgrind). The goal: rivet <= 1.5 x raw.
exact_instr() {
	local out
	out=$("$top/contrib/vm/rivet-vm" -t 1200 \
		-e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" -- \
		bash contrib/bench-guest.sh --icount 2>&1) ||
		{ echo "bench: bench-guest.sh --icount failed" >&2; return 1; }
	grep '^exact ' <<<"$out"
	awk '$1 == "exact" && $2 == "raw_instr_per_msg" { r = $3 }
	     $1 == "exact" && $2 == "rivet_instr_per_msg" { v = $3 }
	     END { if (r + 0 > 0 && v + 0 > 0)
		printf "exact rivet_over_raw %.2f\n", v / r
	     else exit 1 }' <<<"$out"
}

exact_figures=(exact_match exact_unexp_match exact_reg exact_instr)

if [ "${1:-}" = --exact ]; then
	# valgrind is in deps.sh's test group; only the measured programs
	# are built (the provider is left as installed)
	"$top/contrib/deps.sh" build test >&2
	cd "$top"
	[ -f Makefile ] || "$top/contrib/build.sh" >&2
	make -s contrib/bench-match contrib/raw-pingpong \
		fabtests/fi_rivet_rdm_mrcache fabtests/fi_rivet_rdm_bw >&2
	rc=0
	for f in "${exact_figures[@]}"; do
		"$f" || rc=1
	done
	exit "$rc"
fi

# host_load FILE: while FILE exists, one busy loop per host CPU (the
# guest asks for them: bench-contention-guest.sh); FILE.on says they run.
# Ends when FILE.done appears.
host_load() {
	local f=$1 pids=() i
	until [ -e "$f.done" ]; do
		if [ -e "$f" ] && [ ${#pids[@]} = 0 ]; then
			for ((i = 0; i < $(nproc); i++)); do
				bash -c 'while :; do :; done' &
				pids+=($!)
			done
			touch "$f.on"
		elif [ ! -e "$f" ] && [ ${#pids[@]} != 0 ]; then
			kill "${pids[@]}"
			wait "${pids[@]}" 2>/dev/null
			pids=()
			rm -f "$f.on"
		fi
		sleep 0.1
	done
	[ ${#pids[@]} = 0 ] || kill "${pids[@]}"
	rm -f "$f.on"
}

if [ "${1:-}" = --contention ]; then
	shift
	"$top/contrib/build.sh"
	cd "$top"
	make -s fabtests-mpi >&2 || true	# else the guest builds it
	out=$(mktemp -d /var/tmp/rivet-contention.XXXXXX)
	host_load "$out/host-load" &
	agent=$!
	rc=0
	contrib/vm/rivet-vm -t 3000 -o "$out" \
		-e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
		-e HOST_LOAD_FILE="$out/host-load" \
		${RIVET_VARIANTS:+-e RIVET_VARIANTS="$RIVET_VARIANTS"} \
		-- bash contrib/bench-contention-guest.sh "$@" || rc=$?
	touch "$out/host-load.done"
	wait "$agent"
	exit "$rc"
fi

"$top/contrib/build.sh"
cd "$top"
exec contrib/vm/rivet-vm -t 2400 -e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
	-- bash contrib/bench-guest.sh "${1:-1000}"
