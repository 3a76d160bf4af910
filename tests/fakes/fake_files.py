"""Serving files the way a download upstream does, for the fakes of package indexes and
NVIDIA's redist tree (fake_pyindex.py, fake_redist.py).

A FileServer counts every request per file ("file:<name>" in /_control/counters, beside
fake_common's per-route counts), so a test can assert that a file was fetched once, and
streams files in blocks (a 1 GiB wheel is never held in memory). Control endpoints, beside
fake_common's:

  POST /_control/corrupt   {"file": NAME, "on": true}
      Serves NAME with one byte changed (same length); whatever lists the file keeps its
      true sha256, as a damaged mirror or a bit flip in transit would.
  POST /_control/throttle  {"file": NAME, "bytes_per_second": N}
      Serves NAME at about N bytes per second (0 lifts it), so a test can kill a client in
      the middle of a download.
  POST /_control/hide      {"file": NAME, "on": true}
      Answers 404 for NAME while still listing it (an index that lost a file).
  POST /_control/stall     {"path": REGEX, "on": true}
      Holds every request whose path matches REGEX, unanswered, until the stall is lifted
      ({"on": false} releases them all): an upstream that hangs. Held requests are not
      counted by route until released.
  GET  /_control/stalled   {"waiting": N, "peak": M}: requests held now, and the most
      held at once since the stall was set (how many a client had in flight to this host).
"""

import os
import re
import threading
import time
from email.utils import formatdate
from urllib.parse import urlsplit

from fake_common import FakeHandler, FakeServer

BLOCK = 1 << 16


class FileServer(FakeServer):
    def __init__(self, handler_class, args):
        super().__init__(handler_class, args)
        self.corrupt = set()
        self.throttle = {}
        self.hidden = set()
        self.stall = None  # a compiled regex while requests are held
        self.stall_released = threading.Condition(self.lock)
        self.stalled = 0
        self.stalled_peak = 0

    def hold_if_stalled(self, path):
        """Blocks while a stall matches `path` (at most 10 minutes, a bound for tests)."""
        with self.stall_released:
            if self.stall is None or not self.stall.search(path):
                return
            self.stalled += 1
            self.stalled_peak = max(self.stalled_peak, self.stalled)
            deadline = time.monotonic() + 600
            while self.stall is not None and self.stall.search(path):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.stall_released.wait(left)
            self.stalled -= 1

    def count_file(self, name):
        self.count("file:" + name)


class FileHandler(FakeHandler):
    def handle_any(self):
        path = urlsplit(self.path).path
        if not path.startswith("/_control/"):
            self.server.hold_if_stalled(path)
        return super().handle_any()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_any

    def control(self, path):
        server = self.server
        spec = (self.json_body() if self.body else None) or {}
        name = spec.get("file", "")
        if path == "/_control/corrupt" and self.command == "POST":
            with server.lock:
                (server.corrupt.add if spec.get("on", True) else server.corrupt.discard)(name)
            return self.send(200, {"ok": True})
        if path == "/_control/hide" and self.command == "POST":
            with server.lock:
                (server.hidden.add if spec.get("on", True) else server.hidden.discard)(name)
            return self.send(200, {"ok": True})
        if path == "/_control/stall" and self.command == "POST":
            with server.stall_released:
                server.stall = re.compile(spec["path"]) if spec.get("on", True) else None
                if server.stall is not None:
                    server.stalled_peak = server.stalled
                server.stall_released.notify_all()
            return self.send(200, {"ok": True})
        if path == "/_control/stalled":
            with server.lock:
                return self.send(200, {"waiting": server.stalled, "peak": server.stalled_peak})
        if path == "/_control/throttle" and self.command == "POST":
            rate = int(spec.get("bytes_per_second", 0))
            with server.lock:
                if rate > 0:
                    server.throttle[name] = rate
                else:
                    server.throttle.pop(name, None)
            return self.send(200, {"ok": True})
        return super().control(path)

    def send_file(self, disk_path, name, content_type="application/octet-stream"):
        """Streams the file at `disk_path`, served as `name` (counted, maybe altered)."""
        server = self.server
        server.count_file(name)
        with server.lock:
            corrupt = name in server.corrupt
            rate = server.throttle.get(name, 0)
            hidden = name in server.hidden
        if hidden or not os.path.isfile(disk_path):
            return self.send(404, "Not Found", "text/plain")
        size = os.path.getsize(disk_path)
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(size))
        self.send_header("Last-Modified", formatdate(os.path.getmtime(disk_path), usegmt=True))
        self.end_headers()
        if self.command == "HEAD":
            return None
        flip_at = size // 2 if corrupt and size else -1
        sent = 0
        start = time.monotonic()
        with open(disk_path, "rb") as f:
            while True:
                block = f.read(BLOCK if not rate else min(BLOCK, max(1, rate // 10)))
                if not block:
                    break
                if sent <= flip_at < sent + len(block):
                    i = flip_at - sent
                    block = block[:i] + bytes([block[i] ^ 0xFF]) + block[i + 1:]
                try:
                    self.wfile.write(block)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
                    return None
                sent += len(block)
                if rate:
                    ahead = sent / rate - (time.monotonic() - start)
                    if ahead > 0:
                        time.sleep(min(ahead, 1.0))
        return None


def safe_child(root, relative):
    """The path of `relative` under `root`, or None when it names anything outside it."""
    if not relative or "\x00" in relative or "\\" in relative:
        return None
    parts = relative.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    path = os.path.realpath(os.path.join(root, *parts))
    real_root = os.path.realpath(root)
    if os.path.commonpath([path, real_root]) != real_root:
        return None
    return path
