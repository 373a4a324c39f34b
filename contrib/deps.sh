#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages rivet needs to build, to test, and to run
# the Soft-RoCE VM (contrib/vm/rivet-vm); only missing packages are installed.
#
# usage: contrib/deps.sh [--check] [--list] [GROUP...]
#   GROUP    build, test, vm or pkg (default: build, test and vm; pkg is
#            what contrib/package.sh needs to build and check the .deb)
#   --check  only report missing packages (exit 1 if any), install nothing
#   --list   print the packages of the groups, one a line, and exit
set -euo pipefail

prog=${0##*/}

build_pkgs=(autoconf automake libtool pkg-config gcc make
	libfabric-dev libibverbs-dev librdmacm-dev uthash-dev libcriterion-dev)
test_pkgs=(libfabric-bin ibverbs-utils ibverbs-providers rdma-core
	rdmacm-utils perftest openmpi-bin libopenmpi-dev valgrind)
# The guest runs the host's own ip/rdma/ibv_devinfo and rxe provider, so the
# VM group holds those too.
vm_pkgs=(qemu-system-x86 busybox-static kmod cpio xz-utils iproute2
	ibverbs-utils ibverbs-providers dropbear-bin openssh-client)
# The Debian package (contrib/package.sh): dpkg-buildpackage, dh, lintian.
pkg_pkgs=(dpkg-dev debhelper devscripts lintian fakeroot)

die() {
	echo "$prog: error: $*" >&2
	exit 1
}

usage() {
	sed -n '/^# usage:/,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0" >&2
	exit 2
}

check_only=0 list_only=0 groups=()
for arg in "$@"; do
	case $arg in
	--check) check_only=1 ;;
	--list) list_only=1 ;;
	build | test | vm | pkg) groups+=("$arg") ;;
	all) groups+=(build test vm) ;;
	-h | --help) usage ;;
	*) echo "$prog: unknown argument '$arg'" >&2; usage ;;
	esac
done
[ ${#groups[@]} -gt 0 ] || groups=(build test vm)

wanted=()
for g in "${groups[@]}"; do
	case $g in
	build) wanted+=("${build_pkgs[@]}") ;;
	test) wanted+=("${test_pkgs[@]}") ;;
	vm) wanted+=("${vm_pkgs[@]}") ;;
	pkg) wanted+=("${pkg_pkgs[@]}") ;;
	esac
done
# de-duplicate, keeping the order
mapfile -t wanted < <(printf '%s\n' "${wanted[@]}" | awk '!seen[$0]++')

if [ "$list_only" = 1 ]; then
	printf '%s\n' "${wanted[@]}"
	exit 0
fi

is_installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

missing_pkgs() {
	local p
	for p in "${wanted[@]}"; do
		is_installed "$p" || echo "$p"
	done
}

command -v dpkg-query >/dev/null || die "dpkg-query not found: this script is for Debian 12 (bookworm)"
mapfile -t missing < <(missing_pkgs)
if [ ${#missing[@]} -eq 0 ]; then
	[ "$check_only" = 1 ] || echo "$prog: all ${#wanted[@]} packages are installed"
	exit 0
fi
if [ "$check_only" = 1 ]; then
	echo "$prog: missing packages: ${missing[*]}" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null ||
		die "not root and no sudo: install as root: apt-get install ${missing[*]}"
	sudo=(sudo)
fi
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y
	-o DPkg::Lock::Timeout=300 -o APT::Install-Recommends=false)

echo "$prog: installing: ${missing[*]}" >&2
timeout 600 "${apt[@]}" update >/dev/null ||
	die "'apt-get update' failed (network? apt sources?)"

# A package apt does not know at all is the commonest failure: name it.
unknown=()
for p in "${missing[@]}"; do
	cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
	[ -n "$cand" ] && [ "$cand" != "(none)" ] || unknown+=("$p")
done
[ ${#unknown[@]} -eq 0 ] ||
	die "no installable version of package(s): ${unknown[*]} (check /etc/apt/sources.list*)"

if ! timeout 1800 "${apt[@]}" install "${missing[@]}" >/dev/null; then
	# Find which package(s) broke the batch install.
	failed=()
	for p in "${missing[@]}"; do
		is_installed "$p" && continue
		timeout 900 "${apt[@]}" install "$p" >/dev/null 2>&1 || failed+=("$p")
	done
	[ ${#failed[@]} -eq 0 ] ||
		die "failed to install package(s): ${failed[*]} (try: apt-get install ${failed[*]})"
fi

mapfile -t still < <(missing_pkgs)
[ ${#still[@]} -eq 0 ] || die "still missing after install: ${still[*]}"
echo "$prog: installed ${#missing[@]} package(s)" >&2
