#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Self-test of contrib/vm/rivet-vm: exit status and time-out propagation, two
# rxe devices, RC traffic (ibv_rc_pingpong), hostname and a writable $VM_OUT.
#
# usage: contrib/vm/selftest.sh          (on the host; about a minute)
#        selftest.sh --guest             (what it runs inside the guest)
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

vm=$here/rivet-vm
t0=$SECONDS
out=$(mktemp -d /var/tmp/rivet-vm-selftest.XXXXXX)
trap 'rm -rf "$out"' EXIT

# 1 and 2 run at the same time, which also shows that two runs do not clash.
echo "# 1: exit status and working folder; 2: time-out (two guests at once)"
(cd "$out" && exec "$vm" -t 60 -o "$out/1" -- bash -c 'pwd; exit 3' >"$out/1.out" 2>"$out/1.err") &
pid1=$!
"$vm" -t 10 -o "$out/2" -- sleep 300 >"$out/2.out" 2>"$out/2.err"
rc2=$?
wait "$pid1"
rc1=$?
check "a command's exit 3 comes back as 3 (got $rc1)" test "$rc1" = 3
check "the command runs in the caller's folder" test "$(cat "$out/1.out")" = "$out"
check "a command over its time gives 124 (got $rc2)" test "$rc2" = 124
check "the time-out is reported" grep -q 'timed out' "$out/2.err"

echo "# 3: in-guest checks with two rxe devices"
"$vm" -n 2 -t 300 -o "$out/3" -- "$here/selftest.sh" --guest >"$out/3.out" 2>"$out/3.err"
rc=$?
sed 's/^/  /' "$out/3.out"
check "the in-guest checks pass (status $rc)" test "$rc" = 0
check "the guest's stdout streams to ours" grep -q '^ok - ibv_devices lists rxe0' "$out/3.out"
check "the guest wrote to VM_OUT" test -s "$out/3/selftest.hostname"
check "the guest's kernel log is in VM_OUT" test -s "$out/3/dmesg.log"

if [ "$fails" -gt 0 ]; then
	for f in "$out"/*.err; do
		[ -s "$f" ] && sed "s|^|# ${f##*/}: |" "$f"
	done
	echo "# FAILED: $fails check(s), $((SECONDS - t0)) s"
	trap - EXIT
	echo "# logs kept in $out"
	exit 1
fi
echo "# all passed in $((SECONDS - t0)) s"
