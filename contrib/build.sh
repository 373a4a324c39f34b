#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the build dependencies, builds rivet and installs it into a
# prefix (default: _inst/ in the source tree; the provider lands in
# PREFIX/lib/libfabric, which FI_PROVIDER_PATH names).
#
# usage: contrib/build.sh [--werror] [PREFIX]
# --werror: warnings are errors and lock-held assertions are checked
# (CI's build; benchmarks use the plain one)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
opts=()
if [ "${1:-}" = --werror ]; then
	opts=(--enable-werror --enable-lock-check)
	shift
fi
prefix=${1:-$top/_inst}

"$top/contrib/deps.sh" build test vm
if [ ! -x configure ] || [ configure.ac -nt configure ] ||
   [ Makefile.am -nt Makefile.in ]; then
	./autogen.sh >/dev/null
fi
args="'--prefix=$prefix'"
for o in "${opts[@]}"; do args+=" '$o'"; done
if [ ! -f Makefile ] || [ "$(./config.status --config)" != "$args" ]; then
	eval ./configure -q "$args"
fi
make -s -j"$(nproc)"
make -s install >/dev/null
echo "build.sh: rivet installed in $prefix/lib/libfabric" >&2
