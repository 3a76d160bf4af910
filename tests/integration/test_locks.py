"""Environment locks on the real farmd, farm-worker and farmctl (docs/environments.md,
"Locks"), against the protocol-faithful index of tests/fakes served through farmd:

- a recipe that names only torch and an unpinned build tool builds in one submission: farmd
  resolves the cell's whole closure with pip (torch's requirements, theirs, the build
  tool) into a PEP 751 lock, the worker installs exactly it in a sandbox as the build user,
  and `farmctl lock` prints it; a second submission is answered from the store;
- a new torch release on the index (with a new dependency and changed versions) fires the
  torch watch and builds with nobody editing anything; `farmctl show` says what changed
  in the lock since the previous build of the cell;
- an aarch64 cell's lock follows its markers (no aarch64 worker is needed: locks are made
  at submit);
- a retry after the index moved installs the old lock;
- a requirement no wheel satisfies is refused at submit, once, naming the requirement, the
  cell and what the index has;
- upstream code never runs as root: a submitter's rigged `pip==` pin is installed, never
  run, and the snapshot stays the worker's; a build cannot change the snapshot the next
  build of its cell clones.
"""

import os
import shutil
import tempfile
import tomllib
import zipfile

import pytest

from farm_harness import finished, first_attempt_ended, log_of, wait_until
from test_environments import BUILD_WHEEL
from test_provision import RunningFake, make

# What the torch stand-ins require: a closure two levels deep, with markers per machine.
TORCH_REQUIRES = ["filelock", "typing-extensions>=4.10", "sympy>=1.13.3",
                  "nvidia-cublas==13.1.0.3; platform_machine == 'x86_64'",
                  "arm-helper==1.0; platform_machine == 'aarch64'"]
PACKAGES = [("filelock", "3.20.0", ()), ("typing-extensions", "4.15.0", ()),
            ("sympy", "1.14.0", ("mpmath<1.4,>=1.1.0",)), ("mpmath", "1.3.0", ()),
            ("nvidia-cublas", "13.1.0.3", ()), ("nvidia-cublas", "13.1.1.2", ()),
            ("arm-helper", "1.0", ()), ("wheel", "0.45.1", ())]
CLOSURE_X86 = {"torch", "filelock", "typing-extensions", "sympy", "mpmath", "nvidia-cublas",
               "setuptools"}

RECIPE = """name: %(name)s
source: {local: %(src)s}
build: |
  %(before)s
  python build_wheel.py
matrix:
  python: ["3.11"]
  torch: %(torch)s
  cuda: ["13.0"]
  platform: %(platform)s
environment:
  %(env_torch)s
  build_requirements: %(requirements)s
  toolkit: false
retry: {max_attempts: 1}
timeout: 600
"""


@pytest.fixture(scope="module")
def wheels():
    """The index's files, made once: torch 2.10.0+cu130 stand-ins for x86_64 and aarch64
    requiring TORCH_REQUIRES, the packages they name, Debian's pip and setuptools."""
    work = tempfile.mkdtemp(prefix="locks-wheels-")
    base = os.path.join(work, "cu130")
    make("host-wheels", "--out", base)
    for arch in ("x86_64", "aarch64"):
        args = ["torch-wheels", "--out", base, "--version", "2.10.0+cu130",
                "--python-tag", "cp311", "--arch", arch]
        for r in TORCH_REQUIRES:
            args += ["--requires", r]
        make(*args)
    for name, version, requires in PACKAGES:
        make("wheel", "--out", base, "--name", name, "--version", version,
             *[a for r in requires for a in ("--requires", r)])
    yield {"work": work, "base": base}
    shutil.rmtree(work, ignore_errors=True)


@pytest.fixture
def index(farm, wheels):
    """This test's own copy of the index (it may publish new releases), served by the fake."""
    data = os.path.join(farm.root, "index", "cu130")
    shutil.copytree(wheels["base"], data)
    fake = RunningFake("fake_pyindex.py", ["--index", "/whl/cu130=" + data], farm.root, "index")
    yield {"url": fake.url + "/whl/cu130/", "dir": data, "fake": fake}
    fake.stop()


def start(farm, index, worker=True, *farmd_flags):
    farm.start_farmd("--upstream-index", "cu130=" + index["url"], "--watch-min-poll-s", "1",
                     *farmd_flags, http=True)
    if worker:
        farm.start_worker("prov-1", "--provision", "--no-probe-kernels")
        farm.wait_workers(1)


def recipe(farm, name="lockpkg", torch='["2.10"]', env_torch='torch: {"2.10": "2.10.0"}',
           requirements='["setuptools>=64"]', platform="[linux_x86_64]", before="true"):
    src = os.path.join(farm.root, name + "-src")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "build_wheel.py"), "w") as f:
        # The build imports what the lock brought: torch's requirements and theirs.
        f.write("import filelock, sympy, mpmath, typing_extensions\n" + BUILD_WHEEL)
    path = os.path.join(farm.root, name + ".yaml")
    with open(path, "w") as f:
        f.write(RECIPE % {"name": name, "src": src, "torch": torch, "env_torch": env_torch,
                          "requirements": requirements, "platform": platform, "before": before})
    return path


def lock_of(farm, build_id=None, job_id=None):
    r = farm.ctl("lock", *(["--job", str(job_id)] if job_id else [str(build_id)]))
    assert r.returncode == 0, r.stderr
    return tomllib.loads(r.stdout), r.stderr


def names(lock):
    return {p["name"] for p in lock["packages"]}


def version(lock, name):
    return next(p["version"] for p in lock["packages"] if p["name"] == name)


def test_one_submission_locks_the_whole_closure_and_a_second_is_answered_from_the_store(
        farm, index):
    start(farm, index)
    path = recipe(farm)
    first = farm.ctl_json("submit", path, "--follow")
    assert first["state"] == "BUILD_SUCCEEDED", first
    job = first["jobs"][0]
    lock, about = lock_of(farm, first["id"])
    assert names(lock) == CLOSURE_X86, names(lock)
    assert lock["lock-version"] == "1.0"
    torch = next(p for p in lock["packages"] if p["name"] == "torch")
    wheel = torch["wheels"][0]
    assert wheel["name"] == "torch-2.10.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl", wheel
    assert len(wheel["hashes"]["sha256"]) == 64 and wheel["size"] > 0, wheel
    # The lock names the index itself, never farmd's address.
    assert wheel["url"].startswith(index["url"]), wheel["url"]
    assert "7 packages" in about, about
    log = log_of(farm, job["id"])
    assert "installing 8 locked packages into a new venv with pip, in a sandbox as " in log, log
    assert int(job["lock"]["packages"]) == 7, job["lock"]
    shown = farm.ctl("show", str(first["id"])).stdout
    assert "environment: torch 2.10.0+cu130, lock " in shown, shown

    second = farm.ctl_json("submit", path, "--follow")
    assert second["state"] == "BUILD_SUCCEEDED", second
    assert int(second["jobs"][0].get("reused_from", 0)) == int(job["id"]), second["jobs"][0]
    assert second["jobs"][0]["lock"]["digest"] == job["lock"]["digest"]


def test_a_new_torch_release_builds_with_no_edit_and_says_what_changed(farm, index):
    start(farm, index)
    path = recipe(farm, torch='">=2.10"', env_torch="")
    first = farm.ctl_json("submit", path, "--follow")
    assert first["state"] == "BUILD_SUCCEEDED", first
    sid = farm.ctl_json("schedules", "add", path, "--watch-torch", ">=2.10", "--poll", "1")["id"]
    wait_until(lambda: farm.ctl_json("schedules", "show", str(sid))["schedules"][0]
               .get("recent_runs"), 30, "the watch's first poll (its baseline)")
    # Release day: a patch release that needs a new package and a newer cuBLAS.
    make("wheel", "--out", index["dir"], "--name", "cuda-bindings", "--version", "13.3.1")
    requires = [r for r in TORCH_REQUIRES if not r.startswith("nvidia-cublas")]
    requires += ["nvidia-cublas==13.1.1.2; platform_machine == 'x86_64'", "cuda-bindings"]
    make("torch-wheels", "--out", index["dir"], "--version", "2.10.1+cu130", "--python-tag",
         "cp311", *[a for r in requires for a in ("--requires", r)])

    def fired():
        runs = farm.ctl_json("schedules", "show", str(sid))["schedules"][0].get("recent_runs", [])
        return next((r for r in runs if r.get("build_id")), None)
    run = wait_until(fired, 60, "the torch watch to fire")
    build = finished(farm, int(run["build_id"]))
    assert build["state"] == "BUILD_SUCCEEDED", build
    job = build["jobs"][0]
    assert int(job.get("reused_from", 0)) == 0, job
    changes = job["lock"]["changes"]
    assert changes == ["+ cuda-bindings 13.3.1", "nvidia-cublas 13.1.0.3 -> 13.1.1.2",
                       "torch 2.10.0+cu130 -> 2.10.1+cu130"], changes
    assert int(job["lock"]["previous_job_id"]) == int(first["jobs"][0]["id"]), job["lock"]
    lock, _ = lock_of(farm, build["id"])
    assert version(lock, "cuda-bindings") == "13.3.1"


def test_an_aarch64_cells_lock_follows_its_markers(farm, index):
    start(farm, index, worker=False)  # locks are made at submit: no worker needed
    path = recipe(farm, platform="[linux_x86_64, linux_aarch64]")
    build = farm.ctl_json("submit", path)
    jobs = {j["cell"]["platform"]: j for j in build["jobs"]}
    x86, _ = lock_of(farm, job_id=jobs["linux_x86_64"]["id"])
    arm, _ = lock_of(farm, job_id=jobs["linux_aarch64"]["id"])
    assert names(x86) == CLOSURE_X86, names(x86)
    assert names(arm) == CLOSURE_X86 - {"nvidia-cublas"} | {"arm-helper"}, names(arm)
    arm_torch = next(p for p in arm["packages"] if p["name"] == "torch")["wheels"][0]["name"]
    assert arm_torch.endswith("manylinux_2_28_aarch64.whl"), arm_torch
    assert "platform_machine == 'aarch64'" in arm["environments"][0], arm["environments"]


def test_a_retry_after_the_index_moved_installs_the_old_lock(farm, index):
    start(farm, index)
    # The first attempt fails on purpose; the retry must not pick up what upstream did since.
    said = "python -c \"import importlib.metadata as m; print('filelock', m.version('filelock'))\""
    path = recipe(farm, before='[ "$FARM_ATTEMPT" != 1 ] || exit 3; ' + said)
    build = farm.ctl_json("submit", path)
    job_id = build["jobs"][0]["id"]
    first_attempt_ended(farm, job_id, 240)
    digest = farm.ctl_json("job", str(job_id))["lock"]["digest"]
    make("wheel", "--out", index["dir"], "--name", "filelock", "--version", "3.21.0")
    assert farm.ctl("retry", str(job_id)).returncode == 0
    done = finished(farm, build["id"])
    assert done["state"] == "BUILD_SUCCEEDED", done
    assert done["jobs"][0]["lock"]["digest"] == digest
    second = log_of(farm, job_id, attempt=2)
    assert "(lock %s)" % digest[:12] in second, second
    assert "\nfilelock 3.20.0\n" in second, second
    # A new submission resolves again and gets the new release.
    again = farm.ctl_json("submit", path)
    lock, _ = lock_of(farm, again["id"])
    assert version(lock, "filelock") == "3.21.0"


def test_a_requirement_no_wheel_satisfies_is_refused_at_submit_once(farm, index):
    start(farm, index, worker=False)
    path = recipe(farm, requirements='["setuptools>=64", "sympy>=99"]')
    r = farm.ctl("submit", path)
    assert r.returncode != 0
    assert ("no wheel satisfies sympy>=99 for Python 3.11 on linux_x86_64 from the cu130 "
            "index; the index has: 1.14.0") in r.stderr, r.stderr
    assert "Python 3.11, torch 2.10.0 on cu130, linux_x86_64" in r.stderr, r.stderr
    assert farm.ctl_json("list").get("builds", []) == []
    pages = index["fake"].counters().get("page:/whl/cu130/sympy/", 0)
    assert 1 <= pages <= 2, pages  # one resolution (pip may ask JSON then HTML): not retried


RIGGED_PIP = '''import os
with open(%r, "w") as f:
    f.write("uid=%%d" %% os.getuid())
'''


def test_upstream_code_never_runs_as_root_and_the_snapshot_stays_the_workers(farm, index):
    marker = os.path.join(farm.root, "rigged-pip-ran")
    rigged = os.path.join(farm.root, "rigged.py")
    with open(rigged, "w") as f:
        f.write(RIGGED_PIP % marker)
    # A pip on the index whose every entry point writes a marker where the host can see it.
    make("wheel", "--out", index["dir"], "--name", "pip", "--version", "99.0",
         "--file", "pip/__init__.py=" + rigged, "--file", "pip/__main__.py=" + rigged)
    start(farm, index)
    # The submitter pins the rigged pip and tries to change the environment it builds in.
    backdoor = ('echo "print(\'BACKDOORED TORCH\')" >> "$VIRTUAL_ENV"/lib/python3.11/'
                'site-packages/torch/__init__.py || true')
    evil = farm.ctl_json("submit", recipe(farm, name="evilpkg", before=backdoor,
                                          requirements='["setuptools>=64", "pip==99.0"]'),
                         "--follow")
    assert evil["state"] == "BUILD_SUCCEEDED", evil
    assert not os.path.exists(marker), open(marker).read()
    # The next build of the same environment gets it as it was sealed.
    check = 'python -c "import torch" | grep -c BACKDOORED && exit 9 || true'
    clean = farm.ctl_json("submit", recipe(farm, name="cleanpkg", before=check,
                                           requirements='["setuptools>=64", "pip==99.0"]'),
                          "--follow")
    assert clean["state"] == "BUILD_SUCCEEDED", clean
    log = log_of(farm, clean["jobs"][0]["id"])
    assert "cached snapshot" in log and "was discarded" not in log, log
    cache = os.path.join(farm.root, "prov-1", "envs", "envs")
    for top, dirs, files in os.walk(cache):
        for entry in dirs + files:
            st = os.lstat(os.path.join(top, entry))
            assert st.st_uid == os.geteuid(), os.path.join(top, entry)
    the_farms_pip_is_as_its_wheel_has_it(os.path.join(farm.root, "prov-1", "envs", "installer"))


def the_farms_pip_is_as_its_wheel_has_it(installer):
    """The worker ran its pip unpacked from the wheel (not the index's pip 99.0): the copy is
    the worker's, no one else may write it, and every module is the wheel's."""
    copies = os.listdir(installer)
    assert len(copies) == 1 and copies[0].startswith("pip-"), copies
    root = os.path.join(installer, copies[0])
    wheel = os.path.join("/usr/share/python-wheels", sorted(
        n for n in os.listdir("/usr/share/python-wheels") if n.startswith("pip-"))[-1])
    with zipfile.ZipFile(wheel) as z:
        members = {n: z.read(n) for n in z.namelist() if n.endswith(".py")}
    seen = 0
    for top, dirs, files in os.walk(root):
        for entry in dirs + files:
            path = os.path.join(top, entry)
            st = os.lstat(path)
            assert st.st_uid == os.geteuid() and not st.st_mode & 0o022, path
            name = os.path.relpath(path, root)
            if name.endswith(".py"):
                with open(path, "rb") as f:
                    assert f.read() == members[name], name
                seen += 1
    assert seen == len(members), (seen, len(members))


def test_a_provisioning_worker_follows_farmd_to_its_new_address(farm, index):
    start(farm, index)
    first = farm.ctl_json("submit", recipe(farm), "--follow")
    assert first["state"] == "BUILD_SUCCEEDED", first
    old = farm.http_address
    farm.stop(farm.farmd)
    # Back on another port (the quick start binds port 0); the worker keeps running.
    farm.start_farmd("--upstream-index", "cu130=" + index["url"], http=True)
    assert farm.http_address != old
    # Another environment: the worker must fetch its files from farmd where it is now.
    again = farm.ctl_json("submit", recipe(farm, name="movedpkg",
                                           requirements='["setuptools>=64", "wheel"]'),
                          "--follow")
    assert again["state"] == "BUILD_SUCCEEDED", again
    log = log_of(farm, again["jobs"][0]["id"])
    assert "built snapshot" in log and old not in log, log
