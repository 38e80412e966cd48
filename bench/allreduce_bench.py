#!/usr/bin/env python3
"""Runs build/bench/allreduce_bench as 2 and 4 CPU ranks (test/torch/run_ranks.py) and prints a
Markdown table: per model, the hand-written per-parameter loop and amp::all_reduce_grads side by
side (median of the repetitions, real time per step), bytes and collectives per step, and the
ratio loop / amp (above 1: amp is faster).

    bench/allreduce_bench.py build/bench/allreduce_bench [--ranks 2 4] > bench/results/allreduce_<date>.md
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "torch"))
from run_ranks import run_ranks  # noqa: E402

MODELS = {"0": "e2e MLP (6 grads)", "1": "8 MLP blocks (48 grads)"}


def medians(exe, ranks, timeout):
    results = run_ranks([exe, "--benchmark_format=json"], ranks, timeout)
    for rank, (rc, out, err) in enumerate(results):
        if rc != 0:
            sys.exit(f"allreduce_bench: rank {rank} of {ranks} failed ({rc})\n{out}\n{err}")
    runs = json.loads(results[0][1])["benchmarks"]
    return {r["run_name"]: r for r in runs if r.get("aggregate_name") == "median"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    print("| ranks | grads | bytes/step | loop: collectives | loop: us/step | "
          "amp: collectives | amp: us/step | loop / amp |")
    print("|---|---|---|---|---|---|---|---|")
    for ranks in args.ranks:
        m = medians(args.exe, ranks, args.timeout)
        for arg, name in MODELS.items():
            loop = m[f"BM_HandWrittenLoop/{arg}/iterations:40/repeats:3/real_time"]
            amp = m[f"BM_AllReduceGrads/{arg}/iterations:40/repeats:3/real_time"]
            print(f"| {ranks} | {name} | {loop['bytes_per_step']:.0f} | "
                  f"{loop['collectives_per_step']:.0f} | {loop['real_time']:.0f} | "
                  f"{amp['collectives_per_step']:.0f} | {amp['real_time']:.0f} | "
                  f"{loop['real_time'] / amp['real_time']:.2f} |")


if __name__ == "__main__":
    main()
