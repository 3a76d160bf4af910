"""The whole path on real components: farmctl -> farmd -> farm-worker -> pip wheel + nvcc."""
import hashlib
import os
import re
import textwrap
import time
import zipfile

import pytest

from farm_harness import EXAMPLE_RECIPE, pid_alive, pids_with_args, wait_until

ARCH_LIST = "9.0;12.0a;12.1a"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_recipe(root, name, build, extra=""):
    """A recipe with a tiny local source directory, written under `root`."""
    src = os.path.join(root, name + "-src")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "README"), "w") as f:
        f.write(name + "\n")
    path = os.path.join(root, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\nsource:\n  local: {name}-src\nbuild: |\n")
        f.write(textwrap.indent(build.strip() + "\n", "  "))
        f.write(extra)
    return path


def only_job(build):
    assert len(build["jobs"]) == 1, build
    return build["jobs"][0]


def build_example(farm):
    farm.start_farmd()
    farm.start_worker()
    build = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", ARCH_LIST, "--follow")
    assert build["state"] == "BUILD_SUCCEEDED", build
    return build


def test_example_package_builds_into_a_wheel_in_the_store(farm):
    build = build_example(farm)
    job = only_job(build)
    assert job["cell"]["arch_list"] == ARCH_LIST
    (artifact,) = job["artifacts"]
    name = artifact["filename"]
    # The name says what the wheel runs on: CUDA and the code images it really holds.
    assert re.fullmatch(r"attn_example-0\.1\.0\+cu130\.sm90\.sm120a\.sm121a-cp3\d+-cp3\d+"
                        r"-linux_x86_64\.whl", name), name
    blob = os.path.join(farm.data, "blobs", artifact["sha256"][:2], artifact["sha256"])
    assert sha256_file(blob) == artifact["sha256"]
    assert os.path.getsize(blob) == int(artifact["size"])

    out = os.path.join(farm.root, "dl")
    r = farm.ctl("download", str(build["id"]), "--dir", out)
    assert r.returncode == 0, r.stderr
    wheel = os.path.join(out, name)
    assert sha256_file(wheel) == artifact["sha256"]
    with zipfile.ZipFile(wheel) as z:
        meta = z.read("attn_example-0.1.0+cu130.sm90.sm120a.sm121a.dist-info/METADATA").decode()
    assert re.search(r"^Version: 0\.1\.0\+cu130\.sm90\.sm120a\.sm121a$", meta, re.M)
    assert name.split("-")[1] == "0.1.0+cu130.sm90.sm120a.sm121a"


def test_failing_build_ends_failed_with_its_log_tail_visible(farm):
    farm.start_farmd()
    farm.start_worker()
    recipe = write_recipe(farm.root, "failing", """
        echo "compiling kernel"
        echo "error: nvcc exploded" >&2
        exit 3""")
    r = farm.ctl("submit", recipe, "--follow")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "error: nvcc exploded" in r.stdout
    build = farm.ctl_json("show", "1")
    job = only_job(build)
    assert build["state"] == "BUILD_FAILED" and job["state"] == "JOB_FAILED"
    assert job["attempts"][0]["cause"] == "CAUSE_BUILD_FAILED"
    assert job["attempts"][0]["exit_code"] == 3
    tail = farm.ctl("logs", str(job["id"]), "--tail", "3")
    assert tail.returncode == 0
    assert "error: nvcc exploded" in tail.stdout
    assert "compiling kernel" in farm.ctl("logs", str(job["id"])).stdout


def test_cancel_stops_the_whole_process_tree_within_ten_seconds(farm):
    farm.start_farmd()
    farm.start_worker()
    # The build runs in a sandbox with its own PID namespace and no view of this test's
    # files, so its processes are found here by their unusual arguments.
    recipe = write_recipe(farm.root, "sleeper", """
        sleep 6007 &
        (sleep 6008 & wait) &
        echo started
        wait""")
    farm.ctl_json("submit", recipe)
    started = wait_until(lambda: (lambda p: p if len(p) >= 2 else None)(
        pids_with_args("sleep", "6007") + pids_with_args("sleep", "6008")), 60,
        "the build's processes")
    assert all(pid_alive(p) for p in started)
    t0 = time.monotonic()
    assert farm.ctl("cancel", "1").returncode == 0
    wait_until(lambda: not any(pid_alive(p) for p in started), 10, "the build tree to stop")
    assert time.monotonic() - t0 < 10
    build = wait_until(lambda: (lambda b: b if b["state"] == "BUILD_CANCELLED" else None)(
        farm.ctl_json("show", "1")), 15, "the build to end cancelled")
    assert only_job(build)["state"] == "JOB_CANCELLED"


@pytest.mark.parametrize("text, expected", [
    ("name: x\nsource: {local: .}\nbuidl: make\n", r"bad\.yaml:3:1: .*unknown field \"buidl\""),
    ("name: x\nsource: {local: .}\nbuild: make\ntimeout: soon\n", r"bad\.yaml:4:10: .*integer"),
    ("source: {local: .}\nbuild: make\n", r"bad\.yaml:1:1: .*\"name\""),
    ("name: x\nsource: {local: .}\nbuild: [make\n", r"bad\.yaml:\d+:\d+: "),
    ("name: x\nsource: {local: .}\nbuild: make\nmatrix: {python: 3.11}\n", r"bad\.yaml:4:\d+: .*list"),
])
def test_malformed_recipes_are_rejected_precisely_and_nothing_is_stored(farm, text, expected):
    farm.start_farmd()
    path = os.path.join(farm.root, "bad.yaml")
    with open(path, "w") as f:
        f.write(text)
    r = farm.ctl("submit", path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert re.search(expected, r.stderr), r.stderr
    assert farm.ctl_json("list").get("builds", []) == []


def test_restarting_farmd_keeps_builds_jobs_logs_and_artifacts(farm):
    build = build_example(farm)
    job = only_job(build)
    before_logs = farm.ctl("logs", str(job["id"])).stdout
    assert farm.stop(farm.farmd) == 0  # SIGTERM: graceful
    farm.start_farmd()
    after = farm.ctl_json("show", str(build["id"]))
    assert after["state"] == "BUILD_SUCCEEDED"
    assert only_job(after)["artifacts"] == job["artifacts"]
    assert farm.ctl("logs", str(job["id"])).stdout == before_logs
    out = os.path.join(farm.root, "again")
    assert farm.ctl("download", str(build["id"]), "--dir", out).returncode == 0


def test_an_identical_submission_is_answered_from_the_stored_wheel(farm):
    first = build_example(farm)
    second = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", ARCH_LIST, "--follow")
    assert second["state"] == "BUILD_SUCCEEDED"
    assert only_job(second).get("attempts", []) == []  # nothing built again
    assert only_job(second)["artifacts"][0]["sha256"] == only_job(first)["artifacts"][0]["sha256"]
    assert only_job(second).get("attempts", []) == []


def test_tokens_and_roles_are_enforced(farm):
    farm.start_farmd()
    no_token = os.path.join(farm.root, "empty.token")
    open(no_token, "w").write("not-a-token\n")
    r = farm.ctl("list", token_file=no_token)
    assert r.returncode == 4 and "unknown token" in r.stderr
    viewer = farm.ctl("tokens", "create", "--role", "viewer", "--name", "ci-viewer")
    assert viewer.returncode == 0
    viewer_file = os.path.join(farm.root, "viewer.token")
    open(viewer_file, "w").write(viewer.stdout)
    assert farm.ctl("list", token_file=viewer_file).returncode == 0
    r = farm.ctl("submit", EXAMPLE_RECIPE, token_file=viewer_file)
    assert r.returncode == 4 and "may not" in r.stderr
    r = farm.ctl("tokens", "create", "--role", "admin", token_file=viewer_file)
    assert r.returncode == 4
    assert viewer.stdout.strip() not in farm.log("farmd.log")


def test_farmctl_says_clearly_when_farmd_cannot_be_reached(farm):
    farm.start_farmd()
    farm.stop(farm.farmd)
    r = farm.ctl("list", timeout=60)
    assert r.returncode == 3
    assert "cannot reach farmd" in r.stderr
