#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs rivet's MSG conformance programs (and Debian's fi_pingpong) against
# one provider on one host: server in the background, client against ADDR.
set -u

usage() {
	cat <<EOF
Usage: $0 [-a ADDR] [-b BINDIR] [-o LOGDIR] [-t SECS] [-S SIZE|all] PROV

Runs each fabtests program of rivet against provider PROV (verbs, rivet, ...)
and prints "ok NAME" or "FAIL NAME: why" per program, then "N passed, M
failed"; exits non-zero on any failure. Meant for the Soft-RoCE VM, where
server and client share the address of rxe0.

  -a ADDR    address of the RDMA netdev (default \$FT_ADDR or 10.77.0.1)
  -b BINDIR  where the fi_rivet_* programs are (default: this script's dir)
  -o LOGDIR  logs (default \$VM_OUT/fabtests-PROV, else /tmp/fabtests-PROV)
  -t SECS    time limit per program (default \$FT_TIMEOUT or 300)
  -S SIZES   size argument for the data tests (default all)

For PROV=rivet set FI_PROVIDER_PATH to the folder holding librivet-fi.so.
EOF
}

addr=${FT_ADDR:-10.77.0.1}
bindir=$(cd "$(dirname "$0")" && pwd)
logdir=
limit=${FT_TIMEOUT:-300}
sizes=all
while getopts "a:b:o:t:S:h" op; do
	case $op in
	a) addr=$OPTARG ;;
	b) bindir=$OPTARG ;;
	o) logdir=$OPTARG ;;
	t) limit=$OPTARG ;;
	S) sizes=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { usage >&2; exit 2; }
prov=$1
logdir=${logdir:-${VM_OUT:-/tmp}/fabtests-$prov}

if [ "$prov" = rivet ] && [ -z "${FI_PROVIDER_PATH:-}" ]; then
	echo "$0: set FI_PROVIDER_PATH to the folder holding librivet-fi.so" >&2
	exit 2
fi
mkdir -p "$logdir" || exit 2
ulimit -l unlimited 2>/dev/null || true

passed=0
failed=0
port=47700

t0=$SECONDS
pass() { echo "ok $1 ($((SECONDS - t0)) s)"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2 ($((SECONDS - t0)) s)"; failed=$((failed + 1)); }

# Show the failing cases of a program's log, indented.
show_failures() {
	grep -E '^(FAIL|skip) |terminated with signal' "$1" 2>/dev/null |
		sed 's/^/    /' | head -40
}

run_single() { run_single_as "$1" "$@"; }
run_single_as() {	# run_single_as LABEL PROGRAM ARGS...
	local label=$1 name=$2; shift 2
	local log=$logdir/$label.log rc
	if [ ! -x "$bindir/$name" ]; then
		fail "$label" "$bindir/$name not built"
		return
	fi
	t0=$SECONDS
	timeout -k 10 "$limit" "$bindir/$name" -p "$prov" "$@" >"$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		pass "$label"
	else
		fail "$label" "exit $rc, $(tail -n 1 "$log") (log: $log)"
		show_failures "$log"
	fi
}

# Wait until the server says it listens (or dies); fabtests-style servers
# without such a line get a TCP port check instead.
wait_ready() {
	local pid=$1 log=$2 tcp_port=${3:-}
	for _ in $(seq 1 200); do
		kill -0 "$pid" 2>/dev/null || return 1
		if [ -n "$tcp_port" ]; then
			ss -ltn 2>/dev/null | grep -q ":$tcp_port " && return 0
		elif grep -q 'listening' "$log" 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	[ -n "$tcp_port" ] && return 0	# no ss: hope for the best
	return 1
}

# run_pair NAME LABEL TCP_PORT -- SERVER_ARGS... -- CLIENT_ARGS...
run_pair() {
	local name=$1 label=$2 tcp=$3 srv=() cli=() spid src crc
	shift 4
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	local slog=$logdir/$label.server.log clog=$logdir/$label.client.log
	local prog=$bindir/$name
	[ -x "$prog" ] || prog=$(command -v "$name" 2>/dev/null)
	if [ -z "$prog" ] || [ ! -x "$prog" ]; then
		fail "$label" "$name not found"
		return
	fi
	t0=$SECONDS
	timeout -k 10 "$limit" "$prog" "${srv[@]}" >"$slog" 2>&1 &
	spid=$!
	if ! wait_ready "$spid" "$slog" "$tcp"; then
		kill "$spid" 2>/dev/null
		wait "$spid"
		fail "$label" "server did not start (log: $slog)"
		show_failures "$slog"
		return
	fi
	timeout -k 10 "$limit" "$prog" "${cli[@]}" >"$clog" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	if [ $src -eq 0 ] && [ $crc -eq 0 ]; then
		pass "$label"
	else
		fail "$label" "server exit $src, client exit $crc (logs: $slog $clog)"
		show_failures "$slog"
		show_failures "$clog"
	fi
}

run_rivet_pair() {
	local name=$1; shift
	run_rivet_pair_as "$name" "$name" "$@"
}

# run_rivet_pair_as LABEL PROGRAM ARGS...
run_rivet_pair_as() {
	local label=$1 name=$2; shift 2
	port=$((port + 2))
	run_pair "$name" "$label" "" -- -p "$prov" -s "$addr" -B "$port" "$@" \
		-- -p "$prov" -s "$addr" -P "$port" "$@" "$addr"
}

echo "# provider $prov, address $addr, logs in $logdir"
fi_info -p "$prov" -t FI_EP_MSG >"$logdir/fi_info.log" 2>&1 ||
	echo "# warning: fi_info -p $prov -t FI_EP_MSG found nothing"

run_single fi_rivet_getinfo -s "$addr"
run_single fi_rivet_objects -s "$addr"
run_single fi_rivet_ops -s "$addr"
run_rivet_pair fi_rivet_cm
run_rivet_pair fi_rivet_msg -S "$sizes"
# a traffic class on the connection (the GRH's TOS on RoCE)
run_rivet_pair_as fi_rivet_msg_tclass fi_rivet_msg -S 4096 -c low_latency
run_rivet_pair_as fi_rivet_rma_tclass fi_rivet_rma -S 4096 -c dscp:26
run_rivet_pair fi_rivet_rma -S "$sizes"
# offset addressing (no FI_MR_VIRT_ADDR): remote addresses from 0
run_rivet_pair_as fi_rivet_rma_offset fi_rivet_rma -O -S all -M 1m
if [ "$prov" = rivet ]; then
	# cooperative polling: rxe is a software device, idle reads yield
	run_single fi_rivet_poll -s "$addr" -Y yes
	FI_RIVET_POLL_YIELD=0 run_single_as fi_rivet_poll_off fi_rivet_poll \
		-s "$addr" -Y no
	# injects larger than the device's inline size: the bounce-buffer path
	FI_RIVET_INJECT_SIZE=4096 run_rivet_pair fi_rivet_msg -S 4096
	# FI_EP_DGRAM over a UD QP (two endpoints in one process), and its
	# injects through the bounce buffers
	run_single fi_rivet_dgram -s "$addr"
	FI_RIVET_INJECT_SIZE=1024 run_single_as fi_rivet_dgram_bounce \
		fi_rivet_dgram -s "$addr"
	# max_msg_size capped for buffer-sizing test programs
	FI_RIVET_MAX_MSG_SIZE=4194304 run_single_as fi_rivet_getinfo_cap \
		fi_rivet_getinfo -s "$addr"
	# shared receive contexts over an SRQ, shared transmit contexts
	run_single_as fi_rivet_shared_ctx_msg fi_rivet_shared_ctx -e msg \
		-s "$addr"
	# FI_MULTI_RECV buffers on MSG endpoints
	run_single fi_rivet_mrecv -s "$addr"
	run_single_as fi_rivet_shared_ctx_dgram fi_rivet_shared_ctx -e dgram \
		-s "$addr"
fi

if command -v fi_pingpong >/dev/null; then
	port=$((port + 2))
	run_pair fi_pingpong fi_pingpong_msg "$port" -- \
		-p "$prov" -e msg -I 10 -S all -c -B "$port" -- \
		-p "$prov" -e msg -I 10 -S all -c -P "$port" "$addr"
	if [ "$prov" = rivet ]; then
		port=$((port + 2))
		run_pair fi_pingpong fi_pingpong_dgram "$port" -- \
			-p "$prov" -e dgram -I 10 -S all -c -B "$port" -- \
			-p "$prov" -e dgram -I 10 -S all -c -P "$port" "$addr"
	fi
else
	echo "# fi_pingpong not installed (apt-get install libfabric-bin)"
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
