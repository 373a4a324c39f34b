#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The import circles of prov/rivet (issue 40: none over 8 files): files
# (.c and .h) are nodes; an arrow A -> B when A includes header B or calls
# a function defined in .c file B (a header counts only what its inline
# helpers call).  Prints each strongly connected component of more than
# one file, largest first.  Usage: contrib/circles.py [TOP]
import os, re, sys
top = sys.argv[1] if len(sys.argv) > 1 else '.'
files = []
for d in ('prov/rivet/src', 'prov/rivet/include'):
    for root, _, names in os.walk(os.path.join(top, d)):
        files += [os.path.join(root, n) for n in names if n.endswith(('.c', '.h'))]
def strip(s):
    s = re.sub(r'/\*.*?\*/', ' ', s, flags=re.S)
    s = re.sub(r'//[^\n]*', ' ', s)
    return re.sub(r'"(\\.|[^"\\])*"', '""', s)
text = {f: strip(open(f).read()) for f in files}
owner = {}
defre = re.compile(r'^(?!static)[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;{]*\)\s*\{', re.M)
for f in files:
    if f.endswith('.c'):
        for m in defre.finditer(text[f]):
            owner.setdefault(m.group(1), f)
byname = {os.path.basename(f): f for f in files if f.endswith('.h')}
edges = {f: set() for f in files}
for f in files:
    for m in re.finditer(r'#include "([^"]+)"', open(f).read()):
        h = byname.get(os.path.basename(m.group(1)))
        if h and h != f:
            edges[f].add(h)
    t = text[f]
    if f.endswith('.h'):	# only what inline helpers' bodies call
        body, depth, start = [], 0, 0
        for i, ch in enumerate(t):
            if ch == '{':
                if depth == 0: start = i
                depth += 1
            elif ch == '}':
                depth -= 1
                if depth == 0 and re.search(r'\)\s*$', t[max(0, start - 200):start]):
                    body.append(t[start:i])
        t = ' '.join(body)
    for m in re.finditer(r'\b(\w+)\s*\(', t):
        o = owner.get(m.group(1))
        if o and o != f:
            edges[f].add(o)
idx, low, st, on, comps, n = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v] = low[v] = n[0]; n[0] += 1; st.append(v); on.add(v)
    for w in edges[v]:
        if w not in idx:
            sc(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        c = []
        while True:
            w = st.pop(); on.discard(w); c.append(w)
            if w == v: break
        comps.append(c)
for v in files:
    if v not in idx: sc(v)
big = sorted((c for c in comps if len(c) > 1), key=len, reverse=True)
for c in big:
    print(len(c), ' '.join(sorted(os.path.relpath(x, os.path.join(top, 'prov/rivet')) for x in c)))
print('largest circle:', len(big[0]) if big else 0, 'files')
