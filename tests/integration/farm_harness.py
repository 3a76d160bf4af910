"""Starts the real farmd, farm-worker and farmctl binaries for integration tests.

Every process binds 127.0.0.1:0 and reports its address through a ready file. Each test
gets a fresh directory (kept when the test fails) and every process the harness started
is ended by pid at teardown. Every wait is bounded in time.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FARMD = os.environ.get("FARMD", os.path.join(REPO, "build", "daemon", "farmd"))
FARM_WORKER = os.environ.get("FARM_WORKER", os.path.join(REPO, "build", "worker", "farm-worker"))
FARMCTL = os.environ.get("FARMCTL", os.path.join(REPO, "build", "cli", "farmctl"))
DASHBOARD_FIXTURE = os.environ.get("DASHBOARD_FIXTURE", os.path.join(
    REPO, "build", "tests", "integration", "dashboard", "dashboard_fixture"))
EXAMPLE_DIR = os.path.join(REPO, "kernels", "examples", "attn_example")
EXAMPLE_RECIPE = os.path.join(EXAMPLE_DIR, "recipe.yaml")
# The build script line that makes a package's wheel, offline, with the system's setuptools.
PIP_WHEEL = ('"$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps --no-index '
             '-w "$FARM_WHEEL_DIR"')
PYTHON = "/usr/bin/python3"


def wait_until(predicate, timeout, what, interval=0.1):
    """Polls `predicate` until it returns a truthy value or `timeout` seconds pass. The pause
    grows from `interval` to at most 0.5 s: most predicates start a farmctl, and a build
    waited for at a fixed 0.1 s costs the suite's two cores more than the build itself."""
    deadline = time.monotonic() + timeout
    pause, most = interval, max(interval, 0.5)
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(pause)
        pause = min(pause * 1.5, most)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def skip(reason):
    """Skips the running test; pytest is imported here, as the benchmarks import this module
    and run without it."""
    import pytest
    pytest.skip(reason)


def pure_python_source(root, name, files=None):
    """Writes `root`/`name`-src: a setuptools package of one module `name` (VALUE = 1), plus
    `files` ({relative path: text}); returns its directory."""
    src = os.path.join(root, name + "-src")
    os.makedirs(src, exist_ok=True)
    sources = {"setup.py": f"from setuptools import setup\nsetup(name='{name}', version='1.0', "
                           f"py_modules=['{name}'])\n",
               name + ".py": "VALUE = 1\n", **(files or {})}
    for path, text in sources.items():
        with open(os.path.join(src, path), "w") as f:
            f.write(text)
    return src


def local_recipe(root, name, build=PIP_WHEEL, head="", tail="", source=None, file_name=None):
    """Writes `root`/`file_name` (default `name`.yaml) and returns its path: package `name`
    from the local folder `source` (default `name`-src, beside the recipe), built with the
    system's site packages by `build` (bash lines; by default the plain pip wheel). `head`
    is more recipe lines above `build:`, `tail` recipe lines below the script."""
    script = "".join(f"  {line}\n" for line in build.splitlines())
    path = os.path.join(root, file_name or name + ".yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\nsource: {{local: {source or name + '-src'}}}\n"
                f"system_site_packages: true\n{head}build: |\n{script}{tail}")
    return path


def example_recipe(root, file_name, matrix, tail="", build_first=""):
    """Writes `root`/`file_name` and returns its path: the attn example package (0.1.0, one
    CUDA kernel) built by pip wheel with two nvcc threads. `matrix` is the lines below
    `matrix:`, `tail` the recipe lines after them (validation, publish), `build_first` lines
    the build script runs before pip (indented by two spaces, each ending in a newline)."""
    path = os.path.join(root, file_name)
    with open(path, "w") as f:
        f.write(f"""name: attn-example
version: "0.1.0"
source:
  local: {EXAMPLE_DIR}
env:
  NVCC_THREADS: "2"
build: |
{build_first}  {PIP_WHEEL}
system_site_packages: true
timeout: 1800
gb_per_compile_job: 2
matrix:
{matrix}{tail}""")
    return path


def venv(root, name, *flags):
    """A venv at `root`/venv-`name` (python3 -m venv `flags`); its python. Skips the test
    where python3-venv is missing."""
    path = os.path.join(root, "venv-" + name)
    r = subprocess.run([PYTHON, "-m", "venv", *flags, path], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        skip(f"python3 -m venv failed (python3-venv missing?): {r.stderr}")
    return os.path.join(path, "bin", "python")


def job_log(farm, build_id):
    """The log of the first job of build `build_id`."""
    job = farm.ctl_json("show", str(build_id))["jobs"][0]
    return farm.ctl("logs", str(job["id"])).stdout


def finished(farm, build_id, timeout=240):
    """Build `build_id` once it has succeeded, failed or been cancelled (polled every 0.5 s)."""
    def done():
        b = farm.ctl_json("show", str(build_id))
        return b if b["state"] in ("BUILD_SUCCEEDED", "BUILD_FAILED", "BUILD_CANCELLED") else None
    return wait_until(done, timeout, "build %d to finish" % build_id, interval=0.5)


def first_attempt_ended(farm, job_id, timeout):
    """Job `job_id` once its first attempt has ended (has a cause; polled every 0.5 s)."""
    def ended():
        job = farm.ctl_json("job", str(job_id))
        return job if job.get("attempts") and job["attempts"][0].get("cause") else None
    return wait_until(ended, timeout, "the first attempt to fail", interval=0.5)


def log_of(farm, job_id, attempt=None):
    """farmctl logs of job `job_id` (its last attempt, or `attempt`)."""
    r = farm.ctl("logs", str(job_id), *(["--attempt", str(attempt)] if attempt else []))
    assert r.returncode == 0, r.stderr
    return r.stdout


def pid_alive(pid):
    """True when `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def pids_with_args(*argv):
    """Host pids of live processes whose command line is exactly `argv`."""
    want = ("\0".join(argv) + "\0").encode()
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if f.read() == want and pid_alive(int(entry)):
                    out.append(int(entry))
        except OSError:
            continue
    return out


class Farm:
    """One farm under test: a data directory, farmd, workers, and a farmctl wrapper."""

    def __init__(self, root):
        self.root = root
        self.data = os.path.join(root, "data")
        self.procs = []
        self.farmd = None
        self.address = None
        # --store of every farmd this farm starts: None for the SQLite file in the data
        # directory, or a postgres:// URL (pg_server.py starts a throwaway server).
        self.store = None

    # --- processes -------------------------------------------------------------------
    def _spawn(self, argv, log_name, env=None):
        log = open(os.path.join(self.root, log_name), "ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        log.close()
        self.procs.append(proc)
        return proc

    def start_farmd(self, *extra, lease_ms=30000, heartbeat_ms=500, http=False):
        ready = os.path.join(self.root, "farmd.addr")
        http_ready = os.path.join(self.root, "http.addr")
        for f in (ready, http_ready):
            if os.path.exists(f):
                os.unlink(f)
        if http:
            extra = ("--http-listen", "127.0.0.1:0", "--http-ready-file", http_ready, *extra)
        self.farmd = self._spawn(self.farmd_argv(ready, lease_ms, heartbeat_ms, *extra),
                                 "farmd.log")
        self.address = wait_until(lambda: read_file(ready), 30, "farmd's ready file").strip()
        if http:
            self.http_address = wait_until(lambda: read_file(http_ready), 30,
                                           "the dashboard's ready file").strip()
        return self.farmd

    def farmd_argv(self, ready, lease_ms, heartbeat_ms, *extra):
        store = ("--store", self.store) if self.store else ()
        return [FARMD, "--data-dir", self.data, "--listen", "127.0.0.1:0", "--ready-file", ready,
                "--lease-ms", str(lease_ms), "--heartbeat-ms", str(heartbeat_ms), *store, *extra]

    def start_worker(self, name="worker-1", *extra, prefix=(), env=None, discover_pythons=False):
        """Starts farm-worker; `prefix` runs it through a wrapper (a namespace, a chroot),
        which must exec it so that the harness's pid is the worker's. Unless the test names
        its own (`--python` in `extra`) or asks for discovery, the worker offers the system's
        python3 alone: the same interpreter on every machine, and no probe of each shim a
        version manager put on PATH (seconds per worker start)."""
        state = os.path.join(self.root, name)
        os.makedirs(state, exist_ok=True)
        if not discover_pythons and "--python" not in extra:
            extra = (*extra, "--python", PYTHON)
        return self._spawn([*prefix, FARM_WORKER, "--server-file",
                            os.path.join(self.root, "farmd.addr"),
                            "--enroll-token-file", os.path.join(self.data, "enroll.token"),
                            "--state-dir", state, "--work-dir", os.path.join(state, "work"),
                            "--name", name, *extra], f"{name}.log", env=env)

    def start_dashboard_fixture(self, *args):
        """tests/integration/dashboard's dashboard_fixture (the dashboard and index over this
        farm's data directory, no farmd) started with `args`; its address. Skips the test
        where the fixture is not built."""
        if not os.path.exists(DASHBOARD_FIXTURE):
            skip(f"{DASHBOARD_FIXTURE} is not built")
        ready = os.path.join(self.root, "dashboard.addr")
        self._spawn([DASHBOARD_FIXTURE, "--data-dir", self.data, "--ready-file", ready, *args],
                     "dashboard.log")
        return wait_until(lambda: read_file(ready), 30, "dashboard_fixture's ready file").strip()

    def start_git_server(self, repos_root):
        """Serves the git repositories under `repos_root` over HTTPS on 127.0.0.1 (git's
        smart HTTP protocol through `git http-backend`: git_server.py), with a certificate
        of a CA made here by `farmctl ca`. Returns (base URL, CA file); farmd and workers
        trust the server with --git-ca-file."""
        ca = os.path.join(self.root, "git-ca")
        for args in (["init", ca, "--name", "test git server"],
                     ["issue", ca, "git", "--server-cert", "--host", "127.0.0.1"]):
            r = subprocess.run([FARMCTL, "ca", *args], capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr
        ready = os.path.join(self.root, "git-server.url")
        self._spawn([sys.executable, os.path.join(os.path.dirname(__file__), "git_server.py"),
                     "--root", repos_root, "--cert", os.path.join(ca, "git.pem"),
                     "--key", os.path.join(ca, "git.key"), "--ready-file", ready],
                    "git-server.log")
        url = wait_until(lambda: read_file(ready), 30, "the git server's ready file").strip()
        return url, os.path.join(ca, "ca.pem")

    def stop(self, proc, sig=signal.SIGTERM, timeout=20):
        if proc.poll() is None:
            proc.send_signal(sig)
            proc.wait(timeout=timeout)
        return proc.returncode

    def close(self):
        # In a sanitizer build (common/scripts/test.sh exports FARM_SANITIZE): SIGTERM,
        # newest first (workers before the farmd they report to), so that each process
        # stops cleanly and LeakSanitizer checks it at exit; SIGKILL only past the grace.
        # Otherwise SIGKILL at once, which keeps the plain suite's time.
        graceful = bool(os.environ.get("FARM_SANITIZE"))
        for proc in reversed(self.procs):
            if proc.poll() is None:
                if graceful:
                    proc.terminate()
                    try:
                        proc.wait(timeout=10)
                        continue
                    except subprocess.TimeoutExpired:
                        pass
                proc.kill()
                proc.wait(timeout=10)

    # --- farmctl ---------------------------------------------------------------------
    def ctl(self, *args, token_file=None, timeout=600, server=None):
        token_file = token_file or os.path.join(self.data, "admin.token")
        argv = [FARMCTL, "--server", server or self.address, "--token-file", token_file, *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)

    def ctl_json(self, *args, **kw):
        r = self.ctl("--output", "json", *args, **kw)
        assert r.returncode == 0, f"farmctl {args} failed ({r.returncode}): {r.stderr}"
        return json.loads(r.stdout)

    def wait_workers(self, count, timeout=30):
        return wait_until(lambda: len(self.ctl_json("workers").get("workers", [])) >= count,
                          timeout, f"{count} registered worker(s)")

    def log(self, name):
        return read_file(os.path.join(self.root, name)) or ""


def read_file(path):
    """The text of `path`, or None where it cannot be read (not there yet)."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


# What AddressSanitizer, LeakSanitizer and UBSan print when the binaries are built with
# FARM_SANITIZE: any such line in a process's log fails the test that ran it.
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error: ",
                     "WARNING: ThreadSanitizer")


def sanitizer_reports(root):
    """The first sanitizer report line of each *.log under `root`."""
    found = []
    for name in sorted(os.listdir(root)):
        if not name.endswith(".log"):
            continue
        for line in (read_file(os.path.join(root, name)) or "").splitlines():
            if any(marker in line for marker in SANITIZER_MARKERS):
                found.append(f"{name}: {line.strip()}")
                break
    return found


def make_farm(request):
    root = tempfile.mkdtemp(prefix="farm-it-")
    farm = Farm(root)

    def finish():
        farm.close()
        reports = sanitizer_reports(root)
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            print(f"\nkept test directory {root}")
            for name in sorted(os.listdir(root)):
                if name.endswith(".log"):
                    print(f"----- {name} (last 40 lines)")
                    print("\n".join(farm.log(name).splitlines()[-40:]))
        elif not reports:
            shutil.rmtree(root, ignore_errors=True)
        assert not reports, f"sanitizer reports (test directory {root} kept):\n" + "\n".join(reports)
    request.addfinalizer(finish)
    return farm


def descendants(pid):
    """Pids of every live descendant of `pid` (read from /proc), deepest last."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().split(")")[-1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill9_tree(proc):
    """SIGKILLs a process the harness started and then the processes it had started."""
    tree = descendants(proc.pid)
    proc.kill()
    proc.wait(timeout=10)
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
