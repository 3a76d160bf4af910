"""Schedules and build keys on the real farmd, farm-worker and farmctl (docs/schedules.md).

Fire times under a fake clock and the missed-run policies are unit-tested
(tests/unit/daemon/cron/runner_test.cc); here the same code runs for real: a git branch
on a git server on 127.0.0.1 (HTTPS, as a forge serves it) resolved by farmd, a skipped run when nothing changed, a build when the branch moves,
in-flight merging, reuse from the key, --force, and failures never reused.
"""
import os
import shutil
import subprocess
import time

from farm_harness import EXAMPLE_RECIPE, wait_until
from test_foundation import ARCH_LIST, only_job, write_recipe

EXAMPLE_DIR = os.path.dirname(EXAMPLE_RECIPE)


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=farm-test",
                           "-c", "user.email=farm-test@example.invalid", *args],
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()


def wait_build(farm, build_id, timeout=300):
    def ended():
        b = farm.ctl_json("show", str(build_id))
        return b if b["state"] in ("BUILD_SUCCEEDED", "BUILD_FAILED", "BUILD_CANCELLED") else None
    return wait_until(ended, timeout, f"build {build_id} to end", interval=0.3)


def make_git_example(farm):
    """The example package as a git repository with one commit on `main`, served over HTTPS
    by a git server on 127.0.0.1 as a forge would (farm.start_git_server). Returns the
    working repository, the recipe that names its URL, and the CA file farmd and the
    workers need to trust the server."""
    repos = os.path.join(farm.root, "git")
    repo = os.path.join(repos, "attn-repo")
    shutil.copytree(EXAMPLE_DIR, repo, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", "dist"))
    subprocess.run(["git", "init", "--quiet", "-b", "main", repo], check=True, timeout=60)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "initial")
    base, ca = farm.start_git_server(repos)
    recipe = os.path.join(farm.root, "attn-git.yaml")
    with open(EXAMPLE_RECIPE) as f:
        text = f.read()
    text = text.replace('source:\n  local: "."\n',
                        f"source:\n  git: {{url: '{base}/attn-repo', ref: main}}\n")
    assert "ref: main" in text
    with open(recipe, "w") as f:
        f.write(text)
    return repo, recipe, ca


def test_identical_submissions_merge_in_flight_reuse_the_key_and_force_builds(farm):
    farm.start_farmd()
    farm.start_worker()
    first = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", ARCH_LIST)
    second = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", ARCH_LIST)
    leader, follower = only_job(first), only_job(second)
    assert leader["build_key"] and leader["build_key"] == follower["build_key"]
    assert follower["error"] == f"waiting for job {leader['id']}, an identical build in flight"
    done = wait_build(farm, first["id"])
    assert done["state"] == "BUILD_SUCCEEDED", done
    t_leader = time.monotonic()
    merged = wait_build(farm, second["id"], timeout=10)
    merge_latency = time.monotonic() - t_leader
    assert merged["state"] == "BUILD_SUCCEEDED", merged
    job = only_job(merged)
    assert job.get("attempts", []) == []  # never built: it took the leader's wheel
    assert job["artifacts"][0]["sha256"] == only_job(done)["artifacts"][0]["sha256"]
    print(f"merged job completed {merge_latency:.2f}s after its leader was seen done")

    t0 = time.monotonic()
    third = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", ARCH_LIST, "--follow")
    answered = time.monotonic() - t0
    # Answered from the key (no attempt, the leader's wheel); how fast is the benchmarks'
    # to say, not an assertion's (docs/benchmarks.md).
    assert third["state"] == "BUILD_SUCCEEDED" and only_job(third).get("attempts", []) == []
    assert only_job(third)["artifacts"][0]["sha256"] == only_job(done)["artifacts"][0]["sha256"]
    print(f"identical submission answered from the key in {answered:.3f}s")

    forced = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", ARCH_LIST, "--force")
    assert "error" not in only_job(forced)
    forced = wait_build(farm, forced["id"])
    assert forced["state"] == "BUILD_SUCCEEDED"
    assert len(only_job(forced)["attempts"]) == 1  # built again


def test_a_failed_result_is_never_reused(farm):
    farm.start_farmd()
    farm.start_worker()
    recipe = write_recipe(farm.root, "fails", "echo broken; exit 3")
    builds = []
    for _ in range(2):
        r = farm.ctl("--output", "json", "submit", recipe, "--follow")
        assert r.returncode == 1, r.stderr
        builds.append(farm.ctl_json("list")["builds"][0])
    jobs = [only_job(farm.ctl_json("show", str(b["id"]))) for b in builds]
    assert jobs[0]["build_key"] == jobs[1]["build_key"] != ""
    for job in jobs:
        assert job["state"] == "JOB_FAILED"
        assert len(job["attempts"]) == 1  # each one really ran


def test_a_schedule_on_a_branch_builds_only_when_the_branch_moves(farm):
    repo, recipe, ca = make_git_example(farm)
    farm.start_farmd("--git-ca-file", ca)
    farm.start_worker("worker-1", "--git-ca-file", ca)
    created = farm.ctl_json("schedules", "add", recipe, "--cron", "0 3 * * *",
                            "--tz", "Europe/Berlin", "--arch-list", ARCH_LIST)
    sid = str(created["id"])  # farmctl prints ids as numbers
    assert created["next_fire_local"].split()[1] == "03:00:00"
    assert created["next_fire_local"].split()[2] in ("CET", "CEST")

    head1 = git(repo, "rev-parse", "HEAD")
    run1 = farm.ctl_json("schedules", "run-now", sid)
    assert run1["outcome"] == "RUN_SUBMITTED" and run1["resolved_commit"] == head1
    build1 = wait_build(farm, run1["build_id"])
    assert build1["state"] == "BUILD_SUCCEEDED", build1
    assert build1["schedule_id"] == int(sid)
    assert build1["recipe"]["source"]["git"]["commit"] == head1

    run2 = farm.ctl_json("schedules", "run-now", sid)
    assert run2["outcome"] == "RUN_SKIPPED_UNCHANGED"
    assert "build_id" not in run2
    assert run2["detail"] == (f"inputs unchanged since run {run1['id']} "
                              f"(build {run1['build_id']}, commit {head1[:12]})")
    listed = farm.ctl("schedules", "list")
    assert "skipped_unchanged" in listed.stdout and "inputs unchanged" in listed.stdout

    # Schedules and their runs survive a restart of farmd.
    assert farm.stop(farm.farmd) == 0
    farm.start_farmd("--git-ca-file", ca)
    shown = farm.ctl_json("schedules", "show", sid)["schedules"][0]
    assert [r["outcome"] for r in shown["recent_runs"]] == ["RUN_SKIPPED_UNCHANGED", "RUN_SUBMITTED"]

    with open(os.path.join(repo, "setup.py"), "a") as f:
        f.write("\n# A change upstream.\n")
    git(repo, "commit", "--quiet", "-am", "change")
    head2 = git(repo, "rev-parse", "HEAD")
    run3 = farm.ctl_json("schedules", "run-now", sid)
    assert run3["outcome"] == "RUN_SUBMITTED" and run3["resolved_commit"] == head2
    build3 = wait_build(farm, run3["build_id"])
    assert build3["state"] == "BUILD_SUCCEEDED", build3
    assert len(only_job(build3)["attempts"]) == 1  # a new commit is really built

    assert farm.ctl_json("schedules", "pause", sid)["paused"] is True
    assert farm.ctl_json("schedules", "resume", sid).get("paused", False) is False
    assert farm.ctl("schedules", "delete", sid).returncode == 0
    assert farm.ctl_json("schedules", "list").get("schedules", []) == []


def test_bad_cron_expressions_and_zones_are_rejected_with_their_position(farm):
    farm.start_farmd()
    r = farm.ctl("schedules", "add", EXAMPLE_RECIPE, "--cron", "30 25 * * *")
    assert r.returncode == 2, r.stderr
    assert "field 2 (hour), column 4: 25 is out of range 0-23" in r.stderr
    r = farm.ctl("schedules", "add", EXAMPLE_RECIPE, "--cron", "@nightly", "--tz", "Mars/Base")
    assert r.returncode == 2 and "unknown time zone \"Mars/Base\"" in r.stderr, r.stderr
    assert farm.ctl_json("schedules", "list").get("schedules", []) == []
