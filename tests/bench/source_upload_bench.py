#!/usr/bin/python3
"""Uploads a large source tarball from a client "host" to farmd on another one (network
namespaces joined by veth pairs on a bridge, tests/integration/netns_hosts.py), over TLS,
and reports farmd's resident memory growth and the throughput.

usage (root): source_upload_bench.py [--mib 1024]
Environment: FARMD, FARMCTL (default: the build directory). Prints one line per figure.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from farm_harness import FARMCTL, FARMD, wait_until  # noqa: E402
from netns_hosts import Network, missing_requirements  # noqa: E402


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def make_tarball(path, mib):
    """A tarball of one file of random (incompressible) bytes."""
    data = os.path.join(os.path.dirname(path), "payload.bin")
    with open(data, "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))
    with tarfile.open(path, "w") as tar:
        tar.add(data, arcname="big-src/payload.bin")
    os.unlink(data)


def main():
    why = missing_requirements()
    if why:
        print(f"skipped: {why}")
        return 77
    args = argparse.ArgumentParser()
    args.add_argument("--mib", type=int, default=1024)
    mib = args.parse_args().mib
    root = tempfile.mkdtemp(prefix="farm-upload-bench-")
    net = Network(root, ["farmd", "client"])
    procs = []
    try:
        client, server_dir = net.dirs["client"], net.dirs["farmd"]
        ca = os.path.join(client, "ca")
        server = f"{net.address['farmd']}:7443"
        for a in (["init", ca], ["issue", ca, "farmd", "--server-cert", "--host",
                                 net.address["farmd"], "--out", server_dir]):
            subprocess.run([FARMCTL, "ca", *a], check=True, capture_output=True, timeout=60)
        ready = os.path.join(server_dir, "ready")
        log = open(os.path.join(root, "farmd.log"), "wb")
        farmd = subprocess.Popen(net.argv("farmd", [
            FARMD, "--data-dir", f"{server_dir}/data", "--listen", server, "--ready-file", ready,
            "--tls-cert", f"{server_dir}/farmd.pem", "--tls-key", f"{server_dir}/farmd.key"]),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(farmd)
        wait_until(lambda: os.path.exists(ready), 30, "farmd")
        shutil.copy(f"{server_dir}/data/admin.token", client)
        tarball = os.path.join(client, "big.tar")
        make_tarball(tarball, mib)
        recipe = os.path.join(client, "big.yaml")
        with open(recipe, "w") as f:
            f.write("name: big\nsource: {tarball: big.tar}\nbuild: \"true\"\n")
        time.sleep(1)
        before = rss_kib(farmd.pid)
        peak = [before]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], rss_kib(farmd.pid))
                time.sleep(0.05)
        sampler = threading.Thread(target=sample)
        sampler.start()
        argv = [FARMCTL, "--server", server, "--ca", f"{ca}/ca.pem", "--token-file",
                f"{client}/admin.token", "submit", recipe]
        start = time.monotonic()
        r = net.run("client", argv, timeout=1200)
        seconds = time.monotonic() - start
        done.set()
        sampler.join()
        if r.returncode != 0:
            print(r.stdout, r.stderr)
            return 1
        size = os.path.getsize(tarball)
        print(r.stdout.strip().splitlines()[0])
        print(f"archive: {size / (1 << 20):.0f} MiB")
        print(f"farmctl submit (hash the tarball twice, upload over TLS on veth): {seconds:.1f} s, "
              f"{size / (1 << 20) / seconds:.0f} MiB/s")
        print(f"farmd RSS: {before / 1024:.1f} MiB before, peak {peak[0] / 1024:.1f} MiB, "
              f"growth {(peak[0] - before) / 1024:.1f} MiB")
        again_start = time.monotonic()
        r = net.run("client", argv, timeout=1200)
        print(f"unchanged resubmit: {time.monotonic() - again_start:.1f} s; "
              + r.stdout.strip().splitlines()[0])
        return 0
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=20)
        net.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
