#!/usr/bin/env python3
"""Time to the first verified quick fix after opening a file in `amp-migrate --lsp`, against
clangd-19's time to its first diagnostics on the same file (issue #40 item 4; goal <= 1.0x).

usage: bench/lsp_first_fix.py <amp-migrate> [--clangd clangd-19] [--rounds 2]

Both servers, started fresh for each measurement, get the same file (test/e2e/programs/scope_1x.cpp:
a training step over Debian's real <torch/torch.h>) and the same compile_commands.json. The clock
starts when didOpen is sent. amp-migrate: a code action request for the whole file is sent right
after didOpen; it is answered once the step's fix is verified (the rewritten file parsed), and the
time is taken when an answer holding a quick fix with edits arrives. clangd: the time of its first
publishDiagnostics for the file. The servers take turns, amp-migrate first, `rounds` times. Prints
a Markdown table (wall seconds: a server is several threads; the machine's load average is given)
and the ratio of the medians.
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


def start(cmd, path):
    c = Client(cmd)
    c.request("initialize", {"processId": os.getpid(), "rootUri": "file://" + os.path.dirname(path),
                             "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": True}}}})
    c.notify("initialized", {})
    return c


def stop(c):
    c.request("shutdown", None)
    c.notify("exit", None)
    c.proc.wait(timeout=60)


def amp_first_fix(tool, path, text):
    uri = "file://" + path
    c = start([tool, "--lsp"], path)
    lines = text.split("\n")
    rng = {"start": {"line": 0, "character": 0}, "end": {"line": len(lines) - 1, "character": 0}}
    t0 = time.monotonic()
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": text}})
    while True:
        actions = c.request("textDocument/codeAction",
                            {"textDocument": {"uri": uri}, "range": rng, "context": {"diagnostics": []}})
        fixes = [a for a in actions or [] if a.get("kind") == "quickfix" and a.get("edit")]
        if fixes:
            break
        time.sleep(0.05)  # asked before the file was analysed: ask again
    elapsed = time.monotonic() - t0
    stop(c)
    return elapsed, len(fixes)


def clangd_first_diagnostics(clangd, work, path, text):
    uri = "file://" + path
    c = start([clangd, "--compile-commands-dir=" + work, "--background-index=false", "--clang-tidy=false",
               "--log=error", "-j=2"], path)
    t0 = time.monotonic()
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": text}})
    diags = c.diagnostics(uri)
    elapsed = time.monotonic() - t0
    stop(c)
    return elapsed, len(diags["diagnostics"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("--clangd", default="clangd-19")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    work, (path,) = torch_workdir.make("lsp-first-fix-", {"train.cpp": torch_workdir.step_source()})
    try:
        text = open(path).read()
        ours, theirs = [], []
        load0 = os.getloadavg()[0]
        for _ in range(args.rounds):
            t, n = amp_first_fix(args.tool, path, text)
            ours.append(t)
            print("amp-migrate: first verified quick fix %.2fs (%d quick fixes)" % (t, n), file=sys.stderr)
            t, n = clangd_first_diagnostics(args.clangd, work, path, text)
            theirs.append(t)
            print("%s: first diagnostics %.2fs (%d diagnostics)" % (args.clangd, t, n), file=sys.stderr)
        load1 = os.getloadavg()[0]
        print("## LSP: first verified quick fix vs %s's first diagnostics (%s UTC, %s, %d cores, load %.1f -> %.1f)" % (
            args.clangd, time.strftime("%Y-%m-%d %H:%M", time.gmtime()), os.uname().machine, os.cpu_count(),
            load0, load1))
        print()
        print("| server | what | rounds (s) | median (s) |")
        print("|---|---|---|---:|")
        print("| amp-migrate --lsp | didOpen -> first code action with a verified quick fix | %s | %.2f |" % (
            " / ".join("%.2f" % x for x in ours), statistics.median(ours)))
        print("| %s | didOpen -> first publishDiagnostics | %s | %.2f |" % (
            args.clangd, " / ".join("%.2f" % x for x in theirs), statistics.median(theirs)))
        print()
        print("ratio (amp-migrate / %s, medians): **%.2f**; per round: %s" % (
            args.clangd, statistics.median(ours) / statistics.median(theirs),
            ", ".join("%.2f" % (a / b) for a, b in zip(ours, theirs))))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
