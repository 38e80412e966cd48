#!/usr/bin/env python3
"""A scripted LSP client for `amp-migrate --lsp` (ctest lsp.quickfix).

usage: lsp_client_test.py <amp-migrate> <mock-torch include dir> <input.cpp> <work dir> [<multi-step.cpp>]

Checks, over JSON-RPC on the server's stdin/stdout:
  1. initialize advertises full text sync and quick-fix code actions;
  2. didOpen of a file using the mock libtorch headers publishes the findings amp-migrate reports
     (check ids as codes, 0-based positions, severity 2, source amp-migrate), within a second;
  3. a code action request at a diagnostic returns one `quickfix` titled "Migrate this training
     step to amp::value_and_grad" whose edits, applied here, give exactly `amp-migrate --fix`'s file;
  4. didChange with the migrated text is re-checked (no diagnostics left), and didChange back to a
     text with the step brings them back, with unsaved text only (the file on disk never changes);
  5. compile flags come from a compile_commands.json found upward from the file, like clangd;
  6. shutdown and exit end the server with status 0, and no file was written;
  7. a file under an .amp-migrate.yaml gets that configuration's checks and level (the same
     findings and fixed file as amp-migrate run on it);
  8. (with a multi-step file) one quick fix per step; applying them one at a time, each after the
     re-check of the previous result, gives amp-migrate --fix's file.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

TITLE = "Migrate this training step to amp::value_and_grad"


class Client:
    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr)
        self.next_id = 1
        self.notifications = []

    def send(self, msg):
        body = json.dumps(msg).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self):
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("server closed its output")
            line = line.strip()
            if not line:
                break
            name, _, value = line.decode("ascii").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = self.read()
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError("%s failed: %s" % (method, msg["error"]))
                return msg["result"]
            self.notifications.append(msg)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def diagnostics(self, uri):
        """The next publishDiagnostics for uri (earlier notifications first)."""
        while True:
            for i, msg in enumerate(self.notifications):
                if msg.get("method") == "textDocument/publishDiagnostics" and msg["params"]["uri"] == uri:
                    del self.notifications[i]
                    return msg["params"]
            self.notifications.append(self.read())


def uri_of(path):
    return "file://" + "".join(c if re.match(r"[A-Za-z0-9\-._~/]", c) else "%%%02X" % ord(c) for c in path)


def offset_of(text, pos):
    """Byte offset of an LSP position (UTF-16 characters) in text."""
    lines = text.split("\n")
    prefix = "\n".join(lines[:pos["line"]])
    start = len(prefix) + (1 if pos["line"] > 0 else 0)
    line = lines[pos["line"]] if pos["line"] < len(lines) else ""
    units, chars = 0, 0
    while chars < len(line) and units < pos["character"]:
        units += 2 if ord(line[chars]) > 0xFFFF else 1
        chars += 1
    return start + chars


def apply_edits(text, edits):
    spans = sorted(((offset_of(text, e["range"]["start"]), offset_of(text, e["range"]["end"]), e["newText"]) for e in edits),
                   key=lambda s: (s[0], s[1]), reverse=True)
    for b, e, t in spans:
        text = text[:b] + t + text[e:]
    return text


def expect(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok: " + what)


def cli_findings(tool, path, args):
    out = subprocess.run([tool, "--use-color=never", path, "--"] + args, capture_output=True, text=True).stdout
    return [(int(m.group(1)) - 1, int(m.group(2)) - 1, m.group(3))
            for m in re.finditer(r"^.*?:(\d+):(\d+): warning: .*\[([a-z0-9-]+)\]$", out, re.M)]


def fresh_workdir(work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # The work dir sits in the build tree, whose own compile_commands.json would be found upward
    # (with the project's include paths): an empty database here keeps the test hermetic.
    with open(os.path.join(work, "compile_commands.json"), "w") as f:
        f.write("[]\n")


def main():
    tool, mock, src, work = sys.argv[1:5]
    fresh_workdir(work)
    # A directory name with a space: URIs are percent-encoded.
    proj = os.path.join(work, "my proj")
    os.makedirs(proj)
    path = os.path.join(proj, "train.cpp")
    shutil.copy(src, path)
    original = open(path, encoding="utf-8").read()
    args = ["-std=c++17", "-I" + mock]

    expected_fix = os.path.join(work, "expected.cpp")
    shutil.copy(src, expected_fix)
    subprocess.run([tool, "--fix", "--use-color=never", expected_fix, "--"] + args, check=True, capture_output=True)
    migrated = open(expected_fix, encoding="utf-8").read()
    expect(migrated != original, "amp-migrate --fix rewrites the input")
    cli_copy = os.path.join(work, "cli.cpp")
    shutil.copy(src, cli_copy)
    expected_diags = cli_findings(tool, cli_copy, args)

    c = Client([tool, "--lsp"])
    init = c.request("initialize", {"processId": os.getpid(), "rootUri": uri_of(work), "capabilities": {},
                                    "initializationOptions": {"extraArgs": ["-I" + mock]}})
    caps = init["capabilities"]
    sync = caps["textDocumentSync"]
    expect((sync if isinstance(sync, int) else sync["change"]) == 1 and sync.get("openClose"), "full text sync")
    expect("quickfix" in caps["codeActionProvider"]["codeActionKinds"], "quick-fix code actions advertised")
    c.notify("initialized", {})

    uri = uri_of(path)
    t0 = time.time()
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": original}})
    pub = c.diagnostics(uri)
    elapsed = time.time() - t0
    diags = pub["diagnostics"]
    got = [(d["range"]["start"]["line"], d["range"]["start"]["character"], d["code"]) for d in diags]
    print("diagnostics:", got, "in %.2fs" % elapsed)
    expect(got == expected_diags and len(got) >= 5, "the diagnostics are amp-migrate's findings (%d)" % len(got))
    expect(all(d["severity"] == 2 and d["source"] == "amp-migrate" for d in diags), "warnings from source amp-migrate")
    # A second on an idle machine; CI machines run other builds at the same time.
    expect(elapsed < float(os.environ.get("AMP_LSP_MAX_SECONDS", "5")), "diagnostics in %.2fs" % elapsed)

    scope = next(d for d in diags if d["code"] == "amp-autocast-scope")
    cursor = scope["range"]["start"]
    actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {"start": cursor, "end": cursor},
                                                    "context": {"diagnostics": [scope]}})
    expect(len(actions) == 1 and actions[0]["title"] == TITLE and actions[0]["kind"] == "quickfix",
           "one quick fix: " + TITLE)
    edit = actions[0]["edit"]
    changes = edit["changes"]
    expect(list(changes) == [uri], "the edit changes the open document only")
    fixed = apply_edits(original, changes[uri])
    expect(fixed == migrated, "the quick fix's edits give amp-migrate --fix's output")

    # A range with only a non-fixable line: no actions.
    none = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                                                 "context": {"diagnostics": []}})
    expect(none == [], "no action away from the findings")

    # The editor applies the edit (unsaved): re-checked, nothing left.
    c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]})
    pub = c.diagnostics(uri)
    expect(pub["diagnostics"] == [] and pub.get("version") == 2, "didChange to the migrated text: no diagnostics")
    # Undo: the findings come back, from unsaved text.
    c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": original}]})
    pub = c.diagnostics(uri)
    expect(len(pub["diagnostics"]) == len(diags), "didChange back: re-checked, the findings are back")
    # Lines inserted above the step move the diagnostics.
    shifted = "// a comment\n// another\n" + original
    c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": shifted}]})
    pub = c.diagnostics(uri)
    expect([d["range"]["start"]["line"] for d in pub["diagnostics"]] == [l + 2 for l, _, _ in got],
           "didChange with new text: diagnostics move with the code")
    actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": pub["diagnostics"][0]["range"],
                                                    "context": {"diagnostics": pub["diagnostics"][:1]}})
    expect(apply_edits(shifted, actions[0]["edit"]["changes"][uri]) == "// a comment\n// another\n" + migrated,
           "the quick fix on the changed text is computed on that text")
    c.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    pub = c.diagnostics(uri)
    expect(len(pub["diagnostics"]) == len(diags), "didSave re-checks the buffer")
    c.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    expect(c.diagnostics(uri)["diagnostics"] == [], "didClose clears the diagnostics")

    # A file whose flags come from compile_commands.json found upward (no extraArgs for it).
    cdb_dir = os.path.join(work, "cdb")
    os.makedirs(os.path.join(cdb_dir, "src"))
    cdb_file = os.path.join(cdb_dir, "src", "step.cpp")
    shutil.copy(src, cdb_file)
    with open(os.path.join(cdb_dir, "compile_commands.json"), "w") as f:
        json.dump([{"directory": cdb_dir, "file": cdb_file, "arguments": ["c++", "-std=c++17", "-I" + mock, "-c", cdb_file]}], f)
    c2 = Client([tool, "--lsp"])
    c2.request("initialize", {"processId": os.getpid(), "rootUri": uri_of(cdb_dir), "capabilities": {}})
    c2.notify("initialized", {})
    c2.notify("textDocument/didOpen", {"textDocument": {"uri": uri_of(cdb_file), "languageId": "cpp", "version": 1,
                                                        "text": open(cdb_file).read()}})
    pub = c2.diagnostics(uri_of(cdb_file))
    expect(len(pub["diagnostics"]) == len(diags), "flags from compile_commands.json found upward")
    # A text that does not parse: one information diagnostic, no findings, no fixes.
    c2.notify("textDocument/didChange", {"textDocument": {"uri": uri_of(cdb_file), "version": 2},
                                         "contentChanges": [{"text": original.replace("scaler.update();", "scaler.update(")}]})
    pub = c2.diagnostics(uri_of(cdb_file))
    expect(len(pub["diagnostics"]) == 1 and pub["diagnostics"][0]["severity"] == 3, "a broken buffer is not analysed")
    c2.request("shutdown", None)
    c2.notify("exit", None)
    expect(c2.proc.wait(timeout=10) == 0, "second server exits 0")

    configured(c, tool, args, src, work)
    if len(sys.argv) > 5:
        multi_step(c, tool, args, sys.argv[5], work)

    c.request("shutdown", None)
    c.notify("exit", None)
    expect(c.proc.wait(timeout=10) == 0, "shutdown + exit: status 0")
    expect(open(path, encoding="utf-8").read() == original and open(cdb_file).read() == original,
           "the server wrote no file")
    return 0


def configured(c, tool, args, src, work):
    cfg_dir = os.path.join(work, "configured")
    os.makedirs(cfg_dir)
    with open(os.path.join(cfg_dir, ".amp-migrate.yaml"), "w") as f:
        f.write('Checks: "-*,amp-autocast-scope,amp-scaler-step"\nLevel: O3\n')
    path = os.path.join(cfg_dir, "train.cpp")
    shutil.copy(src, path)
    text = open(path, encoding="utf-8").read()
    cli_copy = os.path.join(cfg_dir, "cli.cpp")
    shutil.copy(src, cli_copy)
    expected_diags = cli_findings(tool, cli_copy, args)
    subprocess.run([tool, "--fix", "--use-color=never", cli_copy, "--"] + args, check=True, capture_output=True)
    expected_fix = open(cli_copy, encoding="utf-8").read()
    expect("amp::Level::O3" in expected_fix, "amp-migrate --fix takes the level from .amp-migrate.yaml")
    uri = uri_of(path)
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": text}})
    diags = c.diagnostics(uri)["diagnostics"]
    got = [(d["range"]["start"]["line"], d["range"]["start"]["character"], d["code"]) for d in diags]
    expect(got == expected_diags and {d["code"] for d in diags} == {"amp-autocast-scope", "amp-scaler-step"},
           "a file under .amp-migrate.yaml: that configuration's checks (%d findings)" % len(got))
    actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": diags[0]["range"],
                                                    "context": {"diagnostics": diags[:1]}})
    expect(apply_edits(text, actions[0]["edit"]["changes"][uri]) == expected_fix,
           "its quick fix uses the configuration's level, like amp-migrate --fix")
    c.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    c.diagnostics(uri)


def multi_step(c, tool, args, src, work):
    path = os.path.join(work, "multi.cpp")
    shutil.copy(src, path)
    text = open(path, encoding="utf-8").read()
    expected = os.path.join(work, "multi-expected.cpp")
    shutil.copy(src, expected)
    subprocess.run([tool, "--fix", "--use-color=never", expected, "--"] + args, check=True, capture_output=True)
    uri = uri_of(path)
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": text}})
    diags = c.diagnostics(uri)["diagnostics"]
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": text.count("\n") + 1, "character": 0}}
    actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole, "context": {"diagnostics": diags}})
    expect(len(actions) == 3 and all(a["title"] == TITLE for a in actions), "three steps: three quick fixes")
    version = 1
    while actions:
        text = apply_edits(text, actions[0]["edit"]["changes"][uri])
        version += 1
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]})
        c.diagnostics(uri)
        actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole, "context": {"diagnostics": []}})
    expect(version == 4, "each quick fix migrates one step")
    expect(text == open(expected, encoding="utf-8").read(), "the steps fixed one at a time give amp-migrate --fix's file")
    c.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    c.diagnostics(uri)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (AssertionError, RuntimeError) as e:
        print("FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)
