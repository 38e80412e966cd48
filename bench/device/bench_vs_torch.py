#!/usr/bin/env python3
"""Times the amp runtime's CUDA ops against PyTorch on the same tensors (run by bench/device/run.sh).

Loads libamp_runtime_capi.so (bench/runtime_capi.cpp) with ctypes and passes raw device pointers of
torch tensors, so both sides read and write the very same memory. Times with CUDA events (median of
repeats after warm-up), checks that amp's results agree with PyTorch's, and checks that amp's ops
never synchronise the host: while a long GPU sleep is queued ahead of them, enqueuing must return
before the sleep ends.

Writes results.json and results.md into --out.
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import statistics
import sys
import time

import torch

F32, F16, BF16 = 0, 1, 2
DTYPE_CODE = {torch.float32: F32, torch.float16: F16, torch.bfloat16: BF16}

c_ptrs = ctypes.POINTER(ctypes.c_void_p)
c_i64s = ctypes.POINTER(ctypes.c_int64)
c_i32s = ctypes.POINTER(ctypes.c_int32)
c_fp = ctypes.c_void_p  # device float* / int32*


def load_capi(path):
    lib = ctypes.CDLL(path)
    lib.amp_capi_last_error.restype = ctypes.c_char_p
    v, i, f, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_float, ctypes.c_int64
    sigs = {
        "amp_capi_cuda_available": [],
        "amp_capi_unscale_and_check": [c_ptrs, c_i64s, c_i32s, i, v, v, i, v],
        "amp_capi_global_norm": [c_ptrs, c_i64s, c_i32s, i, v, i, v],
        "amp_capi_unscale_check_and_norm": [c_ptrs, c_i64s, c_i32s, i, v, v, v, i, v],
        "amp_capi_check_and_norm": [c_ptrs, c_i64s, c_i32s, i, v, v, v, i, v],
        "amp_capi_clip_by_global_norm": [c_ptrs, c_ptrs, c_i64s, c_i32s, c_i32s, i, f, v, i, v, i, v],
        "amp_capi_clip_coefficient": [f, v, i, v, i, v],
        "amp_capi_update_scale": [v, v, v, f, f, ctypes.c_int32, i, v],
        "amp_capi_inverse_scale": [v, v, i, v],
        "amp_capi_cast_copy": [c_ptrs, c_i32s, c_ptrs, c_i32s, c_i64s, i, i, v],
        "amp_capi_fused_adam_step": [c_ptrs, c_ptrs, c_ptrs, c_ptrs, c_ptrs, c_i64s, c_i32s, c_i32s, i,
                                     f, f, f, f, f, i, i64, v, v, v, i, v],
        "amp_capi_fused_sgd_step": [c_ptrs, c_ptrs, c_ptrs, c_ptrs, c_i64s, c_i32s, c_i32s, i,
                                    f, f, f, f, i, i, v, v, v, i, v],
        "amp_capi_gemm": [v, v, v, v, ctypes.c_int32, ctypes.c_int32, i64, i64, i64, i, i, f, f, i, i, v],
    }
    for name, args in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = ctypes.c_int
    return lib


class AmpList:
    """The ctypes arrays (pointers, numels, dtypes) describing a list of torch tensors."""

    def __init__(self, tensors):
        self.tensors = tensors
        n = len(tensors)
        self.count = n
        self.ptrs = (ctypes.c_void_p * max(n, 1))(*[t.data_ptr() for t in tensors])
        self.numels = (ctypes.c_int64 * max(n, 1))(*[t.numel() for t in tensors])
        self.dtypes = (ctypes.c_int32 * max(n, 1))(*[DTYPE_CODE[t.dtype] for t in tensors])


class Amp:
    def __init__(self, lib, device=0):
        self.lib = lib
        self.device = device

    def _check(self, rc):
        if rc != 0:
            raise RuntimeError(self.lib.amp_capi_last_error().decode())

    def stream(self):
        return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def unscale_and_check(self, g, inv_scale, found_inf):
        self._check(self.lib.amp_capi_unscale_and_check(g.ptrs, g.numels, g.dtypes, g.count, inv_scale.data_ptr(),
                                                        found_inf.data_ptr(), self.device, self.stream()))

    def global_norm(self, x, norm):
        self._check(self.lib.amp_capi_global_norm(x.ptrs, x.numels, x.dtypes, x.count, norm.data_ptr(),
                                                  self.device, self.stream()))

    def check_and_norm(self, g, inv_scale, found_inf, norm):
        self._check(self.lib.amp_capi_check_and_norm(g.ptrs, g.numels, g.dtypes, g.count, inv_scale.data_ptr(),
                                                     found_inf.data_ptr(), norm.data_ptr(), self.device,
                                                     self.stream()))

    def unscale_check_and_norm(self, g, inv_scale, found_inf, norm):
        self._check(self.lib.amp_capi_unscale_check_and_norm(g.ptrs, g.numels, g.dtypes, g.count,
                                                             inv_scale.data_ptr(), found_inf.data_ptr(),
                                                             norm.data_ptr(), self.device, self.stream()))

    def clip_in_place(self, g, clip_norm, norm, coef_out=None, pytorch_rule=True):
        self._check(self.lib.amp_capi_clip_by_global_norm(
            g.ptrs, None, g.numels, g.dtypes, g.dtypes, g.count, clip_norm, norm.data_ptr(), int(pytorch_rule),
            coef_out.data_ptr() if coef_out is not None else None, self.device, self.stream()))

    def clip_coefficient(self, clip_norm, norm, coef_out, pytorch_rule=True):
        self._check(self.lib.amp_capi_clip_coefficient(clip_norm, norm.data_ptr(), int(pytorch_rule),
                                                       coef_out.data_ptr(), self.device, self.stream()))

    def update_scale(self, scale, tracker, found_inf, growth=2.0, backoff=0.5, interval=2000):
        self._check(self.lib.amp_capi_update_scale(scale.data_ptr(), tracker.data_ptr(), found_inf.data_ptr(),
                                                   growth, backoff, interval, self.device, self.stream()))

    def inverse_scale(self, scale, inv_scale):
        self._check(self.lib.amp_capi_inverse_scale(scale.data_ptr(), inv_scale.data_ptr(), self.device,
                                                    self.stream()))

    def fused_adam(self, p, g, m, v, copies, opt, inv_scale, clip_coef, found_inf):
        self._check(self.lib.amp_capi_fused_adam_step(
            p.ptrs, g.ptrs, m.ptrs, v.ptrs, copies.ptrs if copies else None, p.numels, g.dtypes,
            copies.dtypes if copies else g.dtypes, p.count, opt["lr"], opt["beta1"], opt["beta2"], opt["eps"],
            opt["weight_decay"], int(opt["adamw"]), opt["step"],
            inv_scale.data_ptr() if inv_scale is not None else None,
            clip_coef.data_ptr() if clip_coef is not None else None,
            found_inf.data_ptr() if found_inf is not None else None, self.device, self.stream()))

    def gemm(self, a, b, c, bias=None, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, relu=False):
        m = a.shape[1] if trans_a else a.shape[0]
        k = a.shape[0] if trans_a else a.shape[1]
        n = b.shape[0] if trans_b else b.shape[1]
        self._check(self.lib.amp_capi_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(),
                                           bias.data_ptr() if bias is not None else None, DTYPE_CODE[a.dtype],
                                           DTYPE_CODE[c.dtype], m, n, k, int(trans_a), int(trans_b), alpha, beta,
                                           int(relu), self.device, self.stream()))


def time_ms(fn, warmup_ms=50.0, reps=30, target_ms=2.0):
    """Median milliseconds of one fn() call on the current stream, measured with CUDA events.

    Warm-up: at least 10 calls and `warmup_ms` of wall time (clocks ramp, caches and allocator pools
    fill). Each measurement then times a batch of back-to-back calls sized to take about `target_ms`,
    and divides: a single small call would measure the event overhead and the host's launch latency
    rather than the op (for a small list the op runs in microseconds)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    calls = 0
    while calls < 10 or (time.perf_counter() - start) * 1e3 < warmup_ms:
        fn()
        calls += 1
        if calls % 10 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    probe_start, probe_end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    probe_start.record()
    for _ in range(5):
        fn()
    probe_end.record()
    probe_end.synchronize()
    per_call = max(probe_start.elapsed_time(probe_end) / 5, 1e-3)
    batch = max(1, min(1000, int(target_ms / per_call)))
    times = []
    for _ in range(reps):
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / batch)
    return statistics.median(times)


def time_pair(amp_fn, torch_fn, reps=30, rounds=4):
    """(amp ms, torch ms): medians over `rounds` rounds that alternate which side runs first, so
    that neither side always inherits the other's clock and cache state. torch_fn may be None."""
    amp_times, torch_times = [], []
    for r in range(rounds):
        order = (("amp", amp_fn), ("torch", torch_fn)) if r % 2 == 0 else (("torch", torch_fn), ("amp", amp_fn))
        for side, fn in order:
            if fn is None:
                continue
            t = time_ms(fn, reps=max(reps // rounds, 5))
            (amp_times if side == "amp" else torch_times).append(t)
    return statistics.median(amp_times), (statistics.median(torch_times) if torch_times else None)


def enqueues_without_sync(fn, sleep_cycles=2_000_000_000):
    """True when fn() returns to the host while a long kernel queued before it is still running."""
    torch.cuda.synchronize()
    torch.cuda._sleep(sleep_cycles)  # ~1 s on a 2 GHz clock
    done = torch.cuda.Event()
    fn()
    done.record()
    still_running = not done.query()
    torch.cuda.synchronize()
    return still_running


def make_shapes(kind, gen):
    if kind == "large":  # a few big weights: 4 x 32 Mi elements
        return [32 << 20] * 4
    # thousands of small tensors (biases, norms, small convs): 12000 tensors of 256..16383 elements,
    # ~100 M elements, so even in fp16 (~200 MB) the list is over 3x the H200's 60 MB L2 and the
    # timings are of memory, not of cache
    return torch.randint(256, 16384, (12000,), generator=gen).tolist()


def rand_list(sizes, dtype, gen_seed, lo=0.01, hi=1.0):
    torch.manual_seed(gen_seed)
    out = []
    for n in sizes:
        t = torch.empty(n, device="cuda", dtype=torch.float32).uniform_(lo, hi)
        t = t * torch.where(torch.rand(n, device="cuda") < 0.5, -1.0, 1.0)
        out.append(t.to(dtype))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--capi", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    reps = 10 if args.quick else 30

    lib = load_capi(args.capi)
    amp = Amp(lib)
    assert lib.amp_capi_cuda_available() == 1, "amp runtime sees no CUDA device"
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "gpu": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
               "host": platform.node(), "rows": [], "checks": [], "no_sync": {}}
    rows, checks = results["rows"], results["checks"]

    def row(op, shape, dtype, amp_ms, torch_ms, bytes_moved, copy_gbps, note=""):
        amp_gbps = bytes_moved / amp_ms / 1e6
        rows.append({"op": op, "shape": shape, "dtype": str(dtype).replace("torch.", ""), "amp_ms": amp_ms,
                     "torch_ms": torch_ms, "speedup": torch_ms / amp_ms if torch_ms else None,
                     "amp_GBps": amp_gbps, "frac_of_copy": amp_gbps / copy_gbps, "note": note})
        print(f"{op:28s} {shape:6s} {str(dtype):15s} amp {amp_ms:8.3f} ms  torch {torch_ms or 0:8.3f} ms  "
              f"x{(torch_ms or 0) / amp_ms:5.2f}  {amp_gbps:7.0f} GB/s ({amp_gbps / copy_gbps:.0%} of copy) {note}",
              flush=True)

    def check(name, ok, detail=""):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})
        print(("PASS " if ok else "FAIL ") + name + (" " + detail if detail else ""), flush=True)

    gen = torch.Generator().manual_seed(0)
    one = lambda v=1.0: torch.full((1,), v, device=dev, dtype=torch.float32)  # noqa: E731

    # ---- the bandwidth ceiling: device-to-device copy of 1 GiB ---------------------------------------
    src = torch.empty(256 << 20, device=dev, dtype=torch.float32)
    dst = torch.empty_like(src)
    copy_ms = time_ms(lambda: dst.copy_(src), reps=reps)
    copy_gbps = 2 * src.numel() * 4 / copy_ms / 1e6
    results["copy_GBps"] = copy_gbps
    print(f"device-to-device copy: {copy_gbps:.0f} GB/s", flush=True)
    del src, dst

    for shape in ("large", "small"):
        sizes = make_shapes(shape, gen)
        elements = sum(sizes)
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            es = torch.tensor([], dtype=dtype).element_size()
            grads = rand_list(sizes, dtype, 1)
            g = AmpList(grads)
            found = one(0.0)
            invs = [one(0.5), one(2.0)]  # alternate so values stay in range

            # 1. unscale + check
            k = [0]

            def amp_unscale():
                k[0] ^= 1
                amp.unscale_and_check(g, invs[k[0]], found)

            def torch_unscale():
                k[0] ^= 1
                torch._amp_foreach_non_finite_check_and_unscale_(grads, found, invs[k[0]])

            try:
                torch_unscale()
                torch_fn, note = torch_unscale, "both with prebuilt lists"
            except RuntimeError as e:  # PyTorch's kernel may refuse bf16
                torch_fn, note = None, "torch: " + str(e).splitlines()[0][:60]
            amp_ms, torch_ms = time_pair(amp_unscale, torch_fn, reps=reps)
            row("unscale_and_check", shape, dtype, amp_ms, torch_ms, 2 * es * elements, copy_gbps, note)

            # correctness next to PyTorch: same input, same outputs, same flag
            ref = [t.clone() for t in grads]
            mine = [t.clone() for t in grads]
            mine[len(mine) // 2].view(-1)[-1] = float("inf")
            f_amp, f_ref = one(0.0), one(0.0)
            amp.unscale_and_check(AmpList(mine), one(0.25), f_amp)
            ref_ok = True
            try:
                ref[len(ref) // 2].view(-1)[-1] = float("inf")
                torch._amp_foreach_non_finite_check_and_unscale_(ref, f_ref, one(0.25))
            except RuntimeError:
                ref_ok = False
                ref = [t.float().mul_(0.25).to(dtype) for t in ref]
                f_ref.fill_(1.0)
            same = all(torch.equal(a, b) for a, b in zip(mine, ref))
            check(f"unscale_and_check matches torch ({shape}, {dtype})", same and f_amp.item() == f_ref.item() == 1.0,
                  "" if ref_ok else "(reference computed with plain torch ops)")
            del ref, mine

            # 2. global norm, and 3. clip (norm + in-place clip) vs clip_grad_norm_(foreach=True)
            norm = one(0.0)
            amp_ms, torch_ms = time_pair(
                lambda: amp.global_norm(g, norm),
                lambda: torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0), reps=reps)
            row("global_norm", shape, dtype, amp_ms, torch_ms, es * elements, copy_gbps, "both with prebuilt lists")
            amp.global_norm(g, norm)
            ref_norm = torch.linalg.vector_norm(torch.stack([t.float().norm() for t in grads])).item()
            check(f"global_norm matches torch ({shape}, {dtype})", abs(norm.item() - ref_norm) <= 1e-4 * ref_norm,
                  f"{norm.item():.6g} vs {ref_norm:.6g}")

            params = [torch.nn.Parameter(torch.empty(0, device=dev, dtype=dtype)) for _ in grads]
            for p, t in zip(params, grads):
                p.data = t.detach().clone()  # clip_grad_norm_ reads .grad; the data is irrelevant
                p.grad = t
            max_norm = float(ref_norm) * 2.0  # coef 1: repeated clips leave the values in range

            def amp_clip():
                # clip_grad_norm_ collects the .grad list on every call: amp builds its list too
                lst = AmpList([q.grad for q in params])
                amp.global_norm(lst, norm)
                amp.clip_in_place(lst, max_norm, norm)

            amp_ms, torch_ms = time_pair(
                amp_clip, lambda: torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True), reps=reps)
            row("clip_by_global_norm", shape, dtype, amp_ms, torch_ms, 3 * es * elements, copy_gbps,
                "norm pass + in-place clip pass; both build the grad list per call")
            del params

            # 4. the fused chain vs GradScaler.unscale_ + clip_grad_norm_ + Adam.step + update
            chain_rows(amp, shape, dtype, sizes, grads, copy_gbps, reps, row, check)
            del grads, g
            torch.cuda.empty_cache()

    # ---- host synchronisation: none in unscale/norm/clip/update/fused step -----------------------------
    sizes = [1 << 16] * 64
    grads = rand_list(sizes, torch.float16, 3)
    g = AmpList(grads)
    p = rand_list(sizes, torch.float32, 4)
    m = [torch.zeros_like(t) for t in p]
    v = [torch.zeros_like(t) for t in p]
    pl, ml, vl = AmpList(p), AmpList(m), AmpList(v)
    found, norm, coef, inv, scale = one(0.0), one(0.0), one(0.0), one(1 / 1024), one(1024.0)
    tracker = torch.zeros(1, device=dev, dtype=torch.int32)
    opt = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, adamw=True, step=1)
    for name, fn in {
        "unscale_and_check": lambda: amp.unscale_and_check(g, inv, found),
        "global_norm": lambda: amp.global_norm(g, norm),
        "check_and_norm": lambda: amp.check_and_norm(g, inv, found, norm),
        "clip_by_global_norm": lambda: amp.clip_in_place(g, 1.0, norm, coef),
        "update_scale": lambda: amp.update_scale(scale, tracker, found),
        "inverse_scale": lambda: amp.inverse_scale(scale, inv),
        "fused_adam_step": lambda: amp.fused_adam(pl, g, ml, vl, None, opt, inv, coef, found),
    }.items():
        ok = enqueues_without_sync(fn)
        results["no_sync"][name] = ok
        check(f"{name} returns to the host without waiting for the GPU", ok)

    # ---- GEMM vs torch.matmul -----------------------------------------------------------------------
    gemm_shapes = ((4096, 4096, 4096), (8192, 8192, 8192), (16384, 4096, 4096))
    try:
        t = torch.ones(16, 16, device=dev, dtype=torch.float16)
        amp.gemm(t, t, torch.empty_like(t))
    except RuntimeError as e:
        if "cuBLASLt" not in str(e):
            raise
        print(f"GEMM SKIPPED: {e}", flush=True)
        results["gemm_skipped"] = str(e)
        gemm_shapes = ()
    for (m_, n_, k_) in gemm_shapes:
        for dtype in (torch.float16, torch.bfloat16):
            a = torch.randn(m_, k_, device=dev, dtype=dtype)
            b = torch.randn(k_, n_, device=dev, dtype=dtype)
            c = torch.empty(m_, n_, device=dev, dtype=dtype)
            amp_ms, torch_ms = time_pair(lambda: amp.gemm(a, b, c), lambda: torch.matmul(a, b, out=c), reps=reps)
            tflops = 2 * m_ * n_ * k_ / amp_ms / 1e9
            rows.append({"op": "gemm", "shape": f"{m_}x{n_}x{k_}", "dtype": str(dtype).replace("torch.", ""),
                         "amp_ms": amp_ms, "torch_ms": torch_ms, "speedup": torch_ms / amp_ms,
                         "amp_TFLOPs": tflops, "note": ""})
            print(f"gemm {m_}x{n_}x{k_} {dtype}: amp {amp_ms:.3f} ms ({tflops:.0f} TFLOP/s) torch {torch_ms:.3f} ms "
                  f"x{torch_ms / amp_ms:.3f}", flush=True)
            amp.gemm(a, b, c)
            ref = torch.matmul(a, b)
            err = (c.float() - ref.float()).abs().max().item() / ref.float().abs().max().item()
            check(f"gemm matches torch.matmul ({m_}x{n_}x{k_}, {dtype})", err < 1e-2, f"max rel err {err:.2e}")
            bias = torch.randn(n_, device=dev, dtype=dtype)
            amp.gemm(a, b, c, bias=bias, relu=True)
            ref = torch.relu(torch.addmm(bias, a, b))
            err = (c.float() - ref.float()).abs().max().item() / ref.float().abs().max().item()
            check(f"gemm bias+relu matches torch ({m_}x{n_}x{k_}, {dtype})", err < 1e-2, f"max rel err {err:.2e}")
            del a, b, c, ref
            torch.cuda.empty_cache()

    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(to_markdown(results))
    failed = [c for c in checks if not c["ok"]]
    print(f"{len(checks) - len(failed)}/{len(checks)} checks passed")
    return 1 if failed else 0


def chain_rows(amp, shape, dtype, sizes, grads_in, copy_gbps, reps, row, check):
    """unscale + clip + AdamW step: amp's fused chain vs PyTorch's GradScaler chain (foreach and fused AdamW).

    Both chains start from the same scaled grads of `dtype`. PyTorch's optimizers need grads of the
    params' dtype (fp32 masters), so for fp16/bf16 its chain first copies the grads into the fp32
    params' .grad (what an O2 master-weight setup does: part of its cost); amp reads them as they
    are. Both build their lists inside the timed call (GradScaler.unscale_ and the optimizers do).
    PyTorch's GradScaler.step reads found_inf on the host (one sync per step); amp's chain has none."""
    dev = torch.device("cuda")
    lowp = dtype != torch.float32
    params_t = [torch.nn.Parameter(torch.randn(n, device=dev) * 0.1) for n in sizes]
    scaled = [(t.float() * 1024.0).to(dtype) for t in grads_in]  # the grads both chains are fed
    for p, g in zip(params_t, scaled):
        p.grad = g.float() if lowp else g.clone()
    grads_t = [p.grad for p in params_t]
    results = {}
    for label, kwargs in (("foreach", dict(foreach=True)), ("fused", dict(fused=True))):
        opt = torch.optim.AdamW(params_t, lr=1e-6, weight_decay=0.01, **kwargs)
        scaler = torch.amp.GradScaler("cuda", init_scale=1024.0, growth_interval=1 << 30)

        def torch_chain(opt=opt, scaler=scaler):  # bound now: timed after the loop
            if lowp:
                torch._foreach_copy_(grads_t, scaled)  # fp16/bf16 grads into the fp32 .grad
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(params_t, 1e9, foreach=True)
            scaler.step(opt)
            scaler.update()
            if not lowp:
                # unscale_ unscaled .grad in place: restore the scale for the next call (timed alone
                # below and subtracted)
                torch._foreach_mul_(grads_t, 1024.0)

        # The restore's cost alone: the same multiply, alternating x1024 and /1024 (exact powers of
        # two) so that thousands of timed calls leave the grads as they were instead of overflowing.
        flip = [1024.0]

        def restore_alone():
            torch._foreach_mul_(grads_t, flip[0])
            flip[0] = 1.0 / flip[0]

        restore_ms = 0.0 if lowp else time_ms(restore_alone, reps=reps)
        if flip[0] != 1024.0:
            torch._foreach_mul_(grads_t, flip[0])  # an odd number of calls: undo the last one
        results[label] = (torch_chain, restore_ms)

    p = [t.detach().clone() for t in params_t]
    m = [torch.zeros_like(t) for t in p]
    v = [torch.zeros_like(t) for t in p]
    grads = scaled
    found = torch.zeros(1, device=dev)
    norm = torch.zeros(1, device=dev)
    coef = torch.zeros(1, device=dev)
    inv = torch.full((1,), 1 / 1024, device=dev)
    scale = torch.full((1,), 1024.0, device=dev)
    tracker = torch.zeros(1, device=dev, dtype=torch.int32)
    opt = dict(lr=1e-6, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, adamw=True, step=10)

    def amp_chain():
        pl, gl, ml, vl = AmpList(p), AmpList(grads), AmpList(m), AmpList(v)  # built per call, as torch's
        found.zero_()
        amp.inverse_scale(scale, inv)
        amp.check_and_norm(gl, inv, found, norm)
        amp.clip_coefficient(1e9, norm, coef)
        amp.fused_adam(pl, gl, ml, vl, None, opt, inv, coef, found)
        amp.update_scale(scale, tracker, found, 2.0, 0.5, 1 << 30)

    es = torch.tensor([], dtype=dtype).element_size()
    elements = sum(sizes)
    bytes_moved = elements * (es + 4 + es + 4 + 4 + 4 + 4 + 4)  # check pass + step pass
    for label in ("foreach", "fused"):
        torch_chain, restore_ms = results[label]
        amp_ms, torch_ms = time_pair(amp_chain, torch_chain, reps=reps)
        row("fused unscale+clip+adamw", shape, dtype, amp_ms, torch_ms - restore_ms, bytes_moved, copy_gbps,
            f"vs GradScaler+clip+AdamW({label}); same {str(dtype).replace('torch.', '')} grads fed to both")

    # correctness: one step of each side from the same state
    p_ref = [t.detach().clone() for t in p]
    params_c = [torch.nn.Parameter(t.clone()) for t in p_ref]
    for q, gr in zip(params_c, grads):
        q.grad = gr.float() / 1024.0
    pl, gl = AmpList(p), AmpList(grads)
    ref_opt = torch.optim.AdamW(params_c, lr=1e-3, weight_decay=0.01, foreach=True)
    ref_opt.step()
    m2 = [torch.zeros_like(t) for t in p_ref]
    v2 = [torch.zeros_like(t) for t in p_ref]
    p2 = [t.clone() for t in p_ref]
    found.zero_()
    amp.fused_adam(AmpList(p2), gl, AmpList(m2), AmpList(v2), None,
                   dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, adamw=True, step=1),
                   inv, None, found)
    err = max((a - b.detach()).abs().max().item() for a, b in zip(p2, params_c))
    check(f"fused AdamW step matches torch.optim.AdamW ({shape}, {dtype})", err < 1e-5, f"max abs err {err:.2e}")
    del params_t, grads_t, p, m, v, grads, params_c, p2, m2, v2


def to_markdown(r):
    lines = [f"Measured {r['date']} on {r['gpu']} (PyTorch {r['torch']}, CUDA {r['cuda']}); "
             f"device-to-device copy: {r['copy_GBps']:.0f} GB/s (read + write).", "",
             "Each time is the median per call over batches of back-to-back calls (about 2 ms of GPU "
             "work per batch), after at least 50 ms of warm-up, in rounds that alternate which side "
             "runs first.", "",
             "| op | list | grads | amp ms | PyTorch ms | speed-up | amp GB/s | of copy | note |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for x in r["rows"]:
        if x["op"] == "gemm":
            continue
        t = f"{x['torch_ms']:.3f}" if x["torch_ms"] else "n/a"
        s = f"{x['speedup']:.2f}x" if x["speedup"] else "n/a"
        lines.append(f"| {x['op']} | {x['shape']} | {x['dtype']} | {x['amp_ms']:.3f} | {t} | {s} | "
                     f"{x['amp_GBps']:.0f} | {x['frac_of_copy']:.0%} | {x['note']} |")
    lines += ["", "| GEMM (m x n x k) | dtype | amp ms | torch.matmul ms | amp / torch time | amp TFLOP/s |",
              "|---|---|---:|---:|---:|---:|"]
    for x in r["rows"]:
        if x["op"] == "gemm":
            lines.append(f"| {x['shape']} | {x['dtype']} | {x['amp_ms']:.3f} | {x['torch_ms']:.3f} | "
                         f"{x['amp_ms'] / x['torch_ms']:.3f} | {x['amp_TFLOPs']:.0f} |")
    if r.get("gemm_skipped"):
        lines += ["", f"GEMM skipped: {r['gemm_skipped']}"]
    lines += ["", "Host synchronisation (enqueue returns while a 1 s GPU sleep is still queued ahead):", ""]
    for k, v in r["no_sync"].items():
        lines.append(f"- {k}: {'no host sync' if v else 'SYNCHRONISED'}")
    lines += ["", "Checks against PyTorch:", ""]
    for c in r["checks"]:
        lines.append(f"- {'PASS' if c['ok'] else 'FAIL'}: {c['check']} {c['detail']}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
