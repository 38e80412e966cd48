"""A scratch directory of training-step TUs over Debian's real <torch/torch.h>, with their
compile_commands.json (the setup bench/lsp_latency.py and bench/cache_bench.py share)."""
import json
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_INC = "/usr/include/torch/csrc/api/include"
PROGRAMS = os.path.join(ROOT, "test", "e2e", "programs")


def step_source():
    """test/e2e/programs/scope_1x.cpp: a training step (1.x autocast pair, a scaler, clipping)."""
    return open(os.path.join(PROGRAMS, "scope_1x.cpp")).read()


def make(prefix, sources):
    """A new directory holding the e2e programs' headers and `sources` ({file name: text}), and a
    compile_commands.json for them. Returns (directory, [paths of the sources])."""
    if not os.path.exists(os.path.join(TORCH_INC, "torch", "torch.h")):
        sys.exit("needs Debian's libtorch headers (%s)" % TORCH_INC)
    work = tempfile.mkdtemp(prefix=prefix)
    for f in os.listdir(PROGRAMS):
        if f.endswith(".h"):
            shutil.copy(os.path.join(PROGRAMS, f), work)
    paths = []
    for name, text in sources.items():
        paths.append(os.path.join(work, name))
        with open(paths[-1], "w") as f:
            f.write(text)
    with open(os.path.join(work, "compile_commands.json"), "w") as f:
        json.dump([{"directory": work, "file": p,
                    "arguments": ["clang++", "-std=c++17", "-isystem", TORCH_INC, "-I", work, "-c", p]} for p in paths], f)
    return work, paths
