#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs inside the VM (contrib/test-all.sh, contrib/package.sh --test): installs
# the libfabric-rivet package with dpkg (the guest's root is a tmpfs overlay:
# nothing reaches the host) and checks that the libfabric core finds rivet
# without FI_PROVIDER_PATH: fi_info -p rivet, then fi_pingpong -p rivet -e
# rdm (server and client on rxe0's address); removes the package at the end
# so that later steps in the same boot see the tree's build again.
#
# usage: package-guest.sh DEB
set -uo pipefail
deb=${1:?usage: package-guest.sh DEB}
addr=10.77.0.1
top=$(cd "$(dirname "$0")/.." && pwd)
log=${VM_OUT:-/tmp}/package
plugin=/usr/lib/x86_64-linux-gnu/libfabric/librivet-fi.so
mkdir -p "$log"
# shellcheck source=contrib/guest-pair.sh
. "$top/contrib/guest-pair.sh"
unset FI_PROVIDER_PATH
fails=0

check() {	# check NAME COMMAND...: runs it, prints ok/FAIL NAME
	local name=$1
	shift
	if "$@" >"$log/$name.log" 2>&1; then
		echo "ok package_$name"
	else
		echo "FAIL package_$name (log: $log/$name.log)"
		sed 's/^/#   /' "$log/$name.log" | tail -20
		fails=$((fails + 1))
	fi
}
not_found() { ! fi_info -p rivet; }
installed() {
	dpkg -L libfabric-rivet | grep -qx "$plugin" &&
		dpkg -L libfabric-rivet | grep -qx /usr/share/man/man7/fi_rivet.7.gz &&
		! dpkg -L libfabric-rivet | grep -q '\.la$'
}
pingpong() {
	pair "$log/fi_pingpong" 60 47592 \
		fi_pingpong -p rivet -e rdm -S 1024 -I 100 -- \
		fi_pingpong -p rivet -e rdm -S 1024 -I 100 "$addr"
}
# the core must have dlopen()ed the package's plugin, no other
loaded_from_package() {
	local f=$log/ld_debug
	LD_DEBUG=files fi_info -p rivet >/dev/null 2>"$f"
	grep 'librivet-fi\.so' "$f"
	grep -q "file=$plugin .*dynamically loaded" "$f" &&
		[ "$(grep -c 'librivet-fi\.so.*dynamically loaded' "$f")" = 1 ]
}

# man-db's trigger rebuilds its index on every install and removal, which
# takes minutes in the emulated guest; this guest's root is thrown away.
rm -f /var/lib/man-db/auto-update
[ ! -e "$plugin" ] || { echo "FAIL package_clean: $plugin exists before the install"; exit 1; }
check not_found_before not_found
check install dpkg -i "$deb"
check files installed
check fi_info fi_info -p rivet
check loaded_from_package loaded_from_package
check fi_pingpong_rdm pingpong
check remove dpkg -r libfabric-rivet
check not_found_after not_found
echo "# package test: $fails failed"
[ "$fails" = 0 ]
