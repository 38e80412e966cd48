#!/usr/bin/env python3
"""amp-migrate's plain lint run over `clang++-19 -fsyntax-only` on the real <torch/torch.h>.

usage: bench/lint_vs_clang.py <amp-migrate> [rounds=3] [--env NAME=VALUE ...] [--baseline NAME=VALUE,...]
                              [--only a,b,c]

In one run, alternating the commands `rounds` times, on held-out TUs written here (not the test
programs; the e2e programs' headers are reused):
  (a) a TU with one fixable training step: the plain lint run (its fix's verification deferred),
      and (a, verified) the same with --verify-fixes (the fix verified, as --fix/--diff/
      --export-fixes/JSON/SARIF runs do),
  (b) a TU that mentions AMP (an autocast pair in an evaluation loop) but holds no step,
  (c) a database of 20 TUs sharing one leading include block with <torch/torch.h>, 10 with a
      fixable step and 10 like (b): the tool over the whole database (-j1 and -j2) against clang
      on each TU in turn, per TU.
Prints a Markdown table of the medians: seconds of CPU (user+sys, the robust number on a shared
machine) and of wall clock, and each ratio tool / clang (goals: (a), (b) <= 0.5, (c) <= 0.25).
`--env NAME=VALUE` runs the tool with that environment variable. `--baseline NAME=VALUE,...` also
runs the tool under that environment in every round, right after the default one (e.g.
AMP_MIGRATE_PREAMBLE=off,AMP_MIGRATE_LINT_VERIFY=always: the whole-parse, always-verifying path of
before), and prints its table and the ratio default / baseline per case.
"""
import os
import statistics
import subprocess
import sys
import time

import torch_workdir

# Both kinds start with the same include block, comments included: TUs share a preamble only
# when their leading blocks are the same bytes (docs/performance.md).
HEAD = """// A held-out TU of bench/lint_vs_clang.py.
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
"""

FIX = HEAD + """
// bf16 autocast around a classifier's forward, plain backward and step.
void train_epoch_{n}(e2e::Mlp &net, torch::optim::Adam &opt, e2e::SyntheticData &batches, int first) {{
  net->train();
  for (int i = first; i < first + {n} + 8; ++i) {{
    opt.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto logits = net->forward(batches.input(i));
    auto loss = torch::nll_loss(logits, batches.target(i));
    at::autocast::set_cpu_enabled(false);
    loss.backward();
    opt.step();
  }}
}}
"""

NOSTEP = HEAD + """
// Evaluation under autocast; no training step.
double accuracy_{n}(e2e::Mlp &net, e2e::SyntheticData &batches) {{
  torch::NoGradGuard no_grad;
  net->eval();
  double hits = 0;
  for (int i = 0; i < {n} + 4; ++i) {{
    at::autocast::set_cpu_enabled(true);
    auto pred = net->forward(batches.input(i)).argmax(1);
    at::autocast::set_cpu_enabled(false);
    hits += pred.eq(batches.target(i)).sum().item<double>();
  }}
  return hits / (4 * e2e::kBatch);
}}
"""


def run(cmd, env=None):
    """(cpu seconds, wall seconds) of one command; its output is discarded."""
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit("failed: %s" % " ".join(cmd))
    return ru.ru_utime + ru.ru_stime, wall


def progress(label, c, t):
    """Each measurement on stderr as it comes (a long run under load can be read before its end)."""
    print("%s: clang %.2f s CPU / %.2f s wall, tool %.2f s CPU / %.2f s wall, load %.1f" % (
        label, c[0], c[1], t[0], t[1], os.getloadavg()[0]), file=sys.stderr, flush=True)


def table(title, cases):
    print(title)
    print()
    print("| case | clang CPU s | tool CPU s | ratio CPU | clang wall s | tool wall s | ratio wall | rounds (CPU ratio) |")
    print("|---|---|---|---|---|---|---|---|")
    med = statistics.median
    for label, rs in cases.items():
        per = 20 if label.startswith("(c)") else 1
        cpu = [t[0] / c[0] for c, t in rs]
        wall = [t[1] / c[1] for c, t in rs]
        print("| %s | %.2f | %.2f | **%.2f** | %.2f | %.2f | %.2f | %s |" % (
            label + (" (per TU)" if per > 1 else ""), med([c[0] for c, _ in rs]) / per,
            med([t[0] for _, t in rs]) / per, med(cpu), med([c[1] for c, _ in rs]) / per,
            med([t[1] for _, t in rs]) / per, med(wall), ", ".join("%.2f" % x for x in cpu)))
    print()


def main():
    args = sys.argv[1:]
    env = dict(os.environ)
    base_env = None
    while "--env" in args:
        i = args.index("--env")
        name, value = args[i + 1].split("=", 1)
        env[name] = value
        del args[i:i + 2]
    if "--baseline" in args:
        i = args.index("--baseline")
        base_env = dict(env)
        for kv in args[i + 1].split(","):
            name, value = kv.split("=", 1)
            base_env[name] = value
        del args[i:i + 2]
    only = None  # --only a,b,c: the cases to run (a: both (a) rows)
    if "--only" in args:
        i = args.index("--only")
        only = set(args[i + 1].split(","))
        del args[i:i + 2]
    tool = os.path.abspath(args[0])
    rounds = int(args[1]) if len(args) > 1 else 3
    sources = {"fix.cpp": FIX.format(n=0), "nostep.cpp": NOSTEP.format(n=0)}
    db = {}
    for n in range(20):
        db["db%02d.cpp" % n] = (FIX if n % 2 == 0 else NOSTEP).format(n=n + 1)
    work, paths = torch_workdir.make("lint-vs-clang-", dict(sources, **db))
    fix, nostep, dbpaths = paths[0], paths[1], paths[2:]

    def clang(path):
        return ["clang++-19", "-fsyntax-only", "-std=c++17", "-isystem", torch_workdir.TORCH_INC, "-I", work, path]

    labels = ["(a) fixable step", "(a, verified) fixable step, --verify-fixes", "(b) no step",
              "(c) 20 TUs -j1", "(c) 20 TUs -j2"]
    if only is not None:
        labels = [l for l in labels if l[1] in only]
    cases = {l: [] for l in labels}
    base = {l: [] for l in labels}
    envs = [(env, cases)] + ([(base_env, base)] if base_env else [])
    for _ in range(rounds):
        for label, path, extra in (("(a) fixable step", fix, []),
                                   ("(a, verified) fixable step, --verify-fixes", fix, ["--verify-fixes"]),
                                   ("(b) no step", nostep, [])):
            if label not in cases:
                continue
            c = run(clang(path))
            for e, out in envs:
                out[label].append((c, run([tool, "-p", work] + extra + [path], e)))
                progress(label, c, out[label][-1][1])
        if "(c) 20 TUs -j1" not in cases:
            continue
        cc = [run(clang(p)) for p in dbpaths]
        c = (sum(x[0] for x in cc), sum(x[1] for x in cc))
        for jobs in ("1", "2"):
            for e, out in envs:
                out["(c) 20 TUs -j%s" % jobs].append((c, run([tool, "-p", work, "-j", jobs] + dbpaths, e)))
                progress("(c) -j" + jobs, c, out["(c) 20 TUs -j%s" % jobs][-1][1])

    extra = " ".join("%s=%s" % (k, v) for k, v in env.items() if os.environ.get(k) != v)
    load = os.getloadavg()
    print("## amp-migrate lint vs clang++-19 -fsyntax-only (%s UTC, %s, %d cores, load %.1f/%.1f/%.1f at the end, %d rounds%s)" % (
        time.strftime("%Y-%m-%d %H:%M", time.gmtime()), os.uname().machine, os.cpu_count(), load[0], load[1], load[2],
        rounds, ", " + extra if extra else ""))
    print()
    table("### The tool as built (defaults)", cases)
    if base_env:
        bextra = " ".join("%s=%s" % (k, v) for k, v in base_env.items() if env.get(k) != v)
        table("### Baseline (%s), the same rounds" % bextra, base)
        print("| case | default / baseline, CPU (median of rounds) | rounds |")
        print("|---|---|---|")
        for label in labels:
            r = [t[0] / b[0] for (_, t), (_, b) in zip(cases[label], base[label])]
            print("| %s | **%.2f** | %s |" % (label, statistics.median(r), ", ".join("%.2f" % x for x in r)))
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
