#!/usr/bin/env python3
"""The result cache (--cache-dir) on a compile database of AMP translation units: cold vs warm.

usage: bench/cache_bench.py <amp-migrate> [--tus 20] [-j 2] [--baseline]

Makes N TUs over the real <torch/torch.h> (Debian's libtorch headers), each a training step
(test/e2e/programs/scope_1x.cpp with its own constant), and a compile_commands.json. Runs, in one
go: the cold run (empty cache), the warm run (nothing changed), and a run after one TU changed;
with --baseline also a run without the cache. Each run's report must equal the cold run's (the
changed TU aside). Prints a Markdown table of wall seconds.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

import torch_workdir


def run(cmd):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.monotonic() - t0
    if p.returncode not in (0, 1):
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-2000:]))
    return elapsed, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("--tus", type=int, default=20)
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--baseline", action="store_true")
    args = ap.parse_args()
    src = torch_workdir.step_source()
    work, files = torch_workdir.make("cache-bench-", {"tu%02d.cpp" % i: src.replace("1024.0", "%d.0" % (1024 + i))
                                                      for i in range(args.tus)})
    try:
        cache = os.path.join(work, "cache")
        base = [args.tool, "-p", work, "-j%d" % args.j, "--format=json", "--stats"]
        load = os.getloadavg()[0]
        rows = []
        if args.baseline:
            t, out_plain, _ = run(base + files)
            rows.append(("no cache", t, "-"))
        t_cold, out_cold, err = run(base + ["--cache-dir=" + cache] + files)
        rows.append(("cold (empty cache)", t_cold, err.strip().splitlines()[1]))
        t_warm, out_warm, err = run(base + ["--cache-dir=" + cache] + files)
        rows.append(("warm (nothing changed)", t_warm, err.strip().splitlines()[1]))
        if out_warm != out_cold or (args.baseline and out_plain != out_cold):
            sys.exit("the reports differ")
        with open(files[0], "a") as f:
            f.write("// changed\n")
        t_one, _, err = run(base + ["--cache-dir=" + cache] + files)
        rows.append(("one TU changed", t_one, err.strip().splitlines()[1]))
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(cache) for f in fs)
        print("## Result cache (%s UTC, %d cores, load average %.1f at start; %d TUs, -j%d; cache %.1f MB)" % (
            time.strftime("%Y-%m-%d %H:%M", time.gmtime()), os.cpu_count(), load, args.tus, args.j, size / 1e6))
        print()
        print("| run | seconds | of cold | cache |")
        print("|---|---:|---:|---|")
        for name, t, stats in rows:
            print("| %s | %.2f | %.1f%% | %s |" % (name, t, 100.0 * t / t_cold, stats))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
