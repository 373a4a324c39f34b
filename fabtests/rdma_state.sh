#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the RDMA stack of this node holds and has counted, for the logs of
# a failed case (run_node_tests.sh): rdma_cm ids and QPs with their
# states (QP1 included), rxe's counters, the kernel log's last lines.
echo "## $(hostname) $(date +%T)"
rdma resource show cm_id 2>&1
rdma resource show qp 2>&1
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
