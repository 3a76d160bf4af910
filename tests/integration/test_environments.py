"""Provisioned environments on the job path, end to end, with the real farmd, farm-worker,
farmctl, curl, pip and a relocatable CPython archive made from this machine's interpreter,
against the protocol-faithful upstreams of tests/fakes served THROUGH farmd's pull-through
routes (/upstream/...):

- a worker started with no --python (and told never to build on a host interpreter), on a
  farm whose reads are private (its token is what lets it through farmd's routes), builds
  a recipe with `environment:` over both torch stand-ins (2.8.0+cu128 and
  2.9.0+cu130), each cell on the archive-provisioned CPython, each wheel requiring the
  torch minor of its environment, every upstream file fetched once (counted at the fake);
  a second build provisions nothing and its log says it cloned
  the cached snapshot; `farmctl workers` shows the environment cache;
- a corrupted upstream wheel is refused by farmd's sha256 check: nothing stored at farmd
  or the worker, the attempt fails as infrastructure (never the recipe's failure) and is
  retried, and succeeds once the upstream serves the right bytes;
- kill -9 of the worker in the middle of a download leaves no half environment, and the
  job is built after the worker restarts;
(Locks, what farmd resolves for each cell, are test_locks.py's.)

The toolkit leg (CUDA from redist archives) is covered by test_provision.py and, on the job
path, test_toolkit_job.py: making the redist archives from the local toolkit takes minutes
here; the recipe says `toolkit: false`.
"""

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import zipfile

import pytest

from farm_harness import finished, first_attempt_ended, log_of, wait_until

from test_provision import serve_index_and_python

TORCH = {"cu128": "torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl",
         "cu130": "torch-2.9.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl"}
HOST_WHEELS = ("setuptools-66.1.1-py3-none-any.whl",)

# The package's own build: it imports the provisioned torch (as a torch extension's setup.py
# does) and writes a wheel that records which torch and Python built it.
BUILD_WHEEL = r'''
import base64, hashlib, os, sys, zipfile, torch, setuptools
tag = "cp%d%d" % sys.version_info[:2]
name = "envpkg-1.0-%s-%s-linux_x86_64.whl" % (tag, tag)
files = {
    "envpkg/__init__.py": "TORCH = %r\nPYTHON = %r\nPREFIX = %r\n" % (
        torch.__version__, sys.version.split()[0], sys.base_prefix),
    # Imported by the validation: the clean venv must hold the environment's own torch.
    "envpkg/torch_check.py": "import torch\nfrom envpkg import TORCH\n"
                             "assert torch.__version__ == TORCH, (torch.__version__, TORCH)\n",
    "envpkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: envpkg\nVersion: 1.0\n",
    "envpkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: envpkg\n"
                                  "Root-Is-Purelib: false\nTag: %s-%s-linux_x86_64\n" % (tag, tag),
}
record = []
with zipfile.ZipFile(os.path.join(os.environ["FARM_WHEEL_DIR"], name), "w") as z:
    for path, text in files.items():
        data = text.encode()
        z.writestr(path, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append("envpkg-1.0.dist-info/RECORD,,")
    z.writestr("envpkg-1.0.dist-info/RECORD", "\n".join(record) + "\n")
print("built", name, "with torch", torch.__version__, "setuptools", setuptools.__version__)
'''

RECIPE = """name: envpkg
source: {local: %(src)s}
build: python build_wheel.py
matrix:
  python: ["3.11"]
  torch: ["2.8", "2.9"]
  cuda: ["12.8", "13.0"]
  exclude: [{torch: "2.8", cuda: "13.0"}, {torch: "2.9", cuda: "12.8"}]
environment:
  torch: {"2.8": "2.8.0", "2.9": "2.9.0"}
  build_requirements: ["setuptools==66.1.1"]
  toolkit: false
retry: {max_attempts: 3}
timeout: 600
validation: {import: [envpkg.torch_check]}
"""


@pytest.fixture(scope="module")
def upstreams():
    work = tempfile.mkdtemp(prefix="environments-upstreams-")
    python, fakes = serve_index_and_python(work, os.path.join(work, "data"))
    yield {"work": work, "python_archive": python, **fakes}
    for fake in fakes.values():
        fake.stop()
    shutil.rmtree(work, ignore_errors=True)


def reset(up):
    for name in ("index", "python"):
        up[name].control("reset", {})


def start(farm, up, *worker_flags):
    # Private reads: the worker provisions with its own token (farmd answers no anonymous
    # request, and downloads upstream files only for workers and admins).
    farm.start_farmd(
        "--private-read",
        "--upstream-index", "cu128=%s/whl/cu128/" % up["index"].url,
        "--upstream-index", "cu130=%s/whl/cu130/" % up["index"].url,
        "--upstream-tree", "python=%s/" % up["python"].url, http=True)
    worker = start_worker(farm, *worker_flags)
    farm.wait_workers(1)
    return worker


def start_worker(farm, *flags):
    # No --python: the worker has only what the probe finds, and builds on none of it.
    return farm.start_worker("prov-1", "--provision", "--provision-no-host-python",
                             "--no-probe-kernels", *flags, discover_pythons=True)


def recipe(farm):
    src = os.path.join(farm.root, "envpkg-src")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "build_wheel.py"), "w") as f:
        f.write(BUILD_WHEEL)
    path = os.path.join(farm.root, "recipe.yaml")
    with open(path, "w") as f:
        f.write(RECIPE % {"src": src})
    return path


def setup_ms(log):
    m = re.search(r"farm: environment ready in (\d+) ms", log)
    assert m, log
    return int(m.group(1))


def env_entries(farm, kind):
    d = os.path.join(farm.root, "prov-1", "envs", kind)
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def test_builds_both_torch_cells_through_farmd_then_reuses_the_snapshots(farm, upstreams, tmp_path):
    up = upstreams
    reset(up)
    start(farm, up)
    caps = farm.ctl_json("workers")["workers"][0]["capabilities"]
    assert caps["provisioning"]["enabled"], caps
    build = farm.ctl_json("submit", recipe(farm))
    done = finished(farm, build["id"])
    assert done["state"] == "BUILD_SUCCEEDED", json.dumps(done, indent=1)
    assert len(done["jobs"]) == 2
    first_ms = []
    for job in done["jobs"]:
        torch = {"2.8": "2.8.0+cu128", "2.9": "2.9.0+cu130"}[job["cell"]["torch"]]
        log = log_of(farm, job["id"])
        assert "farm: provisions Python 3.11 + torch %s, locked: 2 packages" % torch in log, log
        assert "from the farm's cache" in log, log
        assert "built snapshot" in log and "Python from its archive" in log, log
        # Validated over the cell's environment: its torch is there for the import.
        assert "farm: validating in a clean venv over the cell's environment" in log, log
        assert "installed and imported in a clean venv" in log, log
        first_ms.append(setup_ms(log))
    # Each upstream file crossed the network once, through farmd: setuptools is the same bytes
    # on both indexes, so farmd fetched it once for both cells; pip never (the farm's own
    # installs, and resolving read only PEP 658 metadata).
    counted = up["index"].counters()
    for name in list(TORCH.values()) + list(HOST_WHEELS):
        assert counted.get("file:" + name) == 1, (name, counted)
    assert not [k for k in counted if k.startswith("file:pip-") and k.endswith(".whl")], counted
    assert up["python"].counters().get("file:" + up["python_archive"]["name"]) == 1

    out = tmp_path / "wheels"
    r = farm.ctl("download", str(build["id"]), "--dir", str(out))
    assert r.returncode == 0, r.stderr
    built = {}
    for wheel in glob.glob(str(out / "*.whl")):
        with zipfile.ZipFile(wheel) as z:
            init = z.read("envpkg/__init__.py").decode()
            # The farm's label is in the version: envpkg-1.0+cu128torch2.8.dist-info.
            metadata = z.read(next(n for n in z.namelist()
                                   if n.endswith(".dist-info/METADATA"))).decode()
        scope = {}
        exec(init, scope)  # noqa: S102 - our own wheel's two constants
        built[scope["TORCH"]] = (scope, metadata)
    assert sorted(built) == ["2.8.0+cu128", "2.9.0+cu130"], built
    for torch, (scope, metadata) in built.items():
        assert scope["PYTHON"] == up["python_archive"]["version"]
        # The interpreter that built it is the archive's, unpacked in the worker's cache.
        assert "/envs/python/" in scope["PREFIX"], scope
        # The wheel requires the torch minor it was built against: the environment's.
        assert "Requires-Dist: torch==%s.*" % torch[:3] in metadata.splitlines(), metadata

    again = farm.ctl_json("submit", "--force", recipe(farm))
    redone = finished(farm, again["id"])
    assert redone["state"] == "BUILD_SUCCEEDED", json.dumps(redone, indent=1)
    cached_ms = []
    for job in redone["jobs"]:
        log = log_of(farm, job["id"])
        assert "cached snapshot" in log and "nothing downloaded" in log, log
        cached_ms.append(setup_ms(log))
    # Resolved again (the same locks), and not one file fetched upstream again.
    files = lambda c: {k: v for k, v in c.items() if k.startswith("file:") and k.endswith(".whl")}
    assert files(up["index"].counters()) == files(counted)
    assert len(env_entries(farm, "envs")) == 2
    text = farm.ctl("workers").stdout
    assert "provisions" in text and "env cache" in text, text
    print("environment setup per job: first %s ms, cached %s ms" % (first_ms, cached_ms))


def test_corrupt_upstream_wheel_is_refused_and_retried_as_infrastructure(farm, upstreams):
    up = upstreams
    reset(up)
    start(farm, up)
    up["index"].control("corrupt", {"file": TORCH["cu128"]})
    try:
        build = farm.ctl_json("submit", "--torch", "2.8", recipe(farm))
        job = first_attempt_ended(farm, build["jobs"][0]["id"], 120)
    finally:
        up["index"].control("corrupt", {"file": TORCH["cu128"], "on": False})
    first = job["attempts"][0]
    assert first["cause"] == "CAUSE_INFRASTRUCTURE", first  # never the recipe's failure
    assert "provisioning failed" in first["detail"], first
    assert "checksum mismatch for " + TORCH["cu128"] in farm.log("farmd.log"), \
        farm.log("farmd.log")[-3000:]
    assert env_entries(farm, "envs") == []
    listed = json.loads(subprocess.run(
        ["curl", "-s", "-H", "Accept: application/vnd.pypi.simple.v1+json",
         up["index"].url + "/whl/cu128/torch/"], check=True, capture_output=True).stdout)
    sha = next(f["hashes"]["sha256"] for f in listed["files"] if f["filename"] == TORCH["cu128"])
    assert sha not in env_entries(farm, "downloads")
    assert not glob.glob(os.path.join(farm.data, "blobs", "**", sha + "*"), recursive=True)
    done = finished(farm, build["id"])  # retried: the upstream now serves the right bytes
    assert done["state"] == "BUILD_SUCCEEDED", json.dumps(done, indent=1)
    assert sha in env_entries(farm, "downloads")


def test_kill_9_mid_download_leaves_no_half_environment_and_the_job_is_retried(farm, upstreams):
    up = upstreams
    reset(up)
    name = up["python_archive"]["name"]
    # Straight from the archive folder (not through farmd, which would fetch it whole before
    # serving it): slow, so the worker is inside the download when it is killed.
    direct = ("--provision-python-release", up["python"].url + "/")
    worker = start(farm, up, *direct)
    up["python"].control("throttle", {"file": name, "bytes_per_second": 1 << 20})
    try:
        build = farm.ctl_json("submit", "--torch", "2.9", recipe(farm))
        tmp = os.path.join(farm.root, "prov-1", "envs", "tmp")
        wait_until(lambda: [p for p in glob.glob(os.path.join(tmp, "downloads-*", "blob"))
                            if os.path.getsize(p) > 0], 60, "the download to start")
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
    finally:
        up["python"].control("throttle", {"file": name, "bytes_per_second": 0})
    for kind in ("downloads", "python", "envs"):
        assert env_entries(farm, kind) == [], kind  # nothing half-made is in place
    start_worker(farm, *direct)  # the same identity: farmd requeues what it held
    done = finished(farm, build["id"])
    assert done["state"] == "BUILD_SUCCEEDED", json.dumps(done, indent=1)
    assert os.listdir(tmp) == []  # the leftover was swept when the cache opened
    assert len(env_entries(farm, "python")) == 1 and len(env_entries(farm, "envs")) == 1
