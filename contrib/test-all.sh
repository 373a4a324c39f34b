#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite: build with -Werror, the layering check
# (contrib/layers.sh), host unit tests (Criterion),
# the Debian package (dpkg-buildpackage, lintian), then the integration
# tests inside one boot of the Soft-RoCE VM: MSG, RDM and MPI, and the
# package installed there without FI_PROVIDER_PATH; then rivet across two
# guests (rivet-vm -N 2) and, for the lasting faults, three (-N 3). Exits non-zero when any part fails.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
"$top/contrib/build.sh" --werror
echo "== layering and file sizes (contrib/layers.sh)"
"$top/contrib/layers.sh"
echo "== host unit tests (make check)"
make -s check || { cat prov/rivet/test/*.log 2>/dev/null; exit 1; }
cat prov/rivet/test/test_unit.log 2>/dev/null | tail -3 || true
echo "== Debian package (contrib/package.sh: dpkg-buildpackage, lintian)"
deb=$("$top/contrib/package.sh" | tail -n 1)
[ -f "$deb" ] || { echo "test-all.sh: no package built" >&2; exit 1; }
# A VM step, run once more when a guest's kernel panicked (and only
# then): the bed's guest kernel has panicked three times in rxe's packet
# path, twice with register state no CPU can hold (EFLAGS with reserved
# bits set): a defect of the guest kernel under qemu's TCG, not of a
# test (contrib/vm/README.md, "Known behaviour"; issue 13).  A failed
# test fails the step at once; a second panic fails it too.  Every
# console is kept.
vm=${RIVET_CI_VM:-contrib/vm/rivet-vm}
vm_step() {	# vm_step NAME RIVET-VM-ARGS...
	local name=$1 out rc try
	shift
	for try in 1 2; do
		out=$(mktemp -d "${TMPDIR:-/var/tmp}/rivet-ci-$name.XXXXXX")
		rc=0
		"$vm" -o "$out" "$@" || rc=$?
		if [ "$rc" -eq 0 ] || [ "$try" -eq 2 ] ||
		   ! grep -qs 'Kernel panic - not syncing' "$out"/console*.log; then
			return "$rc"
		fi
		echo "test-all.sh: $name: a guest kernel panicked (console:" \
			"$out); the bed's defect, not a test's: the step runs" \
			"once more" >&2
	done
}

echo "== integration tests in the Soft-RoCE VM (MSG, then RDM and MPI, then the package)"
vm_step single -t 2400 -e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
	-- bash -c 'bash fabtests/run_msg_tests.sh rivet; m=$?
		bash fabtests/run_rdm_tests.sh rivet; r=$?
		echo "== package $1 (contrib/package-guest.sh)"
		bash contrib/package-guest.sh "$1"; p=$?
		exit $((m | r | p))' package-test "$deb"
# Across nodes: the RDM suite's core, native atomics, the 8-process mesh,
# Open MPI two-sided and one-sided with ranks on both nodes, Debian's
# fi_pingpong on RDM and MSG (about 4 minutes), the fault-free cases,
# loss, delay, reordering, duplication and a short link loss in two
# guests; then in three (the second peer, which must keep being served,
# on node2) a lasting link loss, a node crash, and an Open MPI job whose
# node dies: its rank on node0 must end with an error. Open MPI 4.1.4's
# mpirun then often waits for the dead node's daemon for ever; the case
# says so and stops it (MPICRASH_STRICT=1 fails it instead).
echo "== across nodes in two Soft-RoCE guests (fabtests/run_node_tests.sh)"
n2=0
vm_step two -N 2 -t 2400 -e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
	-- bash fabtests/run_node_tests.sh \
	-x mpicrash -x linklong -x crash rivet || n2=$?
echo "== a lasting link loss, a node crash and an MPI job losing a node, in three guests"
n3=0
vm_step three -N 3 -t 1200 -e FI_PROVIDER_PATH="$top/_inst/lib/libfabric" \
	-- bash fabtests/run_node_tests.sh -c linklong -c crash -c mpicrash \
	rivet || n3=$?
exit $((n2 | n3))
