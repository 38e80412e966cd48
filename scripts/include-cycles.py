#!/usr/bin/env python3
"""Finds include cycles between units of the C++ sources (a header and its .cpp are one unit, named
by their file stem: lib/include/ampmigrate/StepFinder.h and lib/analysis/StepFinder.cpp are the
unit StepFinder; a private `<Unit>Internal.h` belongs to <Unit>, as DriverInternal.h to Driver). Reads only the `#include "..."` lines.

Usage: scripts/include-cycles.py [dir ...]   (default: lib tools; run from the checkout's root)
Prints each cycle (a strongly connected set of units, with the includes that close it) and exits
1 when there is one.
"""
import os
import re
import sys
from collections import defaultdict

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SOURCE = re.compile(r'\.(h|hpp|cpp|cc|cu|cuh)$')


def units(dirs):
    files = defaultdict(list)  # stem -> paths
    for d in dirs:
        for root, _, names in os.walk(d):
            for n in names:
                if SOURCE.search(n):
                    stem = os.path.splitext(n)[0]
                    if stem.endswith('Internal') and len(stem) > len('Internal'):
                        stem = stem[:-len('Internal')]
                    files[stem].append(os.path.join(root, n))
    return files


def graph(files):
    headers = {}
    for stem, paths in files.items():
        for p in paths:
            if not p.endswith('.cpp') and not p.endswith('.cc') and not p.endswith('.cu'):
                headers[os.path.basename(p)] = stem
    edges = defaultdict(dict)  # unit -> {unit: "file includes header"}
    for stem, paths in files.items():
        for p in paths:
            with open(p, encoding='utf-8', errors='replace') as f:
                for inc in INCLUDE.findall(f.read()):
                    target = headers.get(os.path.basename(inc))
                    if target and target != stem:
                        edges[stem].setdefault(target, f'{p} includes "{inc}"')
    return edges


def cycles(nodes, edges):
    """Tarjan's strongly connected components of more than one unit."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    dirs = sys.argv[1:] or ['lib', 'tools']
    files = units(dirs)
    edges = graph(files)
    found = cycles(files.keys(), edges)
    for comp in found:
        print('include cycle between units: ' + ', '.join(comp))
        for a in comp:
            for b, why in sorted(edges[a].items()):
                if b in comp:
                    print(f'  {a} -> {b}: {why}')
    print(f'{len(files)} units, {len(found)} include cycle(s)')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
