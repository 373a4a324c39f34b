#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: build and install rivet, boot the Soft-RoCE VM and show
# fi_info -p rivet, a ping-pong and a bandwidth run on rivet's MSG endpoints.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/build.sh"
cd "$top"
exec contrib/vm/rivet-vm -t 420 -e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
	-- bash contrib/demo-guest.sh
