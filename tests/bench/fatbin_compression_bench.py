#!/usr/bin/env python3
"""What nvcc's --compress-mode=size saves on a package's wheel, given to nvcc the way the
farm gives it (NVCC_APPEND_FLAGS, which nvcc reads itself: the package's build is not
changed). Builds the package with `pip wheel` twice per run, with and without the flag,
compile cache off, and prints one Markdown table: the wheel, its device code in the wheel
and unpacked (farmctl inspect's breakdown), and the build time.

    tests/bench/fatbin_compression_bench.py --farmctl build/cli/farmctl \\
        [--source kernels/examples/attn_example] [--arch-list "8.0;8.6;..."] [--runs 1] \\
        [--out DIR] [--python /usr/bin/python3] [--max-jobs N]

The example package is the default source; a real package is measured the same way
(tests/gpu/compression_on_gpu_host.sh does so on a GPU host and validates both wheels).
The wheels are left in --out/default and --out/size (default: a temporary directory,
removed)."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_ARCHS = "8.0;8.6;8.9;9.0a;10.0a;10.3a;12.0a;12.1a"
FLAG = "--compress-mode=size"


def build(args, source, out, compress):
    """(wheel path, seconds) of one pip wheel of a fresh copy of `source`."""
    work = tempfile.mkdtemp(prefix="fatbin-bench-")
    try:
        src = os.path.join(work, "src")
        shutil.copytree(source, src, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info"))
        env = dict(os.environ, TORCH_CUDA_ARCH_LIST=args.arch_list, CCACHE_DISABLE="1",
                   PIP_CONFIG_FILE=os.devnull, MAX_JOBS=str(args.max_jobs))
        flags = env.get("NVCC_APPEND_FLAGS", "").replace(FLAG, "").strip()
        env["NVCC_APPEND_FLAGS"] = (flags + " " + FLAG).strip() if compress else flags
        dist = os.path.join(work, "dist")
        start = time.monotonic()
        r = subprocess.run([args.python, "-m", "pip", "wheel", ".", "--no-build-isolation",
                            "--no-deps", "--no-index", "-w", dist], cwd=src, env=env,
                           capture_output=True, text=True)
        seconds = time.monotonic() - start
        if r.returncode != 0:
            sys.exit("pip wheel failed (%s):\n%s" % ("compressed" if compress else "plain",
                                                      (r.stdout + r.stderr)[-3000:]))
        (name,) = [n for n in os.listdir(dist) if n.endswith(".whl")]
        kept_dir = os.path.join(out, "size" if compress else "default")
        os.makedirs(kept_dir, exist_ok=True)
        kept = os.path.join(kept_dir, name)
        shutil.move(os.path.join(dist, name), kept)
        return kept, seconds
    finally:
        shutil.rmtree(work, ignore_errors=True)


def breakdown(farmctl, wheel):
    """(wheel bytes, device code in the wheel, device code unpacked, image count) from
    farmctl inspect's manifest."""
    r = subprocess.run([farmctl, "inspect", wheel, "--output", "json"], capture_output=True,
                       text=True)
    m = json.loads(r.stdout)["manifest"]
    images = m.get("images", [])
    return (int(m["bytes"]["wheel_bytes"]),
            sum(int(i.get("compressed_bytes", 0)) for i in images),
            sum(int(i.get("uncompressed_bytes", 0)) for i in images),
            sum(int(i.get("fatbin_bytes", 0)) for i in images), len(images))


def mib(n):
    return "%.2f MiB" % (n / 1048576.0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--farmctl", required=True)
    p.add_argument("--source", default=os.path.join(REPO, "kernels", "examples", "attn_example"))
    p.add_argument("--arch-list", default=DEFAULT_ARCHS)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--out", default="")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--max-jobs", type=int, default=os.cpu_count() or 1)
    args = p.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="fatbin-bench-out-")
    os.makedirs(out, exist_ok=True)
    rows = {}
    try:
        for _ in range(args.runs):
            for compress in (False, True):
                wheel, seconds = build(args, args.source, out, compress)
                row = rows.setdefault(compress, {"times": [], "wheel": wheel})
                row["times"].append(seconds)
                row["wheel"] = wheel
        print("package %s, TORCH_CUDA_ARCH_LIST=%s, %d run(s), MAX_JOBS=%d" % (
            os.path.basename(os.path.abspath(args.source)), args.arch_list, args.runs,
            args.max_jobs))
        print("")
        print("| nvcc | wheel | device code in the wheel | in the fatbinary | unpacked | images "
              "| build (median) |")
        print("|---|---|---|---|---|---|---|")
        sizes = {}
        for compress in (False, True):
            total, code, unpacked, fatbin, n = breakdown(args.farmctl, rows[compress]["wheel"])
            sizes[compress] = (total, code)
            print("| %s | %s | %s | %s | %s | %d | %.1f s |" % (
                FLAG if compress else "default", mib(total), mib(code), mib(fatbin),
                mib(unpacked), n, statistics.median(rows[compress]["times"])))
        (t0, c0), (t1, c1) = sizes[False], sizes[True]
        print("")
        print("saving: wheel %.1f%% (%s), device code in the wheel %.1f%%" % (
            100.0 * (t0 - t1) / t0, mib(t0 - t1), 100.0 * (c0 - c1) / c0 if c0 else 0.0))
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
