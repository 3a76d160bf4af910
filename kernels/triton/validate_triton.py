"""Validates an installed Triton wheel on a GPU (contract: kernels/VALIDATION.md).

Triton wheels hold no GPU code: the kernels here are compiled at run time for the device's
own arch (so a ptxas that does not know it fails here, as it would for users), run, and
compared with torch in float64 on the same inputs. Cases: a memory-bound add (GB/s against
torch.add) and a matmul (TOPS against torch.matmul), with sizes that are and are not
multiples of the block sizes. Exit codes: 0 passed, 1 failed, 2 usage, 3 no device,
4 import or internal error, 5 unsupported GPU (the compiler cannot target it).
"""
import argparse
import datetime
import json
import os
import sys
import time

ADD_SIZES = [1 << 24, 3_000_017]
MATMUL_SIZES = [(2048, 2048, 2048), (1000, 1500, 700)]
QUICK_ADD, QUICK_MATMUL = [1 << 20, 100_003], [(256, 256, 256), (200, 300, 100)]


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


def kernels(triton, tl):
    @triton.jit
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    @triton.jit
    def matmul_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            kk = k * BK + rk
            x = tl.load(a + rm[:, None] * sam + kk[None, :] * sak,
                        mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
            y = tl.load(b + kk[:, None] * sbk + rn[None, :] * sbn,
                        mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))

    return add_kernel, matmul_kernel


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


def add_case(torch, triton, add_kernel, n, args, dev):
    x, y = (torch.randn(n, device=dev, dtype=torch.float32) for _ in range(2))
    out = torch.empty_like(x)
    run = lambda: add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)  # noqa: E731
    run()
    case = compare(torch, out, x.double() + y.double(), args)
    ms, ms_min = time_ms(torch, run, args.warmup, args.iters)
    base_ms, _ = time_ms(torch, lambda: torch.add(x, y, out=out), args.warmup, args.iters)
    moved = 3 * n * 4
    case.update(name=f"add_n{n}", dtype="float32", throughput=moved / ms / 1e6, throughput_unit="GB/s",
                baseline_throughput=moved / base_ms / 1e6, baseline_name="torch.add float32",
                time_ms=ms, time_ms_min=ms_min, timing_runs=args.iters)
    return case


def matmul_case(torch, triton, matmul_kernel, shape, args, dev):
    m, n, k = shape
    a = torch.randn(m, k, device=dev, dtype=torch.float16)
    b = torch.randn(k, n, device=dev, dtype=torch.float16)
    c = torch.empty(m, n, device=dev, dtype=torch.float16)
    grid = (triton.cdiv(m, 64), triton.cdiv(n, 64))
    run = lambda: matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),  # noqa: E731
                                      b.stride(1), c.stride(0), c.stride(1), BM=64, BN=64, BK=32)
    run()
    case = compare(torch, c, a.double() @ b.double(), args)
    ms, ms_min = time_ms(torch, run, args.warmup, args.iters)
    base_ms, _ = time_ms(torch, lambda: torch.matmul(a, b), args.warmup, args.iters)
    flops = 2 * m * n * k
    case.update(name=f"matmul_m{m}_n{n}_k{k}", dtype="float16", throughput=flops / ms / 1e9,
                throughput_unit="TOPS", baseline_throughput=flops / base_ms / 1e9,
                baseline_name="torch.matmul float16", flops=flops, time_ms=ms, time_ms_min=ms_min,
                timing_runs=args.iters)
    return case


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--report")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--min-cosine", type=float, default=0.9999)
    p.add_argument("--max-relative-l1", type=float, default=0.001)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args()
    args.iters = max(args.iters, 20)
    here = {os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.realpath(__file__))}
    sys.path = [x for x in sys.path if os.path.abspath(x or ".") not in here]
    report = {"schema": "farm.validation.v2", "device": args.device, "gpu_name": None,
              "compute_capability": None, "dtype": "float32/float16",
              "reference": "torch in float64 on the same inputs",
              "thresholds": {"min_cosine": args.min_cosine, "max_relative_l1": args.max_relative_l1},
              "timing": {"method": "cuda events", "warmup": args.warmup, "iters": args.iters,
                         "statistic": "median"},
              "cases": [], "started_at": datetime.datetime.utcnow().isoformat() + "Z"}
    t0 = time.time()
    try:
        import torch
        import triton
        import triton.language as tl
        add_kernel, matmul_kernel = kernels(triton, tl)
    except Exception as e:  # noqa: BLE001 - any import failure is the package's
        finish(args, report, 4, "error", f"cannot import triton: {e}")
    report["package"] = {"name": "triton", "version": triton.__version__, "path": triton.__file__}
    if not torch.cuda.is_available():
        finish(args, report, 3, "no_device", "no cuda device")
    dev = torch.device(args.device)
    torch.cuda.set_device(dev)
    cc = torch.cuda.get_device_capability(dev)
    report.update(gpu_name=torch.cuda.get_device_name(dev), compute_capability=f"{cc[0]}.{cc[1]}",
                  baseline={"available": True, "impl": "torch", "torch_version": torch.__version__})
    seed = int(time.time())
    torch.manual_seed(seed)
    report["environment"] = {"python": sys.version.split()[0], "quick": args.quick, "seed": seed}
    cases = [(add_case, n) for n in (QUICK_ADD if args.quick else ADD_SIZES)]
    cases += [(matmul_case, s) for s in (QUICK_MATMUL if args.quick else MATMUL_SIZES)]
    for fn, arg in cases:
        kernel = add_kernel if fn is add_case else matmul_kernel
        try:
            report["cases"].append(fn(torch, triton, kernel, arg, args, dev))
        except Exception as e:  # noqa: BLE001 - a compile or launch error fails the case
            text = str(e)
            if "is not defined" in text and "sm_" in text:  # ptxas does not know this GPU
                finish(args, report, 5, "unsupported_gpu", text.splitlines()[0] if text else text)
            report["cases"].append({"name": f"{fn.__name__}_{arg}", "passed": False, "error": text[:2000],
                                    "failures": ["kernel error"]})
    report["elapsed_s"] = time.time() - t0
    passed = sum(c["passed"] for c in report["cases"])
    msg = (f"{passed}/{len(report['cases'])} cases passed on {report['gpu_name']} "
           f"(cc {report['compute_capability']}, triton {triton.__version__})")
    ok = passed == len(report["cases"])
    finish(args, report, 0 if ok else 1, "passed" if ok else "failed", msg)


if __name__ == "__main__":
    main()
