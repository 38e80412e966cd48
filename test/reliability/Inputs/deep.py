#!/usr/bin/env python3
"""Writes adversarial settings files (issue 13 item 7): usage: deep.py <kind> <out>.
kinds: flow (100 KB of '['), block ('- ' entries nested 2000 deep), doc2 (a second document),
empty-name, big-index, many (100000 ignore entries, which a quadratic merge took minutes over)."""
import sys

kind, out = sys.argv[1], sys.argv[2]
text = {
    "flow": "ignore: " + "[" * 100000 + "\n",
    "block": "ignore:\n" + "".join(" " * i + "- \n" for i in range(2000)),
    "doc2": "ignore: [a]\n---\nignore: [b]\n",
    "empty-name": "guards: ['']\n",
    "big-index": "clip:\n  - function: f\n    max-norm-arg: 1000\n",
    "many": "ignore:\n" + "".join("  - ns::f%d\n" % i for i in range(100000)),
    "config-flow": "Checks: " + "[" * 100000 + "\n",
    "config-doc2": "Checks: 'amp-*'\n---\nLevel: O3\n",
    "config-regex": "HeaderFilter: 'a(b'\n",
}[kind]
with open(out, "w") as f:
    f.write(text)
