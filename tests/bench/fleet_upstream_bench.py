#!/usr/bin/python3
"""Upstream bytes per fleet: 1 vs 10 workers provisioning the same environment through
farmd's pull-through cache (docs/benchmarks.md, "Upstream bytes per fleet").

For each fleet size N: a fresh farm (farmd with the index fake as its cu128 upstream), N
real farm-worker processes with --provision and empty environment caches, and N builds of
one recipe in one environment (the torch 2.8.0+cu128 stand-in, setuptools, on the host's
Python 3.11), submitted at once. Each build first sleeps a little so that no worker takes
a second job before every worker has one. Counted at the upstream fake: file fetches and
bytes served. Timed: submit to the moment the last job's environment was ready (each
build prints the time it starts, which is right after provisioning), and submit to all
builds done. Small stand-ins, so it runs on 2 cores. Prints one JSON object. Not a test.

  FARMD=... FARM_WORKER=... FARMCTL=... /usr/bin/python3 tests/bench/fleet_upstream_bench.py [--fleets 1,10]
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "fakes"))
from farm_harness import Farm, wait_until  # noqa: E402
from fake_process import RunningFake  # noqa: E402
from test_environments import BUILD_WHEEL  # noqa: E402
from test_provision import make  # noqa: E402

RECIPE = """name: fleetpkg
source: {local: %(src)s}
build: |
  python -c 'import time; print("provisioned-at %%.3f" %% time.time())'
  sleep %(hold)d
  python build_wheel.py
matrix:
  python: ["3.11"]
  torch: ["2.8"]
  cuda: ["12.8"]
environment:
  torch: {"2.8": "2.8.0"}
  build_requirements: ["setuptools==66.1.1"]
  toolkit: false
timeout: 900
"""


def run_fleet(n, wheelhouse, sizes, work, hold):
    root = tempfile.mkdtemp(prefix="fleet-%d-" % n, dir=work)
    index = RunningFake("fake_pyindex.py", ["--index", "/whl/cu128=" + wheelhouse], root, "index")
    farm = Farm(root)
    try:
        farm.start_farmd("--upstream-index", "cu128=%s/whl/cu128/" % index.url, http=True)
        for i in range(n):
            farm.start_worker("w%d" % i, "--provision", "--no-probe-kernels")
        farm.wait_workers(n, timeout=120)
        src = os.path.join(root, "src")
        os.makedirs(src)
        with open(os.path.join(src, "build_wheel.py"), "w") as f:
            f.write(BUILD_WHEEL.replace("envpkg", "fleetpkg"))
        recipe = os.path.join(root, "recipe.yaml")
        with open(recipe, "w") as f:
            f.write(RECIPE % {"src": src, "hold": hold})
        start = time.time()
        builds = [farm.ctl_json("submit", "--force", recipe)["id"] for _ in range(n)]

        def all_done():
            shown = [farm.ctl_json("show", str(b)) for b in builds]
            states = [s["state"] for s in shown]
            if any(s in ("BUILD_FAILED", "BUILD_CANCELLED") for s in states):
                raise RuntimeError("a build failed: %s" % json.dumps(shown)[:3000])
            return shown if all(s == "BUILD_SUCCEEDED" for s in states) else None
        shown = wait_until(all_done, 1800, "%d builds" % n, interval=1)
        done = time.time()
        ready, workers = [], set()
        for build in shown:
            job = build["jobs"][0]
            log = farm.ctl("logs", str(job["id"])).stdout
            m = re.search(r"provisioned-at ([0-9.]+)", log)
            assert m, log[-2000:]
            ready.append(float(m.group(1)) - start)
            workers.add(farm.ctl_json("job", str(job["id"]))["attempts"][-1].get("worker_id"))
        counted = index.counters()
        files = {k[5:]: v for k, v in counted.items() if k.startswith("file:")}
        return {"workers": n, "distinct_workers_that_built": len(workers),
                "upstream_file_fetches": sum(files.values()), "upstream_files": files,
                "upstream_bytes": sum(v * sizes.get(k, 0) for k, v in files.items()),
                "upstream_page_requests": sum(v for k, v in counted.items()
                                              if not k.startswith("file:")),
                "all_provisioned_s": round(max(ready), 2),
                "first_provisioned_s": round(min(ready), 2),
                "all_done_s": round(done - start, 2)}
    finally:
        farm.close()
        index.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fleets", default="1,10")
    parser.add_argument("--hold", type=int, default=20,
                        help="seconds each build sleeps after provisioning")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="fleet-bench-")
    try:
        wheelhouse = os.path.join(work, "cu128")
        sizes = {}
        for made in (make("torch-wheels", "--out", wheelhouse, "--version", "2.8.0+cu128",
                          "--python-tag", "cp311"),
                     make("host-wheels", "--out", wheelhouse)):
            for f in made["files"]:
                sizes[os.path.basename(f["path"])] = f["size"]
        results = [run_fleet(int(n), wheelhouse, sizes, work, args.hold)
                   for n in args.fleets.split(",")]
        print(json.dumps({"wheelhouse_bytes": sum(sizes.values()), "fleets": results}, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
