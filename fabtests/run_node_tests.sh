#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rivet across nodes and under network faults: for node0 of
# contrib/vm/rivet-vm -N 2 or more (rivet-node, rivet-fault).
set -u

usage() {
	cat <<EOF
Usage: $0 [-b BINDIR] [-o LOGDIR] [-t SECS] [-B MS] [-c CASE]... [-x CASE]...
       PROV

Runs, from node0, against provider PROV (rivet):
  mpi        Open MPI (mtl ofi on PROV): a checked ping-pong, one rank on
             node0, one on node1
  suite      fabtests/run_rdm_tests.sh -r 1: messages and tagged over sizes
             up to 256 KiB with data checked, rendezvous, RMA, atomics with
             counters and FI_RMA_EVENT, the 8-process mesh, Open MPI two-
             and one-sided, fi_pingpong -e rdm and -e msg, between node0
             and node1
  clean      fi_rivet_rdm_fault: a stream of tagged messages (eager and
             rendezvous), RMA writes read back and fetch-adds from node0
             to node1, all checked: exactly once, right data
  loss1 loss5 delay5 reorder10 dup5
             the same stream under rivet-fault loss 1, loss 5, delay 5,
             reorder 10, dup 5 (each its own run)
  linkshort  node1's link down for 3 s mid-stream, inside the connections'
             retry budget (raised for it, see FI_RIVET_ACK_TIMEOUT):
             everything completes
  linklong   node1's link down until its operations fail (within -B ms),
             rendezvous sends waiting for their FIN and atomics waiting
             for their result among them, while a second peer (on node2,
             or on node0 with two nodes) is served; link up, and node1 is
             reached again
  crash      node1 crashes mid-stream: errors within -B ms, the second
             peer served, node1's QPs and regions released; node1 boots
             again and a restarted peer at the same address is reached
             after fi_av_remove + fi_av_insert
  mpicrash   an Open MPI job on node0 and the last node, which crashes:
             the rank on node0 must end with an error within -B ms, and
             mpirun by itself (MPICRASH_STRICT=1: a failure when it does
             not; Open MPI 4.1.4's mpirun often waits for the dead node)
Prints "ok CASE" or "FAIL CASE: why", the stream's throughput per fault,
then "N passed, M failed"; exits non-zero on any failure.

  -b BINDIR  where the fi_rivet_* programs are (default: this script's dir)
  -o LOGDIR  logs (default \$VM_OUT/nodetests-PROV; must be seen by every
             node: \$VM_OUT is)
  -t SECS    time limit per case (default 300)
  -B MS      bound on the errors after a lost peer (default 90000: rxe
             sends every unacknowledged packet of a QP again on each
             retry and restarts its timer with each packet, so under a
             busy stream in the VM its retries take 45-55 s, not the
             4 s of (retry count + 1) x ACK timeout)
  -c CASE    run only this case (repeatable; default: every case)
  -x CASE    skip a case (repeatable)
  -X STEP    skip a step of run_rdm_tests.sh in suite (repeatable)
EOF
}

bindir=$(cd "$(dirname "$0")" && pwd)
logdir=
limit=300
bound=90000
skip=" "
only=" "
# the steps of run_rdm_tests.sh that suite skips (-X adds more)
suite_skip="-x rdm_auto -x deep -x tclass -x offset -x multi -x harden -x pollset -x rawpeer -x kill -x mrcache -x shared_ctx"
while getopts "b:o:t:B:c:x:X:h" op; do
	case $op in
	b) bindir=$OPTARG ;;
	o) logdir=$OPTARG ;;
	t) limit=$OPTARG ;;
	B) bound=$OPTARG ;;
	c) only="$only$OPTARG " ;;
	x) skip="$skip$OPTARG " ;;
	X) suite_skip="$suite_skip -x $OPTARG" ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { usage >&2; exit 2; }
prov=$1
logdir=${logdir:-${VM_OUT:-/tmp}/nodetests-${prov//;/_}}
if ! command -v rivet-node >/dev/null || ! command -v rivet-fault >/dev/null; then
	echo "$0: run me on node0 of contrib/vm/rivet-vm -N 2 (or more)" >&2
	exit 2
fi
nodes=$(rivet-node -n)
# the shells that carry faults to the other nodes, opened before any case
# (a fault over a new ssh session takes tens of seconds on busy guests)
rivet-fault prepare >/dev/null ||
	echo "# rivet-fault prepare failed: each fault opens an ssh session"
# where the second peer of linklong and crash runs, and who mpicrash kills
other=$(( nodes >= 3 ? 2 : 0 ))
last=$((nodes - 1))
mkdir -p "$logdir" || exit 2
ulimit -l unlimited 2>/dev/null || true
fault=$bindir/fi_rivet_rdm_fault
names=$logdir/names
pport=48500

passed=0
failed=0
t0=$SECONDS
rates=()

pass() { echo "ok $1 ($((SECONDS - t0)) s)"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2 ($((SECONDS - t0)) s)"; failed=$((failed + 1)); }
skipped() {
	case $skip in *" $1 "*) return 0 ;; esac
	[ "$only" != " " ] || return 1
	case $only in *" $1 "*) return 1 ;; esac
	return 0
}
addr_of() { echo "10.77.0.$(($1 + 1))"; }
show_failures() {
	grep -E '^(FAIL|skip) |terminated with signal|rank [0-9]+:' "$1" \
		2>/dev/null | sed 's/^/    /' | head -20
}

# The FI_* variables of this script, for commands on other nodes.
fi_env() {
	local v
	for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\)=.*/\1/p'); do
		printf '%q ' "$v=${!v}"
	done
}

# The command line that starts peer I of fi_rivet_rdm_fault on node K
# (in the background, logging to LOG), for sh -c.  A peer serves a minute
# longer than the driver may run (it starts before the driver, and leaves
# when the driver says so): a slow case must not outlive its peers.
peer_cmd() {
	local k=$1 i=$2 log=$3
	printf 'nohup rivet-node %s env %s timeout -k 5 %s %q -p %q -e rdm -R peer -i %s -s %s -B %s -D %q -L %s >%q 2>&1 </dev/null &' \
		"$k" "$(fi_env)" $((limit + 90)) "$fault" "$prov" "$i" "$(addr_of "$k")" \
		"$pport" "$names" $((limit + 60)) "$log"
}

# A port of its own for each case's peers: a peer left over from a failed
# case (it serves until its time is up) never blocks the next one.
next_port() { pport=$((pport + 1)); }

# drive LABEL ARGS...: the driver here; status of the driver
drive() {
	local label=$1
	shift
	timeout -k 10 "$limit" "$fault" -p "$prov" -e rdm -R drive -s "$(addr_of 0)" \
		-D "$names" "$@" >"$logdir/$label.drive.log" 2>&1
}

# -Z of a lost case: what every node's RDMA stack holds and counts, into
# LABEL.rdma.log, when the driver cannot reach a peer.
diag_cmd() {
	local k cmd=""
	for ((k = 0; k < nodes; k++)); do
		cmd+="rivet-node $k bash $(printf '%q' "$bindir/rdma_state.sh"); "
	done
	printf '{ %s} >>%q 2>&1' "$cmd" "$logdir/$1.rdma.log"
}

# Waits for the background peers of this case (bounded by their timeout).
wait_peers() { wait; }

# Soft-RoCE's own defects, when a node shows them:
# - rxe (Linux 6.12) can reach its completer's error state for a work
#   request it has not failed, complete that request as successful (an
#   RDMA READ whose data never all came) and put the QP in the error
#   state. A kernel WARNING says so, once per boot (fi_rivet(7), FAILURES).
#   rivet's reads of one packet on rxe (FI_RIVET_RDMA_SEG) avoid it.
# - rxe answers a READ sent again right after a zero-byte READ or WRITE
#   without its memory region (a WARNING at rxe_mr.c) and fails it.
# - a QP of rxe whose packet the network stack refused (NET_XMIT_DROP, as
#   when a qdisc is grafted onto eth0 under traffic) never sends again; if
#   that QP is the node's QP1, rdma_cm cannot even connect the node to
#   itself (fabtests/rxe_sends.sh). rivet-fault keeps its qdiscs from
#   being grafted under traffic; this shows it, should it happen anyway.
rxe_defect() {
	local k out
	for ((k = 0; k < nodes; k++)); do
		if rivet-node "$k" dmesg 2>/dev/null | grep -q 'WARNING.*rxe_comp.c'; then
			echo " [node$k's kernel: WARNING in rxe_completer (rxe_comp.c): a request rxe completed as successful had failed]"
		fi
		if rivet-node "$k" dmesg 2>/dev/null | grep -q 'WARNING.*rxe_mr.c'; then
			echo " [node$k's kernel: WARNING in rxe_mr_copy (rxe_mr.c): rxe answered a READ sent again without its memory region]"
		fi
		if ! out=$(rivet-node "$k" bash "$bindir/rxe_sends.sh" rxe0 \
			"$(addr_of "$k")" 2>&1); then
			echo " [node$k's $out]"
		fi
	done
}

verdict() { # LABEL DRIVER_STATUS
	local label=$1 rc=$2 p
	if [ "$rc" = 0 ]; then
		pass "$label"
	else
		fail "$label" "driver exit $rc: $(tail -n 1 "$logdir/$label.drive.log") (logs: $logdir/$label.*.log)$(rxe_defect)"
		show_failures "$logdir/$label.drive.log"
		for p in "$logdir/$label".peer*.log; do show_failures "$p"; done
	fi
}

rate_of() { sed -n 's/^fault_stream_MBps //p' "$logdir/$1.drive.log" | tail -n 1; }

# A stream to node1 under FAULT (rivet-fault arguments, or none):
# case_stream LABEL [FAULT...]
case_stream() {
	local label=$1 rc
	shift
	t0=$SECONDS
	rm -rf "$names" && mkdir -p "$names"
	next_port
	if [ $# -gt 0 ] && ! rivet-fault "$@" >"$logdir/$label.fault.log" 2>&1; then
		fail "$label" "rivet-fault $* failed: $(tail -n 1 "$logdir/$label.fault.log")"
		rivet-fault clear >/dev/null 2>&1
		return
	fi
	eval "$(peer_cmd 1 1 "$logdir/$label.peer1.log")"
	drive "$label" -k ok -L 8
	rc=$?
	wait_peers
	rivet-fault clear >>"$logdir/$label.fault.log" 2>&1
	rates+=("$label $(rate_of "$label")")
	verdict "$label" "$rc"
}

# The link is down for 3 s, plus the time rivet-fault takes over ssh:
# the connections' retry budget is raised to some 17 s (ACK timeout
# 4.096 us * 2^19, 2.1 s, 8 tries) so that this outage stays inside it.
case_linkshort() {
	local rc
	local -x FI_RIVET_ACK_TIMEOUT=${FI_RIVET_ACK_TIMEOUT:-19}
	t0=$SECONDS
	rm -rf "$names" && mkdir -p "$names"
	next_port
	eval "$(peer_cmd 1 1 "$logdir/linkshort.peer1.log")"
	drive linkshort -k ok -L 10 \
		-F "rivet-fault link down 1 && sleep 3 && rivet-fault link up 1"
	rc=$?
	wait_peers
	rivet-fault clear >/dev/null 2>&1
	rates+=("linkshort $(rate_of linkshort)")
	verdict linkshort "$rc"
}

case_linklong() {
	local rc
	t0=$SECONDS
	rm -rf "$names" && mkdir -p "$names"
	next_port
	eval "$(peer_cmd 1 1 "$logdir/linklong.peer1.log")"
	eval "$(peer_cmd "$other" 2 "$logdir/linklong.peer2.log")"
	drive linklong -k lost -L 6 -b "$bound" -F "rivet-fault link down 1" \
		-U "rivet-fault link up 1" -Z "$(diag_cmd linklong)"
	rc=$?
	wait_peers
	rivet-fault clear >/dev/null 2>&1
	verdict linklong "$rc"
}

case_crash() {
	local rc restart=$logdir/crash.restart.sh
	t0=$SECONDS
	rm -rf "$names" && mkdir -p "$names"
	next_port
	eval "$(peer_cmd 1 1 "$logdir/crash.peer1.log")"
	eval "$(peer_cmd "$other" 2 "$logdir/crash.peer2.log")"
	{
		echo 'set -e'
		echo 'rivet-fault boot 1'
		echo 'rivet-node -w 1 300'
		printf 'rm -f %q\n' "$names/peer1"
		peer_cmd 1 1 "$logdir/crash.peer1.restarted.log"
		echo
	} >"$restart"
	drive crash -k lost -L 6 -b "$bound" -F "rivet-fault crash 1" \
		-U "bash $restart" -r -Z "$(diag_cmd crash)"
	rc=$?
	wait_peers
	verdict crash "$rc"
}

# The MPI latency program: prebuilt, or built here.
mpi_lat() {
	local p=$bindir/mpi/mpi_rivet_lat
	if [ ! -x "$p" ]; then
		mkdir -p "$logdir/mpi"
		p=$logdir/mpi/mpi_rivet_lat
		[ -x "$p" ] || mpicc -O2 -o "$p" "$bindir/mpi/mpi_rivet_lat.c" \
			>"$logdir/mpi/build.log" 2>&1 || return 1
	fi
	echo "$p"
}

# mpirun over node0 and the last node with rivet's mtl; that node crashes
# 20 s in.  What rivet owes: the rank on node0 ends, with an error, within
# -B ms of the crash (its operations to the dead node complete in error,
# or mpirun, having lost the node's daemon first, stops the job).  Then
# mpirun must end by itself, non-zero, within a minute.  Open MPI
# 4.1.4's mpirun often does not: once a rank has failed it aborts the job
# and waits for the dead node's daemon (with pml cm and with pml ob1 on
# btl ofi, whose rank exits cleanly; with ssh keepalives on the daemons'
# sessions too).  With MPICRASH_STRICT=1 that fails the case; by default
# the case passes on the rank's end and says that mpirun did not end.
# mpirun hears of the dead node's daemon only when TCP gives up on the
# link to it, which it has data in flight on once the job aborts: by
# Linux's default (tcp_retries2 15, tcp(7)) after about 15 minutes of
# retransmissions.  A cluster that wants to know sooner says so; the case
# says 5 (about 13 s), on node0, for its own run.
case_mpicrash() {
	local retries
	retries=$(sysctl -n net.ipv4.tcp_retries2 2>/dev/null) || retries=
	[ -z "$retries" ] || sysctl -qw net.ipv4.tcp_retries2=5
	mpicrash_run
	[ -z "$retries" ] || sysctl -qw net.ipv4.tcp_retries2="$retries"
}

mpicrash_run() {
	local p log=$logdir/mpicrash.log mpid rc xenv=() v start crash i
	t0=$SECONDS
	p=$(mpi_lat) || { fail mpicrash "mpicc failed"; return; }
	for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\)=.*/\1/p'); do
		xenv+=(-x "$v")
	done
	start=$SECONDS
	timeout -k 10 "$limit" mpirun -H "node0:1,node$last:1" -np 2 --mca pml cm \
		--mca mtl ofi --mca mtl_ofi_provider_include "$prov" \
		--mca btl self "${xenv[@]}" "$p" 100000000 8 >>"$log" 2>&1 &
	mpid=$!
	sleep 20
	if ! kill -0 "$mpid" 2>/dev/null; then
		wait "$mpid"
		fail mpicrash "the job ended before the crash (status $?, log: $log)"
		return
	fi
	if ! pgrep -f "^$p 100000000" >/dev/null; then
		fail mpicrash "no rank of the job on node0 (log: $log)"
		kill "$mpid" 2>/dev/null
		wait "$mpid"
		return
	fi
	rivet-fault crash "$last" >>"$log" 2>&1
	crash=$SECONDS
	# the rank on node0: gone within the bound
	while pgrep -f "^$p 100000000" >/dev/null &&
		[ $((SECONDS - crash)) -le $((bound / 1000)) ]; do
		sleep 1
	done
	if pgrep -f "^$p 100000000" >/dev/null; then
		fail mpicrash "the rank on node0 still runs $((SECONDS - crash)) s after the crash (log: $log)"
		pkill -9 -f "^$p 100000000"
		kill "$mpid" 2>/dev/null
		wait "$mpid"
		return
	fi
	echo "# the rank on node0 ended $((SECONDS - crash)) s after the crash"
	for ((i = 0; i < 60; i++)); do
		kill -0 "$mpid" 2>/dev/null || break
		sleep 1
	done
	if kill -0 "$mpid" 2>/dev/null; then
		kill "$mpid" 2>/dev/null
		sleep 2
		kill -9 "$mpid" 2>/dev/null
		pkill -9 -x mpirun 2>/dev/null
		wait "$mpid"
		# the rank must have failed, not just gone
		if ! grep -qE 'returned a non-zero exit|exited with non-zero status|Signal:|will now abort' "$log"; then
			fail mpicrash "the rank on node0 ended without an error, and mpirun did not end (log: $log)"
			return
		fi
		echo "# mpirun did not end by itself within 60 s of the rank (Open MPI 4.1.4's abort waits for the dead node's daemon); stopped"
		if [ "${MPICRASH_STRICT:-0}" = 1 ]; then
			fail mpicrash "mpirun still running 60 s after the rank ended (log: $log)"
		else
			pass mpicrash
		fi
		return
	fi
	wait "$mpid"
	rc=$?
	if [ "$rc" = 0 ]; then
		fail mpicrash "mpirun ended with status 0 although a node died (log: $log)"
	else
		echo "# mpirun ended with status $rc $((SECONDS - crash)) s after the crash"
		pass mpicrash
	fi
}

# MPI two-sided across nodes: Open MPI's mtl ofi on PROV, one rank on
# node0 and one on node1, a checked ping-pong.
case_mpi() {
	local p log=$logdir/mpi.log xenv=() v
	t0=$SECONDS
	p=$(mpi_lat) || { fail mpi "mpicc failed (log: $log)"; return; }
	for v in $(env | sed -n 's/^\(FI_[A-Za-z0-9_]*\)=.*/\1/p'); do
		xenv+=(-x "$v")
	done
	if timeout -k 10 "$limit" mpirun -H node0:1,node1:1 -np 2 --mca pml cm \
		--mca mtl ofi --mca mtl_ofi_provider_include "$prov" \
		--mca btl self "${xenv[@]}" "$p" 200 8 >"$log" 2>&1 &&
		grep -q '^ok mpi_latency' "$log"; then
		pass "mpi (mpi_rivet_lat, node0 and node1)"
	else
		fail mpi "$(tail -n 1 "$log") (log: $log)"
	fi
}

case_suite() {
	t0=$SECONDS
	# shellcheck disable=SC2086
	if bash "$bindir/run_rdm_tests.sh" -r 1 -b "$bindir" -o "$logdir/suite" \
		-t 600 -S all -M 256k $suite_skip "$prov" >"$logdir/suite.log" 2>&1; then
		sed 's/^/    /' "$logdir/suite.log" | grep -E '^    (ok|FAIL)'
		pass suite
	else
		sed 's/^/    /' "$logdir/suite.log" | grep -vE '^    #'
		fail suite "$(tail -n 1 "$logdir/suite.log") (log: $logdir/suite.log)"
	fi
}

echo "# provider $prov, $nodes nodes, logs in $logdir"
rivet-fault clear >/dev/null 2>&1
skipped suite || case_suite
skipped mpi || case_mpi
skipped clean || case_stream clean
skipped loss1 || case_stream loss1 loss 1
skipped loss5 || case_stream loss5 loss 5
skipped delay5 || case_stream delay5 delay 5
skipped reorder10 || case_stream reorder10 reorder 10
skipped dup5 || case_stream dup5 dup 5
skipped linkshort || case_linkshort
skipped linklong || case_linklong
skipped crash || case_crash
skipped mpicrash || case_mpicrash
echo "# stream throughput node0 -> node1 (MB/s), by fault:"
for r in "${rates[@]}"; do echo "#   $r"; done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
