#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite: build with -Werror, host unit tests (Criterion),
# then the integration tests inside the Soft-RoCE VM.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
"$top/contrib/build.sh" --werror
echo "== host unit tests (make check)"
make -s check || { cat prov/rivet/test/*.log 2>/dev/null; exit 1; }
cat prov/rivet/test/test_unit.log 2>/dev/null | tail -3 || true
echo "== integration tests in the Soft-RoCE VM (MSG, then RDM and MPI)"
contrib/vm/rivet-vm -t 2400 -e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
	-- bash -c 'bash fabtests/run_msg_tests.sh rivet; m=$?
		bash fabtests/run_rdm_tests.sh rivet; r=$?
		exit $((m | r))'
