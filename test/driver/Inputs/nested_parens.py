"""Prints a function returning an expression in N nested parentheses (issue #39 item 5).

usage: nested_parens.py N >> file.cpp   (parse with -fbracket-depth above N)
"""
import sys

n = int(sys.argv[1])
print("int nested() { return " + "(" * n + "1" + ")" * n + "; }")
