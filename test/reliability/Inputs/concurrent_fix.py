#!/usr/bin/env python3
"""Concurrent --fix runs (issue 13 item 1): on one file and on two TUs sharing a header, with -j
and with two processes. Whatever the interleaving, the result is exactly the file a single run
writes (never edits spliced into bytes they were not computed on), each run exits 0 or 3, and a
run that exits 3 says the file changed since it was analysed.

usage: concurrent_fix.py <amp-migrate> <mock-torch dir> <canonical-step.cpp> <work dir>
"""
import os
import shutil
import subprocess
import sys

tool, mock, step_cpp, work = sys.argv[1:5]
ROUNDS = 2


def run(args, cwd=None):
    return subprocess.Popen([tool] + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(procs):
    out = []
    for p in procs:
        _, err = p.communicate(timeout=120)
        out.append((p.returncode, err.decode()))
    return out


def check_codes(results, what):
    for code, err in results:
        if code == 0:
            continue
        if code == 3 and "changed since it was analysed" in err:
            continue
        sys.exit("%s: unexpected exit %d:\n%s" % (what, code, err))
    if not any(code == 0 for code, _ in results):
        sys.exit("%s: no run succeeded: %r" % (what, results))


def read(p):
    with open(p, "rb") as f:
        return f.read()


def fresh(dirname, files, with_tus=False):
    d = os.path.join(work, dirname)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for src, name in files:
        shutil.copy(src, os.path.join(d, name))
    if with_tus:  # two TUs whose step is in the header they share
        for tu in ("a.cpp", "b.cpp"):
            with open(os.path.join(d, tu), "w") as f:
                f.write('#include "shared_step.h"\n')
    return d


args = ["--", "-std=c++17", "-I" + mock]

# One file: the reference is a single run.
ref_dir = fresh("ref", [(step_cpp, "train.cpp")])
ref_file = os.path.join(ref_dir, "train.cpp")
r = finish([run(["--fix", ref_file] + args)])
check_codes(r, "reference run")
reference = read(ref_file)
if reference == read(step_cpp) or b"value_and_grad" not in reference:
    sys.exit("the reference run did not migrate the step")

for i in range(ROUNDS):
    d = fresh("one%d" % i, [(step_cpp, "train.cpp")])
    f = os.path.join(d, "train.cpp")
    results = finish([run(["--fix", f] + args), run(["--fix", f] + args)])
    check_codes(results, "two processes on one file")
    if read(f) != reference:
        sys.exit("two processes on one file: the result differs from a single run:\n" + read(f).decode())

d = fresh("dup", [(step_cpp, "train.cpp")])
f = os.path.join(d, "train.cpp")
check_codes(finish([run(["--fix", "-j2", f, f] + args)]), "-j2 with the file twice")
if read(f) != reference:
    sys.exit("-j2 with the file twice: the result differs from a single run")

# The step in a header shared by two TUs.
header = [(step_cpp, "shared_step.h")]
hargs = ["--header-filter=shared_step"]
d = fresh("href", header, with_tus=True)
check_codes(finish([run(["--fix"] + hargs + [os.path.join(d, "a.cpp")] + args)]), "header reference")
header_ref = read(os.path.join(d, "shared_step.h"))
if header_ref == read(step_cpp):
    sys.exit("the header reference run did not migrate the header's step")

for i in range(ROUNDS):
    d = fresh("hj%d" % i, header, with_tus=True)
    a, b = os.path.join(d, "a.cpp"), os.path.join(d, "b.cpp")
    check_codes(finish([run(["--fix", "-j2"] + hargs + [a, b] + args)]), "-j2 over two TUs")
    if read(os.path.join(d, "shared_step.h")) != header_ref:
        sys.exit("-j2 over two TUs sharing a header: the header differs from a single run")

    d = fresh("hp%d" % i, header, with_tus=True)
    a, b = os.path.join(d, "a.cpp"), os.path.join(d, "b.cpp")
    results = finish([run(["--fix"] + hargs + [a] + args), run(["--fix"] + hargs + [b] + args)])
    check_codes(results, "two processes, two TUs sharing a header")
    got = read(os.path.join(d, "shared_step.h"))
    if got != header_ref:
        sys.exit("two processes on TUs sharing a header: the header differs from a single run:\n" + got.decode())

print("ok")
