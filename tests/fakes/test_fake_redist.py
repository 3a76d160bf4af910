"""The redist fake serves NVIDIA's layout (listing, manifest, archives whose sha256, md5 and
size the manifest states), refuses paths that leave its folder, and counts each fetch; the
relocatable CPython archive made from this machine's interpreter runs from anywhere and
makes virtual environments."""

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_process import RunningFake, get  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CUDA = os.environ.get("CUDA_HOME", "/usr/local/cuda")


def make(*args):
    out = subprocess.run([sys.executable, os.path.join(HERE, "upstream_data.py"), *args],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def redist():
    if not os.path.isdir(os.path.join(CUDA, "dist-info")):
        pytest.skip("no CUDA toolkit laid out from NVIDIA's wheels at %s" % CUDA)
    work = tempfile.mkdtemp(prefix="fake-redist-")
    # The two smallest components: the protocol, not the toolkit, is under test here.
    made = make("redist", "--cuda", CUDA, "--out", os.path.join(work, "redist"),
                "--components", "cuda_crt,cuda_cudart")
    fake = RunningFake("fake_redist.py", ["--root", os.path.join(work, "redist")], work, "redist")
    fake.made = made
    fake.work = work
    yield fake
    fake.stop()


def test_manifest_and_archives_match(redist):
    label = redist.made["label"]
    status, _, listing = get(redist.url + "/")
    assert status == 200
    assert ('href="redistrib_%s.json"' % label) in listing.decode()
    assert 'href="cuda_crt/"' in listing.decode()
    status, headers, body = get(redist.url + "/redistrib_%s.json" % label)
    assert status == 200 and headers["Content-Type"] == "application/json"
    manifest = json.loads(body)
    assert manifest["release_label"] == label
    for component in ("cuda_crt", "cuda_cudart"):
        entry = manifest[component]
        assert entry["version"] and entry["name"]
        plat = entry["linux-x86_64"]
        assert isinstance(plat["size"], str)  # NVIDIA writes sizes as strings
        status, _, archive = get(redist.url + "/" + plat["relative_path"])
        assert status == 200
        assert hashlib.sha256(archive).hexdigest() == plat["sha256"]
        assert hashlib.md5(archive).hexdigest() == plat["md5"]
        assert len(archive) == int(plat["size"])
        path = os.path.join(redist.work, "a.tar.xz")
        with open(path, "wb") as f:
            f.write(archive)
        with tarfile.open(path) as tar:
            tops = {m.name.split("/")[0] for m in tar.getmembers()}
        assert tops == {"%s-linux-x86_64-%s-archive" % (component, entry["version"])}
    status, _, sub = get(redist.url + "/cuda_crt/linux-x86_64/")
    assert status == 200 and b"-archive.tar.xz" in sub


def test_refuses_paths_outside_and_counts(redist):
    redist.control("reset", {})
    for path in ("/../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/cuda_crt/../../x",
                 "/cuda_crt//x", "/nope.json", "/redistrib_%s.json/" % redist.made["label"]):
        assert get(redist.url + path)[0] == 404, path
    status, _, _ = get(redist.url + "/redistrib_%s.json" % redist.made["label"])
    rel = redist.made["components"]["cuda_crt"]["relative_path"]
    get(redist.url + "/" + rel)
    counters = redist.counters()
    assert counters["file:" + rel] == 1
    assert counters["file:redistrib_%s.json" % redist.made["label"]] == 1


def test_cpython_archive_is_relocatable(tmp_path):
    made = make("cpython", "--out", str(tmp_path / "py"))
    host = subprocess.run(["/usr/bin/python3", "-c", "import platform; "
                           "print(platform.python_version())"],
                          check=True, capture_output=True, text=True).stdout.strip()
    assert made["version"] == host  # named with the interpreter's true version
    assert made["name"] == "cpython-%s+local-x86_64-unknown-linux-gnu-install_only.tar.gz" % host
    sums = (tmp_path / "py" / "SHA256SUMS").read_text()
    assert "%s  %s" % (made["sha256"], made["name"]) in sums
    with tarfile.open(made["archive"]) as tar:
        names = tar.getnames()
        tar.extractall(tmp_path / "root")
    short = ".".join(host.split(".")[:2])
    assert "python/bin/python" + short in names
    assert "python/include/python%s/Python.h" % short in names
    assert not any("/test/" in n or "__pycache__" in n for n in names)
    python = tmp_path / "root" / "python" / "bin" / "python3"
    out = subprocess.run([str(python), "-c", "import sys, sysconfig, ssl, sqlite3, ctypes; "
                          "print(sys.prefix); print(sysconfig.get_paths()['include'])"],
                         check=True, capture_output=True, text=True).stdout.split()
    assert out == [str(tmp_path / "root" / "python"),
                   str(tmp_path / "root" / "python" / "include" / ("python" + short))]
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(tmp_path / "venv")],
                   check=True)
    prefix = subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-c",
                             "import sys; print(sys.prefix, sys.base_prefix)"],
                            check=True, capture_output=True, text=True).stdout.split()
    assert prefix == [str(tmp_path / "venv"), str(tmp_path / "root" / "python")]
