#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Traces an 8 B ping-pong of raw verbs and of rivet RDM in the Soft-RoCE VM
# with ftrace (contrib/trace-guest.sh): where each round trip's time goes
# between the two processes, rxe's kworkers and the scheduler, and how
# much kworker CPU time a message costs.
#
# usage: contrib/trace.sh [ITERATIONS]   (default 1000)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/build.sh"
cd "$top"
exec contrib/vm/rivet-vm -t 600 -e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
	-- bash contrib/trace-guest.sh "${1:-1000}"
