#!/usr/bin/env python3
"""Validates an installed attn_example wheel on a GPU (contract: kernels/VALIDATION.md).

    python validate.py --device cuda:0 --report out.json [--quick]

For every case (B, H, N, D, causal) it draws fresh random float32 inputs, runs the CUDA
kernel and the float64-accumulating CPU reference, and compares them (cosine similarity,
relative L1, RMSE, max abs error) against the thresholds. Then it times the kernel with
CUDA events (warm-up, median of >= 20 launches) and reports TOPS = 4*B*H*N^2*D / time
(halved when causal); when torch is importable it times torch's
scaled_dot_product_attention on the same GPU and shape as a baseline.

Exit codes: 0 every case passed; 1 a case failed; 2 bad usage; 3 no CUDA device (never a
pass); 4 the package could not be imported or validation itself broke; 5 the wheel holds
no code for this GPU. The JSON report is written in every case where --report is given.
"""
import argparse
import datetime
import json
import math
import os
import platform
import random
import re
import statistics
import sys
import time

SCHEMA = "farm.validation.v2"
EXIT_PASSED, EXIT_FAILED, EXIT_USAGE, EXIT_NO_DEVICE, EXIT_ERROR, EXIT_UNSUPPORTED_GPU = range(6)
STATE_BY_EXIT = {EXIT_PASSED: "passed", EXIT_FAILED: "failed", EXIT_USAGE: "usage_error",
                 EXIT_NO_DEVICE: "no_device", EXIT_ERROR: "error",
                 EXIT_UNSUPPORTED_GPU: "unsupported_gpu"}
MIN_TIMING_RUNS = 20

# (B, H, N, D, causal). Ragged N (not a multiple of the 64-row tile) and every supported
# head dim are covered; the last ones are large enough for a meaningful TOPS figure.
FULL_CASES = [
    (1, 1, 64, 64, False), (2, 3, 100, 64, True), (1, 4, 257, 128, False),
    (2, 4, 300, 32, True), (1, 2, 512, 96, False), (2, 8, 1024, 64, True),
    (1, 16, 2048, 128, False), (1, 16, 2048, 128, True),
]
QUICK_CASES = [(1, 1, 64, 64, False), (2, 3, 100, 64, True), (1, 4, 257, 128, False),
               (1, 8, 1024, 128, True)]
# Without numpy, inputs and metrics are pure Python: at most 64Ki values per tensor.
PURE_PYTHON_CASES = [(1, 1, 64, 64, False), (2, 3, 100, 64, True), (1, 1, 257, 128, False),
                     (1, 2, 300, 32, True), (1, 1, 512, 96, False)]
PURE_PYTHON_MAX_VALUES = 65536


class UsageError(Exception):
    pass


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda:0", help="CUDA device, cuda or cuda:N")
    p.add_argument("--report", help="write the JSON report here (default: print it)")
    p.add_argument("--quick", action="store_true", help="fewer, smaller cases")
    p.add_argument("--min-cosine", type=float, default=0.99)
    p.add_argument("--max-relative-l1", type=float, default=0.07)
    p.add_argument("--seed", type=int, default=None, help="default: fresh from the clock")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=30, help=f"timed launches (>= {MIN_TIMING_RUNS})")
    p.add_argument("--shapes", help="cases as 'B,H,N,D[,causal];...' instead of the built-in set")
    p.add_argument("--baseline-dtype", default="float16,float32",
                   help="torch SDPA baseline dtypes, comma separated, first is the headline "
                        "baseline_tops; 'none' skips the baseline")
    p.add_argument("--no-timing", action="store_true", help="correctness only")
    p.add_argument("--import-path", action="append", default=[],
                   help="directory to import attn_example from (default: the installed one)")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        if e.code == 0:  # --help
            raise
        raise UsageError("bad command line (see --help)") from e
    if args.iters < MIN_TIMING_RUNS:
        raise UsageError(f"--iters must be >= {MIN_TIMING_RUNS}, got {args.iters}")
    if not re.fullmatch(r"cuda(:\d+)?", args.device):
        raise UsageError(f"--device must be cuda or cuda:N, got {args.device!r}")
    args.baseline_dtypes = [d for d in args.baseline_dtype.split(",") if d and d != "none"]
    for d in args.baseline_dtypes:
        if d not in ("float16", "bfloat16", "float32"):
            raise UsageError(f"--baseline-dtype: unknown dtype {d!r}")
    args.cases = parse_shapes(args.shapes) if args.shapes else None
    return args


def parse_shapes(text):
    cases = []
    for item in filter(None, (s.strip() for s in text.split(";"))):
        parts = [x.strip() for x in item.split(",")]
        try:
            B, H, N, D = (int(x) for x in parts[:4])
        except ValueError as e:
            raise UsageError(f"--shapes: bad case {item!r}") from e
        if len(parts) not in (4, 5) or min(B, H, N, D) <= 0:
            raise UsageError(f"--shapes: bad case {item!r}")
        causal = len(parts) == 5 and parts[4].lower() in ("1", "true", "causal", "yes")
        cases.append((B, H, N, D, causal))
    if not cases:
        raise UsageError("--shapes: no cases")
    return cases


def import_package(extra_paths):
    """Imports the installed attn_example, not the unbuilt source package next to this
    script (python puts the script's directory first on sys.path)."""
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != here]
    sys.path[0:0] = [os.path.abspath(p) for p in extra_paths]
    import attn_example  # noqa: E402 (after the path fix on purpose)
    return attn_example


def try_numpy():
    try:
        import numpy
        return numpy
    except Exception:  # absent or broken: fall back to pure Python
        return None


class Inputs:
    """Random float32 inputs and the metric code, with numpy when available."""

    def __init__(self, np, seed):
        self.np = np
        self.seed = seed
        self.rng = np.random.default_rng(seed) if np is not None else random.Random(seed)

    def tensor(self, count):
        if self.np is not None:
            return self.rng.standard_normal(count, dtype=self.np.float32)
        import array
        return array.array("f", (self.rng.gauss(0.0, 1.0) for _ in range(count)))

    def metrics(self, out, ref):
        if self.np is not None:
            o = self.np.frombuffer(out, dtype=self.np.float32).astype(self.np.float64)
            r = self.np.frombuffer(ref, dtype=self.np.float32).astype(self.np.float64)
            finite = bool(self.np.isfinite(o).all())
            dot, no, nr = float(o @ r), float(o @ o), float(r @ r)
            diff = o - r
            l1, l1_ref = float(self.np.abs(diff).sum()), float(self.np.abs(r).sum())
            sq, max_abs = float(diff @ diff), float(self.np.abs(diff).max())
        else:
            finite = all(math.isfinite(x) for x in out)
            dot = no = nr = l1 = l1_ref = sq = max_abs = 0.0
            for a, b in zip(out, ref):
                d = a - b
                dot, no, nr = dot + a * b, no + a * a, nr + b * b
                l1, l1_ref, sq = l1 + abs(d), l1_ref + abs(b), sq + d * d
                max_abs = max(max_abs, abs(d))
        return {
            "cosine": dot / math.sqrt(no * nr) if no > 0 and nr > 0 else float("nan"),
            "relative_l1": l1 / l1_ref if l1_ref > 0 else float("nan"),
            "rmse": math.sqrt(sq / len(ref)),
            "max_abs_err": max_abs,
            "finite": finite,
        }


def case_name(B, H, N, D, causal):
    return f"b{B}_h{H}_n{N}_d{D}" + ("_causal" if causal else "")


def flops(B, H, N, D, causal):
    total = 4.0 * B * H * N * N * D
    return total / 2 if causal else total


def check_numbers(m, args):
    failures = []
    if not m["finite"]:
        failures.append("output holds NaN or Inf")
    if not m["cosine"] >= args.min_cosine:
        failures.append(f"cosine {m['cosine']:.6f} < {args.min_cosine}")
    if not m["relative_l1"] <= args.max_relative_l1:
        failures.append(f"relative_l1 {m['relative_l1']:.6f} > {args.max_relative_l1}")
    return failures


def time_kernel(pkg, q, k, v, shape, args):
    B, H, N, D, causal = shape
    times = pkg.benchmark(q, k, v, B, H, N, D, causal=causal, device=args.device,
                          warmup=args.warmup, iters=args.iters)
    median = statistics.median(times)
    tops = flops(*shape) / (median * 1e-3) / 1e12 if median > 0 else None
    return {"time_ms": median, "time_ms_min": min(times), "timing_runs": len(times),
            "tops": tops, "throughput": tops, "throughput_unit": "TOPS"}


def run_case(pkg, inputs, shape, args):
    """One case: correctness against the CPU reference, then timing. AttnError subclasses
    propagate only for the GPU-wide conditions (no device, no kernel image)."""
    B, H, N, D, causal = shape
    # The ValidationCase fields are always present (null until measured).
    case = {"name": case_name(*shape), "cosine": None, "relative_l1": None, "rmse": None,
            "tops": None, "baseline_tops": None, "throughput": None, "throughput_unit": "TOPS",
            "baseline_throughput": None, "baseline_name": "", "passed": False, "B": B, "H": H, "N": N,
            "D": D, "causal": causal, "dtype": "float32", "flops": flops(*shape), "error": ""}
    count = B * H * N * D
    q, k, v = inputs.tensor(count), inputs.tensor(count), inputs.tensor(count)
    try:
        out = pkg.attention(q, k, v, B, H, N, D, causal=causal, device=args.device)
    except (pkg.CudaUnavailableError, pkg.NoKernelImageError):
        raise
    except (pkg.AttnError, ValueError) as e:
        case.update(passed=False, failures=[f"kernel call failed: {e}"], error=str(e))
        return case
    t0 = time.monotonic()
    ref = pkg.attention(q, k, v, B, H, N, D, causal=causal, device="cpu")
    case["reference_s"] = round(time.monotonic() - t0, 3)
    metrics = inputs.metrics(out, ref)
    case.update(metrics)
    case["failures"] = check_numbers(metrics, args)
    if not args.no_timing:
        try:
            case.update(time_kernel(pkg, q, k, v, shape, args))
        except pkg.AttnError as e:
            case["failures"].append(f"timing failed: {e}")
            case["error"] = str(e)
    case["passed"] = not case["failures"]
    return case


class TorchBaseline:
    """torch.nn.functional.scaled_dot_product_attention timed with CUDA events."""

    def __init__(self, dtypes, device):
        self.info = {"available": False, "impl": "torch.nn.functional.scaled_dot_product_attention",
                     "dtypes": dtypes, "headline_dtype": dtypes[0] if dtypes else None,
                     "reason": ""}
        self.torch = None
        if not dtypes:
            self.info["reason"] = "disabled (--baseline-dtype none)"
            return
        try:
            import torch
            import torch.nn.functional  # noqa: F401
        except Exception as e:  # absent or broken torch: no baseline, not a failure
            self.info["reason"] = f"torch not importable: {type(e).__name__}: {e}"
            return
        self.info["torch_version"] = torch.__version__
        if not torch.cuda.is_available():
            self.info["reason"] = "torch sees no CUDA device"
            return
        self.torch, self.device = torch, torch.device(device)
        self.info["available"] = True

    def measure(self, shape, warmup, iters):
        """{dtype: {"tops", "time_ms"} or {"error"}} for one shape."""
        results = {}
        for dtype in self.info["dtypes"] if self.torch is not None else []:
            try:
                results[dtype] = self._time(shape, getattr(self.torch, dtype), warmup, iters)
            except Exception as e:  # e.g. out of memory: recorded, the case stays valid
                results[dtype] = {"error": f"{type(e).__name__}: {e}"}
        return results

    def _time(self, shape, dtype, warmup, iters):
        torch = self.torch
        B, H, N, D, causal = shape
        sdpa = torch.nn.functional.scaled_dot_product_attention
        q, k, v = (torch.randn(B, H, N, D, device=self.device, dtype=dtype) for _ in range(3))
        with torch.no_grad():
            for _ in range(warmup):
                sdpa(q, k, v, is_causal=causal)
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(iters)]
            for start, stop in events:
                start.record()
                sdpa(q, k, v, is_causal=causal)
                stop.record()
            torch.cuda.synchronize(self.device)
        median = statistics.median(s.elapsed_time(e) for s, e in events)
        return {"time_ms": median, "tops": flops(*shape) / (median * 1e-3) / 1e12}


def add_baseline(case, baseline, args):
    shape = (case["B"], case["H"], case["N"], case["D"], case["causal"])
    by_dtype = baseline.measure(shape, args.warmup, args.iters)
    if not by_dtype:
        return
    case["baseline"] = by_dtype
    head = by_dtype.get(baseline.info["headline_dtype"], {})
    case["baseline_tops"] = head.get("tops")
    case["baseline_dtype"] = baseline.info["headline_dtype"]
    case["baseline_throughput"] = head.get("tops")
    case["baseline_name"] = "torch SDPA " + baseline.info["headline_dtype"]
    if case.get("tops") and head.get("tops"):
        case["speedup_vs_baseline"] = case["tops"] / head["tops"]


def select_cases(args, np):
    if args.cases:
        cases = args.cases
    elif np is None:
        cases = PURE_PYTHON_CASES[:3] if args.quick else PURE_PYTHON_CASES
    else:
        cases = QUICK_CASES if args.quick else FULL_CASES
    if np is None:
        too_big = [c for c in cases if c[0] * c[1] * c[2] * c[3] > PURE_PYTHON_MAX_VALUES]
        if too_big:
            raise UsageError(f"without numpy a case may hold at most {PURE_PYTHON_MAX_VALUES} "
                             f"values per tensor; too big: {[case_name(*c) for c in too_big]}")
    return cases


def sanitize(value):
    """JSON without NaN/Infinity (strict parsers reject them): non-finite numbers -> null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: sanitize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize(v) for v in value]
    return value


def write_report(report, path):
    text = json.dumps(sanitize(report), indent=2, allow_nan=False) + "\n"
    if not path:
        sys.stdout.write(text)
        return
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def new_report(argv, args):
    return {
        "schema": SCHEMA, "state": "error", "exit_code": EXIT_ERROR, "message": "",
        "device": args.device, "gpu_name": None, "compute_capability": None,
        "dtype": "float32",
        "reference": "CPU, float64 accumulation: attn_example.attention(device='cpu')",
        "thresholds": {"min_cosine": args.min_cosine, "max_relative_l1": args.max_relative_l1},
        "timing": None, "baseline": None, "package": None, "cases": [],
        "environment": {"python": platform.python_version(), "platform": platform.platform(),
                        "argv": argv},
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def finish(report, code, message, t0):
    report["exit_code"], report["state"] = code, STATE_BY_EXIT.get(code, "error")
    report["message"] = message
    report["elapsed_s"] = round(time.monotonic() - t0, 3)
    return code


def print_case(case):
    if case["cosine"] is None:
        print(f"  {case['name']:<28} FAIL  {case['error']}")
        return
    line = (f"  {case['name']:<28} {'ok  ' if case['passed'] else 'FAIL'}  "
            f"cos={case['cosine']:.6f} rel_l1={case['relative_l1']:.2e} rmse={case['rmse']:.2e}")
    if case.get("tops") is not None:
        line += f"  {case['time_ms']:.3f} ms {case['tops']:.2f} TOPS"
    if case.get("baseline_tops") is not None:
        line += f" (SDPA {case['baseline_dtype']} {case['baseline_tops']:.2f})"
    print(line + ("" if case["passed"] else "  <- " + "; ".join(case["failures"])), flush=True)


def find_device(pkg, args, report):
    """Fills the GPU fields; returns an exit code when there is no usable device."""
    index = 0 if args.device == "cuda" else int(args.device[5:])
    count = pkg.cuda_device_count()
    if count == 0:
        try:
            pkg.cuda_device_info(args.device)
            why = "unknown reason"
        except pkg.AttnError as e:
            why = str(e)
        return EXIT_NO_DEVICE, f"no cuda device: {why}"
    if index >= count:
        return EXIT_NO_DEVICE, f"no cuda device {args.device}: {count} visible"
    info = pkg.cuda_device_info(args.device)
    report["gpu_name"], report["compute_capability"] = info["name"], info["compute_capability"]
    return None, ""


def run_cases(pkg, args, report, np):
    inputs = Inputs(np, args.seed)
    baseline = TorchBaseline([] if args.no_timing else args.baseline_dtypes, args.device)
    if args.no_timing:
        baseline.info["reason"] = "disabled (--no-timing)"
    report["baseline"] = baseline.info
    for shape in select_cases(args, np):
        try:
            case = run_case(pkg, inputs, shape, args)
        except pkg.NoKernelImageError as e:
            return EXIT_UNSUPPORTED_GPU, (
                f"the wheel holds no code for {report['gpu_name']} (cc "
                f"{report['compute_capability']}); built for {pkg.built_arches()}: {e}")
        except pkg.CudaUnavailableError as e:
            return EXIT_NO_DEVICE, f"no cuda device: {e}"
        if case["passed"] and not args.no_timing:
            add_baseline(case, baseline, args)
        report["cases"].append(case)
        print_case(case)
    failed = [c["name"] for c in report["cases"] if not c["passed"]]
    where = f"{report['gpu_name']} (cc {report['compute_capability']})"
    if failed:
        total = len(report["cases"])
        return EXIT_FAILED, f"{len(failed)}/{total} cases failed on {where}: {failed}"
    return EXIT_PASSED, f"{len(report['cases'])}/{len(report['cases'])} cases passed on {where}"


def validate(args, report, t0):
    try:
        pkg = import_package(args.import_path)
    except Exception as e:
        message = f"cannot import attn_example: {type(e).__name__}: {e}"
        return finish(report, EXIT_ERROR, message, t0)
    np = try_numpy()
    report["package"] = {"name": "attn_example", "version": pkg.__version__,
                         "path": os.path.dirname(pkg.__file__), "built_arches": pkg.built_arches()}
    report["environment"].update(numpy=np.__version__ if np is not None else None,
                                 quick=args.quick, seed=args.seed)
    report["timing"] = None if args.no_timing else {
        "method": "CUDA events around each kernel launch, inputs already on the GPU",
        "warmup": args.warmup, "iters": args.iters, "statistic": "median",
        "tops_formula": "4*B*H*N^2*D / time (halved when causal) / 1e12"}
    code, message = find_device(pkg, args, report)
    if code is None:
        print(f"validating attn_example {pkg.__version__} on {report['gpu_name']} "
              f"(cc {report['compute_capability']}), seed {args.seed}", flush=True)
        code, message = run_cases(pkg, args, report, np)
    return finish(report, code, message, t0)


def main(argv):
    t0 = time.monotonic()
    try:
        args = parse_args(argv)
    except UsageError as e:
        print(f"validate.py: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.seed is None:
        args.seed = int(time.time_ns() % (1 << 31))
    report = new_report(argv, args)
    try:
        code = validate(args, report, t0)
    except UsageError as e:
        code = finish(report, EXIT_USAGE, f"usage: {e}", t0)
    except Exception as e:  # validation itself broke: report it, never a pass
        import traceback
        traceback.print_exc()
        code = finish(report, EXIT_ERROR, f"validation error: {type(e).__name__}: {e}", t0)
    print(f"validate.py: {report['state']}: {report['message']}", flush=True)
    try:
        write_report(report, args.report)
    except OSError as e:
        print(f"validate.py: cannot write the report {args.report}: {e}", file=sys.stderr)
        return EXIT_ERROR
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
