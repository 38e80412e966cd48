#!/usr/bin/env python3
"""The differential check over the lit inputs (docs/testing.md, "Differential check").

For every lit input of test/checks that the tool rewrites (its `%check_amp` RUN line, at level O0
so that both sides compute in fp32), the original and the migrated file are compiled together
against the real libtorch, each in a namespace of its own, and every free function that the
rewrite changed is run by the harness (include/amp_diff.h) on the same arguments: the models'
parameters after each of four calls and each call's result must be the same. An input the
harness cannot build or run (mock-only API, a parameter type it cannot make, an original that
throws on its synthetic data) is listed with the reason, so the coverage is visible.

usage: run.py --tool T --mock DIR --build BUILD --work DIR [--only NAME...] [--jobs N]
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PRELUDE_STD = ["algorithm", "atomic", "cmath", "cstdint", "cstdio", "cstdlib", "deque", "functional",
               "iostream", "limits", "map", "memory", "mutex", "numeric", "optional", "set", "sstream",
               "string", "thread", "tuple", "unordered_map", "utility", "variant", "vector"]
PRELUDE = ["<ATen/autocast_mode.h>", "<torch/torch.h>", "<amp/torch.h>", '"scaler.h"', '"amp_diff.h"']
FORWARD_DECL = re.compile(r"struct NetImpl : torch::nn::Module \{[^{}]*?torch::Tensor forward\(const torch::Tensor &x\);")
FUNC_DEF = re.compile(r"^(?!static\b|template\b|inline\b)[A-Za-z_][\w:<>, *&]*?[ *&](\w+)\(([^;{}]*)\)\s*(?:const\s*)?\{",
                      re.M)


def probe_flags(build):
    """The compile command of test/differential/probe.cpp and the link line of its executable."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        entry = next(e for e in json.load(f) if e["file"].endswith("test/differential/probe.cpp"))
    args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
    flags, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-c", "-MF", "-MT", "-MQ"):
            skip = a != "-c"
            continue
        if a.endswith("probe.cpp") or a in ("-MD",) or a.startswith("-O"):
            continue
        flags.append(a)
    # The link line: ninja's own view of the probe executable.
    cmd = subprocess.run(["ninja", "-C", build, "-t", "commands", "test/differential/amp_diff_probe"],
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    link = shlex.split(next(c for c in cmd.split("&&") if "amp_diff_probe " in c + " " and " -o " in c))
    i = link.index("-o")
    objs_end = i
    libs = [a for a in link[i + 2:]]
    pre = [a for a in link[1:objs_end] if not a.endswith(".o")]
    return entry["directory"], args[0], flags, pre + libs


def run_line_args(text, src):
    """The tool and compiler arguments of the input's first %check_amp RUN line, or None."""
    for line in text.splitlines():
        m = re.match(r"\s*// RUN: %check_amp %s %t\.cpp(.*)$", line)
        if not m:
            continue
        rest = m.group(1).replace("%S", os.path.dirname(src)).replace("%inputs", os.path.join(ROOT, "test", "Inputs"))
        if "%" in rest or "|" in rest or "&&" in rest:
            return None
        args = shlex.split(rest)
        tool, cc = (args[:args.index("--")], args[args.index("--") + 1:]) if "--" in args else (args, [])
        if any(a.startswith("--level") or a.startswith("-level") for a in tool):
            tool = [a for a in tool if not a.startswith("--level") and not a.startswith("-level")]
        return tool, cc
    return None


def changed_functions(orig, mig):
    """Free functions defined once in the original whose text the rewrite changed."""
    def defs(text):
        out = {}
        for m in FUNC_DEF.finditer(text):
            name = m.group(1)
            if name in ("main", "if", "for", "while", "switch") or text[m.start():m.start() + 1].isspace():
                continue
            start, depth, i = m.end() - 1, 0, m.end() - 1
            while i < len(text):
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                if depth == 0:
                    break
                i += 1
            out.setdefault(name, []).append(text[m.start():i + 1])
        return out
    a, b = defs(orig), defs(mig)
    return [n for n in a if len(a[n]) == 1 and len(b.get(n, [])) == 1 and a[n][0] != b[n][0]]


def reused_lit_output(args, src, text):
    """The file the input's lit test migrated (check_amp.py's %t.cpp), at level O0, when it is
    newer than the input and the tool and the input has one %check_amp RUN line; else None.
    The level is the one thing it differs in from a run at --level=O0: the Level constants the
    rewrite writes (each conversion's), which O0 makes fp32 throughout."""
    if not args.lit_out or len(re.findall(r"// RUN: %check_amp ", text)) != 1:
        return None
    out = os.path.join(args.lit_out, os.path.basename(src) + ".tmp.cpp")
    try:
        t = os.path.getmtime(out)
        if t < os.path.getmtime(src) or t < os.path.getmtime(args.tool):
            return None
        mig = open(out, encoding="utf-8").read()
    except OSError:
        return None
    return re.sub(r"\bamp::Level::O[0-3]\b", "amp::Level::O0", mig)


def prepare(args, src, idx):
    """Migrates one input; returns (name, status, detail, tu path or None, functions)."""
    name = os.path.basename(src)
    text = open(src, encoding="utf-8").read()
    run = run_line_args(text, src)
    if run is None:
        return name, "not-run", "no plain %check_amp RUN line to reproduce", None, []
    tool_args, cc_args = run
    cleaned = re.sub(r"// *CHECK-[A-Z0-9-]*:[^\r\n]*", "//", text)
    if re.search(r"^\s*int\s+main\s*\(", cleaned, re.M):
        cleaned = re.sub(r"^(\s*)int(\s+)main(\s*\()", r"\1int\2amp_diff_main\3", cleaned, flags=re.M)
    work = os.path.join(args.work, f"{idx:03d}")
    os.makedirs(work, exist_ok=True)
    orig_path, mig_path = os.path.join(work, "orig_" + name), os.path.join(work, "mig_" + name)
    for p in (orig_path, mig_path):
        with open(p, "w", encoding="utf-8") as f:
            f.write(cleaned)
    mig = reused_lit_output(args, src, text)
    if mig is None:
        cmd = [args.tool, "--fix", "--level=O0", "--use-color=never", *tool_args, mig_path, "--", "-std=c++17",
               "-I" + args.mock, "-I" + os.path.dirname(src), *cc_args]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode not in (0, 1):
            return name, "error", f"the tool exited with {p.returncode}: {p.stderr.strip()[:300]}", None, []
        mig = open(mig_path, encoding="utf-8").read()
    else:
        mig = re.sub(r"^(\s*)int(\s+)main(\s*\()", r"\1int\2amp_diff_main\3", mig, flags=re.M)
        with open(mig_path, "w", encoding="utf-8") as f:
            f.write(mig)
    if mig == cleaned:
        return name, "unchanged", "", None, []
    funcs = changed_functions(cleaned, mig)
    if not funcs:
        return name, "not-run", "the rewrite changes no free function (methods, templates or lambdas only)", None, []
    forward = FORWARD_DECL.search(cleaned) is not None
    tu = os.path.join(work, "case.cpp")
    with open(tu, "w", encoding="utf-8") as f:
        for ns, path in (("orig", orig_path), ("mig", mig_path)):
            f.write(f"namespace {ns}_{idx} {{\n#include \"{path}\"\n")
            if forward:
                f.write("torch::Tensor NetImpl::forward(const torch::Tensor &x) { return amp_diff::forward(*this, x); }\n")
            f.write(f"}} // namespace {ns}_{idx}\n")
        f.write(f"bool amp_diff_case_{idx}() {{\n  bool ok = true;\n")
        for fn in funcs:
            f.write(f"  ok &= amp_diff::check(\"{name}:{fn}\", &orig_{idx}::{fn}, &mig_{idx}::{fn});\n")
        f.write("  return ok;\n}\n")
    return name, "built", "", tu, funcs


def compile_one(args, cxx, flags, prelude, tu, include_dir):
    obj = tu[:-4] + ".o"
    cmd = [cxx, *flags, "-O0", "-w", "-I" + include_dir, "-include", prelude, "-c", tu, "-o", obj]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        first = next((l for l in p.stderr.splitlines() if "error:" in l), p.stderr.strip()[:200])
        return None, re.sub(r"^\S*/(orig|mig)_", "", first.strip())
    return obj, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--mock", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--checks", default=os.path.join(ROOT, "test", "checks"))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--lit-out", help="check_amp.py's outputs (build/test/lit-out/checks/Output), reused when fresh")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("AMP_JOBS", "2")))
    ap.add_argument("--cxx", help="compile the cases with this compiler instead of the probe's (its flags stay)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    directory, cxx, flags, link = probe_flags(args.build)
    if args.cxx:
        cxx = args.cxx
    include_dir = os.path.join(HERE, "include")
    flags = [f for f in flags if f not in ("-Werror",) and not f.startswith("-W")]
    flags += ["-I" + os.path.join(ROOT, "test", "e2e", "programs")]

    srcs = sorted(os.path.join(args.checks, f) for f in os.listdir(args.checks) if f.endswith(".cpp"))
    if args.only:
        srcs = [s for s in srcs if os.path.basename(s) in args.only or os.path.basename(s)[:-4] in args.only]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        prepared = list(ex.map(lambda a: prepare(args, *a), [(s, i) for i, s in enumerate(srcs)]))

    # One precompiled prelude for every case (the libtorch headers are most of the compile time).
    prelude = os.path.join(args.work, "prelude.h")
    with open(prelude, "w") as f:
        f.write("#pragma once\n" + "".join(f"#include <{h}>\n" for h in PRELUDE_STD) +
                "".join(f"#include {h}\n" for h in PRELUDE))
    # gcc and clang both take the precompiled form next to the header for `-include prelude.h`.
    clang = "clang" in os.path.basename(cxx) or "clang" in subprocess.run(
        [cxx, "--version"], capture_output=True, text=True).stdout
    pch = prelude + (".pch" if clang else ".gch")
    # clang's precompiled prelude can also hold the instantiations of libtorch's templates that the
    # headers use themselves, which each case would otherwise instantiate again (about half of a
    # case's compile time).
    instantiate = ["-Xclang", "-fpch-instantiate-templates"] if clang else []
    subprocess.run([cxx, *flags, *instantiate, "-O0", "-w", "-I" + include_dir, "-x", "c++-header", prelude,
                    "-o", pch], check=True, cwd=directory)

    built = [(i, p) for i, p in enumerate(prepared) if p[1] == "built"]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        objs = list(ex.map(lambda ip: compile_one(args, cxx, flags, prelude, ip[1][3], include_dir), built))
    results = {p[0]: (p[1], p[2]) for p in prepared}
    linked = []
    for (i, p), (obj, err) in zip(built, objs):
        if obj is None:
            results[p[0]] = ("not-run", "does not compile against the real libtorch: " + err)
        else:
            linked.append((i, p, obj))

    # Functions an input declares but does not define are linked to one that throws, so that a
    # function calling them is reported as not run instead of failing the link.
    undefined = set()
    for _, _, obj in linked:
        out = subprocess.run(["nm", "-u", obj], capture_output=True, text=True, check=True).stdout
        undefined |= {l.split()[-1] for l in out.splitlines() if re.search(r"_ZN\d+(orig|mig)_\d+", l)}
    main_cpp = os.path.join(args.work, "main.cpp")
    with open(main_cpp, "w") as f:
        f.write("#include <cstdio>\n#include <stdexcept>\n")
        f.write('extern "C" void amp_diff_undefined() { throw std::runtime_error('
                '"calls a function the input declares but does not define"); }\n')
        # Both sides compute in fp32: the originals' CPU autocast switch (libtorch 1.x) is replaced
        # by one that only records the flag, as O0 migrations never cast. Precision is what the e2e
        # programs compare; this check is about what the step's code computes.
        f.write("namespace at { namespace autocast {\nstatic thread_local bool amp_diff_cpu = false;\n"
                "void set_cpu_enabled(bool on) { amp_diff_cpu = on; }\n"
                "bool is_cpu_enabled() { return amp_diff_cpu; }\n}}\n")
        f.write("".join(f"bool amp_diff_case_{i}();\n" for i, _, _ in linked))
        f.write("int main() {\n  bool ok = true;\n")
        f.write("".join(f"  ok &= amp_diff_case_{i}();\n" for i, _, _ in linked))
        f.write("  return ok ? 0 : 1;\n}\n")
    exe = os.path.join(args.work, "amp_diff")
    defsyms = [f"-Wl,--defsym,{s}=amp_diff_undefined" for s in sorted(undefined)]
    subprocess.run([cxx, *flags, "-O0", "-c", main_cpp, "-o", main_cpp + ".o"], check=True, cwd=directory)
    subprocess.run([cxx, main_cpp + ".o", *[o for _, _, o in linked], *defsyms, *link, "-o", exe],
                   check=True, cwd=directory)
    p = subprocess.run([exe], capture_output=True, text=True, cwd=args.work)
    lines = [l[len("AMP_DIFF "):] for l in p.stdout.splitlines() if l.startswith("AMP_DIFF ")]
    if p.returncode not in (0, 1) or (p.returncode == 1 and not any(" differs" in l for l in lines)):
        sys.stderr.write(p.stdout + p.stderr)
        print(f"FAIL: the harness exited with {p.returncode}")
        return 1

    per_fn = [l.split(" ", 2) for l in lines]
    same = [l for l in per_fn if l[1] == "same"]
    known = {}
    with open(os.path.join(HERE, "known-differences.txt")) as f:
        for l in f:
            if l.strip() and not l.startswith("#"):
                label, why = l.strip().split(" ", 1)
                known[label] = why
    for l in per_fn:
        if l[1] == "differs" and l[0] in known:
            l[1], l[2] = "known-difference", l[2] + "; known: " + known[l[0]]
    differs = [l for l in per_fn if l[1] == "differs"]
    stops = [l for l in per_fn if l[1] == "stops"]
    stale = [k for k in known if (not args.only or k.split(":")[0] in [os.path.basename(s) for s in srcs])
             and not any(l[0] == k and l[1] == "known-difference" for l in per_fn)]
    for name, (status, detail) in sorted(results.items()):
        if status == "built":
            fns = [l for l in per_fn if l[0].startswith(name + ":")]
            print(f"{name}: " + "; ".join(f"{l[0].split(':', 1)[1]} {l[1]}" +
                                            (f" ({l[2]})" if l[1] != "same" else "") for l in fns))
        elif status != "unchanged":
            print(f"{name}: {status}: {detail}")
    unchanged = sum(1 for s, _ in results.values() if s == "unchanged")
    print(f"\n{len(srcs)} inputs: {unchanged} not rewritten, {len(srcs) - unchanged} rewritten, "
          f"{len(linked)} of these built and run; functions: {len(same)} same, {len(differs)} differ, "
          f"{len(stops)} stop with amp::check_holds' error, {len(known) - len(stale)} known to differ, "
          f"{len(per_fn) - len(same) - len(differs) - len(stops) - len(known) + len(stale)} not run")
    if any(s == "error" for s, _ in results.values()):
        print("FAIL: the tool failed on an input")
        return 1
    if stale:
        print("FAIL: known-differences.txt lists functions that no longer differ: " + ", ".join(stale))
        return 1
    if differs:
        print("FAIL: a migrated function computes something else:\n" + "\n".join(" ".join(l) for l in differs))
        return 1
    if not same:
        print("FAIL: no function was compared (the check would prove nothing)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
