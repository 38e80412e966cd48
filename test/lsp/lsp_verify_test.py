#!/usr/bin/env python3
"""Verified quick fixes in the language server, verified after the diagnostics (ctest lsp.verify).

usage: lsp_verify_test.py <amp-migrate> <mock-torch include dir> <input.cpp> <work dir> <rules.yaml>

<rules.yaml> makes the step's rewrite not compile (test/driver/Inputs/wrong-arity-target.yaml):
the command line withdraws that fix and reports amp-manual-migration. Over JSON-RPC:
  1. with background verification off (verifyDelayMs huge), the diagnostics of a version arrive
     without waiting for the verification: the analysis' findings, the step still marked fixable,
     no amp-manual-migration, and nothing else is published;
  2. a code action request then verifies the fixes: the broken fix is never offered (no action),
     and the diagnostics of that version are republished first, equal to the command line's
     (amp-manual-migration with the compiler's reason, the step no longer fixable);
  3. a new version is published unverified again and verified again on request; a second request
     for the same version answers from the cached verification (nothing republished);
  4. with a short delay, the server verifies unasked once the file is idle and republishes; a burst
     of changes obsoletes the older versions' verifications (nothing older published after newer);
  5. with the default rules (the fix compiles), a code action waits for the verification and
     offers the verified fix, equal to amp-migrate --fix's file;
  6. a header holding a step, opened with a compile database that lists only the source including
     it (the header's command is interpolated from the source's and ends in `-- header`): its fix
     is verified and offered too, equal to the command line's --fix of the header.
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client_test import Client, apply_edits, expect, fresh_workdir, uri_of  # noqa: E402

MANUAL = "amp-manual-migration"


def start(tool, mock, extra):
    c = Client([tool, "--lsp"])
    opts = {"extraArgs": ["-I" + mock]}
    opts.update(extra)
    c.request("initialize", {"processId": os.getpid(), "capabilities": {}, "initializationOptions": opts})
    c.notify("initialized", {})
    return c


def stop(c):
    c.request("shutdown", None)
    c.notify("exit", None)
    expect(c.proc.wait(timeout=30) == 0, "shutdown + exit: status 0")


def keys(diags):
    return [(d["range"]["start"]["line"], d["range"]["start"]["character"], d.get("code", d["message"])) for d in diags]


def published(c, uri, version):
    """Every publishDiagnostics of uri/version received so far (removed from the queue)."""
    got = [m["params"] for m in c.notifications
           if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
           and m["params"].get("version") == version]
    c.notifications = [m for m in c.notifications if not (
        m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)]
    return got


def drain(c, seconds):
    """Reads what the server sends in the next `seconds` (with a ping request at the end, so that
    the read returns): the notifications land in c.notifications."""
    time.sleep(seconds)
    try:
        c.request("amp-migrate/no-such-method", {})
    except RuntimeError:
        pass  # method not found: answered after everything sent before it


def whole(text):
    return {"start": {"line": 0, "character": 0}, "end": {"line": text.count("\n") + 1, "character": 0}}


def main():
    tool, mock, src, work, rules = map(os.path.abspath, sys.argv[1:6])
    fresh_workdir(work)
    args = ["-std=c++17", "-I" + mock]
    # The command line's verdict on the same file (same name: the reason names the file), verified
    # (--verify-fixes: a plain lint run defers the verification, docs/performance.md).
    cli_dir = os.path.join(work, "cli")
    os.makedirs(cli_dir)
    cli_path = os.path.join(cli_dir, "train.cpp")
    shutil.copy(src, cli_path)
    out = subprocess.run([tool, "--use-color=never", "--verify-fixes", "--rules=" + rules, cli_path, "--"] + args,
                         capture_output=True, text=True).stdout
    expected = [(int(m.group(1)) - 1, int(m.group(2)) - 1, m.group(4), m.group(3))
                for m in re.finditer(r"^.*?:(\d+):(\d+): warning: (.*) \[([a-z0-9-]+)\]$", out, re.M)]
    expect(any(code == MANUAL and "would not compile" in msg for _, _, code, msg in expected),
           "the command line withdraws the broken fix (amp-manual-migration)")
    analysed = [e for e in expected if e[2] != MANUAL]

    path = os.path.join(work, "train.cpp")
    shutil.copy(src, path)
    text = open(path, encoding="utf-8").read()
    uri = uri_of(path)

    # 1-3: verification only when a code action asks for it.
    c = start(tool, mock, {"rules": [rules], "verifyDelayMs": 3600 * 1000})
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": text}})
    first = c.diagnostics(uri)
    expect(first["version"] == 1 and keys(first["diagnostics"]) == [e[:3] for e in analysed],
           "the first diagnostics are the analysis', before any verification (no %s)" % MANUAL)
    expect(any(d.get("data", {}).get("fixable") for d in first["diagnostics"]),
           "the step is still marked fixable there (its fix is not verified yet)")
    drain(c, 1.5)
    expect(published(c, uri, 1) == [], "nothing else is published while no code action asks")
    actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole(text),
                                                    "context": {"diagnostics": first["diagnostics"]}})
    expect(actions == [], "the fix that does not compile is never offered as a code action")
    again = published(c, uri, 1)
    expect(len(again) == 1, "the code action's verification republishes version 1 (%d)" % len(again))
    diags = again[0]["diagnostics"]
    expect([(k[0], k[1], k[2], d["message"]) for k, d in zip(keys(diags), diags)] == expected,
           "republished: the command line's findings, with %s and the compiler's reason" % MANUAL)
    expect(not any(d.get("data", {}).get("fixable") for d in diags), "the step is no longer fixable")

    # A new version: published unverified, verified again on request, then answered from cache.
    edited = text + "\n// an edit\n"
    c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": edited}]})
    pub = c.diagnostics(uri)
    expect(pub["version"] == 2 and MANUAL not in [d["code"] for d in pub["diagnostics"]],
           "a new version is published at once, unverified")
    actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole(edited),
                                                    "context": {"diagnostics": []}})
    v2 = published(c, uri, 2)
    expect(actions == [] and len(v2) == 1 and [d["message"] for d in v2[0]["diagnostics"]] ==
           [d["message"] for d in diags] and keys(v2[0]["diagnostics"]) == keys(diags),
           "its code action verifies it: no action, the withdrawal republished (the same reason)")
    actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole(edited),
                                                    "context": {"diagnostics": []}})
    expect(actions == [] and published(c, uri, 2) == [], "the same version again: the cached verification")
    stop(c)

    # 4: unasked, once the file is idle.
    c = start(tool, mock, {"rules": [rules], "verifyDelayMs": 100})
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": text}})
    first = c.diagnostics(uri)
    second = c.diagnostics(uri)
    expect(MANUAL not in [d["code"] for d in first["diagnostics"]] and second["version"] == 1 and
           keys(second["diagnostics"]) == [e[:3] for e in expected],
           "idle: verified in the background and republished with %s" % MANUAL)
    actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole(text),
                                                    "context": {"diagnostics": []}})
    expect(actions == [], "and no action offered")
    # A burst of versions: a newer version obsoletes the older ones' verifications; nothing of
    # an older version is published after a newer one, and the last one ends verified.
    for v in range(2, 6):
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": v},
                                            "contentChanges": [{"text": text + "\n// burst %d\n" % v}]})
    versions = []
    while True:
        pub = c.diagnostics(uri)
        versions.append(pub["version"])
        if pub["version"] == 5 and MANUAL in [d["code"] for d in pub["diagnostics"]]:
            break
    expect(versions == sorted(versions), "a burst: no older version published after a newer one (%s)" % versions)
    stop(c)

    # 5: a fix that compiles is offered once verified.
    fixed_copy = os.path.join(cli_dir, "fixed.cpp")
    shutil.copy(src, fixed_copy)
    subprocess.run([tool, "--fix", "--use-color=never", fixed_copy, "--"] + args, check=True, capture_output=True)
    migrated = open(fixed_copy, encoding="utf-8").read()
    c = start(tool, mock, {"verifyDelayMs": 3600 * 1000})
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": text}})
    first = c.diagnostics(uri)
    actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole(text),
                                                    "context": {"diagnostics": first["diagnostics"]}})
    expect(len(actions) == 1 and apply_edits(text, actions[0]["edit"]["changes"][uri]) == migrated,
           "a fix that compiles: offered after its verification, equal to amp-migrate --fix's file")
    expect(published(c, uri, 1) == [], "nothing withdrawn: not republished")
    stop(c)
    expect(open(path, encoding="utf-8").read() == text, "the server wrote no file")

    # 6: a header, its compile command interpolated from the source that includes it.
    proj = os.path.join(work, "proj")
    os.makedirs(proj)
    header = os.path.join(proj, "train_step.h")
    shutil.copy(src, header)
    with open(os.path.join(proj, "main.cpp"), "w", encoding="utf-8") as f:
        f.write('#include "train_step.h"\nint main() { return 0; }\n')
    with open(os.path.join(proj, "compile_commands.json"), "w", encoding="utf-8") as f:
        f.write('[{"directory": "%s", "file": "main.cpp", "command": "c++ -std=c++17 -I%s -c main.cpp"}]'
                % (proj, mock))
    htext = open(header, encoding="utf-8").read()
    fixed_header = os.path.join(cli_dir, "fixed_header")
    shutil.copytree(proj, fixed_header)
    subprocess.run([tool, "--fix", "--use-color=never", "-p", fixed_header,
                    os.path.join(fixed_header, "train_step.h")], check=True, capture_output=True)
    hmigrated = open(os.path.join(fixed_header, "train_step.h"), encoding="utf-8").read()
    expect(hmigrated != htext, "the command line fixes the header")
    huri = uri_of(header)
    c = Client([tool, "--lsp"])
    c.request("initialize", {"processId": os.getpid(), "capabilities": {},
                             "initializationOptions": {"compilationDatabasePath": proj, "verifyDelayMs": 3600 * 1000}})
    c.notify("initialized", {})
    c.notify("textDocument/didOpen", {"textDocument": {"uri": huri, "languageId": "cpp", "version": 1, "text": htext}})
    first = c.diagnostics(huri)
    actions = c.request("textDocument/codeAction", {"textDocument": {"uri": huri}, "range": whole(htext),
                                                    "context": {"diagnostics": first["diagnostics"]}})
    withdrawn = [d["message"] for p in published(c, huri, 1) for d in p["diagnostics"] if d.get("code") == MANUAL]
    expect(withdrawn == [], "the header's fix is not withdrawn (%s)" % withdrawn)
    expect(len(actions) == 1 and apply_edits(htext, actions[0]["edit"]["changes"][huri]) == hmigrated,
           "a header's step: its fix verified and offered, equal to amp-migrate --fix's header")
    stop(c)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (AssertionError, RuntimeError) as e:
        print("FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)
