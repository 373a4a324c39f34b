#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: build and install rivet, boot the Soft-RoCE VM and show
# fi_info -p rivet, an RDM tagged ping-pong and bandwidth run and a short
# Open MPI job on rivet, each beside raw verbs (perftest) from the same boot.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/build.sh"
cd "$top"
make -s fabtests-mpi >/dev/null
exec contrib/vm/rivet-vm -t 600 -e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
	-- bash contrib/demo-guest.sh
