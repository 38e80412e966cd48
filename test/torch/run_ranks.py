#!/usr/bin/env python3
"""Runs one command as N ranks on this machine: each process gets AMP_RANK, AMP_WORLD_SIZE and
AMP_STORE_DIR (a fresh temp dir for c10d::FileStore files). If a rank fails, the others are killed;
all are killed after --timeout. Exit status 0 only if every rank exited 0.

As a module: run_ranks(cmd, ranks, timeout) -> [(returncode, stdout, stderr)] per rank.
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time


def _kill(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def run_ranks(cmd, ranks, timeout):
    """Returns each rank's (returncode, stdout, stderr); returncode None: killed (a peer failed or
    the time ran out)."""
    with tempfile.TemporaryDirectory(prefix="amp-ranks-") as store_dir:
        outs, procs = [], []
        try:
            for rank in range(ranks):
                env = dict(os.environ, AMP_RANK=str(rank), AMP_WORLD_SIZE=str(ranks),
                           AMP_STORE_DIR=store_dir)
                out = tempfile.TemporaryFile(mode="w+")
                err = tempfile.TemporaryFile(mode="w+")
                outs.append((out, err))
                procs.append(subprocess.Popen(cmd, env=env, stdout=out, stderr=err,
                                              start_new_session=True))
            deadline = time.monotonic() + timeout
            killed = set()
            while any(p.poll() is None for p in procs):
                failed = any(p.returncode not in (None, 0) for p in procs)
                if failed or time.monotonic() > deadline:
                    killed = {i for i, p in enumerate(procs) if p.poll() is None}
                    _kill(procs)
                    for p in procs:
                        p.wait()
                    break
                time.sleep(0.05)
        finally:
            _kill(procs)
        results = []
        for i, (p, (out, err)) in enumerate(zip(procs, outs)):
            out.seek(0)
            err.seek(0)
            results.append((None if i in killed else p.returncode, out.read(), err.read()))
            out.close()
            err.close()
        return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    results = run_ranks(cmd, args.ranks, args.timeout)
    ok = True
    for rank, (rc, out, err) in enumerate(results):
        status = "killed (a peer failed or the time ran out)" if rc is None else f"exit {rc}"
        print(f"==== rank {rank}: {status}")
        sys.stdout.write(out)
        sys.stdout.write(err)
        ok = ok and rc == 0
    if not ok:
        print(f"FAIL: not every one of {args.ranks} ranks passed (timeout {args.timeout:g} s)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
