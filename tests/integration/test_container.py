"""The container executor on real components: farmd + farm-worker --executor podman.

The builder image is made on this machine by docker/builder-local/make-image.sh (hostusr:
the host's /usr, with Python and the CUDA toolkit, mounted read-only), since no registry is
reachable. Every test is skipped, saying why, when podman cannot run a container here.
FARM_PODMAN_GLOBAL_ARGS overrides the engine flags (default: runc + cgroupfs when
/usr/sbin/runc exists, which the development machine needs).
"""
import os
import re
import shlex
import shutil
import socket
import subprocess
import time

import pytest

from farm_harness import EXAMPLE_RECIPE, REPO, wait_until
from test_foundation import ARCH_LIST, only_job, write_recipe
from test_locks import wheels  # noqa: F401 - the lock index's files, a module fixture

RUN_ARGS = "--ulimit nproc=1000:1000 --ulimit nofile=1024:1024 -v /usr:/usr:ro"
FAKE_SECRET = "ghp_FAKEcontainerSECRET0123456789abcdef"


def engine_args():
    if "FARM_PODMAN_GLOBAL_ARGS" in os.environ:
        return shlex.split(os.environ["FARM_PODMAN_GLOBAL_ARGS"])
    if os.access("/usr/sbin/runc", os.X_OK):
        return ["--runtime", "/usr/sbin/runc", "--cgroup-manager", "cgroupfs"]
    return []


def podman(*args, timeout=120):
    return subprocess.run(["podman", *engine_args(), *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def image():
    """The local builder image, or a skip that says why podman cannot be used here."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (apt-get install podman runc)")
    tag = f"localhost/farm-builder-local-it:{os.getpid()}"
    made = subprocess.run([os.path.join(REPO, "docker", "builder-local", "make-image.sh"),
                           "--tag", tag], capture_output=True, text=True, timeout=300)
    if made.returncode != 0:
        pytest.skip("make-image.sh failed, podman cannot import images here: " +
                    (made.stderr.strip().splitlines() or ["?"])[-1])
    probe = podman("run", "--rm", "--network=none", *shlex.split(RUN_ARGS), tag, "true")
    if probe.returncode != 0:
        podman("rmi", "-f", tag)
        pytest.skip("podman cannot run containers here: " +
                    (probe.stderr.strip().splitlines() or ["?"])[-1])
    yield tag
    podman("rmi", "-f", tag)


def start_container_worker(farm, image, name="ctr-1", *more):
    """A worker running builds with podman; its own environment holds fake secrets."""
    extra = ["--executor", "podman", "--container-image", image,
             "--container-engine-args=" + " ".join(engine_args()),
             "--container-run-args=" + RUN_ARGS, *more]
    saved = {k: os.environ.get(k) for k in ("GITHUB_TOKEN", "HF_TOKEN")}
    os.environ["GITHUB_TOKEN"] = FAKE_SECRET
    os.environ["HF_TOKEN"] = "hf_" + FAKE_SECRET
    try:
        return farm.start_worker(name, *extra)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def job_containers(job_id):
    r = podman("ps", "-a", "--filter", f"label=farm.job={job_id}", "--format", "{{.Names}}")
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def job_log(farm, job_id):
    r = farm.ctl("logs", str(job_id))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_example_package_builds_inside_the_container(farm, image):
    farm.start_farmd()
    start_container_worker(farm, image)
    t0 = time.monotonic()
    build = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", ARCH_LIST, "--follow")
    elapsed = time.monotonic() - t0
    job = only_job(build)
    log = job_log(farm, job["id"])
    assert build["state"] == "BUILD_SUCCEEDED", log[-3000:]
    (artifact,) = job["artifacts"]
    assert artifact["filename"].startswith("attn_example-0.1.0+cu130.sm90.sm120a.sm121a-cp3"), artifact
    assert int(artifact["size"]) > 10000
    assert "executor podman" in log
    assert f"farm: container farm-job-{job['id']}-a1-" in log
    assert "no network" in log
    assert not job_containers(job["id"]), "the container outlived its job"
    assert re.search(r"in the podman container through \S+ \(the image has it\)", log), log[-3000:]
    # Validation ran in containers of the same image too: the venv, the install and the
    # import each start one (their banners follow the validation line); no GPU here, so
    # the script waits for hardware.
    after = log.split("farm: validating in a clean venv inside the podman container", 1)
    assert len(after) == 2, log[-3000:]
    banners = after[1].split("farm: validation ")[0].count(f"farm: container farm-job-{job['id']}-a1-")
    assert banners >= 3, log[-4000:]
    report = artifact.get("validation", {})
    assert "installed and imported in a clean venv" in report.get("message", ""), artifact
    # Python itself says where the import ran: on a host named after one of the job's
    # validation containers (podman --hostname), which the worker's host is not, with the
    # interpreter the build's venv was made with.
    (imported,) = [l for l in after[1].splitlines() if "farm: imported attn_example from" in l]
    m = re.search(r"\(Python \S+ at (\S+) on host (\S+)\)", imported)
    assert m, imported
    assert m.group(2).startswith(f"farm-job-{job['id']}-a1-"), imported
    assert m.group(2) != socket.gethostname()
    assert f"farm: container {m.group(2)} (image {image}, no network" in after[1], after[1][:3000]
    (venv_python,) = re.findall(r"farm: creating venv with (\S+) \(Python", log)
    assert m.group(1) == os.path.realpath(venv_python), (imported, venv_python)
    assert "/validate/venv/" in imported
    print(f"container build: {elapsed:.1f}s, wheel {artifact['filename']} {artifact['size']} bytes")

    # The worker's compile cache is mounted into the next job's container: the same
    # package built again in a fresh workspace compiles nothing anew.
    again = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", ARCH_LIST, "--follow",
                          "--force")
    assert again["state"] == "BUILD_SUCCEEDED", job_log(farm, only_job(again)["id"])[-3000:]
    (attempt,) = farm.ctl_json("show", str(again["id"]))["jobs"][0]["attempts"]
    cache = attempt.get("compile_cache")
    assert cache is not None, attempt
    hits, misses = int(cache.get("hits", 0)), int(cache.get("misses", 0))
    assert hits >= 2 and misses == 0, (cache, job_log(farm, only_job(again)["id"])[-3000:])
    assert not job_containers(only_job(again)["id"])


def test_cancel_stops_the_container_within_ten_seconds(farm, image):
    farm.start_farmd()
    start_container_worker(farm, image)
    recipe = write_recipe(farm.root, "sleeper", """
        echo started
        sleep 600""")
    build = farm.ctl_json("submit", recipe)
    job_id = only_job(build)["id"]
    wait_until(lambda: job_containers(job_id), 120, "the build's container")
    wait_until(lambda: "started" in job_log(farm, job_id), 60, "the build to start")
    t0 = time.monotonic()
    assert farm.ctl("cancel", str(build["id"])).returncode == 0
    wait_until(lambda: not job_containers(job_id), 10, "the container to be gone")
    stopped_s = time.monotonic() - t0
    assert stopped_s < 10
    ended = wait_until(lambda: (lambda b: b if b["state"] == "BUILD_CANCELLED" else None)(
        farm.ctl_json("show", str(build["id"]))), 20, "the build to end cancelled")
    assert only_job(ended)["state"] == "JOB_CANCELLED"
    print(f"container gone {stopped_s:.1f}s after cancel")


def test_no_secret_reaches_the_container(farm, image):
    farm.start_farmd()
    start_container_worker(farm, image)
    with open(os.path.join(farm.data, "enroll.token")) as f:
        enroll = f.read().strip()
    recipe = write_recipe(farm.root, "envdump", """
        echo "uid=$(id -u)"
        env | sort
        cat /proc/1/environ | tr '\\0' '\\n' | sed 's/^/pid1 /'
        ip addr 2>/dev/null || cat /proc/net/dev""")
    build = farm.ctl_json("submit", recipe)
    # It leaves no wheel, so it ends failed; only its log matters here.
    build = wait_until(lambda: (lambda b: b if b["state"] == "BUILD_FAILED" else None)(
        farm.ctl_json("show", str(build["id"]))), 120, "the build to end")
    job = only_job(build)
    log = job_log(farm, job["id"])
    assert f"FARM_JOB_ID={job['id']}" in log, log  # the job's own variables are there
    assert "MAX_JOBS=" in log
    assert "pid1 FARM_JOB_ID=" in log
    for leaked in (FAKE_SECRET, "GITHUB_TOKEN", "HF_TOKEN", "FARM_ENROLL_TOKEN", enroll):
        assert leaked not in log, f"{leaked[:12]}... reached the container"
    assert "uid=1000" in log  # not root inside
    assert "eth0" not in log  # --network=none: loopback only


def test_a_container_build_cannot_change_the_snapshot_the_next_build_clones(farm, image, wheels):
    """A root worker's podman build of one submitter must not rewrite the environment
    snapshot the next build of that cell (another submitter's) clones: the workspace it is
    given never takes the snapshot's files with it, and the venv is mounted read-only."""
    import test_locks
    data = os.path.join(farm.root, "index", "cu130")
    shutil.copytree(wheels["base"], data)
    fake = test_locks.RunningFake("fake_pyindex.py", ["--index", "/whl/cu130=" + data],
                                  farm.root, "index")
    try:
        index = {"url": fake.url + "/whl/cu130/"}
        farm.start_farmd("--upstream-index", "cu130=" + index["url"], http=True)
        start_container_worker(farm, image, "ctr-1", "--provision")
        farm.wait_workers(1)
        backdoor = ('echo "print(\'BACKDOORED TORCH\')" >> "$VIRTUAL_ENV"/lib/python3.11/'
                    'site-packages/torch/__init__.py || true')
        evil = farm.ctl_json("submit", test_locks.recipe(farm, name="evilpkg", before=backdoor),
                             "--follow")
        assert evil["state"] == "BUILD_SUCCEEDED", job_log(farm, only_job(evil)["id"])[-3000:]
        check = 'python -c "import torch" | grep -c BACKDOORED && exit 9 || true'
        clean = farm.ctl_json("submit", test_locks.recipe(farm, name="cleanpkg", before=check),
                              "--follow")
        log = job_log(farm, only_job(clean)["id"])
        assert clean["state"] == "BUILD_SUCCEEDED", log[-3000:]
        assert "cached snapshot" in log and "was discarded" not in log, log[-3000:]
        assert "executor podman" in log, log[-3000:]
    finally:
        fake.stop()
