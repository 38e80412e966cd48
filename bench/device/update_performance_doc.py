#!/usr/bin/env python3
"""Replaces the measured block of the "Runtime (CUDA)" section of docs/performance.md with results.md."""
import sys

BEGIN = "<!-- runtime-cuda-results:begin -->"
END = "<!-- runtime-cuda-results:end -->"


def main(doc_path, results_path):
    doc = open(doc_path).read()
    results = open(results_path).read()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"{doc_path}: markers {BEGIN} / {END} not found")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    open(doc_path, "w").write(head + BEGIN + "\n" + results + END + tail)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
