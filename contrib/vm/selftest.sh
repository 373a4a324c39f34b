#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Self-test of contrib/vm/rivet-vm: exit status and time-out propagation, two
# rxe devices, RC traffic (ibv_rc_pingpong), hostname and a writable $VM_OUT;
# with --debian 13 or --nodes also two guests (-N 2: rivet-node, ssh, and on
# Debian 13 libfabric 2.x and Open MPI 5's mpirun, on one node and across).
#
# usage: contrib/vm/selftest.sh [--debian 12|13] [--nodes]
#                                        (on the host; about a minute, 3 with -N 2)
#        selftest.sh --guest             (what it runs inside the guest)
#        selftest.sh --guest-nodes       (what it runs on node0 of -N 2)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fails=0
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; fails=$((fails + 1)); }
check() { # check NAME COMMAND...
	local name=$1
	shift
	if "$@"; then ok "$name"; else notok "$name"; fi
}

if [ "${1:-}" = --guest ]; then
	[ "${RIVET_VM:-}" = 1 ] || { echo "selftest.sh --guest: not in rivet-vm" >&2; exit 2; }
	check "hostname is set ($(hostname))" test -n "$(hostname)"
	# shellcheck disable=SC2317 # called through check
	resolves() { getent hosts "$(hostname)" | grep -q '^127\.0\.0\.1[[:space:]]'; }
	check "hostname resolves to 127.0.0.1" resolves
	devs=$(ibv_devices)
	check "ibv_devices lists rxe0" grep -qw rxe0 <<<"$devs"
	check "ibv_devices lists rxe1" grep -qw rxe1 <<<"$devs"
	for d in rxe0 rxe1; do
		check "$d port is active" bash -c "ibv_devinfo -d $d | grep -q PORT_ACTIVE"
	done
	check "rv0 has 10.77.0.1" bash -c 'ip -4 -o addr show dev rv0 | grep -q "10\.77\.0\.1/24"'
	check "rv1 has 10.77.1.1" bash -c 'ip -4 -o addr show dev rv1 | grep -q "10\.77\.1\.1/24"'
	check "RIVET_GID_INDEX is 1 (${RIVET_GID_INDEX:-unset})" test "${RIVET_GID_INDEX:-}" = 1
	check "memlock is unlimited" test "$(ulimit -l)" = unlimited
	check "VM_OUT is writable" bash -c "hostname >'$VM_OUT/selftest.hostname'"
	want=${SELFTEST_DEBIAN:-12}
	check "the root is Debian $want ($(cat /etc/debian_version))" \
		bash -c "[[ \$(cat /etc/debian_version) == $want* ]]"
	if [ "$want" = 13 ]; then
		# Debian 13's stack: libfabric 2.1, Open MPI 5 (PRRTE's launcher)
		v=$(fi_info --version 2>&1 | awk '/^libfabric:/ {print $2; exit}')
		check "fi_info is libfabric 2.x ($v)" bash -c "[[ '$v' == 2.* ]]"
		v=$(timeout 60 mpirun --version 2>&1 | awk '/Open MPI/ {print $NF; exit}')
		check "mpirun is Open MPI 5 ($v)" bash -c "[[ '$v' == 5.* ]]"
		v=$(timeout 120 mpirun -np 2 hostname 2>&1)
		check "mpirun -np 2 hostname runs two ranks ($(paste -sd' ' <<<"$v"))" \
			test "$(grep -c "^$(hostname)\$" <<<"$v")" = 2
	fi

	# RC ping-pong on rxe0, server and client in this guest.
	gid=${RIVET_GID_INDEX:-1}
	timeout 60 ibv_rc_pingpong -d rxe0 -g "$gid" -n 100 >"$VM_OUT/pp-server.log" 2>&1 &
	server=$!
	for _ in $(seq 50); do # until the server listens on its TCP port
		ss -ltn 2>/dev/null | grep -q ':18515 ' && break
		sleep 0.1
	done
	timeout 60 ibv_rc_pingpong -d rxe0 -g "$gid" -n 100 10.77.0.1 >"$VM_OUT/pp-client.log" 2>&1
	crc=$?
	wait "$server"
	src=$?
	if [ "$crc" = 0 ] && [ "$src" = 0 ]; then
		ok "ibv_rc_pingpong over rxe0: $(grep -m1 'usec/iter' "$VM_OUT/pp-client.log")"
	else
		notok "ibv_rc_pingpong over rxe0 (client $crc, server $src)"
		sed 's/^/# client: /' "$VM_OUT/pp-client.log"
		sed 's/^/# server: /' "$VM_OUT/pp-server.log"
	fi
	exit "$((fails > 0))"
fi

if [ "${1:-}" = --guest-nodes ]; then
	[ "${RIVET_NODES:-}" = 2 ] || { echo "selftest.sh --guest-nodes: not in rivet-vm -N 2" >&2; exit 2; }
	want=${SELFTEST_DEBIAN:-12}
	check "node0's hostname is node0" test "$(hostname)" = node0
	check "rivet-node -n says 2" test "$(rivet-node -n)" = 2
	check "rivet-node 1 hostname says node1" test "$(timeout 120 rivet-node 1 hostname)" = node1
	check "rivet-node 1 runs in our folder" test "$(timeout 120 rivet-node 1 pwd)" = "$PWD"
	check "node1's root is Debian $want too" \
		bash -c "[[ \$(timeout 120 ssh node1 cat /etc/debian_version) == $want* ]]"
	check "node1's rxe0 is active" bash -c 'timeout 120 ssh node1 ibv_devinfo -d rxe0 | grep -q PORT_ACTIVE'
	v=$(timeout 300 mpirun -H node0:1,node1:1 -np 2 hostname 2>&1 | sort | paste -sd' ')
	check "mpirun -H node0:1,node1:1 hostname ($v)" test "$v" = "node0 node1"
	exit "$((fails > 0))"
fi

debian=12 nodes=0
while [ $# -gt 0 ]; do
	case $1 in
	--debian) debian=${2:-}; shift 2 || { echo "selftest.sh: --debian wants 12 or 13" >&2; exit 2; } ;;
	--debian=*) debian=${1#*=}; shift ;;
	--nodes) nodes=1; shift ;;
	*) echo "usage: selftest.sh [--debian 12|13] [--nodes] | --guest | --guest-nodes" >&2; exit 2 ;;
	esac
done
case $debian in
12) ;;
13) nodes=1 ;;
*) echo "selftest.sh: --debian wants 12 or 13" >&2; exit 2 ;;
esac
# On Debian 13 the guest sees the caller's folder only: show it this one too.
share=()
[ "$debian" = 12 ] || share=(-s "$here")
vm() { "$here/rivet-vm" --debian "$debian" "${share[@]}" -e SELFTEST_DEBIAN="$debian" "$@"; }
t0=$SECONDS
out=$(mktemp -d /var/tmp/rivet-vm-selftest.XXXXXX)
trap 'rm -rf "$out"' EXIT

# 1 and 2 run at the same time, which also shows that two runs do not clash.
echo "# 1: exit status and working folder; 2: time-out (two guests at once)"
(cd "$out" && vm -t 60 -o "$out/1" -- bash -c 'pwd; exit 3' >"$out/1.out" 2>"$out/1.err") &
pid1=$!
vm -t 10 -o "$out/2" -- sleep 300 >"$out/2.out" 2>"$out/2.err"
rc2=$?
wait "$pid1"
rc1=$?
check "a command's exit 3 comes back as 3 (got $rc1)" test "$rc1" = 3
check "the command runs in the caller's folder" test "$(cat "$out/1.out")" = "$out"
check "a command over its time gives 124 (got $rc2)" test "$rc2" = 124
check "the time-out is reported" grep -q 'timed out' "$out/2.err"

echo "# 3: in-guest checks with two rxe devices"
vm -n 2 -t 300 -o "$out/3" -- "$here/selftest.sh" --guest >"$out/3.out" 2>"$out/3.err"
rc=$?
sed 's/^/  /' "$out/3.out"
check "the in-guest checks pass (status $rc)" test "$rc" = 0
check "the guest's stdout streams to ours" grep -q '^ok - ibv_devices lists rxe0' "$out/3.out"
check "the guest wrote to VM_OUT" test -s "$out/3/selftest.hostname"
check "the guest's kernel log is in VM_OUT" test -s "$out/3/dmesg.log"

if [ "$nodes" = 1 ]; then
	echo "# 4: two guests (-N 2): rivet-node, ssh, mpirun across nodes"
	vm -N 2 -t 600 -o "$out/4" -- "$here/selftest.sh" --guest-nodes >"$out/4.out" 2>"$out/4.err"
	rc=$?
	sed 's/^/  /' "$out/4.out"
	check "the checks on node0 pass (status $rc)" test "$rc" = 0
	check "node1's kernel log is in VM_OUT" test -s "$out/4/dmesg.node1.log"
fi

if [ "$fails" -gt 0 ]; then
	for f in "$out"/*.err; do
		[ -s "$f" ] && sed "s|^|# ${f##*/}: |" "$f"
	done
	echo "# FAILED: $fails check(s), $((SECONDS - t0)) s"
	trap - EXIT
	echo "# logs kept in $out"
	exit 1
fi
echo "# all passed in $((SECONDS - t0)) s (Debian $debian)"
