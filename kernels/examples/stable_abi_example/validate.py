"""Validates an installed stable_abi_example wheel on a GPU (contract: kernels/VALIDATION.md).

The op torch.ops.stable_abi_example.scaled_add (a + alpha * b, float32) is run on CUDA and on
the CPU for sizes that are and are not multiples of the kernel's block, compared with torch
in float64 on the same inputs, and timed against torch.add(a, b, alpha=alpha) (GB/s). A
wrong dtype must be refused with an error, not computed. The torch version the wheel runs
with is in the report: a stable-ABI wheel is validated with every torch from its floor up.
Exit codes: 0 passed, 1 failed, 2 usage, 3 no device, 4 import or internal error,
5 unsupported GPU (the wheel holds no code for it).
"""
import argparse
import datetime
import json
import os
import sys
import time

SIZES = [1 << 24, 3_000_017, (1000, 1537)]
QUICK = [1 << 16, 100_003, (100, 37)]


def write_report(path, report):
    text = json.dumps(report, indent=1, allow_nan=False, default=str)
    if not path:
        print(text)
        return
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


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


def compare(torch, out, ref, args):
    out64, ref64 = out.double().flatten(), ref.double().flatten()
    diff = out64 - ref64
    cos = torch.nn.functional.cosine_similarity(out64, ref64, dim=0).item()
    rel_l1 = (diff.abs().sum() / ref64.abs().sum()).item()
    finite = bool(torch.isfinite(out).all().item())
    failures = [] if finite else ["output holds NaN or Inf"]
    if cos < args.min_cosine:
        failures.append(f"cosine {cos:.6f} < {args.min_cosine}")
    if rel_l1 > args.max_relative_l1:
        failures.append(f"relative L1 {rel_l1:.2e} > {args.max_relative_l1}")
    return {"cosine": cos, "relative_l1": rel_l1, "rmse": diff.pow(2).mean().sqrt().item(),
            "max_abs_err": diff.abs().max().item(), "finite": finite, "failures": failures,
            "passed": not failures, "error": ""}


def cuda_case(torch, op, shape, args, dev):
    a, b = (torch.randn(shape, device=dev, dtype=torch.float32) for _ in range(2))
    alpha = 0.75
    out = op(a, b, alpha)
    torch.cuda.synchronize(dev)
    case = compare(torch, out, a.double() + alpha * b.double(), args)
    n = a.numel()
    ms, ms_min = time_ms(torch, lambda: op(a, b, alpha), args.warmup, args.iters)
    base_ms, _ = time_ms(torch, lambda: torch.add(a, b, alpha=alpha), args.warmup, args.iters)
    moved = 3 * n * 4
    name = "cuda_" + ("x".join(map(str, shape)) if isinstance(shape, tuple) else f"n{n}")
    case.update(name=name, dtype="float32", throughput=moved / ms / 1e6, throughput_unit="GB/s",
                baseline_throughput=moved / base_ms / 1e6, baseline_name="torch.add float32",
                time_ms=ms, time_ms_min=ms_min, timing_runs=args.iters)
    return case


def cpu_case(torch, op, args):
    a, b = torch.randn(10_007), torch.randn(10_007)
    case = compare(torch, op(a, b, -1.5), a.double() - 1.5 * b.double(), args)
    case.update(name="cpu_n10007", dtype="float32", throughput=None, throughput_unit="GB/s",
                baseline_throughput=None, baseline_name="")
    return case


def refusal_case(torch, op, dev):
    """A float16 input must be refused with an error, not computed."""
    a = torch.randn(64, device=dev, dtype=torch.float16)
    case = {"name": "refuses_float16", "dtype": "float16", "passed": False, "failures": [],
            "error": "", "throughput": None, "throughput_unit": "GB/s"}
    try:
        op(a, a, 1.0)
        case["failures"].append("float16 input was accepted")
    except (ValueError, RuntimeError) as e:
        case["passed"] = "float32" in str(e)
        if not case["passed"]:
            case["failures"].append(f"unexpected error text: {str(e)[:200]}")
    return case


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
    here = {os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.realpath(__file__))}
    sys.path = [x for x in sys.path if os.path.abspath(x or ".") not in here]
    report = {"schema": "farm.validation.v2", "device": args.device, "gpu_name": None,
              "compute_capability": None, "dtype": "float32",
              "reference": "torch in float64 on the same inputs",
              "thresholds": {"min_cosine": args.min_cosine, "max_relative_l1": args.max_relative_l1},
              "timing": {"method": "cuda events", "warmup": args.warmup, "iters": args.iters,
                         "statistic": "median"},
              "cases": [],
              "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    t0 = time.time()
    try:
        import torch
        import stable_abi_example
    except Exception as e:  # noqa: BLE001 - any import failure is the package's
        finish(args, report, 4, "error", f"cannot import stable_abi_example: {e}")
    report["package"] = {"name": "stable_abi_example", "version": stable_abi_example.__version__,
                         "path": stable_abi_example.LIBRARY}
    report["environment"] = {"python": sys.version.split()[0], "quick": args.quick,
                             "torch": torch.__version__, "torch_cuda": torch.version.cuda}
    if not torch.cuda.is_available():
        finish(args, report, 3, "no_device", "no cuda device")
    dev = torch.device(args.device)
    if dev.index is not None and dev.index >= torch.cuda.device_count():
        finish(args, report, 3, "no_device", f"no device {args.device}")
    torch.cuda.set_device(dev)
    cc = torch.cuda.get_device_capability(dev)
    report.update(gpu_name=torch.cuda.get_device_name(dev), compute_capability=f"{cc[0]}.{cc[1]}",
                  baseline={"available": True, "impl": "torch.add", "dtypes": ["float32"],
                            "headline_dtype": "float32", "torch_version": torch.__version__})
    seed = int(time.time())
    torch.manual_seed(seed)
    report["environment"]["seed"] = seed
    op = stable_abi_example.scaled_add
    for shape in QUICK if args.quick else SIZES:
        try:
            report["cases"].append(cuda_case(torch, op, shape, args, dev))
        except RuntimeError as e:
            text = str(e)
            if "no kernel image" in text:
                finish(args, report, 5, "unsupported_gpu", text.splitlines()[0])
            report["cases"].append({"name": f"cuda_{shape}", "passed": False, "error": text[:2000],
                                    "failures": ["kernel error"]})
    report["cases"].append(cpu_case(torch, op, args))
    report["cases"].append(refusal_case(torch, op, dev))
    report["elapsed_s"] = time.time() - t0
    passed = sum(c["passed"] for c in report["cases"])
    msg = (f"{passed}/{len(report['cases'])} cases passed on {report['gpu_name']} "
           f"(cc {report['compute_capability']}, torch {torch.__version__})")
    ok = passed == len(report["cases"])
    finish(args, report, 0 if ok else 1, "passed" if ok else "failed", msg)


if __name__ == "__main__":
    main()
