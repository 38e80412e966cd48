#!/usr/bin/env python3
"""Step overhead of migrated programs: before.cpp vs after.cpp side by side, on the CPU.

For each model size and level (O0: the original without autocast vs the migrated program at O0;
O1: with autocast vs O1) it runs the original with a hand-rolled scaler, the original with a scaler
on ATen's fused AMP ops (when this libtorch has CPU kernels for them) and the migrated program,
interleaved for --rounds rounds, and prints the median step time and peak resident memory of each
and the migrated/original ratios as a Markdown table (docs/performance.md).

  bench/step_overhead/run.py [--build build] [--rounds 3] [--steps 30] [--threads 1] [--sizes 256x512x2,...]
      [--torch-dir <wheel>/torch/share/cmake/Torch] [--baseline <an earlier step_overhead_after>]

--baseline runs a second migrated program (a copy of step_overhead_after built from an earlier
commit, or a script that runs one) in the same interleaved rounds, for a before/after comparison of
a runtime change under the same load.

By default the programs of the main build (Debian's libtorch 1.13, which has no CPU kernels for
ATen's fused AMP ops: that column is then n/a). --torch-dir builds them, with the runtime and the
binding, in a nested project (project/) under <build>/step_overhead-<libtorch version>.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


GLIBC_TUNABLES = None  # --glibc-tunables: the same allocator settings for every program


def run(binary, args, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if GLIBC_TUNABLES:
        env["GLIBC_TUNABLES"] = GLIBC_TUNABLES
    out = subprocess.run([binary] + args, capture_output=True, text=True, env=env)
    if out.returncode == 3:  # the fused ATen ops have no kernel for this device in this libtorch
        return None
    if out.returncode != 0:
        sys.exit(f"{binary} {' '.join(args)} failed ({out.returncode}):\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--sizes", default="256x512x2,512x1024x2",
                    help="input x hidden x layers, comma-separated")
    ap.add_argument("--threads", type=int, default=1,
                    help="OMP_NUM_THREADS of every program (libtorch's and the runtime's)")
    ap.add_argument("--torch-dir", help="Torch_DIR of another libtorch (nested build)")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--baseline", help="an earlier migrated program to compare with (see above)")
    ap.add_argument("--glibc-tunables", help="GLIBC_TUNABLES for every program, e.g. "
                    "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456 "
                    "(fixed thresholds: no page faults from glibc's dynamic trimming)")
    opt = ap.parse_args()
    global GLIBC_TUNABLES
    GLIBC_TUNABLES = opt.glibc_tunables

    targets = ["step_overhead_before", "step_overhead_after"]
    if opt.torch_dir:
        here = os.path.dirname(os.path.abspath(__file__))
        build = os.path.join(opt.build, "step_overhead-" + os.path.basename(
            os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
                os.path.abspath(opt.torch_dir)))))))
        programs = os.path.join(build, "step_overhead")
        if not opt.no_build:
            subprocess.run(["cmake", "-S", os.path.join(here, "project"), "-B", build, "-G",
                            "Ninja", "-DCMAKE_BUILD_TYPE=Release", f"-DTorch_DIR={opt.torch_dir}"],
                           check=True, stdout=subprocess.DEVNULL)
    else:
        build = opt.build
        programs = os.path.join(build, "bench", "step_overhead")
    if not opt.no_build:
        subprocess.run(["cmake", "--build", build, "--target"] + targets, check=True,
                       stdout=subprocess.DEVNULL)
    before = os.path.join(programs, "step_overhead_before")
    after = os.path.join(programs, "step_overhead_after")

    print(f"libtorch: {opt.torch_dir or 'the main build (Debian 1.13)'}")
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.1f}, "
          f"threads: {opt.threads}, rounds: {opt.rounds}, steps: {opt.steps} (+{opt.warmup} warm-up), batch 64, SGD")
    if GLIBC_TUNABLES:
        print(f"GLIBC_TUNABLES={GLIBC_TUNABLES} for every program")
    print()
    extra_head = " baseline migrated: ms / MB | time vs baseline | memory vs baseline |" \
        if opt.baseline else ""
    print("| model (in-hidden x layers-10) | level | original, hand scaler: ms / MB "
          "| original, ATen scaler: ms / MB | migrated: ms / MB "
          "| time vs hand | time vs ATen | memory vs hand | memory vs ATen |" + extra_head)
    print("|---|---|---|---|---|---|---|---|---|" + ("---|---|---|" if opt.baseline else ""))
    for size in opt.sizes.split(","):
        inp, hidden, layers = size.split("x")
        common = [f"--input={inp}", f"--hidden={hidden}", f"--layers={layers}",
                  f"--steps={opt.steps}", f"--warmup={opt.warmup}"]
        for level in ("O0", "O1"):
            autocast = "0" if level == "O0" else "1"
            runs = {"hand": [], "aten": [], "after": [], "baseline": []}
            for _ in range(opt.rounds):  # interleaved: load changes hit all three alike
                runs["hand"].append(run(before, common + ["--mode=hand", f"--autocast={autocast}"],
                                        opt.threads))
                runs["aten"].append(run(before, common + ["--mode=aten", f"--autocast={autocast}"],
                                        opt.threads))
                runs["after"].append(run(after, common + [f"--mode={level}"], opt.threads))
                if opt.baseline:
                    runs["baseline"].append(run(opt.baseline, common + [f"--mode={level}"],
                                                opt.threads))

            def med(key, what):
                vals = [r[what] for r in runs[key] if r is not None]
                return statistics.median(vals) if vals else None

            def cell(key):
                t, m = med(key, "median_ms"), med(key, "peak_rss_mb")
                return "n/a" if t is None else f"{t:.2f} / {m:.0f}"

            def ratio(what, key):
                a, b = med("after", what), med(key, what)
                return "n/a" if a is None or b is None else f"{a / b:.2f}x"

            extra = (f" {cell('baseline')} | {ratio('median_ms', 'baseline')} "
                     f"| {ratio('peak_rss_mb', 'baseline')} |") if opt.baseline else ""
            print(f"| {inp}-{hidden}x{layers}-10 | {level} | {cell('hand')} | {cell('aten')} "
                  f"| {cell('after')} | {ratio('median_ms', 'hand')} | {ratio('median_ms', 'aten')} "
                  f"| {ratio('peak_rss_mb', 'hand')} | {ratio('peak_rss_mb', 'aten')} |" + extra,
                  flush=True)
    print()
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
