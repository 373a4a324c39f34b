#!/bin/bash
# SPDX-License-Identifier: MIT
# PID 1 of the rivet-vm guest: sets up the system and the Soft-RoCE devices,
# runs the job's command with a time limit, reports its status and powers off.
#
# Reads /run/rivet-vm/job.conf (written by rivet-vm), writes the status to
# /run/rivet-vm/rc and the kernel log to $VM_OUT/dmesg.log.  As PID 1 it must
# never exit: every path ends in finish(), which powers the guest off.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
job=/run/rivet-vm

say() { echo "rivet-vm(guest): $*" >/dev/console; }

poweroff_now() {
	sync
	echo o >/proc/sysrq-trigger
	# the root (9p) may be gone by now: no "Input/output error" from
	# loading sleep on the console
	sleep 60 2>/dev/null
}

finish() {
	local rc=$1
	if mountpoint -q "${VM_OUT:-/nonexistent}"; then
		dmesg >"$VM_OUT/dmesg.log" 2>&1
	fi
	echo "$rc" >"$job/rc.tmp" && mv "$job/rc.tmp" "$job/rc"
	poweroff_now
}

# Runs "$@" with a time limit; on failure says what failed and finishes 125.
step() {
	local t=$1
	shift
	timeout -k 2 "$t" "$@" && return 0
	say "setup step failed: $*"
	finish 125
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# Sane fds for ourselves: the console, stdin from nowhere.
exec </dev/null >/dev/console 2>&1

# shellcheck source=/dev/null
. "$job/job.conf" || { say "cannot read $job/job.conf"; finish 125; }

export VM_OUT=$RIVET_OUT
mkdir -p "$VM_OUT"
step 20 mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 out "$VM_OUT"

echo rivet-vm >/proc/sys/kernel/hostname
echo rivet-vm >/etc/hostname
printf '127.0.0.1\trivet-vm\n' >>/etc/hosts
ip link set lo up

# stdout and stderr of the command: virtio serial ports named by rivet-vm.
port() {
	local n
	for n in /sys/class/virtio-ports/*/name; do
		[ "$(cat "$n" 2>/dev/null)" = "$1" ] && { n=${n%/name}; echo "/dev/${n##*/}"; return 0; }
	done
	return 1
}
for _ in $(seq 50); do
	out_dev=$(port rivet.stdout) && err_dev=$(port rivet.stderr) &&
		[ -c "$out_dev" ] && [ -c "$err_dev" ] && break
	out_dev='' err_dev=''
	sleep 0.1
done
[ -n "$out_dev" ] || { say "no virtio serial ports rivet.stdout/rivet.stderr"; finish 125; }

# Soft-RoCE: rxe$i on veth rv$i (10.77.$i.1/24), its peer rvp$i.
if [ "$RIVET_NUM_RXE" -gt 0 ]; then
	step 60 modprobe rdma_rxe
	step 60 modprobe rdma_ucm # /dev/infiniband/rdma_cm, for librdmacm
	for ((i = 0; i < RIVET_NUM_RXE; i++)); do
		step 10 ip link add "rv$i" type veth peer name "rvp$i"
		step 10 ip addr add "10.77.$i.1/24" dev "rv$i"
		step 10 ip link set "rv$i" up
		step 10 ip link set "rvp$i" up
		step 30 rdma link add "rxe$i" type rxe netdev "rv$i"
	done
	# The IPv4 address shows up as a RoCE v2 GID; its index goes to the
	# command as RIVET_GID_INDEX (gids/0 is the default link-local GID).
	gid_index() {
		local p=/sys/class/infiniband/$1/ports/1 want=$2 g
		for g in 0 1 2 3 4 5 6 7; do
			[ "$(cat "$p/gids/$g" 2>/dev/null)" = "$want" ] &&
				[ "$(cat "$p/gid_attrs/types/$g" 2>/dev/null)" = "RoCE v2" ] &&
				{ echo "$g"; return 0; }
		done
		return 1
	}
	for ((i = 0; i < RIVET_NUM_RXE; i++)); do
		want=$(printf '0000:0000:0000:0000:0000:ffff:0a4d:%02x01' "$i")
		ok=0
		for _ in $(seq 150); do
			if ibv_devinfo -d "rxe$i" 2>/dev/null | grep -q PORT_ACTIVE &&
				idx=$(gid_index "rxe$i" "$want"); then
				ok=1
				break
			fi
			sleep 0.2
		done
		[ "$ok" = 1 ] || { say "rxe$i did not become PORT_ACTIVE with its IPv4 GID in 30 s"; finish 125; }
		[ "$i" != 0 ] || RIVET_GID_INDEX=$idx
	done
fi

ulimit -l unlimited
ulimit -c 0
# The command's environment: only this, plus what rivet-vm -e passed.
envv=(HOME=/root USER=root LOGNAME=root SHELL=/bin/bash LANG=C.UTF-8 TERM=dumb
	"PATH=$PATH" HOSTNAME=rivet-vm RIVET_VM=1 "VM_OUT=$VM_OUT" "RIVET_NUM_RXE=$RIVET_NUM_RXE"
	# mpirun refuses to run as root without these two.
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
[ -z "${RIVET_GID_INDEX:-}" ] || envv+=("RIVET_GID_INDEX=$RIVET_GID_INDEX")
envv+=("${RIVET_ENV[@]}")

cd "$RIVET_CWD" || { say "cannot cd to $RIVET_CWD"; finish 125; }
: >"$job/started"
start=$SECONDS
timeout -k 5 "$RIVET_CMD_TIMEOUT" env -i "${envv[@]}" "${RIVET_ARGS[@]}" </dev/null >"$out_dev" 2>"$err_dev"
rc=$?
if { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && [ $((SECONDS - start)) -ge "$RIVET_CMD_TIMEOUT" ]; then
	say "command timed out after ${RIVET_CMD_TIMEOUT}s"
	rc=124
fi
cd /
finish "$rc"
