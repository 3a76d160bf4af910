#!/usr/bin/env python3
"""Release day, end to end (docs/benchmarks.md, "Release day: from an upstream release to a
published wheel").

Runs tests/integration/test_release_day.py's first test, the whole path with the real farmd,
farm-worker, farmctl and pip against the local fakes: a torch stand-in (2.10.0+cu130)
appears on the index fake; the schedule's watch polls it (every second), the build is
submitted with its environment locked (resolve), leased, provisioned, built, validated (a
test-only fake GPU runs the validation script) and published to the GitHub fake. Each run
reports the seconds of each phase from the moment the release appeared; this prints every
run and the median of each phase as one JSON object. Not a test: no assertion on time.

  tests/bench/release_day_bench.py --build build [--runs 3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TEST = os.path.join(HERE, "..", "integration", "test_release_day.py")


def one_run(build):
    fd, report = tempfile.mkstemp(prefix="release-day-", suffix=".json")
    os.close(fd)
    env = dict(os.environ, FARM_RELEASE_DAY_REPORT=report,
               FARMD=os.path.join(build, "daemon", "farmd"),
               FARM_WORKER=os.path.join(build, "worker", "farm-worker"),
               FARMCTL=os.path.join(build, "cli", "farmctl"))
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TEST,
                            "-k", "test_a_new_torch_on_the_index_becomes_a_validated_wheel"],
                           env=env, capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            sys.exit("the release-day run failed:\n" + r.stdout[-4000:] + r.stderr[-2000:])
        with open(report) as f:
            return json.load(f)
    finally:
        os.unlink(report)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="the build directory with the binaries")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = [one_run(os.path.abspath(args.build)) for _ in range(max(1, args.runs))]
    median = {k: round(statistics.median(r[k] for r in runs if r[k] is not None), 2)
              for k in runs[0] if any(r[k] is not None for r in runs)}
    print(json.dumps({"runs": runs, "median_seconds": median}, indent=1))


if __name__ == "__main__":
    main()
