#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the RDMA stack of this node holds and has counted, for the logs of
# a failed case (run_node_tests.sh): rdma_cm ids and QPs with their
# states, the IB CM's message counters by kind, rxe's counters.
echo "## $(hostname) $(date +%T)"
rdma resource show cm_id 2>&1
rdma resource show qp 2>&1
for d in /sys/class/infiniband_cm/*/[0-9]*; do
	[ -d "$d" ] || continue
	for c in cm_tx_msgs cm_rx_msgs cm_tx_retries cm_rx_duplicates; do
		[ -d "$d/$c" ] || continue
		printf '%s %s:' "${d#/sys/class/infiniband_cm/}" "$c"
		for f in "$d/$c"/*; do
			v=$(cat "$f" 2>/dev/null)
			[ "${v:-0}" = 0 ] || printf ' %s=%s' "${f##*/}" "$v"
		done
		echo
	done
done
for d in /sys/class/infiniband/*/ports/*/hw_counters; do
	[ -d "$d" ] || continue
	printf '%s:' "$d"
	for f in "$d"/*; do
		v=$(cat "$f" 2>/dev/null)
		[ "${v:-0}" = 0 ] || printf ' %s=%s' "${f##*/}" "$v"
	done
	echo
done
dmesg 2>/dev/null | grep -v 'rxe_create_qp\|callbacks suppressed' | tail -n 8
true
