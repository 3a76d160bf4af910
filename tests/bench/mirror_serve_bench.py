#!/usr/bin/python3
"""farmd serving a 2 GiB wheel from its pull-through cache over loopback (docs/benchmarks.md,
"Pull-through cache: a 2 GiB wheel").

Makes a wheel of --gib GiB (a real zip: METADATA and one stored entry of zeros), serves it
from the index fake (tests/fakes/fake_pyindex.py) as an upstream of farmd, and fetches it
with curl through farmd's /upstream/ routes twice:
  first   farmd downloads it upstream (checking its sha256) and then serves it;
  cached  farmd serves the blob it stored.
Samples farmd's RSS every 20 ms throughout, and during the first fetch asks /healthz in a
loop (the slowest answer shows whether the download held an HTTP thread). The fetches send
the admin token (farmd downloads upstream files only for workers and admins). Prints one
JSON object; removes everything it made. Not a test: no assertion on time or memory.

  tests/bench/mirror_serve_bench.py --farmd build/daemon/farmd [--gib 2]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fakes"))
from fake_process import RunningFake  # noqa: E402

WHEEL = "bigwheel-1.0-py3-none-any.whl"


def make_wheel(path, size):
    block = bytes(1 << 24)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("bigwheel-1.0.dist-info/METADATA",
                   "Metadata-Version: 2.1\nName: bigwheel\nVersion: 1.0\n")
        z.writestr("bigwheel-1.0.dist-info/WHEEL",
                   "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        with z.open("bigwheel/data.bin", "w", force_zip64=True) as f:
            left = size
            while left > 0:
                f.write(block[:min(left, len(block))])
                left -= min(left, len(block))
    return os.path.getsize(path)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class RssSampler:
    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, 0, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_kib(self.pid))
            time.sleep(0.02)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=5)


class HealthProbe:
    """Asks `base`/healthz one request after the other until stopped; keeps the slowest."""

    def __init__(self, base):
        self.base, self.slowest, self.count, self.stop = base, 0.0, 0, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            start = time.monotonic()
            subprocess.run(["curl", "-sS", "-o", "/dev/null", self.base + "/healthz"],
                           check=True, timeout=600)
            self.slowest = max(self.slowest, time.monotonic() - start)
            self.count += 1
            time.sleep(0.05)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=600)


def fetch(url, pid, token):
    before = rss_kib(pid)
    with RssSampler(pid) as sampler:
        out = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-H",
                              "Authorization: Bearer " + token, "-w",
                              "%{http_code} %{size_download} %{time_total}", url],
                             check=True, capture_output=True, text=True, timeout=1800).stdout
    code, size, seconds = out.split()
    assert code == "200", out
    return {"bytes": int(size), "seconds": round(float(seconds), 3),
            "gb_per_s": round(int(size) / float(seconds) / 1e9, 3),
            "rss_before_mib": round(before / 1024, 1),
            "rss_peak_mib": round(sampler.peak / 1024, 1),
            "rss_growth_mib": round((sampler.peak - before) / 1024, 1)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--farmd", required=True)
    parser.add_argument("--gib", type=float, default=2.0)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="mirror-serve-bench-")
    index, farmd = None, None
    try:
        folder = os.path.join(work, "index")
        os.makedirs(folder)
        size = make_wheel(os.path.join(folder, WHEEL), int(args.gib * (1 << 30)))
        index = RunningFake("fake_pyindex.py", ["--index", "/simple=" + folder], work, "index")
        data = os.path.join(work, "farmd")
        ready, http_ready = os.path.join(work, "farmd.addr"), os.path.join(work, "http.addr")
        log = open(os.path.join(work, "farmd.log"), "wb")
        farmd = subprocess.Popen(
            [args.farmd, "--data-dir", data, "--listen", "127.0.0.1:0", "--ready-file", ready,
             "--http-listen", "127.0.0.1:0", "--http-ready-file", http_ready,
             "--upstream-index", "big=%s/simple/" % index.url],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        for _ in range(300):
            if os.path.exists(http_ready) and os.path.getsize(http_ready) > 0:
                break
            time.sleep(0.1)
        if not os.path.exists(http_ready):
            raise RuntimeError("farmd did not start: " + open(os.path.join(work, "farmd.log")).read())
        base = "http://" + open(http_ready).read().strip()
        page = json.loads(subprocess.run(
            ["curl", "-sS", "-H", "Accept: application/vnd.pypi.simple.v1+json",
             base + "/upstream/pypi/big/simple/bigwheel/"],
            check=True, capture_output=True, text=True, timeout=600).stdout)
        url = base + page["files"][0]["url"]
        token = open(os.path.join(data, "admin.token")).read().strip()
        with HealthProbe(base) as health:
            first = fetch(url, farmd.pid, token)
        first["healthz_slowest_ms"] = round(health.slowest * 1000, 1)
        first["healthz_answers"] = health.count
        cached = fetch(url, farmd.pid, token)
        fetched_upstream = index.counters().get("file:" + WHEEL, 0)
        print(json.dumps({"wheel_bytes": size, "upstream_fetches": fetched_upstream,
                          "first": first, "cached": cached}, indent=1))
    finally:
        if farmd is not None:
            farmd.terminate()
            farmd.wait(timeout=30)
        if index is not None:
            index.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
