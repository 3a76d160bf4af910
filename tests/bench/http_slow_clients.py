#!/usr/bin/env python3
"""Measures the dashboard's HTTP server under slow clients: the latency another client sees
for /healthz, /simple/ and /metrics, each request on a new connection, first with no other
client, then while one address (127.0.0.2) holds N slow sockets that trickle a partial
request head a byte a second and are replaced as soon as farmd closes them (plain HTTP),
or hold TCP connections that never send a ClientHello (--tls).

    tests/bench/http_slow_clients.py [--farmd build/daemon/farmd] [--sockets 1000]
        [--requests 200] [--tls] [--farmd-arg=--http-max-connections=256 ...]

Prints per path the median, p90, p99 and maximum in ms, and how many slow sockets farmd
refused at once or held. Everything binds 127.0.0.0/8; every loop is bounded."""
import argparse
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import farm_harness  # noqa: E402
import test_http_availability as avail  # noqa: E402


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def measure(base, paths, n, context):
    """Per path: the latencies (ms) of the requests answered 200, and how many were not."""
    rows = {}
    for path in paths:
        ms, failed = [], 0
        for _ in range(n):
            try:
                ms.append(avail._timed_get(base + path, context))
            except (OSError, AssertionError):  # urllib's HTTPError and URLError are OSErrors
                failed += 1
        rows[path] = (ms, failed)
    return rows


def show(title, rows):
    print(f"== {title}")
    for path, (ms, failed) in rows.items():
        if not ms:
            print(f"  {path:10s} no request answered 200 ({failed} failed)")
            continue
        print(f"  {path:10s} median {statistics.median(ms):6.1f} ms  p90 {percentile(ms, 90):6.1f}"
              f" ms  p99 {percentile(ms, 99):6.1f} ms  max {max(ms):7.1f} ms"
              + (f"  ({failed} of {len(ms) + failed} not answered 200)" if failed else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--farmd", default=farm_harness.FARMD)
    ap.add_argument("--sockets", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--tls", action="store_true")
    ap.add_argument("--farmd-arg", action="append", default=[])
    args = ap.parse_args()
    farm_harness.FARMD = args.farmd
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8 * args.sockets)), hard))
    root = tempfile.mkdtemp(prefix="http-bench-")
    farm = farm_harness.Farm(root)
    try:
        extra, context, scheme = list(args.farmd_arg), None, "http"
        if args.tls:
            farm_harness.FARMCTL = os.path.join(os.path.dirname(os.path.abspath(args.farmd)), "cli",
                                                "farmctl")
            avail.FARMCTL = farm_harness.FARMCTL
            ca = avail._make_certificates(root)
            extra += ["--tls-cert", f"{ca}/farmd.pem", "--tls-key", f"{ca}/farmd.key",
                      "--client-ca", f"{ca}/ca.pem"]
            context = ssl.create_default_context(cafile=f"{ca}/ca.pem")
            scheme = "https"
        farm.start_farmd(*extra, http=True)
        base = f"{scheme}://{farm.http_address}"
        paths = ["/healthz", "/simple/", "/metrics"]
        show("no other client", measure(base, paths, args.requests, context))
        attacker = avail.Attacker(farm.http_address, b"" if args.tls else
                                  b"GET /healthz HTTP/1.1\r\nHo", b"" if args.tls else b"X",
                                  count=args.sockets)
        attacker.start()
        try:
            time.sleep(1)
            rows = measure(base, paths, args.requests, context)
            held = len(attacker.open_now())
            show(f"{args.sockets} slow sockets from 127.0.0.2 ({attacker.reconnects} "
                 f"replaced so far, {held} open now)", rows)
        finally:
            attacker.close()
    finally:
        farm.close()
        subprocess.run(["rm", "-rf", root], check=False)


if __name__ == "__main__":
    main()
