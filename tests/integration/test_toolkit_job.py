"""The CUDA toolkit of a build job from NVIDIA-shaped redist archives, on the job path: the
real farmd pulls the archives through (/upstream/tree/redist/) from the redist fake, whose
archives and redistrib_<label>.json are made from this machine's own toolkit; a worker
started with --provision and --provision-no-host-toolkit (so the toolkit it has is not one
it may build on) provisions the cell's CUDA 13.0 into its toolkit cache and builds
tests/integration/packages/arch_list_kernel, whose build runs nvcc from CUDA_HOME, for
sm_90a:

- an archive whose bytes do not match the manifest's sha256 fails the attempt as
  infrastructure with the cause named, and nothing of the toolkit is cached; once the
  upstream serves the right bytes the retried job builds with the redist toolkit, its log
  saying so and its nvcc being the cache's;
- a second build of the cell fetches nothing (the redist fake's counters do not move) and
  clones the cached snapshot.
"""

import json
import os
import re
import shutil
import tempfile
import zipfile

import pytest

from farm_harness import finished, first_attempt_ended, log_of

from test_provision import CUDA, RunningFake, make

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "packages",
                       "arch_list_kernel")
COMPONENTS = "cuda_nvcc,cuda_crt,libnvvm,cuda_cudart"

# Builds the extension with the package's own setup.py (nvcc from CUDA_HOME) and packs it
# into a wheel: the venv holds setuptools but not `wheel`, which `pip wheel` would need.
PACK = r'''
import base64, glob, hashlib, os, subprocess, sys, zipfile
subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], check=True)
tag = "cp%d%d" % sys.version_info[:2]
name = "arch_list_kernel-1.0-%s-%s-linux_x86_64.whl" % (tag, tag)
files = {p: open(p, "rb").read() for p in glob.glob("arch_list_kernel/*") if p.endswith((".py", ".so"))}
files["arch_list_kernel-1.0.dist-info/METADATA"] = b"Metadata-Version: 2.1\nName: arch_list_kernel\nVersion: 1.0\n"
files["arch_list_kernel-1.0.dist-info/WHEEL"] = (
    "Wheel-Version: 1.0\nGenerator: pack\nRoot-Is-Purelib: false\nTag: %s-%s-linux_x86_64\n" % (tag, tag)).encode()
rows = []
with zipfile.ZipFile(os.path.join(os.environ["FARM_WHEEL_DIR"], name), "w") as z:
    for path, data in files.items():
        z.writestr(path, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    rows.append("arch_list_kernel-1.0.dist-info/RECORD,,")
    z.writestr("arch_list_kernel-1.0.dist-info/RECORD", "\n".join(rows) + "\n")
'''

RECIPE = """name: arch_list_kernel
source: {local: %(src)s}
build: python pack_wheel.py
matrix:
  python: ["3.11"]
  torch: ["2.9"]
  cuda: ["13.0"]
  arch_lists: ["9.0a"]
environment:
  torch: {"2.9": "2.9.0"}
  build_requirements: ["setuptools==66.1.1"]
retry: {max_attempts: 3}
timeout: 900
"""


@pytest.fixture(scope="module")
def upstreams():
    if not os.path.isdir(os.path.join(CUDA, "dist-info")):
        pytest.skip("no CUDA toolkit laid out from NVIDIA's wheels at %s to make redist "
                    "archives from" % CUDA)
    work = tempfile.mkdtemp(prefix="toolkit-job-upstreams-")
    data = os.path.join(work, "data")
    make("torch-wheels", "--out", os.path.join(data, "cu130"), "--version", "2.9.0+cu130",
         "--python-tag", "cp311")
    make("host-wheels", "--out", os.path.join(data, "cu130"))
    redist = make("redist", "--cuda", CUDA, "--out", os.path.join(data, "redist"),
                  "--components", COMPONENTS)
    fakes = {"index": RunningFake("fake_pyindex.py",
                                  ["--index", "/whl/cu130=" + os.path.join(data, "cu130")],
                                  work, "index"),
             "redist": RunningFake("fake_redist.py", ["--root", os.path.join(data, "redist")],
                                   work, "redist")}
    yield {"redist_data": redist, **fakes}
    for fake in fakes.values():
        fake.stop()
    shutil.rmtree(work, ignore_errors=True)


def toolkits(farm):
    d = os.path.join(farm.root, "tk-1", "envs", "toolkits")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def test_job_builds_with_a_toolkit_from_redist_archives_then_reuses_it(farm, upstreams):
    up = upstreams
    for fake in ("index", "redist"):
        up[fake].control("reset", {})
    farm.start_farmd("--upstream-index", "cu130=%s/whl/cu130/" % up["index"].url,
                     "--upstream-tree", "redist=%s/" % up["redist"].url, http=True)
    components = [a for c in COMPONENTS.split(",") for a in ("--provision-redist-component", c)]
    farm.start_worker("tk-1", "--provision", "--provision-no-host-toolkit", "--no-probe-kernels",
                      *components)
    farm.wait_workers(1)
    src = os.path.join(farm.root, "src")
    shutil.copytree(PACKAGE, src)
    with open(os.path.join(src, "pack_wheel.py"), "w") as f:
        f.write(PACK)
    recipe = os.path.join(farm.root, "recipe.yaml")
    with open(recipe, "w") as f:
        f.write(RECIPE % {"src": src})

    # Fault: the nvcc archive's bytes do not match the manifest's sha256.
    nvcc = up["redist_data"]["components"]["cuda_nvcc"]["relative_path"]
    up["redist"].control("corrupt", {"file": nvcc})
    try:
        build = farm.ctl_json("submit", recipe)
        job_id = build["jobs"][0]["id"]
        job = first_attempt_ended(farm, job_id, 300)
    finally:
        up["redist"].control("corrupt", {"file": nvcc, "on": False})
    first = job["attempts"][0]
    assert first["cause"] == "CAUSE_INFRASTRUCTURE", first  # never the recipe's failure
    assert "provisioning failed" in first["detail"] and os.path.basename(nvcc) in first["detail"], \
        first
    assert "checksum mismatch" in farm.log("farmd.log"), farm.log("farmd.log")[-3000:]
    assert toolkits(farm) == []  # nothing of the toolkit was kept

    done = finished(farm, build["id"], 600)  # retried: the upstream now serves the right bytes
    assert done["state"] == "BUILD_SUCCEEDED", json.dumps(done, indent=1)
    attempts = farm.ctl_json("job", str(job_id))["attempts"]
    log = log_of(farm, job_id, len(attempts))
    assert "provisions Python 3.11 + torch 2.9.0+cu130 + CUDA 13.0" in log, log
    assert re.search(r"environment ready in \d+ ms: built snapshot .*toolkit from redist "
                     r"archives", log), log
    # The build ran nvcc from CUDA_HOME: the compile cache's shim of the provisioned toolkit,
    # which runs the nvcc unpacked from the redist archives in the worker's cache.
    m = re.search(r"nvcc through CUDA_HOME=(\S+)\)", log)
    assert m, log
    assert re.search(re.escape(m.group(1)) + r"/bin/nvcc -shared .*arch=compute_90a,code=sm_90a",
                     log), log
    with open(os.path.join(m.group(1), "bin", "nvcc")) as f:
        shim = f.read()
    assert re.search(r"/tk-1/envs/toolkits/[0-9a-f]{64}/cuda/bin/nvcc", shim), shim
    assert len(toolkits(farm)) == 1
    fetched = up["redist"].counters()
    for component in up["redist_data"]["components"].values():
        assert fetched.get("file:" + component["relative_path"], 0) >= 1, fetched
    artifacts = [a["filename"] for j in done["jobs"] for a in j["artifacts"]]
    assert len(artifacts) == 1 and "sm90a" in artifacts[0], artifacts
    out = os.path.join(farm.root, "wheels")
    assert farm.ctl("download", str(build["id"]), "--dir", out).returncode == 0
    with zipfile.ZipFile(os.path.join(out, artifacts[0])) as z:
        assert any(n.endswith("_kernel.so") for n in z.namelist()), z.namelist()

    # A second job of the cell: the toolkit and the snapshot come from the cache.
    again = finished(farm, farm.ctl_json("submit", "--force", recipe)["id"], 600)
    assert again["state"] == "BUILD_SUCCEEDED", json.dumps(again, indent=1)
    log = log_of(farm, again["jobs"][0]["id"])
    assert "cached snapshot" in log and "nothing downloaded" in log, log
    assert up["redist"].counters() == fetched  # not one request for the toolkit
    assert len(toolkits(farm)) == 1
