"""An aarch64 worker for real, under emulation: the cross-built farm-worker and farmctl run
inside an arm64 Debian root (debootstrap) through qemu-user and binfmt_misc, next to the
x86_64 farmd on 127.0.0.1. The worker registers as linux_aarch64 with the root's own
Pythons, takes only the linux_aarch64 cell of a recipe that asks for both CPUs, and builds
a real C-extension wheel there; the worker's clean-room install and import of it run
under emulation, farmd's checks read its .so as an aarch64 ELF, and the wheel installs and
imports again in a fresh venv of the root. The x86_64 cell stays pending with the reason.

Too slow for the test suite (minutes of emulated Python and gcc): tests/bench/
aarch64_emulated.sh makes the root and the cross build and runs this file with
  FARM_AARCH64_ROOT     the arm64 root (made by tests/bench/make_aarch64_root.sh)
  FARM_AARCH64_WORKER   the cross-built farm-worker
  FARM_AARCH64_FARMCTL  the cross-built farmctl
Without them, or without binfmt, it skips and says why."""
import json
import os
import shutil
import struct
import subprocess
import tempfile
import textwrap
import time
import zipfile

import pytest

from farm_harness import wait_until

ROOT = os.environ.get("FARM_AARCH64_ROOT", "")
WORKER = os.environ.get("FARM_AARCH64_WORKER", "")
FARMCTL = os.environ.get("FARM_AARCH64_FARMCTL", "")
EM_AARCH64 = 183


def _why_not():
    if not (ROOT and WORKER and FARMCTL):
        return ("FARM_AARCH64_ROOT, FARM_AARCH64_WORKER and FARM_AARCH64_FARMCTL are not set "
                "(run tests/bench/aarch64_emulated.sh)")
    if os.geteuid() != 0:
        return "running inside the arm64 root needs root (chroot, mounts)"
    entry = "/proc/sys/fs/binfmt_misc/qemu-aarch64"
    if not os.path.exists(entry) or "enabled" not in open(entry).read():
        return "no enabled qemu-aarch64 binfmt entry (tests/bench/binfmt_check.sh says why)"
    for path in (os.path.join(ROOT, "usr/bin/python3"), WORKER, FARMCTL):
        if not os.path.exists(path):
            return f"{path} is missing"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def elf_machine(data):
    """e_machine of an ELF image (little-endian)."""
    assert data[:4] == b"\x7fELF", data[:4]
    return struct.unpack_from("<H", data, 18)[0]


class Arm64Root:
    """A scratch directory inside the arm64 root and commands run there under emulation:
    a private mount namespace gets /proc and /dev, then chroot."""

    def __init__(self):
        self.scratch = tempfile.mkdtemp(prefix="farm-emu-", dir=os.path.join(ROOT, "tmp"))
        self.inside = "/" + os.path.relpath(self.scratch, ROOT)
        bindir = os.path.join(self.scratch, "bin")
        os.makedirs(bindir)
        for binary in (WORKER, FARMCTL):
            shutil.copy(binary, bindir)

    def host_path(self, inside):
        return os.path.join(ROOT, inside.lstrip("/"))

    def argv(self, *argv):
        setup = (f'mount -t proc proc "{ROOT}/proc" && mount --rbind /dev "{ROOT}/dev" && '
                 f'exec chroot "{ROOT}" "$@"')
        return ["unshare", "-m", "--propagation", "private", "sh", "-c", setup, "sh",
                "/usr/bin/env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root",
                "LANG=C.UTF-8", *argv]

    def run(self, *argv, timeout=900):
        return subprocess.run(self.argv(*argv), capture_output=True, text=True, timeout=timeout)

    def close(self):
        shutil.rmtree(self.scratch, ignore_errors=True)


@pytest.fixture
def arm64(request):
    root = Arm64Root()
    request.addfinalizer(root.close)
    return root


def c_extension(arm64):
    """A small C-extension package and its recipe inside the root; returns the recipe path
    as seen inside."""
    src = arm64.host_path(arm64.inside + "/hello-src")
    os.makedirs(src)
    with open(os.path.join(src, "hello_ext.c"), "w") as f:
        f.write(textwrap.dedent("""\
            #define PY_SSIZE_T_CLEAN
            #include <Python.h>
            #include <sys/utsname.h>
            /* Adds two integers and says which CPU it was built for. */
            static PyObject* add(PyObject* self, PyObject* args) {
              long a, b;
              if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
              return PyLong_FromLong(a + b);
            }
            static PyObject* machine(PyObject* self, PyObject* unused) {
            #if defined(__aarch64__)
              return PyUnicode_FromString("aarch64");
            #else
              return PyUnicode_FromString("other");
            #endif
            }
            static PyMethodDef methods[] = {
                {"add", add, METH_VARARGS, "a + b"},
                {"machine", machine, METH_NOARGS, "the CPU this was compiled for"},
                {NULL, NULL, 0, NULL}};
            static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "hello_ext", NULL, -1, methods};
            PyMODINIT_FUNC PyInit_hello_ext(void) { return PyModule_Create(&module); }
            """))
    with open(os.path.join(src, "setup.py"), "w") as f:
        f.write("from setuptools import Extension, setup\n"
                "setup(name='hello-ext', version='1.0',\n"
                "      ext_modules=[Extension('hello_ext', ['hello_ext.c'])])\n")
    recipe = arm64.inside + "/hello.yaml"
    with open(arm64.host_path(recipe), "w") as f:
        f.write(textwrap.dedent("""\
            name: hello-ext
            version: "1.0"
            source: {local: hello-src}
            system_site_packages: true
            build: |
              "$FARM_PYTHON" -m pip wheel . -v --no-build-isolation --no-deps --no-index -w "$FARM_WHEEL_DIR"
            matrix:
              python: ["3.11"]
              platform: [linux_aarch64, linux_x86_64]
            validation:
              import: [hello_ext]
            """))
    return recipe


def test_an_aarch64_worker_builds_a_linux_aarch64_wheel_under_emulation(farm, arm64):
    timings = {}
    started = time.monotonic()
    farm.start_farmd()
    token = arm64.inside + "/enroll.token"
    shutil.copy(os.path.join(farm.data, "enroll.token"), arm64.host_path(token))
    admin = arm64.inside + "/admin.token"
    shutil.copy(os.path.join(farm.data, "admin.token"), arm64.host_path(admin))
    state = arm64.inside + "/worker"
    worker = farm._spawn(arm64.argv(
        arm64.inside + "/bin/farm-worker", "--server", farm.address, "--enroll-token-file", token,
        "--state-dir", state, "--work-dir", state + "/work", "--name", "arm64-emu",
        "--sandbox", "off", "--no-ccache"), "arm64-emu.log")

    def ctl(*args, timeout=900):
        return arm64.run(arm64.inside + "/bin/farmctl", "--server", farm.address,
                         "--token-file", admin, "--output", "json", *args, timeout=timeout)

    def registered():
        r = ctl("workers", timeout=300)
        workers = json.loads(r.stdout).get("workers", []) if r.returncode == 0 else []
        return workers[0] if workers else None

    w = wait_until(registered, 600, "the aarch64 worker to register", interval=2)
    timings["register"] = time.monotonic() - started
    caps = w["capabilities"]
    assert caps["platform"] == "linux_aarch64" and caps["cpu_arch"] == "aarch64", caps
    # The root's own Debian 12 interpreter, found by the worker's discovery.
    assert caps["pythons"] and all(p["path"].startswith("/usr/bin/python3")
                                   for p in caps["pythons"]), caps
    assert {p["version"] for p in caps["pythons"]} == {"3.11"}, caps

    submitted = ctl("submit", c_extension(arm64), timeout=600)
    assert submitted.returncode == 0, submitted.stderr
    build_id = str(json.loads(submitted.stdout)["id"])

    def finished_aarch64_job():
        jobs = farm.ctl_json("show", build_id)["jobs"]
        job = [j for j in jobs if j["cell"]["platform"] == "linux_aarch64"][0]
        return job if job["state"] in ("JOB_SUCCEEDED", "JOB_FAILED", "JOB_CANCELLED") else None

    job = wait_until(finished_aarch64_job, 1800, "the linux_aarch64 job to end", interval=3)
    timings["build"] = time.monotonic() - started - timings["register"]
    log = farm.ctl("logs", str(job["id"])).stdout
    assert job["state"] == "JOB_SUCCEEDED", log[-4000:]
    assert job["worker_id"] == w["id"]
    # The worker's clean-room install and import ran under emulation.
    assert "farm: imported hello_ext from" in log and "/validate/venv/" in log, log[-4000:]
    assert "VALIDATION_NOT_RUN: installed and imported in a clean venv" in log, log[-4000:]
    # The x86_64 cell of the same build waits for an x86_64 worker, and says so.
    x86 = [j for j in farm.ctl_json("show", build_id)["jobs"]
           if j["cell"]["platform"] == "linux_x86_64"][0]
    assert x86["state"] == "JOB_PENDING", x86
    assert "is built by x86_64 workers (has linux_aarch64)" in json.dumps(
        x86["unplaceable_reasons"]), x86

    assert_the_wheel_runs_on_aarch64(arm64, ctl, build_id)
    timings["total"] = time.monotonic() - started
    print("\naarch64 under emulation: " +
          ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))
    farm.stop(worker)


def assert_the_wheel_runs_on_aarch64(arm64, ctl, build_id):
    """The build's wheel, as downloaded by the aarch64 farmctl (`ctl`): tagged linux_aarch64,
    its .so an aarch64 ELF, and it installs and imports in a fresh venv of the root."""
    downloads = arm64.inside + "/downloads"
    fetched = ctl("download", build_id, "--dir", downloads, timeout=600)
    assert fetched.returncode == 0, fetched.stderr
    [name] = [n for n in os.listdir(arm64.host_path(downloads)) if n.endswith(".whl")]
    assert name.endswith("-cp311-cp311-linux_aarch64.whl"), name
    with zipfile.ZipFile(os.path.join(arm64.host_path(downloads), name)) as z:
        [so] = [n for n in z.namelist() if n.endswith(".so")]
        assert elf_machine(z.read(so)) == EM_AARCH64, so
    # And it installs and imports in a fresh venv of the root, as a user would.
    venv = arm64.inside + "/venv"
    made = arm64.run("/usr/bin/python3", "-m", "venv", venv)
    assert made.returncode == 0, made.stderr
    installed = arm64.run(venv + "/bin/pip", "install", "--no-index", "--no-deps",
                          downloads + "/" + name)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    used = arm64.run(venv + "/bin/python", "-c",
                     "import hello_ext, platform; "
                     "print(hello_ext.add(2, 40), hello_ext.machine(), platform.machine())")
    assert used.returncode == 0, used.stderr
    assert used.stdout.split() == ["42", "aarch64", "aarch64"], used.stdout
