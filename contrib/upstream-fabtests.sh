#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a libfabric release's own fabtests (its quick set) on rivet built
# against that release's core, in two Soft-RoCE guests: not in CI (CI
# cannot fetch libfabric), the command behind docs/conformance.md.
#
# usage: contrib/upstream-fabtests.sh SRCDIR [WORKDIR] [-- RUNFABTESTS-ARGS...]
#   SRCDIR   a libfabric source tree at a release tag (e.g. v2.6.0), with
#            its fabtests/ folder
#   WORKDIR  where the core, fabtests and rivet are built and installed
#            (default /var/tmp/rivet-upstream-VERSION)
# Extra arguments go to runfabtests.sh (e.g. -e multi_mr, or a test name).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
prog=upstream-fabtests.sh
die() { echo "$prog: error: $*" >&2; exit 1; }

[ $# -ge 1 ] || { sed -n 's/^# usage: //p' "$0" >&2; exit 2; }
src=$(cd "$1" && pwd) || die "no such folder: $1"
shift
[ -f "$src/include/rdma/fabric.h" ] && [ -d "$src/fabtests" ] ||
	die "$src is not a libfabric source tree with fabtests/"
version=$(sed -n 's/^AC_INIT(\[libfabric\], \[\([^]]*\)\].*/\1/p' "$src/configure.ac")
[ -n "$version" ] || die "cannot read the version from $src/configure.ac"
work=/var/tmp/rivet-upstream-$version
if [ $# -gt 0 ] && [ "$1" != -- ]; then work=$1; shift; fi
[ "${1:-}" != -- ] || shift
mkdir -p "$work"
work=$(cd "$work" && pwd)
core=$work/core ft=$work/fabtests rivet=$work/rivet

"$top/contrib/deps.sh" build test vm
# The core with the providers the fabtests layer over rivet (rxm) and a
# few others; built once.
if [ ! -x "$core/bin/fi_info" ]; then
	echo "$prog: building libfabric $version into $core" >&2
	(cd "$src" && ./autogen.sh && ./configure --prefix="$core" \
		--enable-only --enable-rxm --enable-tcp --enable-udp \
		--enable-rxd --enable-shm --disable-static &&
		make -j"$(nproc)" && make install) >"$work/core.log" 2>&1 ||
		die "building the core failed (log: $work/core.log)"
fi
if [ ! -x "$ft/bin/runfabtests.sh" ]; then
	echo "$prog: building its fabtests into $ft" >&2
	(cd "$src/fabtests" && ./autogen.sh &&
		./configure --prefix="$ft" --with-libfabric="$core" &&
		make -j"$(nproc)" && make install) >"$work/fabtests.log" 2>&1 ||
		die "building the fabtests failed (log: $work/fabtests.log)"
	# Under qemu TCG a server needs more than the script's one second
	# to start listening.
	sed -i 's/^\tsleep 1$/\tsleep ${FT_SERVER_WAIT:-6}/' "$ft/bin/runfabtests.sh"
fi
echo "$prog: building rivet against it into $rivet" >&2
rm -rf "$rivet"
mkdir -p "$rivet/src"
git -C "$top" ls-files -z | tar -C "$top" --null -T - -cf - |
	tar -C "$rivet/src" -xf -
(cd "$rivet/src" && ./autogen.sh && ./configure --enable-werror \
	--disable-tests --with-libfabric="$core" --prefix="$rivet/inst" &&
	make -j"$(nproc)" && make install) >"$work/rivet.log" 2>&1 ||
	die "building rivet failed (log: $work/rivet.log)"

# Two guests for the ssh the script uses; server and client on node 0.
# FI_RIVET_MAX_MSG_SIZE: some programs register 64 windows of the
# largest size up to max_msg_size, more than a guest can pin at 1 GiB.
env=(FI_PROVIDER_PATH="$rivet/inst/lib/libfabric"
	LD_LIBRARY_PATH="$core/lib" FI_RIVET_MAX_MSG_SIZE=1048576)
eargs=() vargs=()
for e in "${env[@]}"; do
	eargs+=(-E "$e")
	vargs+=(-e "$e")
done
mkdir -p "$work/out"
exec "$top/contrib/vm/rivet-vm" -N 2 -t 3600 -o "$work/out" \
	-e FT_SERVER_WAIT=8 "${vargs[@]}" -- \
	"$ft/bin/runfabtests.sh" -v -T 150 -t quick -p "$ft/bin" "${eargs[@]}" \
	"$@" -s 10.77.0.1 -c 10.77.0.1 rivet 10.77.0.1 10.77.0.1
