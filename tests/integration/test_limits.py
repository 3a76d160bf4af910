"""Limits answered with messages that name them, on the real farmd and farm-worker: a build
that prints far more than farmd keeps per attempt has its log cut with one SYSTEM line and
still succeeds, with the worker's own closing lines kept; a build printing bytes that are
not UTF-8 keeps its whole log, each bad byte as U+FFFD; the dashboard answers connections
past its limit with 503 naming the limit; an oversized request body gets 413 naming the
limit; a matrix past the cell limit and an oversized recipe are refused at submit."""
import json
import os
import socket
import sqlite3
import urllib.error
import urllib.request

from farm_harness import PIP_WHEEL, local_recipe, pure_python_source, wait_until

LOG_LIMIT = 20000


def chatty_recipe(root, lines, prints=None):
    """A pure-Python package whose build prints `lines` lines of 100 characters, or runs the
    shell line `prints` instead."""
    pure_python_source(root, "chatty")
    if prints is None:
        prints = f"""python3 -c 'import sys; [print("%07d " % i + "x" * 92) for i in range({lines})]'"""
    return local_recipe(root, "chatty", f"{prints}\n{PIP_WHEEL}")


def test_a_log_past_the_limit_is_cut_with_a_system_line(farm):
    farm.start_farmd("--max-log-bytes", str(LOG_LIMIT))
    farm.start_worker()
    build = farm.ctl_json("submit", chatty_recipe(farm.root, 20000), "--follow", timeout=600)
    assert build["state"] == "BUILD_SUCCEEDED", build
    job_id = build["jobs"][0]["id"]
    log = farm.ctl("logs", str(job_id)).stdout
    assert "log truncated: this attempt's log reached farmd's limit of 20000 bytes " \
           "(--max-log-bytes)" in log, log[-2000:]
    assert "0000000 " in log and "0019999 " not in log
    # The worker's lines after the cut (the wheel it uploaded) are still there.
    after = log.split("log truncated", 1)[1]
    assert "chatty-1.0" in after, after[-2000:]
    # The database holds the limit's worth, not the 2 MB the build printed: the text it
    # counted, and the log chunks (compressed) it stored.
    db = sqlite3.connect(os.path.join(farm.data, "farm.db"))
    counted = db.execute("SELECT log_bytes FROM attempts WHERE job_id = ?", (job_id,)).fetchone()
    stored = db.execute("SELECT SUM(LENGTH(data)), SUM(lines) FROM log_chunks WHERE job_id = ?",
                        (job_id,)).fetchone()
    db.close()
    assert counted[0] <= LOG_LIMIT + 256 * 1024, counted
    assert stored[0] < LOG_LIMIT + 256 * 1024 and stored[1] < 1000, stored


def test_a_build_printing_invalid_utf8_keeps_its_whole_log(farm):
    """Build output is bytes: Latin-1, a stray 0xFF. Each bad byte reaches the log as U+FFFD,
    the lines around it and after it arrive, and every JSON answer stays valid UTF-8."""
    farm.start_farmd(http=True)
    farm.start_worker()
    prints = r"printf 'caf\xe9 \xff\xfe tail \xe6\xb3\n'; echo after-the-bad-bytes"
    build = farm.ctl_json("submit", chatty_recipe(farm.root, 0, prints), "--follow",
                          timeout=600)
    assert build["state"] == "BUILD_SUCCEEDED", build
    job_id = build["jobs"][0]["id"]
    log = farm.ctl("logs", str(job_id)).stdout
    assert "caf\ufffd \ufffd\ufffd tail \ufffd\ufffd" in log, log[-2000:]
    assert "after-the-bad-bytes" in log and "chatty-1.0" in log, log[-2000:]
    base = f"http://{farm.http_address}"
    body = urllib.request.urlopen(f"{base}/api/v1/jobs/{job_id}/log", timeout=30).read()
    assert "caf\ufffd" in body.decode("utf-8"), body[-2000:]  # strict decoding
    try:
        urllib.request.urlopen(f"{base}/api/v1/builds/%FF%FE", timeout=30)
        raise AssertionError("a build id of raw bytes was found")
    except urllib.error.HTTPError as e:
        assert e.code == 404
        json.loads(e.read().decode("utf-8"))


def test_http_limits_name_themselves(farm):
    farm.start_farmd("--http-max-connections", "3", http=True)
    host, port = farm.http_address.rsplit(":", 1)
    held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(3)]
    try:
        def refused():
            try:
                urllib.request.urlopen(f"http://{farm.http_address}/healthz", timeout=10)
                return None
            except urllib.error.HTTPError as e:
                return e if e.code == 503 else None
        err = wait_until(refused, 20, "a 503 past the connection limit")
        body = err.read().decode()
        assert "at most 3 at once (--http-max-connections)" in body, body
        assert err.headers["Retry-After"] == "1"
    finally:
        for s in held:
            s.close()
    # Once the held connections close, requests are served again: farmd notices a closed
    # connection when its read ends, so the first requests may still get the 503.
    def served():
        try:
            return urllib.request.urlopen(f"http://{farm.http_address}/healthz",
                                          timeout=10).status == 200
        except urllib.error.HTTPError as e:
            if e.code != 503:
                raise
            return False
    wait_until(served, 20, "service again")
    big = urllib.request.Request(f"http://{farm.http_address}/api/v1/builds", method="POST",
                                 data=b"x" * (1 << 20))
    try:
        urllib.request.urlopen(big, timeout=10)
        raise AssertionError("a 1 MiB body was accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 413
        assert "bodies of at most 65536 bytes" in e.read().decode()
    except (ConnectionResetError, BrokenPipeError, urllib.error.URLError):
        pass  # the server may answer and close before the client finished sending


def test_matrix_and_recipe_size_limits_are_refused_at_submit(farm):
    farm.start_farmd()
    recipe = chatty_recipe(farm.root, 1)
    with open(recipe) as f:
        text = f.read()
    big_matrix = os.path.join(farm.root, "big.yaml")
    pythons = ", ".join(f'"3.{i}"' for i in range(8, 14))
    torches = ", ".join(f'"2.{i}"' for i in range(12))
    cudas = ", ".join(f'"12.{i}"' for i in range(10))
    with open(big_matrix, "w") as f:
        f.write(text + f"matrix:\n  python: [{pythons}]\n  torch: [{torches}]\n"
                       f"  cuda: [{cudas}]\n  arch_lists: [\"9.0\", \"12.0\"]\n")
    r = farm.ctl("submit", big_matrix)  # 6 x 12 x 10 x 2 = 1440 cells
    assert r.returncode != 0
    assert "more than 1000 cells" in r.stderr, r.stderr
    huge = os.path.join(farm.root, "huge.yaml")
    with open(huge, "w") as f:
        f.write(text + "# " + "x" * (1 << 20) + "\n")
    r = farm.ctl("submit", huge)
    assert r.returncode != 0
    assert "at most 1048576 are accepted" in r.stderr, r.stderr
