#!/usr/bin/env python3
"""The language server's precompiled preamble and $/progress (ctest lsp.preamble).

usage: lsp_preamble_test.py <amp-migrate> <mock-torch include dir> <input.cpp> <work dir>

With a client that offers window.workDoneProgress:
  1. the first check (a whole parse) is announced with $/progress begin/end ("parsing FILE") and
     publishes amp-migrate's findings;
  2. then the server precompiles the includes ("precompiling the includes of FILE" begin/end);
  3. edits of the body after that are checked against the preamble and publish the same findings
     (moved with the code), and the quick fix equals amp-migrate --fix's file;
  4. a burst of changes publishes the last version, and no older one after it.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client_test import Client, apply_edits, cli_findings, expect, fresh_workdir, uri_of  # noqa: E402


def progress_until(c, kind, title_part):
    """Reads messages until a $/progress of `kind` whose begin message contains title_part."""
    tokens = {}
    while True:
        msg = c.read()
        if "id" in msg and msg.get("method") == "window/workDoneProgress/create":
            c.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            continue
        if msg.get("method") != "$/progress":
            c.notifications.append(msg)
            continue
        v, tok = msg["params"]["value"], msg["params"]["token"]
        if v["kind"] == "begin":
            tokens[tok] = v.get("message", "")
        if v["kind"] == kind and title_part in tokens.get(tok, ""):
            return tokens[tok]


def main():
    tool, mock, src, work = sys.argv[1:5]
    fresh_workdir(work)
    path = os.path.join(work, "train.cpp")
    shutil.copy(src, path)
    original = open(path, encoding="utf-8").read()
    args = ["-std=c++17", "-I" + mock]
    expected = cli_findings(tool, path, args)
    fixed_copy = os.path.join(work, "fixed.cpp")
    shutil.copy(src, fixed_copy)
    subprocess.run([tool, "--fix", "--use-color=never", fixed_copy, "--"] + args, check=True, capture_output=True)
    migrated = open(fixed_copy, encoding="utf-8").read()

    c = Client([tool, "--lsp"])
    c.request("initialize", {"processId": os.getpid(), "capabilities": {"window": {"workDoneProgress": True}},
                             "initializationOptions": {"extraArgs": ["-I" + mock]}})
    c.notify("initialized", {})
    uri = uri_of(path)
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": original}})
    expect("parsing train.cpp" in progress_until(c, "end", "parsing"), "$/progress around the first, whole parse")
    got = [(d["range"]["start"]["line"], d["range"]["start"]["character"], d["code"]) for d in c.diagnostics(uri)["diagnostics"]]
    expect(got == expected and len(got) >= 5, "the first check publishes amp-migrate's findings (%d)" % len(got))
    progress_until(c, "end", "precompiling the includes of train.cpp")
    expect(True, "$/progress around the precompilation of the includes")

    # A body edit (a comment line above the function): checked against the preamble.
    lines = original.split("\n")
    at = next(i for i, l in enumerate(lines) if l.startswith("void train"))
    edited = "\n".join(lines[:at] + ["// a note"] + lines[at:])
    c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": edited}]})
    pub = c.diagnostics(uri)
    moved = [(l + 1 if l >= at else l, ch, code) for l, ch, code in expected]
    got = [(d["range"]["start"]["line"], d["range"]["start"]["character"], d["code"]) for d in pub["diagnostics"]]
    expect(pub["version"] == 2 and got == moved, "a body edit, against the preamble: the same findings, moved")
    diags = pub["diagnostics"]
    actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": diags[0]["range"],
                                                    "context": {"diagnostics": diags[:1]}})
    ml = migrated.split("\n")
    mat = next(i for i, l in enumerate(ml) if l.startswith("void train"))
    expect(apply_edits(edited, actions[0]["edit"]["changes"][uri]) == "\n".join(ml[:mat] + ["// a note"] + ml[mat:]),
           "its quick fix equals amp-migrate --fix's file")

    # A burst: versions 3..7 sent at once; version 7 is published, nothing older after it.
    for v in range(3, 8):
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": v},
                                            "contentChanges": [{"text": edited + "\n// burst %d\n" % v}]})
    versions = []
    while not versions or versions[-1] != 7:
        versions.append(c.diagnostics(uri)["version"])
    c.request("shutdown", None)
    c.notify("exit", None)
    expect(c.proc.wait(timeout=30) == 0, "shutdown + exit: status 0")
    expect(versions == sorted(versions) and len(versions) <= 3,
           "a burst of changes: the last version published (published: %s)" % versions)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (AssertionError, RuntimeError) as e:
        print("FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)
