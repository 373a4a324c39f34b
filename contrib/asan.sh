#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The integration suites under AddressSanitizer and LeakSanitizer: builds a
# copy of the working tree with -fsanitize=address in a scratch folder (the
# tree's own build is left alone), then, in one boot of the Soft-RoCE VM,
# runs fabtests/run_msg_tests.sh and run_rdm_tests.sh from that copy with
# libasan preloaded into every process (Debian's fi_pingpong and Open MPI
# are not built with ASan but load the ASan-built provider). Fails on a
# failed step, on any AddressSanitizer error, and on any leak that rivet's
# code or its test programs allocated (contrib/asan-guest.sh).
#
# usage: contrib/asan.sh [SCRATCH]   (default /var/tmp/rivet-asan)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
scratch=${1:-/var/tmp/rivet-asan}
flags="-g -O1 -fsanitize=address -fno-omit-frame-pointer"

rm -rf "$scratch"
mkdir -p "$scratch"
# the working tree as it is: tracked files and new ones git does not ignore
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	xargs -0 cp --parents -t "$scratch")
cd "$scratch"
# the copy's build.sh: dependencies, configure (which takes the flags
# from the environment), make, install into the copy's _inst
CFLAGS="$flags" LDFLAGS="-fsanitize=address" contrib/build.sh
lib=$(readlink -f "$(gcc -print-file-name=libasan.so)")
[ -f "$lib" ] || { echo "asan.sh: no libasan ($lib)" >&2; exit 1; }
# four ASan-built MPI ranks with their Open MPI daemons do not fit in the
# VM's default 2 GiB
exec "$top/contrib/vm/rivet-vm" -m 12G -t 3000 \
	-e FI_PROVIDER_PATH="$scratch/_inst/lib/libfabric" \
	-- bash contrib/asan-guest.sh "$lib"
