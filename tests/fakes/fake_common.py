"""Shared plumbing for the protocol fakes in tests/fakes (fake_github.py, fake_hf.py).

Each fake is a stdlib ThreadingHTTPServer bound to 127.0.0.1:0 (or --host, another
address of 127.0.0.0/8, for a fake that must be a host of its own) that writes its base URL
to --ready-file once it accepts connections, keeps its state in memory (and, with
--state-file, in a JSON file rewritten after every change so a restart keeps it), and
offers unauthenticated control endpoints for tests:

  POST /_control/fail-next  {"method": "POST", "path": "<regex>", "status": 502,
                             "times": 1, "headers": {...}, "body": {...},
                             "retry_after": 3, "drop_response": false, ...}
      Scripts a fault for the next matching request(s). With "drop_response" the request
      is carried out and the connection closed without an answer (a lost response).
      Protocol-specific keys are documented in each fake.
  GET  /_control/counters   request counters, by route name and in total
  GET  /_control/state      the fake's state as JSON
  POST /_control/reset      forgets counters and scripted faults (state is kept)
"""

import argparse
import base64
import io
import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class Fault:
    def __init__(self, spec):
        self.spec = spec
        self.method = spec.get("method")
        self.path = re.compile(spec.get("path", ".*"))
        self.times = int(spec.get("times", 1))

    def matches(self, method, path):
        return (self.method is None or self.method == method) and self.path.search(path)


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, handler_class, args):
        super().__init__((args.host, 0), handler_class)
        self.args = args
        self.lock = threading.RLock()
        self.faults = []
        self.counters = {}
        self.base_url = "http://%s:%d" % (args.host, self.server_address[1])
        self.state = self.load_state() or self.initial_state()

    # Subclasses override these two.
    def initial_state(self):
        return {}

    def on_state_loaded(self):
        pass

    def load_state(self):
        path = self.args.state_file
        if not path or not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)

    def save_state(self):
        path = self.args.state_file
        if not path:
            return
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.state, f)
        os.replace(tmp, path)

    def count(self, name):
        with self.lock:
            self.counters[name] = self.counters.get(name, 0) + 1
            self.counters["requests"] = self.counters.get("requests", 0) + 1

    def take_fault(self, method, path):
        with self.lock:
            for fault in self.faults:
                if fault.matches(method, path):
                    fault.times -= 1
                    if fault.times <= 0:
                        self.faults.remove(fault)
                    return fault.spec
        return None


class FakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake"

    def log_message(self, fmt, *args):
        if self.server.args.verbose:
            sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    # ---- request helpers -------------------------------------------------------------
    def read_body(self):
        length = self.headers.get("Content-Length")
        if length is None:
            return None
        if self.too_large() is not None:
            # Read and dropped in chunks: a refused upload of gigabytes costs no memory.
            left = int(length)
            while left > 0:
                chunk = self.rfile.read(min(left, 1 << 20))
                if not chunk:
                    break
                left -= len(chunk)
            return b""
        return self.rfile.read(int(length)) if int(length) > 0 else b""

    def too_large(self):
        """(status, body) when the request's declared body is larger than the service takes
        (subclasses enforce their documented limits), else None."""
        return None

    def handle_expect_100(self):
        # "Expect: 100-continue": refuse before the client sends the body, as servers do.
        refusal = self.too_large()
        if refusal is None:
            return super().handle_expect_100()
        self.server.count("oversize_refusals")
        self.close_connection = True
        self.send(*refusal)
        return False

    def split(self):
        parts = urlsplit(self.path)
        return parts.path, parse_qs(parts.query)

    def json_body(self):
        try:
            return json.loads(self.body.decode() or "null")
        except (ValueError, UnicodeDecodeError):
            return None

    def bearer_token(self):
        auth = self.headers.get("Authorization", "")
        for scheme in ("Bearer ", "token "):
            if auth.startswith(scheme):
                return auth[len(scheme):]
        return None

    # ---- response helpers ------------------------------------------------------------
    def send(self, status, body=b"", content_type="application/json", headers=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, str(value))
        if body or status not in (204, 304):
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def drop(self):
        """Closes the connection without an answer: the client sees a lost response."""
        self.close_connection = True
        try:
            self.connection.shutdown(2)
        except OSError:
            pass

    # ---- dispatch --------------------------------------------------------------------
    def handle_any(self):
        self.body = self.read_body()
        path, query = self.split()
        if path.startswith("/_control/"):
            return self.control(path)
        fault = self.server.take_fault(self.command, path)
        if fault and not fault.get("drop_response"):
            return self.apply_fault(fault, path, query)
        if fault:
            self.wfile = io.BytesIO()  # carry the request out, discard the answer
        self.route(path, query)
        if fault:
            self.drop()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_any

    def control(self, path):
        server = self.server
        if path == "/_control/fail-next" and self.command == "POST":
            spec = self.json_body() or {}
            with server.lock:
                server.faults.append(Fault(spec))
            return self.send(200, {"ok": True})
        if path == "/_control/counters":
            with server.lock:
                return self.send(200, dict(server.counters))
        if path == "/_control/state":
            with server.lock:
                return self.send(200, server.state)
        if path == "/_control/reset" and self.command == "POST":
            with server.lock:
                server.faults.clear()
                server.counters.clear()
            return self.send(200, {"ok": True})
        return self.send(404, {"message": "Not Found"})

    def fault_headers(self, fault):
        headers = dict(fault.get("headers", {}))
        if fault.get("retry_after") is not None:
            headers["Retry-After"] = str(fault["retry_after"])
        return headers

    # Subclasses implement these.
    def route(self, path, query):
        raise NotImplementedError

    def apply_fault(self, fault, path, query):
        body = fault.get("body", {"message": "scripted failure"})
        self.send(int(fault.get("status", 500)), body, headers=self.fault_headers(fault))


def b64(data):
    return base64.b64encode(data).decode()


def unb64(text):
    return base64.b64decode(text.encode())


def parse_args(description, extra=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--ready-file", required=True, help="gets the base URL once serving")
    parser.add_argument("--state-file", help="JSON file that keeps state across restarts")
    parser.add_argument("--token", default="test-token-0123456789",
                        help="the only accepted bearer token")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--host", default="127.0.0.1",
                        help="the loopback address to bind (127.0.0.0/8 only)")
    if extra:
        extra(parser)
    args = parser.parse_args()
    if not args.host.startswith("127."):
        parser.error("--host must be an address of 127.0.0.0/8")
    return args


def serve(server):
    ready = server.args.ready_file
    tmp = ready + ".tmp"
    with open(tmp, "w") as f:
        f.write(server.base_url + "\n")
    os.replace(tmp, ready)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
