"""Writes DIR/compile_commands.json: one entry per FILE:FLAG argument (FLAG may be empty).

usage: make_db.py DIR MOCK_INCLUDE FILE:FLAG...
"""
import json
import sys

d, mock = sys.argv[1], sys.argv[2]
entries = []
for spec in sys.argv[3:]:
    name, _, flag = spec.partition(":")
    args = ["clang++", "-std=c++17", "-I" + mock] + ([flag] if flag else []) + ["-c", d + "/" + name]
    entries.append({"directory": d, "file": d + "/" + name, "arguments": args})
with open(d + "/compile_commands.json", "w") as f:
    json.dump(entries, f, indent=1)
