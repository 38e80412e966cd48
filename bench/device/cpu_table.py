#!/usr/bin/env python3
"""Formats runtime_bench JSON (--benchmark_out, with repetitions) as the markdown table of
docs/performance.md "Runtime (CPU)": each op's bandwidth as a fraction of memcpy measured in the
same run, both the start-up memcpy (best of 10 copies of 256 MiB, 1 and all threads) and the
BM_memcpy row of the same list shape (which saw the same machine load as the ops)."""
import json
import sys

NAMES = {"BM_unscale_and_check": "unscale_and_check", "BM_global_norm": "global_norm",
         "BM_unscale_check_and_norm": "unscale_check_and_norm", "BM_clip_by_global_norm": "clip_by_global_norm (in place)",
         "BM_clip_by_global_norm_out_of_place": "clip_by_global_norm (out of place)",
         "BM_cast_copy_to_bf16": "cast_copy -> bf16", "BM_fused_sgd_step": "fused_sgd_step (momentum, bf16 copy)",
         "BM_fused_adam_step": "fused_adam_step (AdamW, bf16 copy)", "BM_fused_chain_adam": "fused chain: check_and_norm + coef + Adam"}
DTYPES = {"0": "f32", "1": "f16", "2": "bf16"}


def main(path):
    data = json.load(open(path))
    rows = [b for b in data["benchmarks"] if b.get("aggregate_name", "median") == "median"]
    ctx = data["context"]
    memcpy_bw = float(ctx.get("memcpy_bandwidth_GBps", "nan"))
    bm_memcpy = {}
    for b in rows:
        if b["name"].startswith("BM_memcpy/"):
            bm_memcpy[b["name"].split("/")[1]] = b["bytes_per_second"] / 1e9
    print(f"Start-up memcpy: {memcpy_bw:.1f} GB/s (read + write); BM_memcpy during the run: "
          + ", ".join(f"{'large' if k == '0' else 'small'} {v:.1f} GB/s" for k, v in sorted(bm_memcpy.items())))
    print()
    print("| op | list | grads | GB/s | of start-up memcpy | of BM_memcpy (same shape) | ms |")
    print("|---|---|---|---:|---:|---:|---:|")
    for b in rows:
        parts = b["name"].split("/")
        if parts[0] == "BM_memcpy":
            continue
        shape, dt = parts[1], parts[2]
        gbps = b["bytes_per_second"] / 1e9
        label = "large (4 x 4 Mi)" if shape == "0" else "small (8192 x 1 Ki)"
        dtype = DTYPES[dt]
        if parts[0] == "BM_cast_copy_to_bf16":
            dtype = "f32 src"
        print(f"| {NAMES.get(parts[0], parts[0])} | {label} | {dtype} | {gbps:.2f} | {gbps / memcpy_bw:.0%} | "
              f"{gbps / bm_memcpy[shape]:.0%} | {b['real_time']:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1])
