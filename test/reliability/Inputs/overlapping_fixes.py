"""Writes two exported-fixes files over SOURCE, as two shards would: each records the file's
SHA-256 and deletes a range of it; the ranges overlap ([7, 10) and [9, 13)).
Usage: overlapping_fixes.py SOURCE FIRST.yaml SECOND.yaml"""
import hashlib
import os
import sys

source, first, second = sys.argv[1:4]
path = os.path.abspath(source)
with open(path, "rb") as f:
    digest = hashlib.sha256(f.read()).hexdigest()
for out, (offset, length) in ((first, (7, 3)), (second, (9, 4))):
    with open(out, "w") as f:
        f.write(f"# amp-migrate-parsed: sha256={digest} {path}\n---\nMainSourceFile: '{path}'\nDiagnostics:\n"
                f"  - DiagnosticName: amp-zero-grad\n    DiagnosticMessage:\n      Message: 'm'\n"
                f"      FilePath: '{path}'\n      FileOffset: {offset}\n      Replacements:\n"
                f"        - FilePath: '{path}'\n          Offset: {offset}\n          Length: {length}\n"
                f"          ReplacementText: ''\n    Level: Warning\n    BuildDirectory: '{os.path.dirname(path)}'\n...\n")
