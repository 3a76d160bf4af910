#!/usr/bin/python3
"""Measures `farmctl export-index` (docs/index.md, "Static export") against an index of
large wheels: a first export into a fresh DIR, a second of the unchanged index (wheels
hard-linked from the first, not downloaded), and a third after one wheel changed. Prints
wall time, wheel bytes downloaded and reused, and farmctl's peak RSS for each.

usage: export_index_bench.py [--wheels 4] [--mib 256]
Environment: FARMCTL (default: the build directory). The index is served on 127.0.0.1 by a
small server that answers like farmd's index (JSON or HTML by Accept); its wheels are
random bytes, which the export checks by sha256 only.
"""
import argparse
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FARMCTL = os.environ.get("FARMCTL", os.path.join(HERE, "..", "..", "build", "cli", "farmctl"))
PROJECT = "bench-kernel"
VIEWS = ("/simple/", "/cu130/simple/", "/cu130/sm90/simple/")


class Index:
    """The pages farmd would serve for `wheels` ({file name: path}), one variant, one GPU."""

    def __init__(self, root):
        self.root, self.files = root, {}

    def add(self, name, mib):
        path = os.path.join(self.root, name)
        digest = hashlib.sha256()
        with open(path, "wb") as f:
            for _ in range(mib):
                block = os.urandom(1 << 20)
                digest.update(block)
                f.write(block)
        self.files[name] = (digest.hexdigest(), path, mib << 20)

    def page(self, path, accept):
        want_json = "json" in accept
        if path == "/":
            return json.dumps({"index": "/simple/", "variants": [
                {"variant": "cu130", "gpu": "sm90", "compute_capability": "9.0", "cuda": "13.0",
                 "torch": "", "index_url": "/cu130/sm90/simple/", "projects": [PROJECT]}]})
        if path in VIEWS:
            if want_json:
                return json.dumps({"meta": {"api-version": "1.3"},
                                   "projects": [{"name": PROJECT}]})
            return f'<html><body><a href="{PROJECT}/">{PROJECT}</a></body></html>\n'
        if path.removesuffix(PROJECT + "/") in VIEWS:
            files = [{"filename": n, "url": f"/files/{s}/{n}", "hashes": {"sha256": s},
                      "size": size} for n, (s, _, size) in sorted(self.files.items())]
            if want_json:
                return json.dumps({"meta": {"api-version": "1.3"}, "name": PROJECT,
                                   "files": files})
            return "<html><body>" + "".join(
                f'<a href="{f["url"]}#sha256={f["hashes"]["sha256"]}">{f["filename"]}</a><br>'
                for f in files) + "</body></html>\n"
        return None

    def file(self, path):
        for name, (sha, local, _) in self.files.items():
            if path == f"/files/{sha}/{name}":
                return local
        return None


def serve(index):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = index.page(self.path, self.headers.get("Accept") or "")
            local = index.file(self.path)
            if body is None and local is None:
                self.send_error(404)
                return
            self.send_response(200)
            size = len(body.encode()) if body is not None else os.path.getsize(local)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            if body is not None:
                self.wfile.write(body.encode())
            else:
                with open(local, "rb") as f:
                    shutil.copyfileobj(f, self.wfile, 1 << 20)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d" % server.server_address[1]


def export(out, url):
    """One farmctl export-index: (seconds, its JSON summary, its peak RSS in KiB)."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen([FARMCTL, "--output", "json", "export-index", out, "--from", url],
                                stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        took = time.monotonic() - start
        stdout.seek(0)
        stderr.seek(0)
        if proc.returncode != 0:
            raise SystemExit("export failed: " + stderr.read().decode())
        return took, json.load(stdout), usage.ru_maxrss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--wheels", type=int, default=4)
    p.add_argument("--mib", type=int, default=256)
    args = p.parse_args()
    root = tempfile.mkdtemp(prefix="export-bench-")
    try:
        index = Index(os.path.join(root, "wheels"))
        os.makedirs(index.root)
        for i in range(args.wheels):
            index.add(f"bench_kernel-1.{i}+cu130.sm90-cp311-cp311-linux_x86_64.whl", args.mib)
        server, url = serve(index)
        out = os.path.join(root, "site", "index")
        print(f"index: {args.wheels} wheels of {args.mib} MiB, served on {url}")
        runs = [("first export", None), ("second export (unchanged)", None),
                ("third export (one wheel changed)", args.wheels - 1)]
        for what, change in runs:
            if change is not None:
                name = sorted(index.files)[change]
                os.unlink(index.files[name][1])
                del index.files[name]
                index.add(name, args.mib)
            took, s, rss = export(out, url)
            print(f"{what}: {took:.2f} s; wheels downloaded {s['wheels_downloaded']} "
                  f"({s['bytes_downloaded'] >> 20} MiB), reused {s['wheels_reused']} "
                  f"({s['bytes_reused'] >> 20} MiB); farmctl peak RSS {rss // 1024} MiB")
        server.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
