"""Validates an installed attention wheel on a GPU (contract: kernels/VALIDATION.md).

One script serves every attention recipe of the catalog: each recipe's validation script
is a link to this file named validate_<package>.py, and the name picks the kernel (the
worker keeps the file name). The reference is PyTorch's scaled_dot_product_attention in
float32 on the same inputs; the baseline is SDPA in float16 on the same GPU. Exit codes:
0 passed, 1 failed, 2 usage, 3 no device, 4 import or internal error, 5 unsupported GPU.
"""
import argparse
import datetime
import json
import os
import sys
import time

# [B, H, N, D, causal]: N = 3000 and 1000 are not multiples of any kernel's tile.
SHAPES = [(1, 16, 1024, 64, False), (1, 16, 4096, 128, False), (2, 24, 3000, 128, True),
          (1, 32, 16384, 128, False)]
QUICK = [(1, 8, 512, 64, False), (1, 8, 1000, 128, True)]


# The function sageattention.sageattn() dispatches to on each GPU arch when the wheel has
# every extension (core.py of 2.2.0; sm121 from PR #297): the fast path. A wheel built
# without one of them, or a fork that falls back, runs another (woct0rdho#90).
SAGE_FAST = {"sm80": "sageattn_qk_int8_pv_fp16_cuda", "sm86": "sageattn_qk_int8_pv_fp16_triton",
             "sm89": "sageattn_qk_int8_pv_fp8_cuda", "sm90": "sageattn_qk_int8_pv_fp8_cuda_sm90",
             "sm120": "sageattn_qk_int8_pv_fp8_cuda", "sm121": "sageattn_qk_int8_pv_fp8_cuda"}


class Dispatch:
    """Records which implementation a call ran: sageattn() looks each candidate up in
    sageattention.core's globals when it is called, so a recording wrapper put there sees
    the one it picked. The last one entered is reported: a fork whose fast function falls
    back inside calls the slow one from it."""

    def __init__(self, module, prefix, fast):
        self.calls, self.fast = [], fast
        for name in [n for n in dir(module) if n.startswith(prefix)]:
            real = getattr(module, name)
            if not callable(real):
                continue

            def wrapper(*a, _real=real, _name=name, **kw):
                self.calls.append(_name)
                return _real(*a, **kw)
            setattr(module, name, wrapper)

    def ran(self, fn):
        """Calls fn() and returns the implementation it ran ("" when none of the candidates)."""
        self.calls = []
        fn()
        return self.calls[-1] if self.calls else ""


def sageattention_kernel():
    import torch
    import sageattention.core as core
    from sageattention import sageattn
    cc = torch.cuda.get_device_capability() if torch.cuda.is_available() else (0, 0)
    fast = SAGE_FAST.get(f"sm{cc[0]}{cc[1]}", "")
    dispatch = Dispatch(core, "sageattn_", fast)
    return "sageattention", lambda q, k, v, causal: sageattn(q, k, v, tensor_layout="HND",
                                                             is_causal=causal), dispatch


def sageattn3_kernel():
    from sageattn3 import sageattn3_blackwell
    return "sageattn3", lambda q, k, v, causal: sageattn3_blackwell(q, k, v, is_causal=causal)


def bnhd(fn):
    """Flash-attention takes [B, N, H, D]; the cases are [B, H, N, D]."""
    def call(q, k, v, causal):
        out = fn(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=causal)
        out = out[0] if isinstance(out, tuple) else out  # some versions also return the LSE
        return out.transpose(1, 2)
    return call


def flash_attn_kernel():
    from flash_attn import flash_attn_func
    return "flash_attn", bnhd(flash_attn_func)


def flash_attn_3_kernel():
    from flash_attn_interface import flash_attn_func
    return "flash_attn_3", bnhd(flash_attn_func)


# The head dims each kernel is validated with: a Hopper build of FlashAttention 3 may
# leave out every head dim but 128 (kernels/flash-attn-3/README.md).
KERNELS = {"sageattention": (sageattention_kernel, None), "sageattn3": (sageattn3_kernel, None),
           "flash_attn": (flash_attn_kernel, None), "flash_attn_3": (flash_attn_3_kernel, 128)}


def kernel_name():
    base = os.path.splitext(os.path.basename(__file__))[0]
    return base[len("validate_"):] if base.startswith("validate_") else base


def write_report(path, report):
    text = json.dumps(report, indent=1, allow_nan=False, default=str)
    if not path:
        print(text)
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def finish(args, report, code, state, message):
    report.update(exit_code=code, state=state, message=message)
    write_report(args.report, report)
    sys.exit(code)


def time_ms(torch, fn, warmup, iters):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2], times[0]


def implementation_fields(dispatch, attn, q, k, v, causal):
    """The case's `implementation` and `fast_implementation` (kernels/VALIDATION.md) for a
    kernel whose dispatch the script can see; nothing for the others."""
    if dispatch is None:
        return {}
    ran = dispatch.ran(lambda: attn(q, k, v, causal)) or "sageattn (none of the known paths)"
    return {"implementation": ran, "fast_implementation": dispatch.fast}


def run_case(torch, attn, shape, args, dev, dispatch=None):
    b, h, n, d, causal = shape
    f = torch.nn.functional.scaled_dot_product_attention
    q, k, v = (torch.randn(b, h, n, d, device=dev, dtype=torch.float16) for _ in range(3))
    out = attn(q, k, v, causal).float()
    ref = f(q.float(), k.float(), v.float(), is_causal=causal)
    diff = (out - ref).double()
    ref64 = ref.double()
    cos = torch.nn.functional.cosine_similarity(out.double().flatten(), ref64.flatten(), dim=0).item()
    rel_l1 = (diff.abs().sum() / ref64.abs().sum()).item()
    rmse = diff.pow(2).mean().sqrt().item()
    finite = bool(torch.isfinite(out).all().item())
    flops = 4 * b * h * n * n * d / (2 if causal else 1)
    kern_ms, kern_min = time_ms(torch, lambda: attn(q, k, v, causal), args.warmup, args.iters)
    base_ms, _ = time_ms(torch, lambda: f(q, k, v, is_causal=causal), args.warmup, args.iters)
    failures = []
    if not finite:
        failures.append("output holds NaN or Inf")
    if cos < args.min_cosine:
        failures.append(f"cosine {cos:.5f} < {args.min_cosine}")
    if rel_l1 > args.max_relative_l1:
        failures.append(f"relative L1 {rel_l1:.5f} > {args.max_relative_l1}")
    tops, base_tops = flops / kern_ms / 1e9, flops / base_ms / 1e9
    return {**implementation_fields(dispatch, attn, q, k, v, causal),"name": f"b{b}_h{h}_n{n}_d{d}" + ("_causal" if causal else ""), "cosine": cos,
            "relative_l1": rel_l1, "rmse": rmse, "tops": tops, "baseline_tops": base_tops,
            "throughput": tops, "throughput_unit": "TOPS", "baseline_throughput": base_tops,
            "baseline_name": "torch SDPA float16",
            "passed": not failures, "B": b, "H": h, "N": n, "D": d, "causal": causal,
            "dtype": "float16", "finite": finite, "failures": failures, "error": "",
            "flops": flops, "time_ms": kern_ms, "time_ms_min": kern_min, "timing_runs": args.iters,
            "baseline_dtype": "float16", "speedup_vs_baseline": tops / base_tops}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--report")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--min-cosine", type=float, default=0.99)
    p.add_argument("--max-relative-l1", type=float, default=0.07)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args()
    args.iters = max(args.iters, 20)
    # Import the installed package, never a source directory beside this script.
    here = {os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.realpath(__file__))}
    sys.path = [x for x in sys.path if os.path.abspath(x or ".") not in here]
    report = {"schema": "farm.validation.v2", "device": args.device, "gpu_name": None,
              "compute_capability": None, "dtype": "float16",
              "reference": "torch SDPA in float32 on the same inputs",
              "thresholds": {"min_cosine": args.min_cosine, "max_relative_l1": args.max_relative_l1},
              "timing": {"method": "cuda events", "warmup": args.warmup, "iters": args.iters,
                         "statistic": "median", "tops_formula": "4*B*H*N^2*D/time (halved when causal)"},
              "cases": [], "started_at": datetime.datetime.utcnow().isoformat() + "Z"}
    t0 = time.time()
    try:
        import torch
        make, head_dim = KERNELS[kernel_name()]
        package, attn, *dispatch = make()
        dispatch = dispatch[0] if dispatch else None
    except Exception as e:  # noqa: BLE001 - any import failure is the package's
        finish(args, report, 4, "error", f"cannot import the kernel of {kernel_name()}: {e}")
    report["package"] = {"name": package}
    if not torch.cuda.is_available():
        finish(args, report, 3, "no_device", "no cuda device")
    dev = torch.device(args.device)
    cc = torch.cuda.get_device_capability(dev)
    report.update(gpu_name=torch.cuda.get_device_name(dev), compute_capability=f"{cc[0]}.{cc[1]}",
                  baseline={"available": True, "impl": "torch SDPA", "dtypes": ["float16"],
                            "torch_version": torch.__version__})
    torch.manual_seed(int(time.time()))
    for shape in (QUICK if args.quick else SHAPES):
        shape = shape[:3] + (head_dim or shape[3], shape[4])
        try:
            report["cases"].append(run_case(torch, attn, shape, args, dev, dispatch))
        except RuntimeError as e:
            if "no kernel image" in str(e):
                finish(args, report, 5, "unsupported_gpu", str(e))
            report["cases"].append({"name": str(shape), "passed": False, "error": str(e)})
    report["elapsed_s"] = time.time() - t0
    passed = sum(c["passed"] for c in report["cases"])
    msg = f"{passed}/{len(report['cases'])} cases passed on {report['gpu_name']} (cc {report['compute_capability']})"
    finish(args, report, 0 if passed == len(report["cases"]) else 1,
           "passed" if passed == len(report["cases"]) else "failed", msg)


if __name__ == "__main__":
    main()
