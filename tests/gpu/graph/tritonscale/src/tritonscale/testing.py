"""The validation report of the GPU build-graph packages (kernels/VALIDATION.md, schema
farm.validation.v2): each case compares an output with a float64 torch reference and times
it with CUDA events against a torch baseline. cudablend's validation uses it too."""
import argparse
import datetime
import json
import os
import sys
import time

EXIT_PASSED, EXIT_FAILED, EXIT_USAGE, EXIT_NO_DEVICE, EXIT_ERROR = 0, 1, 2, 3, 4
STATES = {0: "passed", 1: "failed", 2: "usage_error", 3: "no_device", 4: "error"}


def parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--report")
    p.add_argument("--min-cosine", type=float, default=0.9999)
    p.add_argument("--max-relative-l1", type=float, default=0.001)
    return p.parse_args(argv)


def compare(torch, out, ref):
    o, r = out.double().flatten(), ref.double().flatten()
    cos = float(torch.nn.functional.cosine_similarity(o, r, dim=0))
    rel = float((o - r).abs().sum() / r.abs().sum().clamp_min(1e-30))
    return cos, rel, bool(torch.isfinite(o).all())


def median_ms(torch, fn, iters=30):
    for _ in range(5):
        fn()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def run(name, cases_fn, argv):
    """cases_fn(torch, device) -> [(case name, out, ref, fn, baseline_fn, bytes)]."""
    args = parse(argv)
    report = {"schema": "farm.validation.v2", "device": args.device, "dtype": "float32",
              "reference": "torch float64", "package": {"name": name},
              "thresholds": {"min_cosine": args.min_cosine,
                             "max_relative_l1": args.max_relative_l1},
              "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
              "environment": {"python": sys.version.split()[0], "argv": sys.argv}, "cases": []}
    start = time.monotonic()
    code = EXIT_PASSED
    try:
        import torch
        if not torch.cuda.is_available():
            code, report["message"] = EXIT_NO_DEVICE, "no cuda device"
        else:
            device = torch.device(args.device)
            props = torch.cuda.get_device_properties(device)
            report["gpu_name"] = props.name
            report["compute_capability"] = f"{props.major}.{props.minor}"
            for case, out, ref, fn, base, nbytes in cases_fn(torch, device):
                cos, rel, finite = compare(torch, out, ref)
                ms, base_ms = median_ms(torch, fn), median_ms(torch, base)
                passed = finite and cos >= args.min_cosine and rel <= args.max_relative_l1
                report["cases"].append({
                    "name": case, "cosine": cos, "relative_l1": rel, "finite": finite,
                    "passed": passed, "throughput": nbytes / ms / 1e6,
                    "throughput_unit": "GB/s", "baseline_throughput": nbytes / base_ms / 1e6,
                    "baseline_name": "torch float32", "time_ms": ms,
                    "failures": [] if passed else [f"cosine {cos}, relative L1 {rel}"]})
                code = code if passed else EXIT_FAILED
            ok = sum(c["passed"] for c in report["cases"])
            report["message"] = (f"{ok}/{len(report['cases'])} cases passed on {props.name} "
                                 f"(cc {props.major}.{props.minor})")
    except Exception as e:  # the package or the script broke: never a pass
        code, report["message"] = EXIT_ERROR, f"{type(e).__name__}: {e}"
    report["state"], report["exit_code"] = STATES[code], code
    report["elapsed_s"] = time.monotonic() - start
    text = json.dumps(report, allow_nan=False, default=str)
    if args.report:
        with open(args.report + ".tmp", "w") as f:
            f.write(text)
        os.replace(args.report + ".tmp", args.report)
    print(report["message"])
    return code
