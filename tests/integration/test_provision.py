"""The environment provisioner (farm-provision, the worker's library run alone) against the
protocol-faithful upstreams of tests/fakes, with real curl, real pip, a real relocatable
CPython archive made from this machine's interpreter and real redist archives made from
its CUDA toolkit:

- a cell is provisioned from nothing: its lock resolved with pip (as farmd does), Python
  from the archive, torch 2.8.0+cu128 from the per-CUDA index, CUDA 13.0 from the redist
  manifest, all of it confined (a sandbox as the build user under root); the venv imports
  the stand-in and the toolkit's nvcc compiles for sm_90a; every upstream file was fetched
  once, pip's own wheel never (the installer is the farm's);
- the second job in that environment makes no request at all and costs a clone;
- the other torch stand-in (2.9.0+cu130, its own index) on the host interpreter;
- a corrupted upstream file is refused by sha256 with a clear cause and nothing cached;
- kill -9 in the middle of a download leaves no half environment: the next run sweeps it;
- an unreachable index is reported as such.
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
FAKES = os.path.join(REPO, "tests", "fakes")
sys.path.insert(0, FAKES)
from fake_process import RunningFake  # noqa: E402

FARM_PROVISION = os.environ.get("FARM_PROVISION",
                                os.path.join(REPO, "build", "worker", "farm-provision"))
CUDA = os.environ.get("CUDA_HOME", "/usr/local/cuda")
TORCH_128 = "torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl"
HOST_PYTHON = "/usr/bin/python3"


def make(*args):
    out = subprocess.run([sys.executable, os.path.join(FAKES, "upstream_data.py"), *args],
                         check=True, capture_output=True, text=True, timeout=900)
    return json.loads(out.stdout)


def host_python_version():
    return subprocess.run([HOST_PYTHON, "-c", "import platform; print(platform.python_version())"],
                          check=True, capture_output=True, text=True).stdout.strip()


def serve_index_and_python(work, data):
    """Makes both torch stand-ins (cp311) with Debian's pip and setuptools, each on its
    per-CUDA index (/whl/cu128/, /whl/cu130/), cu130's test channel (/whl/test/cu130/, no
    torch yet), and a CPython archive of this machine's interpreter; starts their fakes.
    Returns the archive's summary and the fakes."""
    for label, version in (("cu128", "2.8.0+cu128"), ("cu130", "2.9.0+cu130")):
        make("torch-wheels", "--out", os.path.join(data, label), "--version", version,
             "--python-tag", "cp311")
        make("host-wheels", "--out", os.path.join(data, label))
    # cu130's test channel, where release candidates appear: no torch yet, its other wheels.
    make("host-wheels", "--out", os.path.join(data, "test-cu130"))
    python = make("cpython", "--out", os.path.join(data, "python"), "--python", HOST_PYTHON)
    return python, {
        "index": RunningFake("fake_pyindex.py",
                             ["--index", "/whl/cu128=" + os.path.join(data, "cu128"),
                              "--index", "/whl/cu130=" + os.path.join(data, "cu130"),
                              "--index", "/whl/test/cu130=" + os.path.join(data, "test-cu130")],
                             work, "index"),
        "python": RunningFake("fake_redist.py", ["--root", os.path.join(data, "python")],
                              work, "python"),
    }


@pytest.fixture(scope="module")
def upstreams():
    if not os.path.isdir(os.path.join(CUDA, "dist-info")):
        pytest.skip("no CUDA toolkit laid out from NVIDIA's wheels at %s to make redist "
                    "archives from" % CUDA)
    if not os.path.exists(FARM_PROVISION):
        pytest.skip("farm-provision is not built (%s)" % FARM_PROVISION)
    work = tempfile.mkdtemp(prefix="provision-upstreams-")
    data = os.path.join(work, "data")
    python, fakes = serve_index_and_python(work, data)
    redist = make("redist", "--cuda", CUDA, "--out", os.path.join(data, "redist"),
                  "--components", "cuda_nvcc,cuda_crt,libnvvm,cuda_cudart")
    fakes["redist"] = RunningFake("fake_redist.py", ["--root", os.path.join(data, "redist")],
                                  work, "redist")
    yield {"work": work, "python_archive": python, "redist_data": redist, **fakes}
    for fake in fakes.values():
        fake.stop()
    shutil.rmtree(work, ignore_errors=True)


def provision_args(up, cache, job, torch="2.8.0+cu128", host_python=False, cuda="13.0",
                   index=None, lock=None):
    release, variant = torch.split("+")
    args = [FARM_PROVISION, "--cache", cache, "--job-dir", job, "--python", "3.11",
            "--glibc", "2.36", "--redist", up["redist"].url + "/",
            "--python-release", up["python"].url + "/"]
    if lock:
        args += ["--lock", lock]
    else:
        args += ["--resolve", "torch==" + release, "--index-name", variant,
                 "--index", "%s/whl/%s/" % (index or up["index"].url, variant)]
    for c in ("cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cudart"):
        args += ["--redist-component", c]
    if cuda:
        args += ["--cuda", cuda]
    if host_python:
        args += ["--host-python", "%s=%s" % (host_python_version(), HOST_PYTHON)]
    return args


def run_provision(args, timeout=600):
    os.makedirs(args[args.index("--job-dir") + 1], exist_ok=True)
    start = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.monotonic() - start
    result["stderr"] = proc.stderr
    result["exit"] = proc.returncode
    return result


def counters(up):
    return {name: up[name].counters() for name in ("index", "redist", "python")}


def entries(cache, kind):
    return sorted(os.listdir(os.path.join(cache, kind)))


def test_provisions_from_nothing_then_clones_without_network(upstreams, tmp_path):
    up = upstreams
    for name in ("index", "redist", "python"):
        up[name].control("reset", {})
    cache = str(tmp_path / "cache")
    first = run_provision(provision_args(up, cache, str(tmp_path / "job1")))
    assert first["exit"] == 0 and first["ok"], first
    assert first["python_from_archive"] and first["toolkit_from_redist"] and first["snapshot_built"]
    out = subprocess.run([first["python"], "-c", "import platform, torch; print(torch.__version__,"
                          " torch.version.cuda, platform.python_version())"],
                         check=True, capture_output=True, text=True).stdout.split()
    assert out == ["2.8.0+cu128", "12.8", up["python_archive"]["version"]]
    # The venv's interpreter is the archive's, unpacked in the cache, not the host's.
    assert os.path.realpath(first["base_python"]).startswith(cache)
    kernel = tmp_path / "k.cu"
    kernel.write_text("__global__ void twice(float* x) { x[threadIdx.x] *= 2; }\n")
    subprocess.run([os.path.join(first["cuda_home"], "bin", "nvcc"), "-c", "-gencode",
                    "arch=compute_90a,code=sm_90a", "-o", str(tmp_path / "k.o"), str(kernel)],
                   check=True, timeout=300)
    assert "in a sandbox" in first["confinement"] or os.geteuid() != 0, first["confinement"]
    fetched = counters(up)
    assert fetched["index"]["file:" + TORCH_128] == 1
    assert "file:pip-23.0.1-py3-none-any.whl" not in fetched["index"]  # the farm's own pip
    for component in up["redist_data"]["components"].values():
        assert fetched["redist"]["file:" + component["relative_path"]] == 1
    assert fetched["python"]["file:" + up["python_archive"]["name"]] == 1

    # The second job in that environment installs the same lock: not one request.
    lock = str(tmp_path / "pylock.toml")
    assert run_provision(provision_args(up, cache, str(tmp_path / "jobx")) +
                         ["--save-lock", lock])["ok"]
    fetched = counters(up)
    second = run_provision(provision_args(up, cache, str(tmp_path / "job2"), lock=lock))
    assert second["ok"] and not second["snapshot_built"] and second["key"] == first["key"]
    assert counters(up) == fetched
    out = subprocess.run([second["python"], "-c", "import sys, torch; print(sys.prefix)"],
                         check=True, capture_output=True, text=True).stdout.strip()
    assert out == str(tmp_path / "job2" / "venv")
    print("first: %.1f s (python %d ms, toolkit %d ms, snapshot %d ms); cached: %.2f s "
          "(clone %d ms)" % (first["wall_s"], first["python_ms"], first["toolkit_ms"],
                             first["snapshot_ms"], second["wall_s"], second["clone_ms"]))


def test_other_torch_variant_on_host_python(upstreams, tmp_path):
    up = upstreams
    result = run_provision(provision_args(up, str(tmp_path / "cache"), str(tmp_path / "job"),
                                          torch="2.9.0+cu130", host_python=True, cuda=""))
    assert result["ok"], result
    assert not result["python_from_archive"] and result["base_python"] == HOST_PYTHON
    assert result["cuda_home"] == ""
    out = subprocess.run([result["python"], "-c", "import torch; print(torch.__version__)"],
                         check=True, capture_output=True, text=True).stdout.strip()
    assert out == "2.9.0+cu130"


def test_corrupt_upstream_file_is_refused_and_nothing_cached(upstreams, tmp_path):
    up = upstreams
    cache = str(tmp_path / "cache")
    # The lock names the file's digest; the bytes the index then serves do not match it.
    lock = str(tmp_path / "pylock.toml")
    assert run_provision(provision_args(up, str(tmp_path / "other"), str(tmp_path / "job0"),
                                        host_python=True, cuda="") + ["--save-lock", lock])["ok"]
    up["index"].control("corrupt", {"file": TORCH_128})
    try:
        bad = run_provision(provision_args(up, cache, str(tmp_path / "job1"), host_python=True,
                                           cuda="", lock=lock))
    finally:
        up["index"].control("corrupt", {"file": TORCH_128, "on": False})
    assert bad["exit"] == 3 and not bad["ok"]
    assert bad["cause"] == "checksum-mismatch"
    assert "checksum mismatch for " + TORCH_128 in bad["error"] and "nothing cached" in bad["error"]
    assert entries(cache, "envs") == []
    listed = json.loads(subprocess.run(
        ["curl", "-s", "-H", "Accept: application/vnd.pypi.simple.v1+json",
         up["index"].url + "/whl/cu128/torch/"], check=True, capture_output=True).stdout)
    torch_sha = next(f["hashes"]["sha256"] for f in listed["files"] if f["filename"] == TORCH_128)
    assert torch_sha not in entries(cache, "downloads")
    assert os.listdir(os.path.join(cache, "tmp")) == []
    assert not os.path.exists(tmp_path / "job1" / "venv")
    good = run_provision(provision_args(up, cache, str(tmp_path / "job2"), host_python=True,
                                        cuda="", lock=lock))
    assert good["ok"], good
    assert torch_sha in entries(cache, "downloads")


def test_kill_9_mid_download_leaves_no_half_environment(upstreams, tmp_path):
    up = upstreams
    cache = str(tmp_path / "cache")
    name = up["python_archive"]["name"]
    up["python"].control("throttle", {"file": name, "bytes_per_second": 1 << 20})
    args = provision_args(up, cache, str(tmp_path / "job1"), cuda="")
    os.makedirs(tmp_path / "job1")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        partial = []
        while time.monotonic() < deadline and not partial:
            partial = [p for p in glob.glob(os.path.join(cache, "tmp", "downloads-*", "blob"))
                       if os.path.getsize(p) > 0]
            time.sleep(0.1)
        assert partial, "the download never started"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        up["python"].control("throttle", {"file": name, "bytes_per_second": 0})
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    for kind in ("downloads", "python", "envs"):
        assert entries(cache, kind) == [], kind  # nothing half-made is in place
    assert os.listdir(os.path.join(cache, "tmp")) != []  # only a leftover, under tmp/
    again = run_provision(provision_args(up, cache, str(tmp_path / "job2"), cuda=""))
    assert again["ok"], again
    assert os.listdir(os.path.join(cache, "tmp")) == []  # swept at start, cleaned after
    assert len(entries(cache, "python")) == 1 and len(entries(cache, "envs")) == 1


def test_unreachable_index_is_named(upstreams, tmp_path):
    closed = subprocess.run([sys.executable, "-c", "import socket; s = socket.socket(); "
                             "s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"],
                            check=True, capture_output=True, text=True).stdout.strip()
    result = run_provision(provision_args(upstreams, str(tmp_path / "cache"), str(tmp_path / "j"),
                                          host_python=True, cuda="",
                                          index="http://127.0.0.1:" + closed))
    assert result["exit"] == 3 and result["cause"] == "upstream-unreachable", result
    assert result["stage"] == "lock" and "could not be read" in result["error"], result
