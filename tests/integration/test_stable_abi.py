"""The stable-ABI fan-out end to end, with the real farmd, farm-worker, farmctl and pip,
against the protocol-faithful package index and CPython archive of tests/fakes served
through farmd's pull-through routes:

- a recipe with torch_abi.stable "2.9" over torch 2.9 and 2.10 (both cu128 stand-ins) is
  built ONCE, in its plan's build cell (the newest torch), by a worker started with no
  --python; when the build succeeds farmd queues a validation job in the other torch's
  cell, which the worker validates in that cell's own provisioned environment (its torch,
  no toolkit); the build lists both torches as proven; the wheel requires torch>=2.9;
- abuse: the validation script fails with one torch: that torch is left out of the proven
  list and the failure is named (the job and its reason);
- fault: kill -9 of the worker in the middle of the validation job: the job is retried
  after the worker restarts, nothing is queued twice, the proven list is right;
- a new torch without a rebuild: a torch watch sees 2.11.0 and 2.12.0 appear on the index
  and farmd, with no person, queues one validation-only job per release for the existing
  wheel (no build), each in a provisioned environment of that release; farmd is killed
  with -9 as the first is queued and nothing is queued twice after its restart; 2.11 is
  proven (proven list, coverage, feed, its torch view lists the wheel), 2.12 fails (its
  torch view leaves the wheel out and says why).
"""

import glob
import json
import os
import shutil
import signal
import tempfile
import urllib.error
import urllib.request
import zipfile

import pytest

from farm_harness import finished, log_of, wait_until
from test_environments import BUILD_WHEEL, HOST_WHEELS
from test_provision import HOST_PYTHON, RunningFake, make  # test_provision finds the fakes

TORCH = ("2.9.0+cu128", "2.10.0+cu128")

RECIPE = """name: abipkg
source: {local: %(src)s}
build: python build_wheel.py
matrix:
  python: ["3.11"]
  torch: ["2.9", "2.10"]
  cuda: ["12.8"]
torch_abi: {stable: "2.9"}
environment:
  torch: {"2.9": "2.9.0", "2.10": "2.10.0"}
  build_requirements: ["setuptools==66.1.1"]
  toolkit: false
retry: {max_attempts: 3}
timeout: 600
validation:
  import: [envpkg]
  script: validate.py
  gpu_memory_gb: 0.1
"""

# The validation: the torch the clean venv sees is the cell's (FARM_TORCH_VERSION), and
# the wheel's own module imports next to it. %(fail)r names a torch minor it refuses.
VALIDATE = r'''
import os, sys, time, torch, envpkg
cell = os.environ["FARM_TORCH_VERSION"]
print("validating with torch", torch.__version__, "for the cell's torch", cell, flush=True)
assert torch.__version__.startswith(cell + "."), (torch.__version__, cell)
if cell == %(slow)r:
    time.sleep(30)
if cell == %(fail)r:
    print("refusing torch", torch.__version__, file=sys.stderr)
    sys.exit(1)
'''


@pytest.fixture(scope="module")
def upstreams():
    work = tempfile.mkdtemp(prefix="stable-abi-upstreams-")
    data = os.path.join(work, "data")
    # Both stand-ins on the cu128 index, made as test_provision's are.
    for version in TORCH:
        make("torch-wheels", "--out", os.path.join(data, "cu128"), "--version", version,
             "--python-tag", "cp311")
    make("host-wheels", "--out", os.path.join(data, "cu128"))
    python = make("cpython", "--out", os.path.join(data, "python"), "--python", HOST_PYTHON)
    fakes = {
        "index": RunningFake("fake_pyindex.py", ["--index", "/whl/cu128=" +
                                                 os.path.join(data, "cu128")], work, "index"),
        "python": RunningFake("fake_redist.py", ["--root", os.path.join(data, "python")],
                              work, "python"),
    }
    yield {"python_archive": python, "data": data, "work": work, **fakes}
    for fake in fakes.values():
        fake.stop()
    shutil.rmtree(work, ignore_errors=True)


def start(farm, up):
    for name in ("index", "python"):
        up[name].control("reset", {})
    farm.start_farmd(*farmd_flags(up), http=True)
    worker = start_worker(farm)
    farm.wait_workers(1)
    return worker


def farmd_flags(up):
    return ("--upstream-index", "cu128=%s/whl/cu128/" % up["index"].url,
            "--upstream-tree", "python=%s/" % up["python"].url, "--watch-min-poll-s", "1")


def start_worker(farm):
    # No --python; a GPU so that the worker validates (the wheel has no device code).
    return farm.start_worker("prov-1", "--provision", "--provision-no-host-python",
                             "--no-probe-kernels", "--test-fake-gpu", "FakeGPU:9.0")


def recipe(farm, fail="", slow=""):
    src = os.path.join(farm.root, "abipkg-src")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "build_wheel.py"), "w") as f:
        f.write(BUILD_WHEEL)
    with open(os.path.join(farm.root, "validate.py"), "w") as f:
        f.write(VALIDATE % {"fail": fail, "slow": slow})
    path = os.path.join(farm.root, "recipe.yaml")
    with open(path, "w") as f:
        f.write(RECIPE % {"src": src})
    return path


def jobs_of(farm, build_id):
    return farm.ctl_json("show", str(build_id))["jobs"]


def proofs_settled(farm, build_id):
    """The build job once no proof of it is pending (its validations ended)."""
    def settled():
        builds = [j for j in jobs_of(farm, build_id) if j.get("kind", "JOB_BUILD") == "JOB_BUILD"]
        assert len(builds) == 1, builds
        proofs = builds[0].get("torch_proofs", [])
        return builds[0] if proofs and all(p["state"] != "PROOF_PENDING" for p in proofs) else None
    return wait_until(settled, 240, "the validations of build %d to end" % build_id, interval=0.5)


def validations(farm, build_id):
    return [j for j in jobs_of(farm, build_id) if j.get("kind") == "JOB_VALIDATE"]


def test_one_build_validated_in_both_torch_environments(farm, upstreams, tmp_path):
    start(farm, upstreams)
    build = farm.ctl_json("submit", recipe(farm, fail="2.12"))
    assert len(build["jobs"]) == 1, build  # one build for both torches
    built = build["jobs"][0]
    assert built["cell"]["torch"] == "2.10", built  # the plan's build cell: the newest torch
    assert [c["torch"] for c in built["needs"]["validate_in"]] == ["2.9", "2.10"], built
    done = finished(farm, build["id"])
    assert done["state"] == "BUILD_SUCCEEDED", json.dumps(done, indent=1)
    job = proofs_settled(farm, build["id"])
    assert job["proven_torch"] == ["2.9", "2.10"], json.dumps(job, indent=1)
    checks = validations(farm, build["id"])
    assert len(checks) == 1 and checks[0]["cell"]["torch"] == "2.9", checks
    assert checks[0]["state"] == "JOB_SUCCEEDED" and checks[0]["target_job_id"] == job["id"]
    # The build validated in its own environment (torch 2.10); the validation job made the
    # 2.9 cell's environment (Python and torch, no toolkit, no build requirements).
    log = log_of(farm, job["id"])
    assert "validating with torch 2.10.0+cu128 for the cell's torch 2.10" in log, log
    vlog = log_of(farm, checks[0]["id"])
    assert "farm: provisions Python 3.11 + torch 2.9.0+cu128, locked: 1 package" in vlog, vlog
    assert "from the farm's cache" in vlog, vlog
    assert "validating with torch 2.9.0+cu128 for the cell's torch 2.9" in vlog, vlog
    assert "farm: validation VALIDATION_PASSED" in vlog, vlog
    # Each upstream file crossed the network once: the validation's environment shares the
    # build's cache (the Python archive) and fetched only its own torch.
    counted = upstreams["index"].counters()
    for name in ["torch-%s-cp311-cp311-manylinux_2_28_x86_64.whl" % t for t in TORCH]:
        assert counted.get("file:" + name) == 1, (name, counted)
    for name in HOST_WHEELS:
        assert counted.get("file:" + name) == 1, (name, counted)
    text = farm.ctl("show", str(build["id"])).stdout
    assert "proven with torch 2.9, 2.10" in text, text
    page = json.loads(urllib.request.urlopen(
        "http://%s/api/v1/jobs/%d" % (farm.http_address, job["id"]), timeout=30).read())
    assert page["proven_torch"] == ["2.9", "2.10"], page
    # The one wheel requires torch from the floor up.
    out = tmp_path / "wheels"
    r = farm.ctl("download", str(build["id"]), "--dir", str(out))
    assert r.returncode == 0, r.stderr
    wheels = glob.glob(str(out / "*.whl"))
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(wheels[0]) as z:
        metadata = z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode()
    assert "Requires-Dist: torch>=2.9" in metadata.splitlines(), metadata
    # The same farm meets torch releases published after the build.
    new_torches_proven_without_a_rebuild(farm, upstreams, build["id"], job["id"])


def test_a_failed_validation_leaves_its_torch_out_and_is_named(farm, upstreams):
    start(farm, upstreams)
    build = farm.ctl_json("submit", recipe(farm, fail="2.9"))
    assert finished(farm, build["id"])["state"] == "BUILD_SUCCEEDED"
    job = proofs_settled(farm, build["id"])
    assert job["proven_torch"] == ["2.10"], json.dumps(job, indent=1)
    failed = [p for p in job["torch_proofs"] if p["state"] == "PROOF_FAILED"]
    assert len(failed) == 1 and failed[0]["cell"]["torch"] == "2.9", job["torch_proofs"]
    assert "validation failed" in failed[0]["detail"], failed
    text = farm.ctl("show", str(build["id"])).stdout
    assert "proven with torch 2.10\n" in text, text
    assert "torch 2.9 (Python 3.11, CUDA 12.8): failed (job %s)" % failed[0]["job_id"] in text, text


def test_kill_9_mid_validation_retries_the_job_and_queues_nothing_twice(farm, upstreams):
    worker = start(farm, upstreams)
    build = farm.ctl_json("submit", recipe(farm, slow="2.9"))
    assert finished(farm, build["id"])["state"] == "BUILD_SUCCEEDED"

    def sleeping():
        checks = [j for j in validations(farm, build["id"]) if j["state"] == "JOB_RUNNING"]
        if checks and "for the cell's torch 2.9" in log_of(farm, checks[0]["id"]):
            return checks[0]
        return None
    check = wait_until(sleeping, 180, "the validation script to run", interval=0.5)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=30)
    start_worker(farm)  # the same identity: farmd requeues the validation it held
    job = proofs_settled(farm, build["id"])
    assert job["proven_torch"] == ["2.9", "2.10"], json.dumps(job, indent=1)
    checks = validations(farm, build["id"])
    assert [c["id"] for c in checks] == [check["id"]], checks  # retried, never queued again
    assert checks[0]["attempt"] == 2 and checks[0]["state"] == "JOB_SUCCEEDED", checks
    assert checks[0]["attempts"][0]["cause"] in ("CAUSE_LOST_WORKER", "CAUSE_INFRASTRUCTURE")


def api(farm, path):
    with urllib.request.urlopen("http://%s%s" % (farm.http_address, path), timeout=30) as res:
        return res.read().decode()


def publish_torches(up, versions):
    """Puts torch stand-ins on the cu128 index as an index gains files: made aside, renamed in."""
    staging = tempfile.mkdtemp(dir=up["work"])
    for version in versions:
        make("torch-wheels", "--out", staging, "--version", version, "--python-tag", "cp311")
    for entry in os.listdir(staging):
        os.rename(os.path.join(staging, entry), os.path.join(up["data"], "cu128", entry))


def new_torches_proven_without_a_rebuild(farm, up, build_id, job_id):
    path = os.path.join(farm.root, "recipe.yaml")
    sid = farm.ctl_json("schedules", "add", path, "--watch-torch", ">=2.9", "--poll", "1")["id"]

    def runs():
        shown = farm.ctl_json("schedules", "show", str(sid), "--limit", "50")
        return shown["schedules"][0].get("recent_runs", [])
    wait_until(runs, 60, "the watch's first poll", interval=0.3)
    publish_torches(up, ["2.11.0+cu128", "2.12.0+cu128"])

    def new_proofs():
        return [j for j in validations(farm, build_id) if j["cell"]["torch"] in ("2.11", "2.12")]
    wait_until(new_proofs, 120, "the first validation-only job", interval=0.1)
    # Killed as the jobs are queued: the run and the second job may or may not be stored.
    farm.stop(farm.farmd, signal.SIGKILL)
    farm.start_farmd(*farmd_flags(up), http=True)

    def settled():
        job = proofs_settled(farm, build_id)
        torches = [p["cell"]["torch"] for p in job["torch_proofs"]]
        return job if "2.11" in torches and "2.12" in torches else None
    job = wait_until(settled, 240, "both new torches' proofs to end", interval=0.5)
    assert job["proven_torch"] == ["2.9", "2.10", "2.11"], json.dumps(job, indent=1)
    proofs = {p["cell"]["torch"]: p for p in job["torch_proofs"]}
    assert "validated without a rebuild" in proofs["2.11"]["detail"], proofs
    assert proofs["2.12"]["state"] == "PROOF_FAILED", proofs
    # Nothing built, nothing queued twice; the run says what it did instead of a build.
    assert len(farm.ctl_json("list").get("builds", [])) == 1
    checks = new_proofs()
    assert sorted(c["cell"]["torch"] for c in checks) == ["2.11", "2.12"], checks
    assert all(c["target_job_id"] == job_id for c in checks), checks
    wait_until(lambda: any(r["outcome"] == "RUN_VALIDATION_ONLY" for r in runs()), 30,
               "the validation-only run")
    only = [r for r in runs() if r["outcome"] == "RUN_VALIDATION_ONLY"]
    assert len(only) == 1 and "no build" in only[0]["detail"], runs()
    assert not [r for r in runs() if r["outcome"] == "RUN_SUBMITTED"], runs()
    vlog = log_of(farm, proofs["2.11"]["job_id"])
    assert "validating with torch 2.11.0+cu128 for the cell's torch 2.11" in vlog, vlog
    # Coverage and the feed say so; the views keep the wheel out of the torch it failed.
    cells = {c["torch"]: c for c in json.loads(api(farm, "/api/v1/coverage?package=abipkg"))["cells"]}
    assert cells["2.11"]["state"] == "validated", cells
    assert "validated on 2.11.0 without a rebuild" in cells["2.11"]["cause"], cells
    assert cells["2.12"]["state"] == "failed", cells
    assert "validation on 2.12.0 failed" in cells["2.12"]["cause"], cells
    feed = api(farm, "/feeds/wheels.atom")
    assert "validated on torch 2.11.0 without a rebuild" in feed, feed
    assert "failed on torch 2.12.0 without a rebuild" in feed, feed
    listed = api(farm, "/cu128/sm90/torch2.11.0/simple/envpkg/")  # the wheel's project
    assert "envpkg-1.0" in listed, listed
    with pytest.raises(urllib.error.HTTPError) as refused:
        api(farm, "/cu128/sm90/torch2.12.0/simple/envpkg/")
    body = refused.value.read().decode()
    assert refused.value.code == 404 and "failed validation with torch 2.12" in body, body
