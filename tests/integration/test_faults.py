"""Crashes of any process lose nothing and duplicate nothing (real processes, SIGKILL)."""
import json
import os
import random
import signal
import textwrap
import time

from farm_harness import (EXAMPLE_RECIPE, PIP_WHEEL, kill9_tree, local_recipe, pure_python_source,
                          wait_until)

ARCH_LIST = "9.0;12.0a;12.1a"
TERMINAL = {"BUILD_SUCCEEDED", "BUILD_FAILED", "BUILD_CANCELLED"}


def job_of(farm, build_id):
    return farm.ctl_json("show", str(build_id))["jobs"][0]


def wait_running(farm, build_id, min_lines=1, timeout=60):
    def running():
        job = job_of(farm, build_id)
        if job["state"] != "JOB_RUNNING":
            return None
        lines = farm.ctl("logs", str(job["id"])).stdout.splitlines()
        return job if len(lines) >= min_lines else None
    return wait_until(running, timeout, f"build {build_id} running with output")


def wait_terminal(farm, build_id, timeout):
    return wait_until(lambda: (lambda b: b if b["state"] in TERMINAL else None)(
        farm.ctl_json("show", str(build_id))), timeout, f"build {build_id} to end")


def test_killed_worker_job_completes_on_another_worker_with_one_artifact(farm):
    farm.start_farmd(lease_ms=3000)
    first = farm.start_worker("worker-1")
    submitted = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", ARCH_LIST)
    wait_running(farm, submitted["id"], min_lines=3)
    kill9_tree(first)
    farm.start_worker("worker-2")
    build = wait_terminal(farm, submitted["id"], 180)
    assert build["state"] == "BUILD_SUCCEEDED", build
    job = build["jobs"][0]
    assert len(job["artifacts"]) == 1
    causes = [a.get("cause") for a in job["attempts"]]
    assert causes == ["CAUSE_LOST_WORKER", "CAUSE_COMPLETED"], job["attempts"]
    assert job["attempts"][0]["worker_id"] != job["attempts"][1]["worker_id"]


def test_killed_farmd_restarts_and_the_build_finishes_with_a_whole_log(farm):
    farm.start_farmd()
    farm.start_worker("worker-1")
    submitted = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", ARCH_LIST)
    wait_running(farm, submitted["id"], min_lines=3)
    kill9_tree(farm.farmd)
    time.sleep(1.0)
    farm.start_farmd()
    build = wait_terminal(farm, submitted["id"], 180)
    assert build["state"] == "BUILD_SUCCEEDED", build
    job = build["jobs"][0]
    assert len(job["attempts"]) == 1, job["attempts"]
    seqs = [int(e["seq"]) for e in log_seqs(farm, job["id"])]
    assert seqs and seqs == list(range(1, len(seqs) + 1))


def log_seqs(farm, job_id):
    r = farm.ctl("--output", "json", "logs", str(job_id))
    assert r.returncode == 0, r.stderr
    decoder, text, pos, out = json.JSONDecoder(), r.stdout, 0, []
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        obj, pos = decoder.raw_decode(text, pos)
        out.append(obj)
    return out


def test_log_survives_farmd_kill_without_gap_or_duplicate(farm):
    farm.start_farmd()
    farm.start_worker("worker-1")
    src = os.path.join(farm.root, "counter-src")
    os.makedirs(src)
    recipe = os.path.join(farm.root, "counter.yaml")
    with open(recipe, "w") as f:
        f.write(textwrap.dedent("""\
            name: counter
            source: {local: counter-src}
            build: |
              for i in $(seq 1 60); do echo "line $i"; sleep 0.1; done
              exit 3
            """))
    submitted = farm.ctl_json("submit", recipe)
    wait_running(farm, submitted["id"], min_lines=10)
    kill9_tree(farm.farmd)
    time.sleep(2.0)  # the build keeps printing while farmd is down
    farm.start_farmd()
    build = wait_terminal(farm, submitted["id"], 120)
    assert build["state"] == "BUILD_FAILED"
    entries = log_seqs(farm, build["jobs"][0]["id"])
    seqs = [int(e["seq"]) for e in entries]
    assert seqs == list(range(1, len(seqs) + 1))
    numbered = [e["text"] for e in entries if e["text"].startswith("line ")]
    assert numbered == [f"line {i}" for i in range(1, 61)]


def tiny_package(root):
    """A recipe whose build makes a small real wheel quickly (no nvcc)."""
    pure_python_source(root, "tiny")
    return local_recipe(root, "tiny", "sleep 1\n" + PIP_WHEEL,
                        head="retry: {max_attempts: 10, backoff_seconds: 0}\n")


def test_random_kills_leave_every_job_in_one_terminal_state_with_one_artifact(farm):
    random_kill_storm(farm)


def random_kill_storm(farm):
    """20 SIGKILLs of farmd or a worker at random moments while 8 builds run; then every
    job ends in one terminal state, with one wheel when it succeeded."""
    rng = random.Random(20261122)
    farm.start_farmd(lease_ms=3000)
    workers = {"worker-1": farm.start_worker("worker-1"), "worker-2": farm.start_worker("worker-2")}
    recipe = tiny_package(farm.root)
    ids = [farm.ctl_json("submit", recipe, "--force")["id"] for _ in range(8)]
    kills = 0
    deadline = time.monotonic() + 240
    while kills < 20 and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.5, 2.0))
        victim = rng.choice(["farmd", "worker-1", "worker-2"])
        if victim == "farmd":
            kill9_tree(farm.farmd)
            farm.start_farmd(lease_ms=3000)
        else:
            kill9_tree(workers[victim])
            workers[victim] = farm.start_worker(victim)
        kills += 1
    assert kills == 20
    builds = [wait_terminal(farm, i, 300) for i in ids]
    for build in builds:
        (job,) = build["jobs"]
        assert job["state"] in {"JOB_SUCCEEDED", "JOB_FAILED"}, job
        if job["state"] == "JOB_SUCCEEDED":
            assert len(job["artifacts"]) == 1, job
            assert job["attempts"][-1]["cause"] == "CAUSE_COMPLETED"
        for attempt in job["attempts"][:-1]:
            assert attempt["cause"] in {"CAUSE_LOST_WORKER", "CAUSE_INFRASTRUCTURE"}, attempt
    succeeded = sum(b["state"] == "BUILD_SUCCEEDED" for b in builds)
    assert succeeded == len(builds), [b["jobs"][0].get("error") for b in builds]


def slow_tiny_package(root, seconds):
    recipe = tiny_package(root)
    text = open(recipe).read().replace("sleep 1", f"for i in $(seq 1 {seconds}); do echo tick $i; sleep 1; done")
    open(recipe, "w").write(text)
    return recipe


def running_slow_build(farm, seconds):
    """farmd with a 2 s lease, worker-1, and a build of `seconds` ticks that worker-1 runs
    (3 log lines in); returns (worker-1, the build's id)."""
    farm.start_farmd(lease_ms=2000)
    worker = farm.start_worker("worker-1")
    build_id = farm.ctl_json("submit", slow_tiny_package(farm.root, seconds))["id"]
    wait_running(farm, build_id, min_lines=3)
    return worker, build_id


def test_worker_back_from_a_cut_reattaches_instead_of_rebuilding(farm):
    worker, build_id = running_slow_build(farm, 12)
    worker.send_signal(signal.SIGSTOP)  # the worker goes silent; its build keeps running
    try:
        wait_until(lambda: job_of(farm, build_id)["state"] == "JOB_PENDING", 60,
                   "the lease to expire")
    finally:
        worker.send_signal(signal.SIGCONT)
    build = wait_terminal(farm, build_id, 120)
    assert build["state"] == "BUILD_SUCCEEDED", build
    job = build["jobs"][0]
    assert [a.get("cause") for a in job["attempts"]] == ["CAUSE_COMPLETED"], job["attempts"]
    assert "re-attached" in farm.log("farmd.log")
    assert len(job["artifacts"]) == 1


def test_late_report_of_a_superseded_attempt_cannot_overwrite_the_new_one(farm):
    first, build_id = running_slow_build(farm, 8)
    first.send_signal(signal.SIGSTOP)
    try:
        farm.start_worker("worker-2")
        wait_until(lambda: job_of(farm, build_id)["attempt"] == 2, 90, "a second attempt")
    finally:
        first.send_signal(signal.SIGCONT)
    build = wait_terminal(farm, build_id, 120)
    assert build["state"] == "BUILD_SUCCEEDED", build
    job = build["jobs"][0]
    assert [a.get("cause") for a in job["attempts"]] == ["CAUSE_LOST_WORKER", "CAUSE_COMPLETED"]
    assert len(job["artifacts"]) == 1
    time.sleep(3)  # give worker-1 time to report late; nothing may change
    again = farm.ctl_json("show", str(build_id))
    assert again["jobs"][0]["attempts"] == job["attempts"]
