#!/usr/bin/env python3
"""Applies clang's parseable fix-it lines to files, as an editor reading them would.

usage: apply_fixits.py <report with fix-it lines> [<file to write instead of the named one>]

Each line `fix-it:"FILE":{L1:C1-L2:C2}:"TEXT"` (clang -fdiagnostics-parseable-fixits: 1-based
lines, 1-based byte columns, end exclusive; TEXT with \\ \" \n \t and octal escapes) replaces that
range of FILE. All positions refer to the original text; edits are applied from the end.
"""
import re
import sys

FIXIT = re.compile(r'^fix-it:"((?:[^"\\]|\\.)*)":\{(\d+):(\d+)-(\d+):(\d+)\}:"((?:[^"\\]|\\.)*)"$')


def unescape(s):
    out = bytearray()
    i = 0
    b = s.encode("utf-8")
    while i < len(b):
        c = b[i]
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        n = b[i + 1:i + 2]
        if n == b"n":
            out += b"\n"; i += 2
        elif n == b"t":
            out += b"\t"; i += 2
        elif n in (b"\\", b'"'):
            out += n; i += 2
        elif n.isdigit():
            j = i + 1
            while j < len(b) and j < i + 4 and chr(b[j]) in "01234567":
                j += 1
            out.append(int(b[i + 1:j], 8)); i = j
        else:
            out += b"\\" + n; i += 2
    return bytes(out)


def offset(text, line, col):
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == 0x0A]
    return starts[line - 1] + col - 1


def main():
    edits = {}
    for raw in open(sys.argv[1], encoding="utf-8"):
        m = FIXIT.match(raw.rstrip("\n"))
        if m:
            f = unescape(m.group(1)).decode("utf-8")
            edits.setdefault(f, []).append((int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)), unescape(m.group(6))))
    if not edits:
        print("no fix-it lines", file=sys.stderr)
        return 1
    for f, es in edits.items():
        text = open(f, "rb").read()
        spans = sorted(((offset(text, l1, c1), offset(text, l2, c2), t) for l1, c1, l2, c2, t in es), reverse=True)
        for b, e, t in spans:
            text = text[:b] + t + text[e:]
        out = sys.argv[2] if len(sys.argv) > 2 else f
        open(out, "wb").write(text)
        print("%s: %d edits" % (f, len(es)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
