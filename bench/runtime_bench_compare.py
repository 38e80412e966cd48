#!/usr/bin/env python3
"""Before/after comparison of a runtime change on the CPU: one runtime_bench binary, run against
the runtime library of an earlier build (--before-lib: a folder holding its libamp_runtime.so.*,
put first on LD_LIBRARY_PATH, which the binary's RUNPATH yields to) and against its own, passes
alternated so that the machine's load hits both alike. Prints each benchmark's median time before
and after and the ratio after/before (< 1: faster) as a Markdown table.

  bench/runtime_bench_compare.py --bench build/bench/runtime_bench --before-lib /tmp/before/lib \\
      [--passes 2] [--repetitions 2] [--filter 'BM_(unscale|clip)']
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

DTYPES = {"0": "f32", "1": "f16", "2": "bf16"}


def run(bench, lib, args):
    env = dict(os.environ)
    if lib:
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([bench, f"--benchmark_out={out.name}", "--benchmark_out_format=json"] + args,
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        data = json.load(open(out.name))
    times = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        to_ms = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
        times.setdefault(b["run_name"], []).append(b["real_time"] * to_ms)
    return times, data["context"]


def label(name):
    parts = name.split("/")
    shape = "large" if parts[1] == "0" else "small"
    return f"{parts[0][3:]} | {shape} | {DTYPES.get(parts[2], parts[2])}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/bench/runtime_bench")
    ap.add_argument("--before-lib", required=True)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--repetitions", type=int, default=2)
    ap.add_argument("--filter", default="")
    opt = ap.parse_args()
    args = [f"--benchmark_repetitions={opt.repetitions}"]
    if opt.filter:
        args.append(f"--benchmark_filter={opt.filter}")
    before, after = {}, {}
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.1f}, "
          f"passes: {opt.passes} x {opt.repetitions} repetitions each, alternated")
    for _ in range(opt.passes):
        for lib, into in ((opt.before_lib, before), ("", after)):
            times, _ = run(opt.bench, lib, args)
            for k, v in times.items():
                into.setdefault(k, []).extend(v)
    print()
    print("| op | list | grads | before (ms) | after (ms) | after / before |")
    print("|---|---|---|---:|---:|---:|")
    for name in before:
        if name.startswith("BM_memcpy") or name not in after:
            continue
        b, a = statistics.median(before[name]), statistics.median(after[name])
        print(f"| {label(name)} | {b:.2f} | {a:.2f} | {a / b:.2f}x |")
    print()
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
