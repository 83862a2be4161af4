#!/usr/bin/env python3
"""The figures test_timeline and test_application assert on these recorded traces, computed here
straight from the trace lines (docs/trace-format.md), apart from optimas' reader: per folder the
launches, the copies by direction (count, bytes), the union of kernel time, of copy time and of
both (GPU busy), the wall time (P line to E line), and the copies that follow a kernel's launch
with no other GPU work between (by kind and size). Run in this folder: python3 figures.py"""
import collections
import glob
import os


def union(spans):
    total, open_ = 0, None
    for s, e in sorted(spans):
        if open_ and s <= open_[1]:
            open_[1] = max(open_[1], e)
            continue
        if open_:
            total += open_[1] - open_[0]
        open_ = [s, e]
    return total + (open_[1] - open_[0] if open_ else 0)


for folder in sorted(d for d in os.listdir('.') if os.path.isdir(d)):
    names, kernels, copies, start, end = {}, [], [], None, None
    for line in open(glob.glob(f'{folder}/trace-*.tsv')[0]):
        f = line.rstrip('\n').split('\t')
        if f[0] == 'P':
            start = int(f[2])
        elif f[0] == 'E':
            end = int(f[3])
        elif f[0] == 'K':
            names[f[1]] = f[3].split('(')[0]
        elif f[0] == 'L':
            kernels.append((int(f[14]), int(f[15]), names[f[1]]))
        elif f[0] == 'M':
            copies.append((int(f[8]), int(f[9]), f[1], int(f[4]), f[10] == '0'))
    by_dir = collections.defaultdict(lambda: [0, 0])
    for c in copies:
        by_dir[c[2]][0] += 1
        by_dir[c[2]][1] += c[3]
    work = sorted([(s, e, 'L', k) for s, e, k in kernels] + [(s, e, 'M', (d, b, sync)) for s, e, d, b, sync in copies])
    follows = collections.Counter()
    for prev, cur in zip(work, work[1:]):
        if prev[2] == 'L' and cur[2] == 'M' and cur[0] >= prev[1]:
            follows[(cur[3][0], cur[3][1], 'sync' if cur[3][2] else 'async', prev[3])] += 1
    k = [(s, e) for s, e, _ in kernels]
    m = [(s, e) for s, e, *_ in copies]
    print(folder)
    print(f'  launches {len(kernels)}, copies {len(copies)}, by direction {dict(by_dir)}')
    print(f'  kernel_ns {union(k)}, copy_ns {union(m)}, busy_ns {union(k + m)}, wall_ns {end - start}')
    print(f'  copies right after a launch: {dict(follows.most_common(3))}')
