#!/usr/bin/env python3
"""Environment setup per job, first and cached (docs/benchmarks.md, "Environment setup").

Starts the upstream fakes (tests/fakes) holding the torch 2.8.0+cu128 stand-in, pip, a
12,000-file wheel standing in for torch's file count, a CPython archive made from this
machine's interpreter and redist archives made from its CUDA toolkit; then runs
farm-provision:
  - once on an empty cache (Python from the archive, CUDA 13.0 from redist, packages);
  - --jobs more times in the same environment (each job a fresh clone of the snapshot);
  - --workers times on separate empty caches (the fleet without a shared cache: each
    worker downloads everything), counting the bytes the upstreams served.
Prints one JSON object. Not a test: no assertion on time.

  tests/bench/provision_bench.py --provision build/worker/farm-provision [--jobs 10]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAKES = os.path.join(HERE, "..", "fakes")
sys.path.insert(0, FAKES)
from fake_process import RunningFake  # noqa: E402

COMPONENTS = ["cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cudart"]


def make(*args):
    out = subprocess.run([sys.executable, os.path.join(FAKES, "upstream_data.py"), *args],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def served_bytes(fake, sizes):
    return sum(count * sizes.get(name[5:], 0) for name, count in fake.counters().items()
               if name.startswith("file:"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--provision", required=True)
    parser.add_argument("--cuda-home", default="/usr/local/cuda")
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--bulk-files", type=int, default=12000)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="provision-bench-")
    fakes = []
    try:
        data = os.path.join(work, "data")
        sizes = {}
        for made in (make("torch-wheels", "--out", data + "/cu128", "--version", "2.8.0+cu128",
                          "--python-tag", "cp311"),
                     make("host-wheels", "--out", data + "/cu128"),
                     make("bulk-wheel", "--out", data + "/cu128", "--name", "bulk",
                          "--files", str(args.bulk_files), "--bytes", "4096")):
            for f in made["files"]:
                sizes[os.path.basename(f["path"])] = f["size"]
        python = make("cpython", "--out", data + "/python")
        sizes[python["name"]] = python["size"]
        redist = make("redist", "--cuda", args.cuda_home, "--out", data + "/redist",
                      "--components", ",".join(COMPONENTS))
        for c in redist["components"].values():
            sizes[c["relative_path"]] = int(c["size"])
        sizes["redistrib_%s.json" % redist["label"]] = os.path.getsize(redist["manifest"])
        index = RunningFake("fake_pyindex.py", ["--index", "/whl/cu128=" + data + "/cu128"], work, "i")
        fakes.append(index)
        nv = RunningFake("fake_redist.py", ["--root", data + "/redist"], work, "r")
        fakes.append(nv)
        py = RunningFake("fake_redist.py", ["--root", data + "/python"], work, "p")
        fakes.append(py)

        def provision(cache, job):
            os.makedirs(job, exist_ok=True)
            cmd = [args.provision, "--cache", cache, "--job-dir", job, "--python", "3.11",
                   "--torch", "2.8.0+cu128", "--cuda", "13.0", "--glibc", "2.36",
                   "--requirement", "bulk==1.0", "--index", "cu128=%s/whl/cu128/" % index.url,
                   "--redist", nv.url + "/", "--python-release", py.url + "/"]
            for c in COMPONENTS:
                cmd += ["--redist-component", c]
            start = time.monotonic()
            out = subprocess.run(cmd, check=True, capture_output=True, text=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            result["wall_ms"] = round((time.monotonic() - start) * 1000)
            return result

        cache = os.path.join(work, "cache")
        first = provision(cache, os.path.join(work, "job0"))
        cached = [provision(cache, os.path.join(work, "job%d" % i))
                  for i in range(1, args.jobs + 1)]
        walls = [c["wall_ms"] for c in cached]
        upstream_one = sum(served_bytes(f, sizes) for f in fakes)
        for f in fakes:
            f.control("reset", {})
        for w in range(args.workers):
            provision(os.path.join(work, "worker%d" % w), os.path.join(work, "wjob%d" % w))
        upstream_fleet = sum(served_bytes(f, sizes) for f in fakes)
        print(json.dumps({
            "first_ms": first["wall_ms"],
            "first_phases_ms": {k: first[k] for k in ("python_ms", "toolkit_ms", "snapshot_ms",
                                                      "clone_ms")},
            "cached_jobs": len(cached),
            "cached_median_ms": statistics.median(walls),
            "cached_max_ms": max(walls),
            "cached_clone_median_ms": statistics.median(c["clone_ms"] for c in cached),
            "venv_files": args.bulk_files,
            "upstream_bytes_first_worker": upstream_one,
            "upstream_bytes_%d_workers_without_shared_cache" % args.workers: upstream_fleet,
        }, indent=2))
    finally:
        for f in fakes:
            f.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
