#!/usr/bin/env python3
"""Runs bench_vs_torch.py here, without a GPU or PyTorch: torch and the C API are stand-ins.

What it catches: errors in the script's control flow (a name used before it is bound, a wrong
number of arguments, a results row the Markdown writer cannot format) in every section, including
the GEMM skip taken when the runtime has no cuBLASLt (`--no-cublaslt`). What it does not: any
number; the stand-in returns 1 ms and one value for everything. Run it before spending a device
call on an edited bench_vs_torch.py:

    python3 bench/device/smoke_bench.py [--no-cublaslt]    # exit 0: the script ran to its end
"""
import ctypes
import itertools
import json
import os
import runpy
import sys
import tempfile
import time
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
addresses = itertools.count(1)


class StandIn:
    """Any torch object: attributes and calls give another stand-in; numbers where one is needed."""

    def __init__(self, name="torch"):
        self._name = name

    def __getattr__(self, key):
        if key.startswith("__"):
            raise AttributeError(key)
        fixed = {"dtype": "torch.float32", "cuda_stream": 0, "name": "stand-in GPU"}
        return fixed[key] if key in fixed else StandIn(key)

    def __call__(self, *args, **kwargs):
        return StandIn(self._name + "()")

    def __iter__(self):
        return iter([StandIn(), StandIn(), StandIn()])

    def __getitem__(self, key):
        return StandIn()

    def __setitem__(self, key, value):
        pass

    def __len__(self):
        return 3

    def data_ptr(self):
        return 4096 * next(addresses)

    def numel(self):
        return 8

    def element_size(self):
        return 2

    def item(self):
        return 1.0

    def elapsed_time(self, other):
        return 1.0

    def tolist(self):
        return [300, 500, 700]

    def query(self):
        return False

    def __float__(self):
        return 1.0

    def __bool__(self):
        return True

    def __eq__(self, other):
        return True

    def __hash__(self):
        return id(self)

    def __le__(self, other):
        return True

    def __ge__(self, other):
        return False

    def __format__(self, spec):
        return "stand-in"

    def _any(self, *args):
        return StandIn()

    __lt__ = __gt__ = __mul__ = __rmul__ = __add__ = __radd__ = __sub__ = __rsub__ = _any
    __truediv__ = __rtruediv__ = __neg__ = _any


def main():
    no_cublaslt = "--no-cublaslt" in sys.argv[1:]
    torch = StandIn()
    torch.float32, torch.float16, torch.bfloat16 = "torch.float32", "torch.float16", "torch.bfloat16"
    torch.__version__ = "stand-in"
    sys.modules["torch"] = torch
    lib = mock.MagicMock()
    lib.amp_capi_cuda_available.return_value = 1
    for op in ("unscale_and_check", "global_norm", "unscale_check_and_norm", "check_and_norm",
               "clip_by_global_norm", "clip_coefficient", "update_scale", "inverse_scale", "cast_copy",
               "fused_adam_step", "fused_sgd_step", "gemm"):
        getattr(lib, "amp_capi_" + op).return_value = 0
    if no_cublaslt:
        lib.amp_capi_gemm.return_value = 1
        lib.amp_capi_last_error.return_value = b"amp::gemm: this runtime was built without cuBLASLt"
    ctypes.CDLL = lambda path: lib
    ticks = itertools.count()
    time.perf_counter = lambda: next(ticks) * 1.0  # every warm-up ends after its 10 calls
    dump = json.dump
    json.dump = lambda obj, f, **kw: dump(obj, f, default=str, **kw)
    with tempfile.TemporaryDirectory() as out:
        sys.argv = ["bench_vs_torch.py", "--capi", "stand-in.so", "--out", out, "--quick"]
        try:
            runpy.run_path(os.path.join(HERE, "bench_vs_torch.py"), run_name="__main__")
        except SystemExit:
            pass  # its exit code reflects the stand-in's checks, not the script
        ok = os.path.exists(os.path.join(out, "results.md"))
    print("smoke_bench: bench_vs_torch.py ran to its end" if ok else "smoke_bench: FAILED", file=sys.__stdout__)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
