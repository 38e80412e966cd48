#!/usr/bin/env python3
"""Compares the diagnostics of amp-migrate and of clang-tidy with the plugin.

usage: compare_findings.py <amp-migrate output> <clang-tidy output>

Both print clang-style `file:line:col: warning|error|note: message [check]` lines. The warnings
(with their check ids, lines, columns and messages) must be the same, in the same order, and so
must the notes that follow each. Prints the common list; exits 1 with both lists when they differ.
"""
import re
import sys

DIAG = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): (?P<kind>warning|error|note): (?P<msg>.*?)(?: \[(?P<check>[a-z0-9-]+(?:,[a-z0-9-]+)*)\])?$")


def diagnostics(path):
    out = []
    for line in open(path, encoding="utf-8", errors="replace"):
        m = DIAG.match(line.rstrip("\n"))
        if not m:
            continue
        # The file name is printed as each tool was given it; compare its base name only.
        base = m.group("file").replace("\\", "/").rsplit("/", 1)[-1]
        out.append((base, int(m.group("line")), int(m.group("col")), m.group("kind"), m.group("msg"), m.group("check") or ""))
    return out


def main():
    amp, tidy = diagnostics(sys.argv[1]), diagnostics(sys.argv[2])
    for d in amp:
        print("%s:%d:%d: %s: %s [%s]" % d)
    if amp != tidy:
        print("--- amp-migrate ---", file=sys.stderr)
        for d in amp:
            print("%s:%d:%d: %s: %s [%s]" % d, file=sys.stderr)
        print("--- clang-tidy ---", file=sys.stderr)
        for d in tidy:
            print("%s:%d:%d: %s: %s [%s]" % d, file=sys.stderr)
        return 1
    if not amp:
        print("no diagnostics at all: nothing was compared", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
