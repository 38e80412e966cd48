#!/usr/bin/env python3
"""The language server's verified quick fix on the real <torch/torch.h> file of lsp_latency.py.

usage: bench/lsp_verified_fix.py <amp-migrate>

Opens the file, asks for the code actions at once (the first verification: a whole parse of the
rewritten file), waits 45 s (the builder precompiles the rewritten file's includes), edits the
body and asks again (the verification against that preamble). Prints each answer's seconds and
whether the quick fix's edits give exactly amp-migrate --fix's file.
"""
import os, shutil, subprocess, sys, time
import torch_workdir
sys.path.insert(0, os.path.join(torch_workdir.ROOT, "test", "lsp"))
from lsp_client_test import Client, apply_edits
tool = sys.argv[1]
work, (path,) = torch_workdir.make("lsp-real-", {"train.cpp": torch_workdir.step_source()})
text = open(path).read()
subprocess.run([tool, "--fix", "-p", work, path], capture_output=True)
migrated = open(path).read(); open(path, "w").write(text)
print("cli changed:", migrated != text)
uri = "file://" + path
c = Client([tool, "--lsp"])
c.request("initialize", {"processId": os.getpid(), "capabilities": {}})
c.notify("initialized", {})
c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": text}})
d1 = c.diagnostics(uri)
lines = text.split("\n")
rng = {"start": {"line": 0, "character": 0}, "end": {"line": len(lines) - 1, "character": 0}}
t = time.monotonic(); a = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": rng, "context": {"diagnostics": []}})
print("v1 action in %.2fs, equal to --fix: %s" % (time.monotonic() - t, apply_edits(text, a[0]["edit"]["changes"][uri]) == migrated))
time.sleep(45)  # the verification preamble
edited = text + "\n// edit\n"
c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": edited}]})
c.diagnostics(uri)
t = time.monotonic(); a = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": rng, "context": {"diagnostics": []}})
print("v2 action in %.2fs, equal to --fix: %s" % (time.monotonic() - t, apply_edits(edited, a[0]["edit"]["changes"][uri]) == migrated + "\n// edit\n"))
c.request("shutdown", None); c.notify("exit", None); c.proc.wait(timeout=60)
shutil.rmtree(work)
