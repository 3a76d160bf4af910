"""The real pip installs from the dashboard's package index and picks the right variant.

Wheels of a small package are built with the real `pip wheel` (one per variant, plus a
newer one whose validation failed and must never be offered), registered as artifacts of
succeeded jobs by dashboard_fixture, and installed into fresh venvs with only the farm's
index reachable.
"""
import json
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request

import pytest

from farm_harness import PYTHON, venv

SETUP_PY = """from setuptools import setup
setup(name="attn-example", version="{version}", packages=["attn_example"],
      python_requires=">=3.8")
"""


def _clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


def _build_wheel(root, version, variant):
    src = os.path.join(root, "src-" + variant + "-" + version)
    os.makedirs(os.path.join(src, "attn_example"))
    with open(os.path.join(src, "setup.py"), "w") as f:
        f.write(SETUP_PY.format(version=version))
    with open(os.path.join(src, "attn_example", "__init__.py"), "w") as f:
        f.write(f"VARIANT = {variant!r}\n")
    dist = os.path.join(root, "dist")
    r = subprocess.run([PYTHON, "-m", "pip", "wheel", ".", "--no-build-isolation", "--no-deps",
                        "--no-index", "-w", dist], cwd=src, capture_output=True, text=True,
                       timeout=300, env=_clean_env())
    assert r.returncode == 0, r.stderr
    name = f"attn_example-{version}-py3-none-any.whl"
    assert os.path.exists(os.path.join(dist, name)), os.listdir(dist)
    return os.path.join(dist, name)


def _pip_install(python, url, requirement):
    """The venv's own pip (of `python`) installs `requirement` from `url` only; returns (rc,
    its output)."""
    r = subprocess.run([os.path.join(os.path.dirname(python), "pip"), "install",
                        "--no-cache-dir", "--index-url", url, requirement], capture_output=True,
                       text=True, timeout=300, env=_clean_env())
    return r.returncode, r.stdout + r.stderr


def _install(root, url, name):
    python = venv(root, name)
    rc, out = _pip_install(python, url, "attn-example")
    assert rc == 0, out
    out = subprocess.run([python, "-c",
                          "import attn_example, importlib.metadata as m;"
                          "print(attn_example.VARIANT, m.version('attn-example'))"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_pip_installs_the_variant_it_is_pointed_at(farm):
    if not shutil.which("pip", path="/usr/bin") and subprocess.run(
            [PYTHON, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        pytest.skip("Debian's python3-pip is not installed")
    cu130 = _build_wheel(farm.root, "0.1.0+cu130", "cu130")
    cu128 = _build_wheel(farm.root, "0.1.0+cu128torch2.8", "cu128-torch2.8")
    failed = _build_wheel(farm.root, "0.2.0+cu130", "failed")
    base = "http://" + farm.start_dashboard_fixture(
        "--wheel", f"{cu130},13.0,,passed", "--wheel", f"{cu128},12.8,2.8,passed",
        "--wheel", f"{failed},13.0,,failed")

    # The JSON view pip reads: one file per variant, hashes and metadata announced.
    req = urllib.request.Request(base + "/cu130/simple/attn-example/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        page = json.load(resp)
    assert [f["filename"] for f in page["files"]] == [os.path.basename(cu130)]
    assert page["files"][0]["requires-python"] == ">=3.8"
    assert "sha256" in page["files"][0]["core-metadata"]

    assert _install(farm.root, base + "/cu130/simple/", "cu130") == ["cu130", "0.1.0+cu130"]
    assert _install(farm.root, base + "/cu128-torch2.8/simple/", "cu128") == [
        "cu128-torch2.8", "0.1.0+cu128torch2.8"]


def _pip(root, url, requirement):
    """Runs the real pip of a fresh venv against `url` only; returns (rc, its output)."""
    return _pip_install(venv(root, str(len(os.listdir(root)))), url, requirement)


def test_pip_users_read_why_their_gpu_has_no_wheel(farm):
    """A GPU view without a wheel of the project: pip prints the farm's reason (the reason
    phrase of the placeholder file's 404), a browser gets an HTML page, and the views that
    have the wheel install as before."""
    wheel = _build_wheel(farm.root, "0.1.0+cu130", "cu130")
    base = "http://" + farm.start_dashboard_fixture("--wheel", f"{wheel},13.0,,passed,sm_90")
    why = "no wheel of attn-example in cu130 runs on compute capability 10.0 (B200"
    rc, out = _pip(farm.root, base + "/cu130/sm100/simple/", "attn-example")
    assert rc == 1, out
    assert why in out and "built for: sm90" in out, out
    # Pinned to a real version: pip's own line names the placeholder, which says it too.
    rc, out = _pip(farm.root, base + "/cu130/sm100/simple/", "attn-example==0.1.0")
    assert rc == 1 and "from versions: 0+no.wheel.for.sm100" in out, out
    # A project the variant does not have at all gets no placeholder.
    rc, out = _pip(farm.root, base + "/cu130/sm100/simple/", "other-project")
    assert rc == 1 and "from versions: none" in out, out
    # The view of the GPU the wheel was built for installs it.
    assert _install(farm.root, base + "/cu130/sm90/simple/", "sm90") == ["cu130", "0.1.0+cu130"]

    # A browser asking the same page gets the explanation as HTML, still a 404.
    req = urllib.request.Request(base + "/cu130/sm100/simple/attn-example/", headers={
        "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 404
    assert err.value.headers["Content-Type"].startswith("text/html")
    body = err.value.read().decode()
    assert "<html>" in body and why in body and '{"error"' not in body, body
    # The placeholder file itself never serves bytes.
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(base + "/files/no-wheel/cu130/sm100/"
                               "attn_example-0+no.wheel.for.sm100-py3-none-any.whl", timeout=10)
    assert err.value.code == 404 and why in err.value.reason, err.value.reason


def test_the_install_script_says_it_plainly_and_uses_the_view_only(farm):
    wheel = _build_wheel(farm.root, "0.1.0+cu130", "cu130")
    base = "http://" + farm.start_dashboard_fixture("--wheel", f"{wheel},13.0,,passed,sm_90")
    with urllib.request.urlopen(base + "/install", timeout=10) as r:
        script = r.read().decode()
    python = venv(farm.root, "script")

    def run(cc, *args):
        env = dict(_clean_env(), FARM_INSTALL_GPU_CC=cc)
        env.pop("FARM_INSTALL_DRIVER_CUDA", None)
        return subprocess.run([python, "-", "attn-example", "--farm", base, *args], input=script,
                              capture_output=True, text=True, timeout=300, env=env)

    r = run("9.0", "--dry-run")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "GPU (given by FARM_INSTALL_GPU_CC) (compute capability 9.0)" in out, out
    assert "GPU GPU" not in out and "CUDA ?" not in out, out
    assert "the driver's CUDA version is unknown" in out, out
    # pip installs the very file whose signed provenance the script verified.
    assert "verified: the farm's key signed the build of " \
           "attn_example-0.1.0+cu130-py3-none-any.whl" in out, out
    # No torch here, so pip may not bring one in either (the "torch<0" constraint).
    assert re.search(re.escape(f"would run (--dry-run): {python} -m pip install --index-url "
                               f"{base}/cu130/sm90/simple/ --constraint ") +
                     r"/\S+/torch-constraint\.txt " +
                     r"/\S+/attn_example-0\.1\.0\+cu130-py3-none-any\.whl\n", out), out
    assert "running:" not in out and "--extra-index-url" not in out, out
    r = run("9.0", "--with-pypi", "--dry-run")
    assert "--extra-index-url https://pypi.org/simple/" in r.stdout, r.stdout

    # Installs from the view alone: pip never asks PyPI.
    r = run("9.0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "pypi.org" not in r.stdout + r.stderr and "Retrying" not in r.stdout + r.stderr

    r = run("12.1", "--dry-run")
    assert r.returncode == 1, r.stdout
    assert "--arch-list 12.1a (the recipe's matrix must list Python" in r.stdout, r.stdout
