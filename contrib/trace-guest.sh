#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs inside the VM (contrib/trace.sh): an 8 B ping-pong of raw verbs
# (ib_send_lat) and of rivet RDM (fi_rivet_rdm_bw -l -m), server on CPU 0
# and client on CPU 1, each under ftrace (scheduler switches and wakeups,
# workqueue items, system calls); prints each process's round trips
# (between its successive posting writes) and the CPU time per message of
# rxe's kworkers and of the processes, and leaves the traces in
# $VM_OUT/trace.* for reading by hand.  Not perf: enabling perf events
# patches kernel text while the other emulated CPU runs it, and
# multi-threaded TCG crashes the guest.
#
# usage: trace-guest.sh [ITERATIONS]
set -uo pipefail
n=${1:-1000}
addr=10.77.0.1
top=$(cd "$(dirname "$0")/.." && pwd)
rbw=$top/fabtests/fi_rivet_rdm_bw
out=${VM_OUT:-/tmp}
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
echo 30000 >$T/buffer_size_kb
echo 0 >$T/tracing_on
for e in sched/sched_switch sched/sched_wakeup \
	workqueue/workqueue_execute_start workqueue/workqueue_queue_work \
	raw_syscalls/sys_enter raw_syscalls/sys_exit; do
	echo 1 >$T/events/$e/enable
done
sleep 1

trace() {	# trace NAME CMD...
	local name=$1
	shift
	echo >$T/trace
	echo 1 >$T/tracing_on
	"$@"
	echo 0 >$T/tracing_on
	cp $T/trace "$out/trace.$name"
}
trace raw bash -c "taskset -c 0 ib_send_lat -d rxe0 -x 1 -s 8 -n $n -F \
	>$out/raw.server 2>&1 & sleep 1; taskset -c 1 ib_send_lat -d rxe0 \
	-x 1 -s 8 -n $n -F $addr >$out/raw.client 2>&1; wait"
trace rivet bash -c "taskset -c 0 $rbw -p rivet -s $addr -B 47702 -l -m \
	-S 8 -I $n >$out/rivet.server 2>&1 & sleep 1; taskset -c 1 $rbw \
	-p rivet -s $addr -P 47702 -l -m -S 8 -I $n $addr \
	>$out/rivet.client 2>&1; wait"
echo 0 >$T/events/enable

# Round trips: intervals between one process's writes to its verbs fd
# (the post_send doorbell); the rdma_cm channel's writes are told apart by
# their fd being the one with -EAGAIN answers.
python3 - "$out"/trace.raw "$out"/trace.rivet <<'PY'
import re, sys

# CPU time per message (one-way) of rxe's kworkers and of the two
# processes, from the scheduler switches, between the 10th and 90th
# percentile of the posting writes: how much kernel work a message costs.
def kernel_time(f, pat):
    sw = re.compile(r'\s*\S+\s+\[(\d+)\]\s+\S+\s+([\d.]+): sched_switch: '
                    r'.*next_comm=(\S+)')
    posts = []
    for line in open(f):
        m = pat.match(line)
        if m and m.group(4) == 'enter' and ', 20,' in line:
            posts.append(float(m.group(3)))
    if len(posts) < 20:
        return
    posts.sort()
    a, b = posts[len(posts) // 10], posts[len(posts) * 9 // 10]
    n = sum(1 for t in posts if a <= t <= b)
    cur, since, busy = {}, {}, {}
    for line in open(f):
        m = sw.match(line)
        if not m:
            continue
        cpu, t, nxt = m.group(1), float(m.group(2)), m.group(3)
        if cpu in cur:
            lo, hi = max(since[cpu], a), min(t, b)
            if hi > lo:
                busy[cur[cpu]] = busy.get(cur[cpu], 0) + hi - lo
        cur[cpu] = ('kworker' if nxt.startswith('kworker') else
                    'app' if nxt in ('ib_send_lat', 'fi_rivet_rdm_bw') else
                    'idle' if nxt.startswith('swapper') else 'other')
        since[cpu] = t
    print("%s: per message, kworkers %.1f usec, the processes %.1f, idle "
          "%.1f, other %.1f" % (f.split('/')[-1], *(busy.get(k, 0) / n * 1e6
          for k in ('kworker', 'app', 'idle', 'other'))))

pat = re.compile(r'\s*(fi_rivet_rdm_bw|ib_send_lat)-(\d+)\s+\[\d+\]\s+\S+\s+'
                 r'([\d.]+): sys_(enter|exit): NR 1 (?:\((\w+),|= (-?\d+))')
for f in sys.argv[1:]:
    last, rtt, fd_of, bad = {}, {}, {}, set()
    for line in open(f):
        m = pat.match(line)
        if not m:
            continue
        pid, t, kind = m.group(2), float(m.group(3)), m.group(4)
        if kind == 'enter':
            fd_of[pid] = m.group(5)
            continue
        if int(m.group(6)) < 0:
            bad.add((pid, fd_of.get(pid)))
            continue
        if (pid, fd_of.get(pid)) in bad:
            continue
        if pid in last:
            rtt.setdefault(pid, []).append((t - last[pid]) * 1e6)
        last[pid] = t
    for pid, v in rtt.items():
        v = sorted(v[len(v) // 10:])
        if v:
            print("%s pid %s: %d round trips, median %.0f p10 %.0f p90 %.0f "
                  "usec" % (f.split('/')[-1], pid, len(v), v[len(v) // 2],
                            v[len(v) // 10], v[len(v) * 9 // 10]))
    kernel_time(f, pat)

PY
