#!/usr/bin/env python3
"""Environment locks at submit (docs/benchmarks.md, "Environment locks").

Starts the index fake (tests/fakes) holding torch stand-ins 2.9.0, 2.10.0 and 2.11.0
(+cu130) that each require 28 packages, as the real torch 2.11.0+cu130 does, and farmd
reading it through its pull-through cache; then submits, with no worker (locks are made at
submit):
  - a one-cell recipe: the first resolution (farmd's cache cold) and the same again warm;
  - a 12-cell matrix over 3 distinct environments (3 torch releases x 4 arch lists),
    counting the resolutions farmd ran (its log).
Prints one JSON object. Not a test: no assertion on time.

  tests/bench/lock_bench.py --farmd build/daemon/farmd --farmctl build/cli/farmctl
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAKES = os.path.join(HERE, "..", "fakes")
sys.path.insert(0, FAKES)
from fake_process import RunningFake  # noqa: E402

# torch 2.11.0+cu130's Requires-Dist, by name: 28 packages, a few with their own needs.
CLOSURE = ["filelock", "typing-extensions", "setuptools", "sympy", "networkx", "jinja2",
           "fsspec", "cuda-bindings", "cuda-pathfinder", "nvidia-cublas", "nvidia-cuda-cupti",
           "nvidia-cuda-nvrtc", "nvidia-cuda-runtime", "nvidia-cudnn-cu13", "nvidia-cufft",
           "nvidia-cufile", "nvidia-curand", "nvidia-cusolver", "nvidia-cusparse",
           "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvjitlink", "nvidia-nvshmem-cu13",
           "nvidia-nvtx", "triton", "cuda-toolkit"]
SECOND_LEVEL = {"sympy": ["mpmath<1.4,>=1.1.0"], "jinja2": ["MarkupSafe>=2.0"]}

RECIPE = """name: lockbench%(n)d
source: {local: %(src)s}
build: "true"
matrix:
  python: ["3.11"]
  torch: %(torch)s
  cuda: ["13.0"]
  arch_lists: %(arch)s
environment:
  torch: %(map)s
  build_requirements: ["setuptools>=64", "ninja", "wheel"]
  toolkit: false
"""


def make(*args):
    subprocess.run([sys.executable, os.path.join(FAKES, "upstream_data.py"), *args],
                   check=True, capture_output=True, text=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--farmd", required=True)
    parser.add_argument("--farmctl", required=True)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="lock-bench-")
    procs, fake = [], None
    try:
        index = os.path.join(work, "cu130")
        for name in CLOSURE + ["mpmath", "MarkupSafe", "ninja", "wheel"]:
            version = "80.9.0" if name == "setuptools" else "1.0"
            make("wheel", "--out", index, "--name", name, "--version", version,
                 *[a for r in SECOND_LEVEL.get(name, []) for a in ("--requires", r)])
        for release in ("2.9.0", "2.10.0", "2.11.0"):
            make("torch-wheels", "--out", index, "--version", release + "+cu130",
                 "--python-tag", "cp311", *[a for r in CLOSURE for a in ("--requires", r)])
        fake = RunningFake("fake_pyindex.py", ["--index", "/whl/cu130=" + index], work, "index")
        data, ready = os.path.join(work, "data"), os.path.join(work, "farmd.addr")
        log = open(os.path.join(work, "farmd.log"), "w")
        procs.append(subprocess.Popen(
            [args.farmd, "--data-dir", data, "--listen", "127.0.0.1:0", "--ready-file", ready,
             "--http-listen", "127.0.0.1:0", "--upstream-index",
             "cu130=%s/whl/cu130/" % fake.url], stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 30
        while not os.path.exists(ready) and time.monotonic() < deadline:
            time.sleep(0.1)
        address = open(ready).read().strip()
        src = os.path.join(work, "src")
        os.makedirs(src)
        open(os.path.join(src, "setup.py"), "w").write("")

        def submit(n, torch, arch, mapping):
            path = os.path.join(work, "r%d.yaml" % n)
            with open(path, "w") as f:
                f.write(RECIPE % {"n": n, "src": src, "torch": torch, "arch": arch,
                                  "map": mapping})
            start = time.monotonic()
            r = subprocess.run([args.farmctl, "--server", address, "--token-file",
                                os.path.join(data, "admin.token"), "submit", path],
                               capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, r.stderr
            return time.monotonic() - start

        one = '["2.11"]', '["9.0"]', '{"2.11": "2.11.0"}'
        first = submit(1, *one)
        warm = [submit(2 + i, *one) for i in range(5)]
        before = open(os.path.join(work, "farmd.log")).read().count("resolution(s) in")
        matrix = submit(10, '["2.9", "2.10", "2.11"]', '["8.0", "8.9", "9.0", "12.0"]',
                        '{"2.9": "2.9.0", "2.10": "2.10.0", "2.11": "2.11.0"}')
        text = open(os.path.join(work, "farmd.log")).read()
        m = re.findall(r"locked (\d+) environment\(s\) with (\d+) resolution\(s\) in (\d+) ms",
                       text)
        print(json.dumps({
            "packages_per_lock": len(CLOSURE) + 5,
            "first_submit_s": round(first, 2),
            "warm_submit_s": sorted(round(w, 2) for w in warm),
            "matrix_cells": int(m[-1][0]), "matrix_resolutions": int(m[-1][1]),
            "matrix_lock_ms": int(m[-1][2]), "matrix_submit_s": round(matrix, 2),
            "submits_logged_before_matrix": before,
            "index_requests": fake.counters().get("requests"),
        }, indent=1))
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)
        if fake:
            fake.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
