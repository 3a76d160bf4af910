"""The dashboard's HTTP server against clients that hold connections open, on the real
farmd: 1,000 slow sockets from one address (a partial request head trickled a byte at a
time, as a slowloris does; or, on HTTPS, TCP connections that never send a ClientHello)
while another client's /healthz and /simple/ stay fast and every slow socket is closed by
farmd within its deadline; a kept-alive connection left idle, and a body trickled a byte at
a time, closed at their deadlines; and the headers every kind of answer carries.

The attacker's sockets are bound to 127.0.0.2 and the good client's to 127.0.0.1 (both
loopback), so that farmd sees two client addresses. Latency is asserted with generous
bounds (the median and the maximum of N requests); tests/bench/http_slow_clients.py
measures the real figures (docs/dashboard.md)."""
import os
import resource
import select
import socket
import ssl
import statistics
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from farm_harness import FARMCTL, wait_until
from test_limits import chatty_recipe

ATTACKER = "127.0.0.2"
SLOW_SOCKETS = 1000
HEADER_TIMEOUT_S = 10  # farmd's default --http-header-timeout-ms
GOOD_REQUESTS = 40     # per path


def _raise_fd_limit(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"needs {need} open files, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def _open_slow(address, first_bytes):
    """A TCP connection from ATTACKER to `address` that has sent `first_bytes`."""
    host, port = address.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((ATTACKER, 0))
    s.settimeout(10)
    s.connect((host, int(port)))
    if first_bytes:
        s.sendall(first_bytes)
    s.setblocking(False)
    return s


class Attacker(threading.Thread):
    """Holds `count` connections to farmd from ATTACKER: each sent `first_bytes` (a
    partial request head, or nothing) and then one more byte (`byte`) every second. While
    `reconnect` is set, a socket farmd closes is replaced by a new one (at most
    REPLACE_PER_ROUND every 50 ms, MAX_RECONNECTS in all: a slow client, not a connection
    flood). Records when farmd closed each socket (EOF or reset)."""

    MAX_RECONNECTS = 20000
    REPLACE_PER_ROUND = 20

    def __init__(self, address, first_bytes, byte, count=SLOW_SOCKETS):
        super().__init__(daemon=True)
        self.address, self.first_bytes, self.byte, self.count = address, first_bytes, byte, count
        self.socks = [_open_slow(address, first_bytes) for _ in range(count)]
        self.opened_at = {s: time.monotonic() for s in self.socks}
        self.closed_at = {}
        self.reconnects = 0
        self.reconnect = threading.Event()
        self.reconnect.set()
        self.stop = threading.Event()

    def open_now(self):
        return [s for s in self.socks if s not in self.closed_at]

    @staticmethod
    def _closed(s):
        try:
            while True:
                if not s.recv(65536):
                    return True
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True

    def run(self):
        deadline = time.monotonic() + 180
        next_byte = time.monotonic() + 1
        while not self.stop.is_set() and time.monotonic() < deadline:
            live = self.open_now()
            if not live and not self.reconnect.is_set():
                return
            readable = []
            for i in range(0, len(live), 500):  # select() takes at most 1024 descriptors
                readable += select.select(live[i:i + 500], [], [], 0)[0]
            for s in readable:
                if self._closed(s):
                    self.closed_at[s] = time.monotonic()
                    s.close()
            if self.reconnect.is_set():
                missing = self.count - len(self.open_now())
                for _ in range(min(missing, self.REPLACE_PER_ROUND,
                                   self.MAX_RECONNECTS - self.reconnects)):
                    try:
                        s = _open_slow(self.address, self.first_bytes)
                    except OSError:
                        break
                    self.socks.append(s)
                    self.opened_at[s] = time.monotonic()
                    self.reconnects += 1
            if self.byte and time.monotonic() >= next_byte:
                next_byte = time.monotonic() + 1
                for s in self.open_now():
                    try:
                        s.send(self.byte)
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        self.closed_at[s] = time.monotonic()
            self.stop.wait(0.05)

    def close(self):
        self.stop.set()
        self.join(timeout=10)
        for s in self.socks:
            s.close()


def _timed_get(url, context=None):
    start = time.monotonic()
    with urllib.request.urlopen(url, timeout=30, context=context) as r:
        r.read()
        assert r.status == 200, (url, r.status)
    return (time.monotonic() - start) * 1000


def _good_client(base, paths, context=None):
    """GOOD_REQUESTS requests per path from 127.0.0.1, each on a new connection; ms each."""
    times = {p: [] for p in paths}
    for _ in range(GOOD_REQUESTS):
        for p in paths:
            times[p].append(_timed_get(base + p, context))
    return times


def _assert_fast(times):
    for path, ms in times.items():
        median, worst = statistics.median(ms), max(ms)
        print(f"{path}: median {median:.1f} ms, max {worst:.1f} ms over {len(ms)} requests")
        # The acceptance names 100 ms; the maximum gets room for a loaded test machine.
        assert median < 100, (path, sorted(ms))
        assert worst < 2000, (path, sorted(ms))


def _assert_all_closed(attacker, within_s):
    """Once the attacker stops replacing sockets, farmd closes every one it still holds
    within `within_s` of the socket's opening."""
    attacker.reconnect.clear()
    wait_until(lambda: not attacker.open_now(), within_s + 10,
               f"farmd to close every slow socket ({len(attacker.open_now())} open)",
               interval=0.5)
    held = max(attacker.closed_at[s] - attacker.opened_at[s] for s in attacker.socks)
    print(f"{len(attacker.socks)} slow sockets ({attacker.reconnects} of them replacing "
          f"closed ones), each closed by farmd; the longest held {held:.1f} s")
    assert held <= within_s, held


def _run_attack(address, first_bytes, byte, good_base, context=None):
    attacker = Attacker(address, first_bytes, byte)
    attacker.start()
    try:
        times = _good_client(good_base, ["/healthz", "/simple/"], context)
        still_open = len(attacker.open_now())
        print(f"{still_open} slow sockets open when the good client finished")
        assert still_open > 0, "the attacker held nothing while the good client ran"
        _assert_fast(times)
        # The sockets past the per-address limit were refused at once; the others are
        # closed when the deadline passes, however many bytes trickle in.
        _assert_all_closed(attacker, HEADER_TIMEOUT_S + 5)
    finally:
        attacker.close()


def test_one_address_with_1000_slow_sockets_starves_no_one(farm):
    _raise_fd_limit(4 * SLOW_SOCKETS)
    farm.start_farmd(http=True)
    base = f"http://{farm.http_address}"
    _run_attack(farm.http_address, b"GET /healthz HTTP/1.1\r\nHo", b"X", base)
    # /metrics answers afterwards as before.
    assert _timed_get(base + "/metrics") < 2000


def _make_certificates(root):
    ca = os.path.join(root, "ca")
    for args in (["init", ca], ["issue", ca, "farmd", "--server-cert", "--host", "127.0.0.1"]):
        r = subprocess.run([FARMCTL, "ca", *args], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    return ca


def test_tls_connections_that_never_say_hello_starve_no_one(farm):
    _raise_fd_limit(4 * SLOW_SOCKETS)
    ca = _make_certificates(farm.root)
    farm.start_farmd("--tls-cert", f"{ca}/farmd.pem", "--tls-key", f"{ca}/farmd.key",
                     "--client-ca", f"{ca}/ca.pem", http=True)
    context = ssl.create_default_context(cafile=f"{ca}/ca.pem")
    base = f"https://{farm.http_address}"
    assert _timed_get(base + "/healthz", context) < 5000
    _run_attack(farm.http_address, b"", b"", base, context)  # TCP only: no ClientHello


def test_idle_keep_alive_and_trickled_bodies_are_closed_at_their_deadlines(farm):
    farm.start_farmd("--http-idle-timeout-ms", "1500", "--http-body-timeout-ms", "1500",
                     "--http-header-timeout-ms", "1500", http=True)
    host, port = farm.http_address.rsplit(":", 1)

    def closed_after(sock, trickle=b""):
        """Seconds until farmd closes `sock` (reading and dropping what it answers)."""
        start = time.monotonic()
        sock.settimeout(0.2)
        while time.monotonic() - start < 20:
            try:
                if not sock.recv(65536):
                    return time.monotonic() - start
            except socket.timeout:
                if trickle:
                    sock.send(trickle)
            except OSError:
                return time.monotonic() - start
        raise AssertionError("farmd kept the connection past 20 s")

    # Kept alive after an answer, then silent: closed after the idle deadline, not before.
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b"200 OK" in s.recv(65536)
    idle = closed_after(s)
    s.close()
    assert 1.0 <= idle <= 4.0, idle
    # A body announced as 100 bytes and trickled a byte every 0.2 s: closed at the body's
    # deadline, though bytes keep coming.
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(b"POST /api/v1/builds/1/cancel HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
    body = closed_after(s, trickle=b"x")
    s.close()
    assert 1.0 <= body <= 4.0, body
    # The same for a request head.
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(b"GET /healthz HTTP/1.1\r\n")
    head = closed_after(s, trickle=b"X")
    s.close()
    assert 1.0 <= head <= 4.0, head


EXPECTED_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _check_security_headers(headers, what):
    for name, value in EXPECTED_HEADERS.items():
        assert headers.get(name) == value, (what, name, dict(headers))
    csp = headers.get("Content-Security-Policy") or ""
    for part in ("default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"):
        assert part in csp, (what, csp)
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, (what, csp)


def test_every_kind_of_answer_carries_the_security_headers(farm):
    farm.start_farmd("--http-max-connections", "2", http=True)
    base = f"http://{farm.http_address}"
    job = farm.ctl_json("submit", chatty_recipe(farm.root, 1))["jobs"][0]["id"]  # no worker
    routes = {"page": "/", "script": "/app.js", "style sheet": "/style.css",
              "API": "/api/v1/overview", "index": "/simple/", "metrics": "/metrics",
              "health": "/healthz", "install script": "/install.py", "404": "/no/such/page",
              "API 404": "/api/v1/builds/999", "405": "/api/v1/overview",
              "event stream": "/api/v1/jobs/{job}/log/stream"}
    for what, path in routes.items():
        method = "DELETE" if what == "405" else "GET"
        # With two connections allowed, the slot of the previous request's closed connection
        # may not be free yet on a loaded machine: that cheap 503 is tested below; retry it.
        for attempt in range(50):
            req = urllib.request.Request(base + path.format(job=job), method=method)
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    headers = r.headers
            except urllib.error.HTTPError as e:
                if e.code == 503 and attempt < 49:
                    time.sleep(0.1)
                    continue
                assert e.code in (404, 405), (what, e.code)
                headers = e.headers
            break
        _check_security_headers(headers, what)
    # 401: a write without a token.
    req = urllib.request.Request(base + "/api/v1/builds/1/cancel", method="POST", data=b"")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 401
    _check_security_headers(e.value.headers, "401")
    # The cheap 503 past the connection limit.
    host, port = farm.http_address.rsplit(":", 1)
    held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(2)]
    try:
        def refused():
            try:
                urllib.request.urlopen(base + "/healthz", timeout=10)
                return None
            except urllib.error.HTTPError as err:
                return err if err.code == 503 else None
        err = wait_until(refused, 20, "a 503 past the connection limit")
        _check_security_headers(err.headers, "503")
    finally:
        for s in held:
            s.close()
