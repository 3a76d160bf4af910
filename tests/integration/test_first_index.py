"""A first upstream index (docs/first-index.md), and what a new user of it is told, on the
real farmd, farm-worker, farmctl, Python's http.server and Debian's pip:

- the guide's steps, run as they are written (free ports and a temporary home instead of
  the fixed ones and ~): from an empty folder of wheels, `farmctl index make`, the folder
  served by `python3 -m http.server`, farmd pulling it through, a worker that provisions,
  and a build that imports the provisioned torch; farmd checked the index when it started,
  the job's log counts what it downloaded from pages without sizes, and Debian's pip reads
  the pages' PEP 658 metadata;
- on a farm whose second index is down and that serves no toolkit tree: farmctl says farmd
  answered (not that farmd is down), a submission whose environment cannot be resolved is
  refused naming the index's failure, an index that goes away between submit and build
  fails the provisioning with the cause farmd's 502 body holds and the attempt is retried
  after a backoff, a CUDA 12.8 cell no worker can provide waits with its reason instead of
  failing, and a wheel compiled by the host's nvcc for a `toolkit: false` cell of another
  CUDA fails its check naming both versions.
"""

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest

from farm_harness import (FARMCTL, FARMD, FARM_WORKER, finished, local_recipe, log_of,
                          pure_python_source, pid_alive, wait_until)
from test_provision import make

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DOC = os.path.join(REPO, "docs", "first-index.md")
TORCH = "torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl"
NVCC = "/usr/local/cuda/bin/nvcc"


def doc_block(marker):
    """The fenced block after the HTML comment `<!-- marker: ...` in the guide."""
    text = open(DOC).read()
    at = text.index("<!-- %s:" % marker)
    start = text.index("```", at)
    start = text.index("\n", start) + 1
    return text[start:text.index("```", start)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def downloads():
    """What a user has before step 1: a torch build and the `wheel` wheel (`pip download`
    on a machine with internet access gives the same), in the current directory."""
    work = tempfile.mkdtemp(prefix="first-index-")
    make("torch-wheels", "--out", work, "--version", "2.8.0+cu128", "--python-tag", "cp311")
    make("installed-wheel", "--out", work, "--module", "wheel")
    assert os.path.exists(os.path.join(work, TORCH)), os.listdir(work)
    yield work
    shutil.rmtree(work, ignore_errors=True)


def run_guide(farm, cwd, home):
    """Runs the guide's steps as written; returns the ports used and the last step's
    output (the build, followed)."""
    ports = {"8000": free_port(), "7070": free_port(), "8080": free_port()}
    binaries = {"farmctl": FARMCTL, "farmd": FARMD, "farm-worker": FARM_WORKER}
    last = None
    for line in doc_block("steps").splitlines():
        if not line.strip():
            continue
        cmd = line.replace("~/", home + "/")
        for fixed, port in ports.items():
            cmd = re.sub(r"\b%s\b" % fixed, str(port), cmd)
        words = shlex.split(cmd.rstrip("& "))
        words[0] = binaries.get(words[0], words[0])
        if not cmd.endswith("&"):
            last = subprocess.run(words, cwd=cwd, capture_output=True, text=True, timeout=600)
            assert last.returncode == 0, (line, last.stdout, last.stderr)
            continue
        name = os.path.basename(words[0])
        farm._spawn(words, name + ".log")
        # What a user waits for before the next step.
        if name.startswith("python"):
            wait_until(lambda: answers(ports["8000"]), 30, "the index's server")
        elif name == "farmd":
            wait_until(lambda: answers(ports["7070"]) and
                       os.path.exists(os.path.join(home, "farm", "enroll.token")), 30, "farmd")
            farm.address = "127.0.0.1:%d" % ports["7070"]
            farm.data = os.path.join(home, "farm")
        else:
            farm.wait_workers(1)
    return ports, last


def test_the_guide_from_an_empty_folder_to_a_provisioned_build(farm, downloads):
    home = os.path.join(farm.root, "home")
    os.makedirs(home)
    src = os.path.join(downloads, "src")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "setup.py"), "w") as f:
        f.write("from setuptools import setup\nsetup(name='first-index-demo', version='1.0', "
                "py_modules=['demo'])\n")
    with open(os.path.join(src, "demo.py"), "w") as f:
        f.write("VALUE = 1\n")
    with open(os.path.join(downloads, "recipe.yaml"), "w") as f:
        f.write(doc_block("recipe"))
    ports, followed = run_guide(farm, downloads, home)
    assert "BUILD_SUCCEEDED" in followed.stdout or "succeeded" in followed.stdout, followed.stdout

    (build,) = farm.ctl_json("list")["builds"]
    done = finished(farm, build["id"])
    assert done["state"] == "BUILD_SUCCEEDED", json.dumps(done, indent=1)
    log = log_of(farm, done["jobs"][0]["id"])
    assert "building against torch 2.8.0+cu128" in log, log
    # The index's pages carry no sizes: what was downloaded is still counted.
    ready = re.search(r"environment ready in \d+ ms: built snapshot \w+, ([\d.]+) MB downloaded",
                      log)
    assert ready and float(ready.group(1)) > 0, log
    # farmd said what the index holds when it started.
    index_url = "http://127.0.0.1:%d/simple/" % ports["8000"]
    assert ("upstream index cu128 (%s): answers, torch 2.8.0" % index_url) in farm.log(
        "farmd.log"), farm.log("farmd.log")[-3000:]

    # Debian's pip 23.0.1 reads the pages' PEP 658 metadata (it knows only the older
    # attribute name, data-dist-info-metadata) and checks it against its sha256.
    served = farm.log("python3.log")
    r = subprocess.run(["/usr/bin/python3", "-m", "pip", "install", "--dry-run",
                        "--ignore-installed", "--no-cache-dir", "--index-url", index_url,
                        "--target", os.path.join(farm.root, "never"), "setuptools==66.1.1"],
                       capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "PIP_CONFIG_FILE": "/dev/null"})
    assert r.returncode == 0, r.stdout + r.stderr
    asked = farm.log("python3.log")[len(served):]
    assert '"GET /setuptools-66.1.1-py3-none-any.whl.metadata HTTP/1.1" 200' in asked, asked


LABEL_SOURCE = r'''
cat > k.cu <<'EOF'
__global__ void k(float* x) { x[threadIdx.x] *= 2; }
EOF
command -v nvcc || echo "no nvcc on the build's PATH"
/usr/local/cuda/bin/nvcc -shared -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 k.cu -o labelled/_k.so
'''

LABEL_RECIPE = """name: labelled
source: {local: %(src)s}
build: |
  mkdir -p labelled && touch labelled/__init__.py
%(compile)s
  "$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps --no-index -w "$FARM_WHEEL_DIR"
matrix:
  python: ["3.11"]
  torch: ["2.8"]
  cuda: ["12.8"]
  arch_lists: ["9.0"]
environment:
  torch: {"2.8": "2.8.0"}
  build_requirements: ["setuptools==66.1.1", "wheel==0.38.4"]
  toolkit: false
retry: {max_attempts: 1}
"""

CELL_RECIPE = """name: %(name)s
source: {local: %(src)s}
build: |
  "$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps --no-index -w "$FARM_WHEEL_DIR"
matrix:
  python: ["3.11"]
  torch: %(torch)s
  cuda: ["%(cuda)s"]
environment:
%(environment)s  build_requirements: ["setuptools==66.1.1", "wheel==0.38.4"]
"""


def cell_recipe(farm, src, name, torch, cuda, environment, tail=""):
    path = os.path.join(farm.root, name + ".yaml")
    with open(path, "w") as f:
        f.write(CELL_RECIPE % {"name": name, "src": src, "torch": torch, "cuda": cuda,
                               "environment": environment} + tail)
    return path


@pytest.fixture(scope="module")
def index(downloads):
    """The guide's index, served: the wheels, `farmctl index make`, http.server."""
    folder = tempfile.mkdtemp(prefix="first-index-wheels-")
    for name in (TORCH, "wheel-0.38.4-py3-none-any.whl"):
        shutil.copy(os.path.join(downloads, name), folder)
    # No pip among them: the worker installs with the farm's own.
    shutil.copy("/usr/share/python-wheels/setuptools-66.1.1-py3-none-any.whl", folder)
    make_index(folder)
    port = free_port()
    server = serve(folder, port)
    yield "http://127.0.0.1:%d/simple/" % port
    server.kill()
    server.wait(timeout=10)
    shutil.rmtree(folder, ignore_errors=True)


def make_index(folder):
    r = subprocess.run([FARMCTL, "index", "make", folder], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def serve(folder, port):
    server = subprocess.Popen(["python3", "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               "--directory", folder], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until(lambda: answers(port), 30, "the index's server")
    return server


def test_what_a_user_is_told_when_the_farm_lacks_something(farm, index, downloads):
    later = free_port()  # the cu130 index: nothing listens there yet
    dead = "http://127.0.0.1:%d/simple/" % later
    farm.start_farmd("--upstream-index", "cu128=" + index, "--upstream-index", "cu130=" + dead,
                     http=True)
    src = os.path.join(farm.root, "src")
    os.makedirs(src)
    with open(os.path.join(src, "setup.py"), "w") as f:
        f.write("from setuptools import setup\nsetup(name='labelled', version='1.0', "
                "packages=['labelled'], package_data={'labelled': ['*.so']})\n")
    # farmd checked both indexes when it started; the dead one is named with its cause.
    wait_until(lambda: "upstream index cu130 (%s) cannot be read now" % dead
               in farm.log("farmd.log"), 30, "farmd's check of the dead index")

    # 1. farmd answered UNAVAILABLE: farmctl says so, not that farmd is down.
    following = cell_recipe(farm, src, "follows", '">=2.8"', "13.0", "  toolkit: false\n")
    r = farm.ctl("submit", following)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "farmd at %s answered: " % farm.address in r.stderr, r.stderr
    assert "cannot reach farmd" not in r.stderr, r.stderr

    # 2. An environment farmd cannot resolve, the index being down: refused at submit,
    #    naming the index and what it answered; nothing is queued.
    dead_index = cell_recipe(farm, src, "dead-index", '["2.9"]', "13.0",
                             '  torch: {"2.9": "2.9.0"}\n  toolkit: false\n')
    r = farm.ctl("submit", dead_index)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "cu130" in r.stderr and "502" in r.stderr, r.stderr
    assert farm.ctl_json("list").get("builds", []) == []

    provisioning_fails_when_the_index_goes_away(farm, downloads, dead_index, later)

    # 4. A CUDA 12.8 cell that needs a toolkit no worker has, on a farm that serves none:
    #    it waits with its reason, and no attempt fails.
    waits = farm.ctl_json("submit", cell_recipe(farm, src, "needs-cuda", '["2.8"]', "12.8",
                                                '  torch: {"2.8": "2.8.0"}\n'))
    job = waits["jobs"][0]
    shown = wait_until(lambda: (lambda j: j if j.get("unplaceable") else None)(
        farm.ctl_json("job", str(job["id"]))), 30, "the cell to be unplaceable")
    reasons = " ".join(shown.get("unplaceable_reasons", {}).values())
    assert "farmd serves no toolkit tree to fetch one from" in reasons, shown
    assert "fetches no CUDA: farmd serves no redist tree" in farm.ctl("workers").stdout
    farm.ctl("cancel", str(waits["id"]))

    host_nvcc_fails_the_toolkit_check(farm, src)


def provisioning_fails_when_the_index_goes_away(farm, downloads, dead_index, port):
    """3. The index answers at submit, then goes away before a worker fetches its files:
    provisioning fails with the cause farmd's 502 holds, and the retry waits."""
    folder = os.path.join(farm.root, "cu130")
    os.makedirs(folder)
    make("torch-wheels", "--out", folder, "--version", "2.9.0+cu130", "--python-tag", "cp311")
    for name in ("wheel-0.38.4-py3-none-any.whl",):
        shutil.copy(os.path.join(downloads, name), folder)
    shutil.copy("/usr/share/python-wheels/setuptools-66.1.1-py3-none-any.whl", folder)
    make_index(folder)
    server = serve(folder, port)
    try:
        failing = farm.ctl_json("submit", dead_index)
    finally:
        server.kill()
        server.wait(timeout=10)
    job_id = failing["jobs"][0]["id"]
    farm.start_worker("prov-1", "--provision", "--no-probe-kernels")
    farm.wait_workers(1)

    def first_attempt():
        j = farm.ctl_json("job", str(job_id))
        return j if j.get("attempts") and j["attempts"][0].get("cause") else None
    ended = wait_until(first_attempt, 120, "the first provisioning attempt to end")
    attempt = ended["attempts"][0]
    assert attempt["cause"] == "CAUSE_INFRASTRUCTURE", attempt
    assert attempt["detail"].startswith("provisioning failed (upstream-unreachable): "), attempt
    assert re.search(r"answered HTTP 502: \S", attempt["detail"]), attempt
    assert re.search(r"the locked file \S+\.whl \(sha256 [0-9a-f]{12}", attempt["detail"]), attempt
    assert ended["state"] == "JOB_PENDING", ended
    assert "retrying after a backoff" in farm.ctl("job", str(job_id)).stdout
    farm.ctl("cancel", str(failing["id"]))


def host_nvcc_fails_the_toolkit_check(farm, src):
    """5. toolkit: false, and the build compiles CUDA with the host's nvcc anyway: no nvcc on
    its PATH, and the wheel fails its check naming both versions."""
    if not os.access(NVCC, os.X_OK):
        pytest.skip("no nvcc at %s to compile with" % NVCC)
    recipe = os.path.join(farm.root, "labelled.yaml")
    with open(recipe, "w") as f:
        compile_lines = "".join("  " + line + "\n" for line in LABEL_SOURCE.strip().splitlines())
        f.write(LABEL_RECIPE % {"src": src, "compile": compile_lines})
    build = farm.ctl_json("submit", recipe)
    done = finished(farm, build["id"], timeout=300)
    assert done["state"] == "BUILD_FAILED", json.dumps(done, indent=1)
    log = log_of(farm, done["jobs"][0]["id"])
    assert "no nvcc on the build's PATH" in log, log
    error = done["jobs"][0].get("error", "")
    assert "cuda-mismatch" in error, error
    assert "compiled with CUDA 13.0" in error and "the cell is CUDA 12.8" in error, error


def test_quickstart_runs_on_prebuilt_binaries_without_apt_or_cmake(tmp_path):
    """common/scripts/quickstart.sh --prebuilt DIR: the farm from binaries already built,
    with apt-get and cmake on the PATH made to fail (and to say so) if called."""
    bins, fake, home = tmp_path / "bin", tmp_path / "fake", tmp_path / "home"
    for d in (bins, fake):
        d.mkdir()
    for path in (FARMD, FARM_WORKER, FARMCTL):
        os.symlink(path, bins / os.path.basename(path))
    called = tmp_path / "called"
    for tool in ("apt-get", "cmake", "apt"):
        (fake / tool).write_text("#!/bin/sh\necho %s >> %s\nexit 1\n" % (tool, called))
        (fake / tool).chmod(0o755)
    pure_python_source(str(tmp_path), "quick")
    recipe = local_recipe(str(tmp_path), "quick")
    env = dict(os.environ, PATH="%s:%s" % (fake, os.environ["PATH"]), FARM_HOME=str(home))
    try:
        r = subprocess.run([os.path.join(REPO, "common", "scripts", "quickstart.sh"),
                            "--prebuilt", str(bins), recipe], capture_output=True, text=True,
                           timeout=600, env=env)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert not called.exists(), called.read_text()
        assert sorted(os.listdir(home / "wheels")) == [
            "quick-1.0-py3-none-any.whl", "quick-1.0-py3-none-any.whl.intoto.jsonl"], r.stdout
        assert "quickstart: done in" in r.stdout and "build " not in r.stdout.split(
            "quickstart: done in")[1], r.stdout
    finally:
        for name in ("worker.pid", "farmd.pid"):  # the daemons the script started
            pid_file = home / name
            if pid_file.exists():
                pid = int(pid_file.read_text())
                if pid_alive(pid):
                    os.kill(pid, 9)
    bad = subprocess.run([os.path.join(REPO, "common", "scripts", "quickstart.sh"),
                          "--prebuilt", str(tmp_path / "nothing")], capture_output=True,
                         text=True, timeout=60, env=env)
    assert bad.returncode == 2 and "has no farmd" in bad.stderr, bad.stderr
