#!/usr/bin/env python3
"""amp-migrate --lsp under bad settings and ids (issue 39 item 11): initializationOptions of the
wrong type, and a `checks` glob that enables no check, are each named in a window/showMessage
warning (they were ignored silently: zero diagnostics, no word why); a request whose id is not a
string, a number or null is answered with an Invalid Request error whose id is null (the id was
echoed back). Prints the warnings and the error, then "ok".

usage: lsp_settings.py <amp-migrate>"""
import json
import subprocess
import sys


def frame(obj):
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def run(init_options, extra=()):
    proc = subprocess.Popen([sys.argv[1], "--lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    stream = b"".join([frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                              "params": {"capabilities": {}, "initializationOptions": init_options}})]
                      + [frame(m) for m in extra]
                      + [frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}),
                         frame({"jsonrpc": "2.0", "method": "exit"})])
    out, err = proc.communicate(stream, timeout=60)
    got = []
    while out:
        head, _, rest = out.partition(b"\r\n\r\n")
        length = int(head.split(b":")[1])
        got.append(json.loads(rest[:length]))
        out = rest[length:]
    if proc.returncode != 0:
        sys.exit("exit status %d\n%s" % (proc.returncode, err.decode()))
    return got


def warnings(got):
    return [m["params"]["message"] for m in got
            if m.get("method") == "window/showMessage" and m["params"]["type"] == 2]


got = run("not an object")
print("\n".join(warnings(got)))
got = run({"level": 3, "extraArgs": "-DX", "debounceMs": "fast", "checks": "amp_*"})
print("\n".join(warnings(got)))
got = run({}, [{"jsonrpc": "2.0", "id": {}, "method": "textDocument/codeAction", "params": {}},
               {"jsonrpc": "2.0", "id": [1], "method": "shutdown"}])
bad = [m for m in got if "error" in m]
if len(bad) != 2 or any(m["id"] is not None or m["error"]["code"] != -32600 for m in bad):
    sys.exit("expected two -32600 errors with id null, got %r" % bad)
print(bad[0]["error"]["message"])
print("ok")
