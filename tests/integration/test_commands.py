"""farmctl's commands mean what they say, on the real farmd and farm-worker: versions and
per-command help, cancel of an ended build refused with its finish time unchanged and who
cancelled recorded, no "(exit 0)" for a cancelled attempt, numbers as numbers in
--output json and JSON Lines from logs, drain by the name every listing shows, and tokens
listed and revoked with the revocation effective at the next call, and --follow saying why a
job waits and how far a build is, line by line through a pipe."""
import json
import os
import re
import subprocess
import threading

from farm_harness import FARM_WORKER, FARMCTL, FARMD, REPO, wait_until

SLEEPER = os.path.join(REPO, "kernels", "examples", "sleeper", "recipe.yaml")


def test_versions_and_per_command_help(farm):
    for binary, name in ((FARMCTL, "farmctl"), (FARMD, "farmd"), (FARM_WORKER, "farm-worker")):
        r = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and r.stdout.startswith(name + " 0."), (binary, r.stdout, r.stderr)
    r = subprocess.run([FARMCTL, "submit", "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: farmctl [flags] submit RECIPE.yaml")
    assert "--arch-list" in r.stdout and "--cron" not in r.stdout and "--server" in r.stdout
    r = subprocess.run([FARMCTL, "tokens", "--help"], capture_output=True, text=True, timeout=30)
    assert "--ttl" in r.stdout and "revoke ID" in r.stdout


def test_cancel_json_logs_and_drain(farm):
    farm.start_farmd()
    farm.start_worker("gpu-box-1")
    build = farm.ctl_json("submit", SLEEPER)
    assert isinstance(build["id"], int), build  # numbers are numbers
    build_id = build["id"]
    job_id = build["jobs"][0]["id"]

    def log_lines():
        r = farm.ctl("--output", "json", "logs", str(job_id))
        lines = [l for l in r.stdout.splitlines() if l.strip()]
        return lines if any("started" in l for l in lines) else None
    lines = wait_until(log_lines, 60, "the sleeper's log")
    for line in lines:  # JSON Lines: one document per line, seq a number
        assert isinstance(json.loads(line)["seq"], int), line

    r = farm.ctl("drain", "gpu-box-1")  # by the name farmctl workers shows
    assert r.returncode == 0, r.stderr
    assert "draining" in r.stdout and "gpu-box-1" in r.stdout
    r = farm.ctl("drain", "no-such-worker")
    assert r.returncode == 2 and "no worker with id or name" in r.stderr

    r = farm.ctl("cancel", str(build_id))
    assert r.returncode == 0, r.stderr
    done = wait_until(lambda: (lambda b: b if b["state"] == "BUILD_CANCELLED" else None)(
        farm.ctl_json("show", str(build_id))), 60, "the build cancelled")
    job = done["jobs"][0]
    assert job["cancelled_by"] == "bootstrap-admin", job  # the admin token's name
    text = farm.ctl("show", str(build_id)).stdout
    assert "cancelled by bootstrap-admin" in text and "(exit 0)" not in text, text

    r = farm.ctl("cancel", str(build_id))
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"build {build_id} already was cancelled" in r.stderr
    assert farm.ctl_json("show", str(build_id))["finished_at"] == done["finished_at"]


def test_tokens_listed_and_revoked_at_once(farm):
    farm.start_farmd()
    created = farm.ctl_json("tokens", "create", "--role", "viewer", "--name", "ci-reader",
                            "--ttl", "30d")
    assert created["expires_at"] and len(created["id"]) == 12
    token_file = os.path.join(farm.root, "viewer.token")
    with open(token_file, "w") as f:
        f.write(created["token"])
    assert farm.ctl("list", token_file=token_file).returncode == 0
    listed = farm.ctl("tokens", "list").stdout
    assert created["id"] in listed and "ci-reader" in listed and created["token"] not in listed
    r = farm.ctl("tokens", "revoke", created["id"])
    assert r.returncode == 0 and "revoked" in r.stdout, r.stderr
    r = farm.ctl("list", token_file=token_file)
    assert r.returncode == 4 and "revoked" in r.stderr, (r.returncode, r.stderr)
    assert farm.ctl("tokens", "revoke", created["id"]).returncode == 1  # already revoked
    r = farm.ctl("tokens", "create", "--role", "viewer", "--ttl", "forever")
    assert r.returncode == 2 and "--ttl" in r.stderr


PROGRESS_RECIPE = """name: progress-demo
source: {local: src}
matrix:
  python: ["3.11"]
  cuda: ["13.0", "12.8"]
build: |
  for i in $(seq 1 400); do echo "[$i/400] compiling unit $i"; sleep 0.25; done
timeout: 3600
retry: {max_attempts: 1}
"""


class LineReader:
    """Collects a child's output lines as they arrive, on a thread (nothing is read after
    the child ends, so a line seen while it runs was flushed through the pipe)."""

    def __init__(self, stream):
        self.lines = []
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream):
        for line in stream:
            self.lines.append(line.rstrip("\n"))

    def find(self, pattern):
        return next((l for l in self.lines if re.search(pattern, l)), None)


def test_follow_says_why_a_job_waits_and_how_far_one_runs(farm):
    """submit --follow through a pipe (as under `| tee`) prints as it goes: the reason no
    worker can take the CUDA 12.8 cell, and the other cell's compile progress from its
    [n/m] lines; logs --follow says the same on stderr."""
    farm.start_farmd()
    farm.start_worker()
    farm.wait_workers(1)
    os.makedirs(os.path.join(farm.root, "src"))
    recipe = os.path.join(farm.root, "progress.yaml")
    with open(recipe, "w") as f:
        f.write(PROGRESS_RECIPE)
    argv = [FARMCTL, "--server", farm.address, "--token-file",
            os.path.join(farm.data, "admin.token")]
    follow = subprocess.Popen(argv + ["submit", recipe, "--follow"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    followers = [follow]
    try:
        out = LineReader(follow.stdout)
        waits = wait_until(lambda: out.find(r"^farmctl: job \d+ \(py3\.11 cuda12\.8\) pending: no "
                                            r"worker has CUDA 12\.8"), 60,
                           "the pending reason under --follow")
        assert waits.endswith("no worker has CUDA 12.8: provision one or drop the cell "
                              "(no worker can take it)"), waits
        assert wait_until(lambda: out.find(r"^  worker-1 \(w-[0-9a-f]+\): no CUDA toolkit 12\.8"),
                          10, "the worker's reason")
        progress = wait_until(lambda: out.find(r"progress: \d+/400 units \(\d+%\)"), 60,
                              "a progress line")
        # The worker by its name, as every listing shows it.
        assert out.find(r"^farmctl: job \d+ \(py3\.11 cuda13\.0\) running on worker-1$"), \
            out.lines
        wait_until(lambda: out.find(r"^\[job \d+\] \[\d+/400\] compiling unit"), 30,
                   "the build's own lines")
        assert follow.poll() is None, "the lines came only when farmctl ended"

        build = farm.ctl_json("list")["builds"][0]
        jobs = {j["cell"]["cuda"]: j for j in farm.ctl_json("show", str(build["id"]))["jobs"]}
        assert jobs["12.8"]["unplaceable"] is True, jobs["12.8"]
        assert jobs["12.8"]["waiting_reason"].startswith("no worker has CUDA 12.8"), jobs
        running = jobs["13.0"]["attempts"][0]
        assert running["units_total"] == 400 and running["units_done"] > 0, running
        assert running["peak_rss_bytes"] > 0, running  # live, before the attempt ends
        text = farm.ctl("show", str(build["id"])).stdout
        assert "waiting: no worker has CUDA 12.8" in text and "progress: " in text, text

        for job, pattern in ((jobs["12.8"], r"^farmctl: job \d+ waits: no worker has CUDA 12\.8"),
                             (jobs["13.0"], r"^farmctl: job \d+ progress: \d+/400 units")):
            logs = subprocess.Popen(argv + ["logs", str(job["id"]), "--follow"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            followers.append(logs)
            err = LineReader(logs.stderr)
            wait_until(lambda: err.find(pattern), 30, f"logs --follow saying {pattern}")
            logs.terminate()
        assert farm.ctl("cancel", str(build["id"])).returncode == 0
        assert follow.wait(timeout=60) == 1  # the build ended cancelled
        out.thread.join(timeout=10)
        assert out.find(r"job \d+ .* cancelled"), out.lines
        print(f"progress line: {progress}")
    finally:
        for p in followers:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
