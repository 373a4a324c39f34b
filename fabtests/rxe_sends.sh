#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Does this node's Soft-RoCE device still send?  rdma_cm from the node to
# itself (rping), rxe's sent_pkts counter read around it.  Exit 0 when the
# connection works or rxe sent packets for it; 1, with the evidence, when
# rxe sent nothing at all: the device has stopped (run_node_tests.sh).
# usage: rxe_sends.sh DEV ADDR
set -u
dev=$1 addr=$2
f=/sys/class/infiniband/$dev/ports/1/hw_counters/sent_pkts
port=47471
[ -r "$f" ] || { echo "no counter $f"; exit 0; }
before=$(cat "$f")
timeout 25 rping -s -a "$addr" -p "$port" -C 1 >/dev/null 2>&1 &
srv=$!
sleep 2
timeout 15 rping -c -a "$addr" -p "$port" -C 1 -S 64 >/dev/null 2>&1
rc=$?
kill "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
after=$(cat "$f")
if [ "$rc" = 0 ]; then
	echo "$dev sends: rping to $addr worked"
elif [ "$after" != "$before" ]; then
	echo "$dev sends (sent_pkts $before -> $after), rping to $addr failed (status $rc)"
else
	echo "$dev sent nothing: sent_pkts stayed $after while rping (rdma_cm) tried for 15 s to connect to $addr, the node itself"
	exit 1
fi
