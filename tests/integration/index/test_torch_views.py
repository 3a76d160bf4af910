"""Torch views and the install script, with the real pip into clean venvs that hold real
`torch` stand-in wheels (tests/fakes/upstream_data.py: 2.8.0+cu128, 2.10.0+cu128).

The index is farmd's HTTP index code over a real store (dashboard_fixture registers the
wheels as artifacts of succeeded, signed jobs); then the same index exported with the
real `farmctl export-index` and served by `python3 -m http.server`. Wheels: pinned-pkg
built against torch 2.8 and 2.9 (Requires-Dist torch==2.8.* / torch==2.9.*) and
stable-pkg, a stable-ABI-style wheel requiring torch>=2.9, all for sm_90 with CUDA 12.8.
"""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

import farm_harness
from farm_harness import FARMCTL, wait_until

FAKES = os.path.join(farm_harness.REPO, "tests", "fakes")
PYTHON = "/usr/bin/python3"
SETUP_PY = """from setuptools import setup
setup(name={name!r}, version={version!r}, packages=[{package!r}], install_requires=[{req!r}])
"""


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "FARM_INSTALL"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    env.update(extra)
    return env


def run(argv, **kw):
    kw.setdefault("env", clean_env())
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)


def build_wheel(root, name, version, requirement):
    package = name.replace("-", "_")
    src = os.path.join(root, "src-" + package + "-" + version)
    os.makedirs(os.path.join(src, package))
    with open(os.path.join(src, "setup.py"), "w") as f:
        f.write(SETUP_PY.format(name=name, version=version, package=package, req=requirement))
    with open(os.path.join(src, package, "__init__.py"), "w") as f:
        f.write("BUILT = %r\n" % version)
    dist = os.path.join(root, "dist")
    r = run([PYTHON, "-m", "pip", "wheel", ".", "--no-build-isolation", "--no-deps", "--no-index",
             "-w", dist], cwd=src)
    assert r.returncode == 0, r.stderr
    path = os.path.join(dist, f"{package}-{version}-py3-none-any.whl")
    assert os.path.exists(path), os.listdir(dist)
    return path


def pip_install(python, index, requirement="pinned-pkg"):
    return run([python, "-m", "pip", "install", "--no-cache-dir", "--index-url", index,
                requirement])


def check_torch_28_view(venvs, view):
    """pip pointed at the torch 2.8 `view` gets the wheel for that torch, and leaves torch
    alone."""
    python = venvs.make("2.8.0+cu128")
    r = pip_install(python, view)
    assert r.returncode == 0, r.stdout + r.stderr
    assert installed(python)["pinned-pkg"] == "0.1.0+cu128torch2.8"
    assert installed(python)["torch"] == "2.8.0+cu128"


class Venvs:
    """Fresh venvs, each with the torch stand-in it is asked for (or none)."""

    def __init__(self, root):
        self.root = root
        self.wheels = os.path.join(root, "torch-wheels")
        tag = "cp%d%d" % sys.version_info[:2]
        r = run([PYTHON, os.path.join(FAKES, "upstream_data.py"), "torch-wheels", "--out",
                 self.wheels, "--python-tag", tag, "--version", "2.8.0+cu128", "--version",
                 "2.10.0+cu128"])
        assert r.returncode == 0, r.stderr

    def make(self, torch):
        path = os.path.join(self.root, "venv-%d" % len(os.listdir(self.root)))
        r = run([PYTHON, "-m", "venv", path])
        if r.returncode != 0:
            pytest.skip(f"python3 -m venv failed (python3-venv missing?): {r.stderr}")
        python = os.path.join(path, "bin", "python")
        if torch:
            r = run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--find-links",
                     self.wheels, "torch==" + torch])
            assert r.returncode == 0, r.stdout + r.stderr
        return python


def installed(python):
    """{distribution: version} of a venv, read as pip would."""
    r = run([python, "-c", "import importlib.metadata as m, json; print(json.dumps("
             "{d.metadata['Name']: d.version for d in m.distributions()}))"])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def install_script(python, script, farm, project, *args):
    return run([python, "-", project, "--farm", farm, *args], input=script,
               env=clean_env(FARM_INSTALL_GPU_CC="9.0"))


@pytest.fixture
def index(farm):
    if run([PYTHON, "-m", "pip", "--version"]).returncode != 0:
        pytest.skip("Debian's python3-pip is not installed")
    wheels = [
        (build_wheel(farm.root, "pinned-pkg", "0.1.0+cu128torch2.8", "torch==2.8.*"), "2.8"),
        (build_wheel(farm.root, "pinned-pkg", "0.1.0+cu128torch2.9", "torch==2.9.*"), "2.9"),
        # A stable-ABI build runs in its group's newest torch (common/recipe/build_plan.cc).
        (build_wheel(farm.root, "stable-pkg", "0.1.0+cu12torch2.9andhigher", "torch>=2.9"), "2.10"),
    ]
    args = []
    for path, torch in wheels:
        args += ["--wheel", f"{path},12.8,{torch},passed,sm_90"]
    base = "http://" + farm.start_dashboard_fixture(*args)
    venvs_root = os.path.join(farm.root, "venvs")
    os.makedirs(venvs_root)
    with urllib.request.urlopen(base + "/install", timeout=10) as r:
        script = r.read().decode()
    return base, Venvs(venvs_root), script


def check_install_script(base, venvs, script):
    """The three cases of the install script against the index at `base`."""
    # torch 2.8: the 2.8 wheel, and torch untouched.
    python = venvs.make("2.8.0+cu128")
    r = install_script(python, script, base, "pinned-pkg")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "torch 2.8.0+cu128 (CUDA 12.8) is installed" in r.stdout, r.stdout
    assert "--constraint" in r.stdout, r.stdout
    after = installed(python)
    assert after["pinned-pkg"] == "0.1.0+cu128torch2.8", after
    assert after["torch"] == "2.8.0+cu128", after

    # torch 2.10: the torch>=2.9 wheel installs; the pinned package has no wheel for it and
    # the script says which torch releases it has, installing nothing.
    python = venvs.make("2.10.0+cu128")
    r = install_script(python, script, base, "stable-pkg")
    assert r.returncode == 0, r.stdout + r.stderr
    assert installed(python)["stable-pkg"] == "0.1.0+cu12torch2.9andhigher"
    before = installed(python)
    r = install_script(python, script, base, "pinned-pkg")
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("missing: no wheel of pinned-pkg installs next to the torch of this Python, torch "
            "2.10.0+cu128 (CUDA 12.8), on compute capability 9.0") in r.stdout, r.stdout
    assert "the farm has wheels of pinned-pkg for torch: 2.8 (cu128), 2.9 (cu128)" in r.stdout, \
        r.stdout
    assert "nothing was installed; torch 2.10.0+cu128 was left as it is" in r.stdout, r.stdout
    assert "running:" not in r.stdout, r.stdout
    assert installed(python) == before

    # No torch: said so, and nothing installed (every wheel of pinned-pkg needs torch).
    python = venvs.make("")
    before = installed(python)
    r = install_script(python, script, base, "pinned-pkg")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "no torch installed in this Python" in r.stdout, r.stdout
    assert "install torch first" in r.stdout, r.stdout
    assert "the farm has wheels of pinned-pkg for torch: 2.8 (cu128), 2.9 (cu128)" in r.stdout
    assert installed(python) == before


def test_torch_views_and_the_install_script_on_the_farms_index(index):
    base, venvs, script = index
    check_torch_28_view(venvs, base + "/cu128/sm90/torch2.8.0/simple/")
    # The torch 2.10 view has no pinned-pkg: pip prints why, and what the farm has.
    python = venvs.make("2.10.0+cu128")
    r = pip_install(python, base + "/cu128/sm90/torch2.10.0/simple/")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "no wheel of pinned-pkg installs next to torch 2.10.0" in r.stdout + r.stderr
    assert installed(python)["torch"] == "2.10.0+cu128"
    # The JSON page says each wheel's requirement.
    req = urllib.request.Request(base + "/cu128/sm90/torch2.10.0/simple/stable-pkg/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        page = json.load(resp)
    assert [f["torch-requirement"] for f in page["files"]] == ["torch>=2.9"], page
    check_install_script(base, venvs, script)


def test_hostile_torch_segments_answer_404_and_the_server_lives_on(index):
    base, _, _ = index
    for path in ["/cu128/sm90/torch../../../etc/passwd/simple/", "/cu128/sm90/torch%2e%2e/simple/",
                 "/cu128/sm90/torch..%2f..%2f/simple/", "/cu128/sm90/torch2.8.0+cu128/simple/",
                 "/cu128/sm90/torch2.8.0%2Bcu128/simple/", "/cu128/sm90/torch" + "9" * 5000 +
                 "/simple/", "/cu128/sm90/torch2.8.0%00/simple/", "/cu128/sm90/torch'%3E%3C/simple/",
                 "/cu999999/sm90/torch2.8.0/simple/pinned-pkg/",
                 "/files/no-wheel/cu128/sm90/torch..%2f/x-0-py3-none-any.whl"]:
        req = urllib.request.Request(base + path,
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.code in (400, 404, 414, 431), (path[:80], err.value.code)
    with urllib.request.urlopen(base + "/cu128/sm90/torch2.8.0/simple/", timeout=10) as resp:
        assert resp.status == 200


def serve_static(farm, directory):
    log = f"static-{len(farm.procs)}.log"
    farm._spawn([sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1",
                 "--directory", directory, "0"], log)
    line = wait_until(lambda: "port " in farm.log(log) and farm.log(log), 30, "http.server")
    return "http://127.0.0.1:%d" % int(line.split("port ")[1].split()[0])


def test_the_static_export_holds_the_torch_views(index, farm):
    base, venvs, _ = index
    site = os.path.join(farm.root, "site")
    r = run([FARMCTL, "--output", "json", "export-index", site, "--from", base])
    assert r.returncode == 0, r.stdout + r.stderr
    for view in ("cu128/sm90/torch2.8/simple/pinned-pkg", "cu128/sm90/torch2.9/simple/pinned-pkg",
                 "cu128/sm90/torch2.10/simple/stable-pkg"):
        assert os.path.exists(os.path.join(site, view, "index.html")), view
        assert os.path.exists(os.path.join(site, view, "index.json")), view
    assert not os.path.exists(os.path.join(site, "cu128/sm90/torch2.10/simple/pinned-pkg"))
    static = serve_static(farm, site)
    with urllib.request.urlopen(static + "/install", timeout=10) as resp:
        script = resp.read().decode()
    # Real pip against the static torch view of torch 2.8.
    check_torch_28_view(venvs, static + "/cu128/sm90/torch2.8/simple/")
    check_install_script(static, venvs, script)
