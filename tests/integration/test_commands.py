"""farmctl's commands mean what they say, on the real farmd and farm-worker: versions and
per-command help, cancel of an ended build refused with its finish time unchanged and who
cancelled recorded, no "(exit 0)" for a cancelled attempt, numbers as numbers in
--output json and JSON Lines from logs, drain by the name every listing shows, and tokens
listed and revoked with the revocation effective at the next call."""
import json
import os
import subprocess

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
