#!/usr/bin/env python3
"""amp-migrate --lsp under protocol errors (issue 13 item 7 and "unclear errors"): a bad
Content-Length, a header block without one, invalid JSON and JSON nested 100000 deep are each
answered with a JSON-RPC error (-32700), and the server keeps serving: a later `initialize` is
answered and shutdown/exit ends it with status 0.

usage: lsp_errors.py <amp-migrate>"""
import json
import subprocess
import sys

proc = subprocess.Popen([sys.argv[1], "--lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)


def frame(body):
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def msg(obj):
    return frame(json.dumps(obj).encode())


stream = b"".join([
    b"Content-Length: banana\r\n\r\n",
    b"X-Other: 1\r\n\r\n",
    frame(b"{not json"),
    frame(b"[" * 100000 + b"]" * 100000),
    msg({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}),
    msg({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}),
    msg({"jsonrpc": "2.0", "method": "exit"}),
])
out, err = proc.communicate(stream, timeout=60)


def messages(data):
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(head.split(b":")[1])
        yield json.loads(rest[:length])
        data = rest[length:]


got = list(messages(out))
errors = [m for m in got if "error" in m]
codes = [m["error"]["code"] for m in errors]
if codes != [-32700] * 4:
    sys.exit("expected four -32700 errors, got %r\n%s" % (codes, err.decode()))
if not any(m.get("id") == 1 and "result" in m for m in got):
    sys.exit("initialize after the errors was not answered: %r" % got)
if proc.returncode != 0:
    sys.exit("exit status %d\n%s" % (proc.returncode, err.decode()))
for m in errors:
    print(m["error"]["message"])
print("ok")
