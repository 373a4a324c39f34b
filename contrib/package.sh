#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian package libfabric-rivet (librivet-fi.so in the libfabric
# core's provider directory, fi_rivet(7)) from a copy of the working tree
# (tracked files and untracked ones git does not ignore), and checks it with
# lintian: any lintian error fails the build. Prints the .deb's path last.
#
# usage: contrib/package.sh [--test] [OUTDIR]
#   OUTDIR  where the .deb goes (default: _pkg/ in the source tree, which
#           git ignores); the build itself happens in OUTDIR/build
#   --test  then install it in the Soft-RoCE VM and check that fi_info and
#           fi_pingpong -e rdm find rivet without FI_PROVIDER_PATH
#           (contrib/package-guest.sh; contrib/test-all.sh does this too)
# Install it:  apt-get install ./_pkg/libfabric-rivet_*.deb
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
vmtest=0
if [ "${1:-}" = --test ]; then vmtest=1; shift; fi
out=${1:-$top/_pkg}
prog=package.sh

"$top/contrib/deps.sh" build pkg
version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
src=$out/build/rivet-$version
rm -rf "$out/build"
mkdir -p "$src"
out=$(cd "$out" && pwd)
src=$out/build/rivet-$version
# Work-tree files deleted but not yet committed are skipped.
git -C "$top" ls-files -z -co --exclude-standard |
	tar -C "$top" --null -T - --ignore-failed-read -cf - 2>/dev/null |
	tar -C "$src" -xf -

log=$out/build/build.log
echo "$prog: building libfabric-rivet $version (log: $log)" >&2
if ! (cd "$src" && dpkg-buildpackage -us -uc -j"$(nproc)") >"$log" 2>&1; then
	tail -40 "$log" >&2
	echo "$prog: error: dpkg-buildpackage failed (log: $log)" >&2
	exit 1
fi
changes=$(ls "$out"/build/rivet_"$version"_*.changes)
echo "$prog: lintian" >&2
lintian --fail-on error --info "$changes" >&2 || {
	echo "$prog: error: lintian reports errors" >&2
	exit 1
}
rm -f "$out"/libfabric-rivet_*.deb
mv "$out"/build/libfabric-rivet_"$version"_*.deb "$out/"
deb=$(ls "$out"/libfabric-rivet_"$version"_*.deb)
dpkg-deb -c "$deb" | awk '$NF !~ /\/$/ {print "  " $NF}' >&2
if [ "$vmtest" = 1 ]; then
	"$top/contrib/vm/rivet-vm" -t 300 -- bash "$top/contrib/package-guest.sh" "$deb" >&2
fi
echo "$deb"
