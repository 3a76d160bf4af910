"""repack_installed.py turns installed distributions back into wheels that real pip installs:
a C extension, a package it requires, a script, a data file and a console script are
installed with pip into a venv, repacked from their RECORD files, served by the index fake
and installed with pip into a clean venv, where the extension imports and every file is
byte for byte the original; pip itself, repacked from the venv, installs itself. Files
changed after install and RECORD rows outside the prefix are refused, and so are Debian's
distributions whose files were changed after their RECORD was written."""

import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fake_process import RunningFake  # noqa: E402

PYTHON = "/usr/bin/python3"
REPACK = os.path.join(HERE, "repack_installed.py")
EXT_SOURCE = r"""
#include <Python.h>
static PyObject* add(PyObject* self, PyObject* args) {
  long a, b;
  if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
  return PyLong_FromLong(a + b);
}
static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "a + b"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speed", NULL, -1, methods};
PyMODINIT_FUNC PyInit__speed(void) { return PyModule_Create(&module); }
"""


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(out, name, version, tag, files, metadata_extra="", entry_points=""):
    """A wheel as a build backend writes one: files {arcname: (bytes, mode)}."""
    info = "%s-%s.dist-info" % (name, version)
    files = dict(files)
    files[info + "/METADATA"] = (("Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s\n"
                                  % (name, version, metadata_extra)).encode(), 0o644)
    files[info + "/WHEEL"] = (("Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: %s\n"
                               "Tag: %s\n" % ("true" if tag.endswith("none-any") else "false",
                                              tag)).encode(), 0o644)
    if entry_points:
        files[info + "/entry_points.txt"] = (entry_points.encode(), 0o644)
    rows = [[a, record_hash(d), str(len(d))] for a, (d, _) in files.items()]
    rows.append([info + "/RECORD", "", ""])
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    files[info + "/RECORD"] = (text.getvalue().encode(), 0o644)
    path = os.path.join(out, "%s-%s-%s.whl" % (name, version, tag))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, (data, mode) in files.items():
            zi = zipfile.ZipInfo(arc, (2026, 1, 1, 0, 0, 0))
            zi.external_attr = (0o100000 | mode) << 16
            z.writestr(zi, data)
    return path


def venv(path, pip=True):
    r = run([PYTHON, "-m", "venv", path] + ([] if pip else ["--without-pip"]))
    if r.returncode != 0:
        pytest.skip("python3 -m venv failed (python3-venv missing?): " + r.stderr)
    return os.path.join(path, "bin", "python")


def demo_wheels(out):
    """demo (a C extension built here with gcc, a script, a data file, a console script;
    requires demo-dep[fast]), demo-dep (pure Python; its extra "fast" requires demo-extra)
    and demo-extra."""
    include = sysconfig.get_paths()["include"]
    if not shutil.which("gcc") or not os.path.exists(os.path.join(include, "Python.h")):
        pytest.skip("no gcc or no Python.h (python3-dev) to build a C extension with")
    src = os.path.join(out, "speed.c")
    with open(src, "w") as f:
        f.write(EXT_SOURCE)
    so = os.path.join(out, "speed.so")
    r = run(["gcc", "-shared", "-fPIC", "-O2", "-I" + include, src, "-o", so])
    assert r.returncode == 0, r.stderr
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    tag = "cp%d%d" % sys.version_info[:2]
    with open(so, "rb") as f:
        ext = f.read()
    init = b"from demo import _speed\n\ndef main():\n    print('demo', _speed.add(40, 2))\n"
    data = "demo-1.0.data"
    demo = write_wheel(out, "demo", "1.0", "%s-%s-linux_x86_64" % (tag, tag), {
        "demo/__init__.py": (init, 0o644),
        "demo/_speed" + suffix: (ext, 0o755),
        data + "/scripts/demo-tool": (b"#!python\nimport demo\ndemo.main()\n", 0o755),
        data + "/data/share/demo/notes.txt": (b"notes\n", 0o644),
    }, "Requires-Dist: demo-dep[fast]==2.0\nRequires-Dist: absent-extra; extra == \"x\"\n",
        "[console_scripts]\ndemo-run = demo:main\n")
    dep = write_wheel(out, "demo_dep", "2.0", "py3-none-any",
                      {"demo_dep/__init__.py": (b"VALUE = 2\n", 0o644)},
                      "Provides-Extra: fast\nProvides-Extra: slow\n"
                      "Requires-Dist: demo-extra==1.0; extra == 'fast'\n"
                      "Requires-Dist: never-there; python_version >= '3' and extra == \"slow\"\n")
    extra = write_wheel(out, "demo_extra", "1.0", "py3-none-any",
                        {"demo_extra/__init__.py": (b"", 0o644)})
    return demo, dep, extra


def repack(python, out, *args):
    r = run([python, REPACK, "--out", out, *args])
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else r.stderr


def installed_hashes(python, name):
    """{path: hash} of an installed distribution's RECORD, without what installers write
    (INSTALLER, RECORD, REQUESTED, direct_url.json, and the scripts in bin/, whose first line
    names the venv's own interpreter)."""
    code = ("import json, sys; from importlib import metadata; d = metadata.distribution(sys.argv[1]);"
            "print(json.dumps({str(f): f.hash.value for f in d.files if f.hash}))")
    r = run([python, "-c", code, name])
    assert r.returncode == 0, r.stderr
    return {p: h for p, h in json.loads(r.stdout).items()
            if not p.startswith("../../../bin/") and
            not p.endswith(("/INSTALLER", "/RECORD", "/REQUESTED", "/direct_url.json"))}


def venv_with_demo(work):
    """A venv (`work`/src) into which pip installed the demo wheels; its python."""
    wheels = os.path.join(work, "built")
    os.makedirs(wheels)
    demo = demo_wheels(wheels)[0]
    src = venv(os.path.join(work, "src"))
    r = run([src, "-m", "pip", "install", "--no-index", "--find-links", wheels, demo])
    assert r.returncode == 0, r.stdout + r.stderr
    return src


@pytest.fixture
def work():
    path = tempfile.mkdtemp(prefix="repack-installed-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_repacked_distributions_install_with_pip_and_are_the_same_bytes(work):
    src = venv_with_demo(work)

    house = os.path.join(work, "house")
    code, summary = repack(src, house, "--closure", "demo")
    assert code == 0, summary
    assert sorted(w["file"] for w in summary["wheels"]) == [
        "demo-1.0-%s-%s-linux_x86_64.whl" % (("cp%d%d" % sys.version_info[:2],) * 2),
        "demo_dep-2.0-py3-none-any.whl", "demo_extra-1.0-py3-none-any.whl"], summary
    assert summary["refused"] == [] and summary["missing"] == [], summary
    [demo_info] = [w for w in summary["wheels"] if w["name"] == "demo"]
    with zipfile.ZipFile(os.path.join(house, demo_info["file"])) as z:
        names = z.namelist()
        assert "demo-1.0.data/scripts/demo-tool" in names, names
        assert "demo-1.0.data/data/share/demo/notes.txt" in names, names
        assert not [n for n in names if n.endswith(("demo-run", "INSTALLER", "REQUESTED", ".pyc",
                                                    "direct_url.json"))], names
        assert names[-1] == "demo-1.0.dist-info/RECORD", names
        assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
        ext = [i for i in z.infolist() if i.filename.startswith("demo/_speed")][0]
        assert (ext.external_attr >> 16) & 0o111, oct(ext.external_attr >> 16)

    # A second repack makes the same bytes.
    code, again = repack(src, os.path.join(work, "again"), "--closure", "demo")
    assert code == 0 and [w["sha256"] for w in again["wheels"]] == \
        [w["sha256"] for w in summary["wheels"]], again

    index = RunningFake("fake_pyindex.py", ["--index", "/whl/cu130=" + house], work, "index")
    try:
        dst = venv(os.path.join(work, "dst"))
        r = run([dst, "-m", "pip", "install", "--index-url", index.url + "/whl/cu130/", "demo"])
        assert r.returncode == 0, r.stdout + r.stderr
        counters = index.counters()
    finally:
        index.stop()
    assert "Successfully installed demo-1.0 demo-dep-2.0 demo-extra-1.0" in r.stdout, r.stdout
    assert counters.get("file:" + demo_info["file"]) == 1, counters
    r = run([dst, "-c", "import demo, demo_dep; print(demo._speed.add(2, 3), demo_dep.VALUE)"])
    assert r.stdout.strip() == "5 2", r.stdout + r.stderr
    bindir = os.path.dirname(dst)
    assert run([os.path.join(bindir, "demo-run")]).stdout.strip() == "demo 42"
    assert run([os.path.join(bindir, "demo-tool")]).stdout.strip() == "demo 42"
    with open(os.path.join(work, "dst", "share", "demo", "notes.txt")) as f:
        assert f.read() == "notes\n"
    for name in ("demo", "demo-dep", "demo-extra"):
        before, after = installed_hashes(src, name), installed_hashes(dst, name)
        assert before == after and len(before) >= 3, (before, after)


def test_repacked_pip_installs_itself(work):
    src = venv(os.path.join(work, "src"))
    house = os.path.join(work, "house")
    code, summary = repack(src, house)  # every distribution of the venv: pip and setuptools
    assert code == 0, summary
    [pip_wheel] = [w["file"] for w in summary["wheels"] if w["name"] == "pip"]
    assert summary["total_files"] == sum(w["files"] for w in summary["wheels"]) > 500, summary
    bare = venv(os.path.join(work, "bare"), pip=False)
    wheel = os.path.join(house, pip_wheel)
    r = run([bare, wheel + "/pip", "install", "--no-index", wheel])
    assert r.returncode == 0, r.stdout + r.stderr
    r = run([bare, "-m", "pip", "--version"])
    assert r.returncode == 0 and os.path.join(work, "bare") in r.stdout, r.stdout + r.stderr
    assert installed_hashes(bare, "pip") == installed_hashes(src, "pip")


def test_changed_files_and_hostile_records_are_refused(work):
    src = venv_with_demo(work)
    site = run([src, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()

    with open(os.path.join(site, "demo_dep", "__init__.py"), "a") as f:
        f.write("VALUE = 3\n")
    code, summary = repack(src, os.path.join(work, "h1"), "--closure", "demo")
    assert code == 1, summary
    assert summary["refused"] == [{"name": "demo-dep", "reason": os.path.join(
        site, "demo_dep", "__init__.py") + ": 20 bytes, RECORD says 10 (modified after install)"}]
    assert [w["name"] for w in summary["wheels"]] == ["demo", "demo_extra"], summary
    assert sorted(os.listdir(os.path.join(work, "h1"))) == [w["file"] for w in summary["wheels"]]

    record = os.path.join(site, "demo-1.0.dist-info", "RECORD")
    with open(record) as f:
        original = f.read()
    secret = b"root:x:0:0::/root:/bin/sh\n"
    for row, why in (("../../../../../../../../etc/passwd", "outside"),
                     ("/etc/passwd", "not a relative path")):
        with open(record, "w") as f:
            f.write(original + "%s,%s,%d\n" % (row, record_hash(secret), len(secret)))
        code, summary = repack(src, os.path.join(work, "h2"), "--closure", "demo")
        assert code == 1, summary
        [refused] = [x for x in summary["refused"] if x["name"] == "demo"]
        assert why in refused["reason"] and row in refused["reason"], refused
    assert not [n for n in os.listdir(os.path.join(work, "h2")) if n.startswith("demo-")]


def test_debian_distributions_changed_after_their_record_are_refused(work):
    site = "/usr/lib/python3/dist-packages"
    if not os.path.isdir(os.path.join(site, "PyYAML-6.0.dist-info")):
        pytest.skip("Debian's python3-yaml 6.0 is not installed")
    code, summary = repack(PYTHON, work, "--site", site, "--closure", "PyYAML")
    assert code == 1, summary
    [refused] = summary["refused"]
    # Debian strips the extension after the wheel's RECORD was written.
    assert refused["name"] == "pyyaml" and "_yaml.cpython" in refused["reason"], refused
    assert "modified after install" in refused["reason"], refused
    assert os.listdir(work) == []
