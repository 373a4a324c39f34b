#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the build dependencies, builds rivet and installs it into a
# prefix (default: _inst/ in the source tree; the provider lands in
# PREFIX/lib/libfabric, which FI_PROVIDER_PATH names).
#
# usage: contrib/build.sh [--werror] [PREFIX]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
werror=
if [ "${1:-}" = --werror ]; then werror=--enable-werror; shift; fi
prefix=${1:-$top/_inst}

"$top/contrib/deps.sh" build test vm
if [ ! -x configure ] || [ configure.ac -nt configure ] ||
   [ Makefile.am -nt Makefile.in ]; then
	./autogen.sh >/dev/null
fi
args="'--prefix=$prefix'${werror:+ '$werror'}"
if [ ! -f Makefile ] || [ "$(./config.status --config)" != "$args" ]; then
	eval ./configure -q "$args"
fi
make -s -j"$(nproc)"
make -s install >/dev/null
echo "build.sh: rivet installed in $prefix/lib/libfabric" >&2
