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

node=0 nodes=0
finish() {
	local rc=$1 k
	# another node of -N never reports a status: rivet-vm boots it again
	# or tells node0 (JOB/failed.K)
	[ "$node" = 0 ] || poweroff_now
	if mountpoint -q "${VM_OUT:-/nonexistent}"; then
		dmesg >"$VM_OUT/dmesg.log" 2>&1
		for ((k = 1; k < nodes; k++)); do
			[ -f "$job/ready.$k" ] &&
				timeout 20 ssh "node$k" dmesg >"$VM_OUT/dmesg.node$k.log" 2>&1 </dev/null
		done
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
# -N: which node this is, of how many (rivet-vm's kernel command line)
for w in $(cat /proc/cmdline); do
	case $w in
	rivet.node=*) node=${w#*=} ;;
	rivet.nodes=*) nodes=${w#*=} ;;
	esac
done

# shellcheck source=/dev/null
. "$job/job.conf" || { say "cannot read $job/job.conf"; finish 125; }

export VM_OUT=$RIVET_OUT
mount_out() {
	mkdir -p "$VM_OUT"
	step 20 mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 out "$VM_OUT"
}
# --debian 13: host folder I (9p tag shareI, read-only, file data cached like
# the root's) at its own path, under an overlay on a tmpfs: writable, and
# nothing reaches the host.
mount_share() {
	local tag=$1 p=$2 s=/run/rivet-share/$1
	mkdir -p /run/rivet-share
	mountpoint -q /run/rivet-share || step 10 mount -t tmpfs -o mode=0755 tmpfs /run/rivet-share
	mkdir -p "$s/lower" "$s/upper" "$s/work" "$p"
	step 20 mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,ro,cache=loose "$tag" "$s/lower"
	step 20 mount -t overlay overlay -o "lowerdir=$s/lower,upperdir=$s/upper,workdir=$s/work" "$p"
}
# The shares come parents first; VM_OUT goes in between by the same
# order (after a share of its own path), so that no mount hides another.
out_done=0
for i in "${!RIVET_SHARES[@]}"; do
	if [ "$out_done" = 0 ] && [ "${#VM_OUT}" -lt "${#RIVET_SHARES[i]}" ]; then
		mount_out
		out_done=1
	fi
	mount_share "share$i" "${RIVET_SHARES[i]}"
done
[ "$out_done" = 1 ] || mount_out

if [ "$nodes" = 0 ]; then
	host=rivet-vm
	printf '127.0.0.1\trivet-vm\n' >>/etc/hosts
else
	host=node$node
	for ((k = 0; k < nodes; k++)); do
		printf '10.77.0.%d\tnode%d\n' $((k + 1)) "$k"
	done >>/etc/hosts
fi
echo "$host" >/proc/sys/kernel/hostname
echo "$host" >/etc/hostname
ip link set lo up
# The tests' fixed ports (47000-49999: fi_pingpong's 47592, the suites'
# bases) lie in Linux's default ephemeral range (32768-60999). A
# client's outgoing TCP connection left in TIME_WAIT, or an rdma_cm id
# bound to port 0 (rdma_cm picks from the same range and ignores
# ip_local_reserved_ports), could hold one, and the next server's bind()
# then fails with EADDRINUSE (CI saw it once: fi_pingpong_msg's control
# socket). Ephemeral ports come from above them instead.
echo 50000 60999 >/proc/sys/net/ipv4/ip_local_port_range

# stdout and stderr of the command: virtio serial ports named by rivet-vm.
port() {
	local n
	for n in /sys/class/virtio-ports/*/name; do
		[ "$(cat "$n" 2>/dev/null)" = "$1" ] && { n=${n%/name}; echo "/dev/${n##*/}"; return 0; }
	done
	return 1
}
for _ in $(seq 50); do
	[ "$node" = 0 ] || break
	out_dev=$(port rivet.stdout) && err_dev=$(port rivet.stderr) &&
		[ -c "$out_dev" ] && [ -c "$err_dev" ] && break
	out_dev='' err_dev=''
	sleep 0.1
done
[ -n "${out_dev:-}" ] || [ "$node" != 0 ] || { say "no virtio serial ports rivet.stdout/rivet.stderr"; finish 125; }

# Soft-RoCE: rxe$i on veth rv$i (10.77.$i.1/24), its peer rvp$i; with
# -N rxe0 on the node's NIC (10.77.0.K+1/24).
[ "$nodes" = 0 ] || RIVET_NUM_RXE=1
if [ "$RIVET_NUM_RXE" -gt 0 ]; then
	step 60 modprobe rdma_rxe
	step 60 modprobe rdma_ucm # /dev/infiniband/rdma_cm, for librdmacm
	if [ "$nodes" != 0 ]; then
		step 60 modprobe virtio_net
		step 60 modprobe sch_netem
		mac=$(printf '52:54:00:4d:00:%02x' $((node + 1)))
		nic=''
		for _ in $(seq 100); do
			for n in /sys/class/net/*; do
				[ "$(cat "$n/address" 2>/dev/null)" = "$mac" ] && nic=${n##*/}
			done
			[ -n "$nic" ] && break
			sleep 0.1
		done
		[ -n "$nic" ] || { say "no virtio NIC with the address $mac"; finish 125; }
		[ "$nic" = eth0 ] || step 10 ip link set "$nic" name eth0
		step 10 ip addr add "10.77.0.$((node + 1))/24" dev eth0
		step 10 ip link set eth0 up
		# rivet-fault's ingress filters hang on this qdisc. Made now,
		# before any RDMA traffic: grafting a qdisc onto eth0 under
		# traffic refuses packets in flight (NET_XMIT_DROP), and a QP
		# of rxe (Linux 6.12) whose packet was refused never sends
		# again (QP1 included: rdma_cm dead on the node).
		step 10 tc qdisc add dev eth0 clsact
		step 30 rdma link add rxe0 type rxe netdev eth0
	fi
	for ((i = 0; i < RIVET_NUM_RXE && nodes == 0; i++)); do
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
		if [ "$nodes" = 0 ]; then
			want=$(printf '0000:0000:0000:0000:0000:ffff:0a4d:%02x01' "$i")
		else
			want=$(printf '0000:0000:0000:0000:0000:ffff:0a4d:00%02x' $((node + 1)))
		fi
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
	"PATH=$PATH" "HOSTNAME=$host" RIVET_VM=1 "VM_OUT=$VM_OUT" "RIVET_NUM_RXE=$RIVET_NUM_RXE"
	# mpirun refuses to run as root without these two.
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
[ -z "${RIVET_GID_INDEX:-}" ] || envv+=("RIVET_GID_INDEX=$RIVET_GID_INDEX")
[ "$nodes" = 0 ] || envv+=("RIVET_NODES=$nodes" "RIVET_NODE=$node")
envv+=("${RIVET_ENV[@]}")

# -N: ssh between the nodes (dropbear, keys made for this run), the guest
# tools, Open MPI's launcher over that ssh; the other nodes wait there,
# node0 waits for them and runs the command.
if [ "$nodes" != 0 ]; then
	# no DNS on the segment: nothing may wait for the host's name server
	: >/etc/resolv.conf
	mkdir -p /root/.ssh /etc/rivet-vm
	chmod 700 /root/.ssh
	cp "$job/ssh/id_ed25519" /root/.ssh/id_ed25519
	cp "$job/ssh/id_ed25519.pub" /root/.ssh/authorized_keys
	chmod 600 /root/.ssh/id_ed25519 /root/.ssh/authorized_keys
	printf '%s\n' 'Host node* 10.77.0.*' '	User root' '	IdentityFile /root/.ssh/id_ed25519' \
		'	StrictHostKeyChecking no' '	UserKnownHostsFile /dev/null' '	LogLevel ERROR' \
		'	BatchMode yes' '	ConnectTimeout 10' '	ServerAliveInterval 5' \
		'	ServerAliveCountMax 3' '	GSSAPIAuthentication no' '	ControlMaster auto' \
		'	ControlPath /run/ssh-%h' \
		'	ControlPersist 1200' >/root/.ssh/config
	chmod 600 /root/.ssh/config
	# what rivet-node gives a command on any node: the command's environment
	for v in "${envv[@]}"; do printf 'export %q\n' "$v"; done >/etc/rivet-vm/env
	install -m 755 "$job/rivet-node" "$job/rivet-fault" /usr/local/bin/
	# Open MPI: mpirun -H node0:2,node1:2 starts its daemons over ssh and
	# talks TCP on the segment only
	printf '%s\n' 'plm_rsh_agent = ssh' 'oob_tcp_if_include = 10.77.0.0/24' \
		'btl_tcp_if_include = 10.77.0.0/24' >>/etc/openmpi/openmpi-mca-params.conf
	# Open MPI 5 (Debian 13) launches with PRRTE, which has its own names
	[ ! -f /etc/openmpi/prte-mca-params.conf ] ||
		printf '%s\n' 'prte_ssh_agent = ssh' 'prte_if_include = 10.77.0.0/24' \
			>>/etc/openmpi/prte-mca-params.conf
	dropbear -F -E -s -p 22 -r "$job/ssh/dropbear_ed25519_host_key" \
		>/run/dropbear.log 2>&1 </dev/null &
	for _ in $(seq 100); do
		[ -n "$(ss -ltnH 'sport = :22' 2>/dev/null)" ] && break
		sleep 0.1
	done
	if [ "$node" != 0 ]; then
		: >"$job/ready.$node"
		say "node$node ready"
		while :; do sleep 3600; done
	fi
	for ((k = 1; k < nodes; k++)); do
		until [ -f "$job/ready.$k" ] && timeout 60 ssh "node$k" true </dev/null; do
			[ ! -f "$job/failed.$k" ] || { say "node$k failed to start (see console.node$k.log)"; finish 125; }
			[ "$SECONDS" -lt "$RIVET_PEER_WAIT" ] ||
				{ say "node$k was not up (ssh) ${RIVET_PEER_WAIT}s after boot"; finish 125; }
			sleep 1
		done
	done
	: >"$job/ready.0"
fi

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
