#!/usr/bin/env python3
"""Runs an e2e before-program and its migrated form and compares their loss curves.

O1 (the framework's own autocast policy on both sides): every step's loss within --rtol of the
original. O2/O3 (different numerics by design): the loss must fall comparably (at least half the
original's relative drop) and the parameters must still be fp32 at the end.

--ranks N (data-parallel programs): both programs run as N ranks (test/torch/run_ranks.py); each
rank's losses are compared as above, and after every step every rank must print the same
parameter hash ("step <i> params <hash>") as rank 0.
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch"))
from run_ranks import run_ranks  # noqa: E402


def parse(exe, stdout):
    losses = [float(m.group(1)) for m in re.finditer(r"^step \d+ loss (\S+)$", stdout, re.M)]
    fp32 = re.search(r"^params_fp32 (\d)$", stdout, re.M)
    if not losses:
        sys.exit(f"FAIL: {exe} printed no losses\n{stdout}")
    return losses, fp32 is not None and fp32.group(1) == "1"


def run(exe, env=None):
    proc = subprocess.run([exe], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {exe} exited with {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return parse(exe, proc.stdout), proc.stdout


def step_events(stdout):
    """The "step <i> skipped|applied" lines a program prints about its scaler's decisions."""
    return re.findall(r"^step (\d+) (skipped|applied)$", stdout, re.M)


def scales(stdout):
    """The "step <i> scale <s>" lines: the loss scale a program's scaler holds after step i."""
    return re.findall(r"^step (\d+) scale (\S+)$", stdout, re.M)


def run_as_ranks(exe, ranks, timeout):
    """Per rank (losses, fp32); exits unless every rank held rank 0's parameters after every step."""
    results = run_ranks([exe], ranks, timeout)
    for rank, (rc, out, err) in enumerate(results):
        if rc != 0:
            status = "was killed (a peer failed or the time ran out)" if rc is None else f"exited {rc}"
            sys.exit(f"FAIL: {exe} rank {rank} of {ranks} {status}\n{out}\n{err}")
    digests = [re.findall(r"^step (\d+) params (\S+)$", out, re.M) for _, out, _ in results]
    if not digests[0]:
        sys.exit(f"FAIL: {exe} printed no parameter hashes")
    for rank in range(1, ranks):
        if digests[rank] != digests[0]:
            step = next((a[0] for a, b in zip(digests[0], digests[rank]) if a != b), "?")
            sys.exit(f"FAIL: {exe}: rank {rank}'s parameters differ from rank 0's after step {step}")
    print(f"{os.path.basename(exe)}: all {ranks} ranks hold identical parameters after each of "
          f"{len(digests[0])} steps")
    return [parse(exe, out) for _, out, _ in results]


def drop(losses, k=5):
    first = sum(losses[:k]) / k
    last = sum(losses[-k:]) / k
    return (first - last) / first


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--level", required=True)
    ap.add_argument("--rtol", type=float, default=2e-2)
    ap.add_argument("--env", action="append", default=[],
                    help="NAME=VALUE set for both programs (e.g. a program's fp32 mode)")
    ap.add_argument("--ranks", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()

    env = dict(os.environ)
    for kv in args.env:
        name, _, value = kv.partition("=")
        env[name] = value
    if args.ranks:
        befores = run_as_ranks(args.before, args.ranks, args.timeout)
        afters = run_as_ranks(args.after, args.ranks, args.timeout)
        for rank, ((before, _), (after, after_fp32)) in enumerate(zip(befores, afters)):
            print(f"== rank {rank} of {args.ranks}")
            compare(args, before, after, after_fp32)
    else:
        (before, _), before_out = run(args.before, env)
        (after, after_fp32), after_out = run(args.after, env)
        compare(args, before, after, after_fp32)
        # Which steps the scaler skipped (an inf/NaN found) must be the same steps.
        ev_before, ev_after = step_events(before_out), step_events(after_out)
        if ev_before or ev_after:
            skipped = [i for i, e in ev_before if e == "skipped"]
            print(f"skipped steps: original {skipped}, migrated "
                  f"{[i for i, e in ev_after if e == 'skipped']}")
            if ev_before != ev_after:
                sys.exit("FAIL: the scaler skipped different steps")
        # The scale after each step ("step <i> scale <s>"), where a program logs it: the same.
        sc_before, sc_after = scales(before_out), scales(after_out)
        if sc_before or sc_after:
            print(f"scales: original {[s for _, s in sc_before]}, migrated {[s for _, s in sc_after]}")
            if len(sc_before) != len(sc_after) or any(
                    a[0] != b[0] or float(a[1]) != float(b[1]) for a, b in zip(sc_before, sc_after)):
                sys.exit("FAIL: the loss scales differ")
    print("PASS")


def compare(args, before, after, after_fp32):
    print(f"{'step':>4} {'original':>10} {'migrated':>10}")
    for i, (b, a) in enumerate(zip(before, after)):
        print(f"{i:>4} {b:>10.6f} {a:>10.6f}")
    if len(before) != len(after):
        sys.exit(f"FAIL: {len(before)} steps before, {len(after)} after")
    if not after_fp32:
        sys.exit("FAIL: the migrated program's parameters are not all fp32")
    if args.level in ("O0", "O1"):
        worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(before, after))
        print(f"{args.level}: worst relative loss difference {worst:.2e} (limit {args.rtol:.0e})")
        if worst > args.rtol:
            sys.exit("FAIL: losses differ")
    else:
        d_before, d_after = drop(before), drop(after)
        print(f"{args.level}: relative loss drop original {d_before:.3f}, migrated {d_after:.3f}")
        if not (d_before > 0 and d_after >= 0.5 * d_before):
            sys.exit("FAIL: the migrated loss does not fall comparably")


if __name__ == "__main__":
    main()
