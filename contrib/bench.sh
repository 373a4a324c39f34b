#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark: in one Soft-RoCE VM boot, rivet MSG against libfabric's own
# verbs MSG and raw verbs (perftest).  Prints a markdown table with ratios.
# Times under qemu TCG are slow and noisy: read the ratios, not the values.
#
# usage: contrib/bench.sh [ITERATIONS]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/build.sh"
cd "$top"
exec contrib/vm/rivet-vm -t 1200 -e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
	-- bash contrib/bench-guest.sh "${1:-1000}"
