#!/usr/bin/env python3
"""Runs amp-migrate as several processes at once over one --cache-dir (rounds of 6 runs, two
variants of one TU whose reports differ: the default level and --level=O3, some with a cache size bound that forces evictions while
others write), then checks that every run's JSON report equals the uncached report of its variant.

usage: concurrent.py <amp-migrate> <cache dir> <tu.cpp> <rounds> -- <compiler args>
"""
import subprocess
import sys


def main():
    tool, cache, tu, rounds = sys.argv[1:5]
    cc = sys.argv[sys.argv.index("--") + 1:]
    variants = [[], ["--level=O3"]]

    def cmd(variant, extra):
        return [tool, "--format=json", *variants[variant], *extra, tu, "--", *cc]

    expected = [subprocess.run(cmd(v, []), capture_output=True, text=True).stdout for v in (0, 1)]
    if not all(expected) or expected[0] == expected[1]:
        sys.exit("FAIL: the two variants' uncached reports are missing or equal")
    for r in range(int(rounds)):
        procs = []
        for i in range(6):
            extra = ["--cache-dir=" + cache]
            if i % 3 == 2:
                extra.append("--cache-max-size=1")  # evicts while the others read and write
            procs.append((i % 2, subprocess.Popen(cmd(i % 2, extra), stdout=subprocess.PIPE,
                                                  stderr=subprocess.PIPE, text=True)))
        for variant, p in procs:
            out, err = p.communicate()
            if p.returncode not in (0, 1):
                sys.exit(f"FAIL: round {r}: exit {p.returncode}\n{err}")
            if out != expected[variant]:
                sys.exit(f"FAIL: round {r}: a report differs from the uncached one (variant {variant})")
    print(f"PASS: {int(rounds) * 6} concurrent runs over one cache, every report as uncached")


if __name__ == "__main__":
    main()
