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
# usage: contrib/bench.sh [ITERATIONS]   (default 1000; 1 MiB runs: 1/5)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/build.sh"
cd "$top"
exec contrib/vm/rivet-vm -t 2400 -e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
	-- bash contrib/bench-guest.sh "${1:-1000}"
