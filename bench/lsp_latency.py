#!/usr/bin/env python3
"""Editor latency of `amp-migrate --lsp` against clangd, side by side in one run.

usage: bench/lsp_latency.py <amp-migrate> [--clangd clangd-19] [--edits 4] [--rounds 1] [--settle S]

Both servers get the same file (test/e2e/programs/scope_1x.cpp: a training step over the real
<torch/torch.h>, Debian's libtorch headers) and the same compile_commands.json. The client opens
the file and waits for the publishDiagnostics of version 1 (the first parse), then changes one
comment line in the body, once per edit, each time waiting for the publishDiagnostics of that
version. Then it asks for the code actions of the whole file at the last version and times the
answer ("code action": amp-migrate verifies the fixes of that version first, a re-parse of the
rewritten file). Prints a Markdown table of the seconds each took; with --rounds > 1 the servers
take turns.
--settle waits S seconds after the first diagnostics before the first edit (a user reading them;
amp-migrate precompiles the includes meanwhile, clangd did before its first diagnostics).
"""
import argparse
import os
import shutil
import statistics
import sys
import time

import torch_workdir

sys.path.insert(0, os.path.join(torch_workdir.ROOT, "test", "lsp"))
from lsp_client_test import Client  # noqa: E402


def wait_diagnostics(c, uri, version):
    while True:
        msg = c.read()
        if msg.get("method") == "textDocument/publishDiagnostics":
            p = msg["params"]
            if p["uri"] == uri and p.get("version") == version:
                return p["diagnostics"]


def measure(cmd, path, text, edits, settle):
    uri = "file://" + path
    c = Client(cmd)
    c.request("initialize", {"processId": os.getpid(), "rootUri": "file://" + os.path.dirname(path),
                             "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": True}}}})
    c.notify("initialized", {})
    t0 = time.monotonic()
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": text}})
    diags = wait_diagnostics(c, uri, 1)
    first = time.monotonic() - t0
    time.sleep(settle)
    times = []
    lines = text.split("\n")
    # A comment line inside main's loop: the body changes, the includes do not.
    target = next(i for i, l in enumerate(lines) if "e2e::log_step" in l)
    for n in range(edits):
        lines[target] = lines[target].split(" //")[0] + " // edit %d" % n
        t0 = time.monotonic()
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": n + 2},
                                            "contentChanges": [{"text": "\n".join(lines)}]})
        wait_diagnostics(c, uri, n + 2)
        times.append(time.monotonic() - t0)
    t0 = time.monotonic()
    actions = c.request("textDocument/codeAction", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": len(lines) - 1, "character": len(lines[-1])}},
        "context": {"diagnostics": []}})
    action = time.monotonic() - t0
    c.request("shutdown", None)
    c.notify("exit", None)
    c.proc.wait(timeout=60)
    return first, times, len(diags), action, len(actions or [])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("--clangd", default="clangd-19")
    ap.add_argument("--edits", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--settle", type=float, default=0.0)
    args = ap.parse_args()
    work, (path,) = torch_workdir.make("lsp-bench-", {"train.cpp": torch_workdir.step_source()})
    try:
        text = open(path).read()
        servers = [("amp-migrate --lsp", [args.tool, "--lsp"]),
                   ("%s" % args.clangd, [args.clangd, "--compile-commands-dir=" + work, "--background-index=false",
                                         "--clang-tidy=false", "--log=error", "-j=2"])]
        results = {name: ([], [], []) for name, _ in servers}
        load = os.getloadavg()[0]
        for _ in range(args.rounds):
            for name, cmd in servers:
                first, edits, ndiags, action, nactions = measure(cmd, path, text, args.edits, args.settle)
                results[name][0].append(first)
                results[name][1].extend(edits)
                results[name][2].append(action)
                print("%s: first %.2fs, edits %s, %d diagnostics, code action %.2fs (%d actions)" % (
                    name, first, " ".join("%.2f" % e for e in edits), ndiags, action, nactions), file=sys.stderr)
        print("## LSP latency (%s UTC, %d cores, load average %.1f at start, settle %.0f s)" % (
            time.strftime("%Y-%m-%d %H:%M", time.gmtime()), os.cpu_count(), load, args.settle))
        print()
        print("| server | first diagnostics (s) | each edit (s) | median edit (s) | code action after the last edit (s) |")
        print("|---|---:|---|---:|---:|")
        for name, _ in servers:
            firsts, edits, actions = results[name]
            print("| %s | %s | %s | %.2f | %s |" % (name, " / ".join("%.2f" % f for f in firsts),
                                                    " ".join("%.2f" % e for e in edits), statistics.median(edits),
                                                    " / ".join("%.2f" % a for a in actions)))
        ours, theirs = statistics.median(results[servers[0][0]][1]), statistics.median(results[servers[1][0]][1])
        print()
        print("median edit ratio (amp-migrate / %s): %.2f" % (servers[1][0], ours / theirs))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
