#!/usr/bin/env python3
"""clang-tidy with the plugin against amp-migrate over every per-check lit test (test/checks/*.cpp).

usage: parity_all.py <amp-migrate> <clang-tidy> <plugin.so> <mock include dir> <checks dir> <work dir>

For each test whose RUN line is `%check_amp %s %t.cpp [--rules=...] [--checks=...]`, the input is
prepared as check_amp.py does (CHECK comments blanked, lines kept), then both tools report on their
own copy (same file name, different directories) and fix it. The diagnostics (check id, line,
column, message, notes) and the fixed files must be identical. Prints one line per test.
"""
import os
import re
import shutil
import subprocess
import sys

DIAG = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<kind>warning|error|note): (?P<msg>.*)$")
RUN = re.compile(r"^// RUN: %check_amp %s %t\.cpp((?: --(?:rules|checks)=\S+)*)\s*$", re.M)


def diags(text, name):
    out = []
    for line in text.splitlines():
        m = DIAG.match(line)
        if m and os.path.basename(m.group("file")) == name:
            msg = m.group("msg")
            if msg.startswith("FIX-IT applied"):
                continue
            out.append((int(m.group("line")), int(m.group("col")), m.group("kind"), msg))
    return out


def main():
    tool, tidy, plugin, mock, checks_dir, work = sys.argv[1:7]
    shutil.rmtree(work, ignore_errors=True)
    failures, compared = 0, 0
    for name in sorted(os.listdir(checks_dir)):
        if not name.endswith(".cpp"):
            continue
        src = os.path.join(checks_dir, name)
        text = open(src, encoding="utf-8").read()
        m = RUN.search(text)
        if not m:
            print("skip: %s (not a plain %%check_amp test)" % name)
            continue
        amp_args, tidy_args, checks = [], [], "-*,amp-*"
        for opt in m.group(1).split():
            key, _, value = opt[2:].partition("=")
            value = value.replace("%S", checks_dir)
            if key == "rules":
                amp_args.append("--rules=" + value)
                tidy_args.append("-config={CheckOptions: {amp-autocast-scope.Rules: '%s'}}" % value)
            else:
                amp_args.append("--checks=" + value)
                checks = value
        cleaned = re.sub(r"// *CHECK-[A-Z0-9-]*:[^\r\n]*", "//", text)
        a, t = os.path.join(work, "amp", name[:-4]), os.path.join(work, "tidy", name[:-4])
        for d in (a, t):
            os.makedirs(d)
            with open(os.path.join(d, "input.cpp"), "w", encoding="utf-8") as f:
                f.write(cleaned)
        cc = ["-std=c++17", "-I" + mock]
        pa = subprocess.run([tool, "--use-color=never", "--fix", *amp_args, os.path.join(a, "input.cpp"), "--", *cc],
                            capture_output=True, text=True)
        pt = subprocess.run([tidy, "-load=" + plugin, "-checks=" + checks, "-fix", *tidy_args, os.path.join(t, "input.cpp"), "--", *cc],
                            capture_output=True, text=True)
        da, dt = diags(pa.stdout, "input.cpp"), diags(pt.stdout, "input.cpp")
        fa = open(os.path.join(a, "input.cpp"), encoding="utf-8").read()
        ft = open(os.path.join(t, "input.cpp"), encoding="utf-8").read()
        compared += 1
        if da != dt or fa != ft:
            failures += 1
            print("DIFFER: %s (diagnostics %s, fixed file %s)" % (name, "same" if da == dt else "differ", "same" if fa == ft else "differs"))
            if da != dt:
                for d in da:
                    print("  amp-migrate: %d:%d: %s: %s" % d)
                for d in dt:
                    print("  clang-tidy:  %d:%d: %s: %s" % d)
            if fa != ft:
                subprocess.run(["diff", os.path.join(a, "input.cpp"), os.path.join(t, "input.cpp")])
        else:
            print("same: %s (%d diagnostics, %s)" % (name, len(da), "rewritten" if fa != cleaned else "not rewritten"))
    print("%d compared, %d differ" % (compared, failures))
    return 1 if failures or not compared else 0


if __name__ == "__main__":
    sys.exit(main())
