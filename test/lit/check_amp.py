#!/usr/bin/env python3
"""Runs amp-migrate on a test file like clang-tidy's check_clang_tidy.py.

usage: check_amp.py <amp-migrate> <mock include dir> <input.cpp> <temp file> [tool args...] [-- compiler args]

A mock include dir of "-" parses against the compiler args' headers only (real libtorch).

The input's `// CHECK-*` comments are blanked (lines keep their numbers), the copy is checked with
`--fix`, the diagnostics are matched with FileCheck against CHECK-MESSAGES, and the fixed file
against CHECK-FIXES. A file with no CHECK-MESSAGES asserts that the tool says nothing.
"""
import re
import subprocess
import sys


def main():
    tool, mock, src, tmp = sys.argv[1:5]
    rest = sys.argv[5:]
    if "--" in rest:
        i = rest.index("--")
        tool_args, cc_args = rest[:i], rest[i + 1:]
    else:
        tool_args, cc_args = rest, []
    text = open(src, encoding="utf-8").read()
    cleaned = re.sub(r"// *CHECK-[A-Z0-9-]*:[^\r\n]*", "//", text)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(cleaned)
    mock_args = [] if mock == "-" else ["-I" + mock]
    cmd = [tool, "--fix", "--use-color=never", *tool_args, tmp, "--", "-std=c++17", *mock_args, *cc_args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = p.stdout
    sys.stdout.write(out)
    sys.stderr.write(p.stderr)
    if p.returncode not in (0, 1):
        print("amp-migrate exited with %d" % p.returncode, file=sys.stderr)
        return 1
    has_messages = "CHECK-MESSAGES" in text
    if has_messages:
        r = subprocess.run(["FileCheck", src, "-check-prefix=CHECK-MESSAGES", "-implicit-check-not={{warning|error}}:"],
                           input=out, text=True)
        if r.returncode:
            return r.returncode
    elif re.search(r"(warning|error):", out):
        print("expected no findings, got:\n" + out, file=sys.stderr)
        return 1
    if "CHECK-FIXES" in text:
        fixed = open(tmp, encoding="utf-8").read()
        # The blanked CHECK comments are not part of the code under test.
        fixed = "".join(l for l in fixed.splitlines(keepends=True) if l.strip() != "//")
        r = subprocess.run(["FileCheck", src, "-check-prefix=CHECK-FIXES", "-strict-whitespace"], input=fixed, text=True)
        if r.returncode:
            print("--- fixed file ---\n" + fixed, file=sys.stderr)
            return r.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
