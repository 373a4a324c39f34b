#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Self instructions per source line of one shared object, from two
callgrind runs of N and 2N iterations recorded with --dump-instr=yes
(valgrind 3.19 reads no line numbers of a provider that libfabric
dlopens, so the addresses are mapped here with addr2line -i; the line
is the innermost inline frame's, the function the outermost one's).

usage: cg-lines.py OBJECT RUN_N RUN_2N N [LINES]
  e.g. contrib/cg-lines.py _inst/lib/libfabric/librivet-fi.so \\
         OUT/bench/callgrind.rivet.rdm.2000 OUT/bench/callgrind.rivet.rdm.4000 2000
Prints each function's instructions per iteration, then its lines (at
least 1 per iteration; LINES of them at most, default 12).
(RIVET_ICOUNT_INSTR=1 contrib/bench-guest.sh --icount records such runs.)
"""
import collections
import os
import re
import subprocess
import sys


def self_cost(path, obj):
    """Self Ir per instruction address (object-relative) of obj."""
    names, cost = {}, collections.Counter()
    prev, skip, cur_ob = [0, 0], False, ''

    def name(kind, tok):
        m = re.match(r'\((\d+)\)(?: (.*))?', tok)
        if not m:
            return tok
        if m.group(2) is not None:
            names[(kind, m.group(1))] = m.group(2)
        return names.get((kind, m.group(1)), '?')

    def pos(tok, i):
        if tok == '*':
            return prev[i]
        if tok[0] in '+-':
            v = int(tok[1:], 0)
            return prev[i] + (v if tok[0] == '+' else -v)
        return int(tok, 0)

    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if not line:
                continue
            key = line.split('=', 1)[0]
            if key in ('ob', 'cob'):
                n = name('ob', line.split('=', 1)[1])
                if key == 'ob':
                    cur_ob = n
            elif key in ('fl', 'fi', 'fe', 'cfi', 'cfl'):
                name('fl', line.split('=', 1)[1])
            elif key in ('fn', 'cfn'):
                name('fn', line.split('=', 1)[1])
            elif key == 'calls':
                skip = True		# the next line is the call's cost
            elif line[0] in '0123456789+-*':
                t = line.split()
                prev[0], prev[1] = pos(t[0], 0), pos(t[1], 1)
                if skip:
                    skip = False
                elif obj in cur_ob and len(t) > 2:
                    cost[prev[0]] += int(t[2])
    return cost


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    obj, run1, run2, n = sys.argv[1:5]
    top = int(sys.argv[5]) if len(sys.argv) > 5 else 12
    base = os.path.basename(obj)
    c1, c2 = self_cost(run1, base), self_cost(run2, base)
    per = {a: (c2[a] - c1.get(a, 0)) / int(n) for a in c2}
    per = {a: v for a, v in per.items() if v > 0.1}
    addrs = sorted(per)
    out = subprocess.run(['addr2line', '-e', obj, '-f', '-i', '-a'] +
                         ['0x%x' % a for a in addrs], capture_output=True,
                         text=True, check=True).stdout.split('\n')
    frames, cur = {}, None
    i = 0
    while i < len(out):
        if out[i].startswith('0x'):
            cur = int(out[i], 16)
            frames[cur] = []
        elif out[i] and cur is not None:
            loc = out[i + 1].split(' ')[0]
            frames[cur].append((out[i], loc))
            i += 1
        i += 1
    by = collections.defaultdict(collections.Counter)
    for a in addrs:
        fr = frames.get(a) or [('?', '?')]
        by[fr[-1][0]]['%s %s' % (fr[0][1], fr[0][0])] += per[a]
    total = sum(sum(v.values()) for v in by.values())
    print('%s: %.1f instructions per iteration' % (base, total))
    for fn, v in sorted(by.items(), key=lambda x: -sum(x[1].values())):
        print('%7.1f %s' % (sum(v.values()), fn))
        for k, c in v.most_common(top):
            if c >= 1:
                print('        %5.1f %s' % (c, k))


if __name__ == '__main__':
    main()
