# SPDX-License-Identifier: MIT
# Sourced by the scripts that run inside the VM (demo-guest.sh,
# package-guest.sh): run a server and its client on rxe0's address.
#
# pair LOG TIMEOUT READY SERVER_CMD... -- CLIENT_CMD...
#   Starts the server (output in LOG.server), waits until it is ready, then
#   runs the client (output in LOG.client, and on our stdout); fails when
#   either fails or the server never gets ready, showing the server's log.
#   READY: a TCP port the server listens on (perftest, fi_pingpong's
#   control port), or "log": the server prints "listening" (rivet's
#   fabtests, which listen on an rdma_cm port that ss does not show).
pair() {
	local log=$1 t=$2 ready=$3 s=() c=() spid rc=0 i up=0
	shift 3
	while [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	c=("$@")
	timeout "$t" "${s[@]}" >"$log.server" 2>&1 &
	spid=$!
	for ((i = 0; i < 600; i++)); do
		if [ "$ready" = log ]; then
			grep -qs listening "$log.server" && { up=1; break; }
		elif [ -n "$(ss -Hltn "sport = :$ready")" ]; then
			up=1
			break
		fi
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	if [ "$up" = 1 ]; then
		timeout "$t" "${c[@]}" >"$log.client" 2>&1 || rc=$?
		cat "$log.client"
	else
		echo "server not ready: ${s[*]}" >&2
		kill "$spid" 2>/dev/null
		rc=1
	fi
	wait "$spid" || rc=$?
	if [ "$rc" != 0 ]; then
		echo "failed ($rc): ${c[*]}; the server's output:" >&2
		cat "$log.server" >&2
	fi
	return "$rc"
}
