"""Git sources come from remote repositories only (issue 33, item 3).

On the real farmd, farm-worker and farmctl: a recipe whose git source is a path on the host
(or file://) is refused at submit, with the recipe position, before any git runs and
without a byte of the repository reaching a log; a remote-looking URL on 127.0.0.1 that
never answers makes farmd answer within its bound with one clean line; farmd's resolution
can be turned off, and then a ref is refused while a full commit is taken as it is. A real
git source over HTTPS (a git server on 127.0.0.1, as a forge serves it) resolves and
builds, cloned inside the sandbox as the build user. That a worker refuses a local path
even when farmd passed one on is tested at the worker's level
(tests/unit/worker/job/workspace_test.cc), as is the URL policy (tests/unit/common/).
"""
import os
import shutil
import socket
import subprocess
import textwrap
import threading
import time

import pytest

from farm_harness import pure_python_source

SECRET = "the-host-repository-secret-4711"


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=farm-test",
                           "-c", "user.email=farm-test@example.invalid", *args],
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()


def make_repo(parent, name):
    """A git repository of a pure-Python package `name` (one commit on main) holding a
    secret file; returns its path and head commit."""
    repo = pure_python_source(parent, name, {"SECRET.txt": SECRET + "\n"})
    subprocess.run(["git", "init", "--quiet", "-b", "main", repo], check=True, timeout=60)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "initial")
    return repo, git(repo, "rev-parse", "HEAD")


def git_recipe(root, name, url, ref="ref: main", build=None):
    path = os.path.join(root, name + ".yaml")
    build = build or ('cat SECRET.txt; "$FARM_PYTHON" -m pip wheel . --no-build-isolation '
                      '--no-deps --no-index -w "$FARM_WHEEL_DIR"')
    with open(path, "w") as f:
        f.write(textwrap.dedent(f"""\
            name: {name}
            source:
              git: {{url: "{url}", {ref}}}
            system_site_packages: true
            build: |
              {build}
            """))
    return path


def everything_logged(farm):
    return "".join(farm.log(n) for n in os.listdir(farm.root) if n.endswith(".log"))


def test_a_local_git_path_or_file_url_is_refused_at_submit(farm):
    farm.start_farmd()
    farm.start_worker()
    repo, head = make_repo(farm.root, "hostrepo")
    for url in (repo, "file://" + repo, repo + "/.git"):
        for pin in ("ref: main", f"commit: {head}"):
            r = farm.ctl("submit", git_recipe(farm.root, "hostrepo", url, pin))
            assert r.returncode == 2, (url, pin, r.stdout, r.stderr)
            assert "hostrepo.yaml:3:" in r.stderr, r.stderr  # file:line:col of the url
            assert "git sources must be remote https:// URLs" in r.stderr, r.stderr
    assert farm.ctl_json("list").get("builds", []) == []
    assert SECRET not in everything_logged(farm)
    assert "ls-remote" not in farm.log("farmd.log")


class HangingServer:
    """Accepts TCP connections on 127.0.0.1 and never answers (until closed)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        for _ in range(1000):
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self):
        self.sock.close()
        for c in self.held:
            c.close()


def test_a_url_that_hangs_is_answered_within_farmds_bound_in_one_clean_line(farm):
    farm.start_farmd("--git-timeout-s", "3")
    server = HangingServer()
    try:
        url = f"https://127.0.0.1:{server.port}/attn.git"
        t0 = time.monotonic()
        r = farm.ctl("submit", git_recipe(farm.root, "hangs", url), timeout=120)
        took = time.monotonic() - t0
    finally:
        server.close()
    assert r.returncode != 0, r.stdout
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].endswith(f"cannot resolve main of {url}: git ls-remote timed out after 3 s"), lines
    assert took < 60, took  # the bound is farmd's 3 s, not git's own patience
    print(f"farmd answered a hanging git server in {took:.1f} s (bound 3 s)")


def test_with_resolution_off_farmd_runs_no_git(farm):
    farm.start_farmd("--no-git-resolve")
    server = HangingServer()  # would hang any git that tried it
    try:
        url = f"https://127.0.0.1:{server.port}/attn.git"
        r = farm.ctl("submit", git_recipe(farm.root, "byref", url), timeout=60)
        assert r.returncode != 0 and "--no-git-resolve" in r.stderr, r.stderr
        commit = "0123456789abcdef0123456789abcdef01234567"
        built = farm.ctl_json("submit", git_recipe(farm.root, "bycommit", url, f"commit: {commit}"),
                              timeout=60)
        assert built["recipe"]["source"]["git"]["commit"] == commit
        assert server.held == []  # nobody connected: farmd ran no git
    finally:
        server.close()


def test_a_git_source_over_https_is_resolved_and_cloned_in_the_sandbox(farm):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed on this machine")
    repos = os.path.join(farm.root, "git")
    repo, head = make_repo(repos, "remote")
    base, ca = farm.start_git_server(repos)
    farm.start_farmd("--git-ca-file", ca)
    farm.start_worker("worker-1", "--git-ca-file", ca, "--keep-workspaces")
    built = farm.ctl_json("submit", git_recipe(farm.root, "remote", f"{base}/remote-src"),
                          "--follow", timeout=600)
    assert built["state"] == "BUILD_SUCCEEDED", built
    assert built["recipe"]["source"]["git"]["commit"] == head  # farmd resolved main
    (job,) = built["jobs"]
    log = farm.ctl("logs", str(job["id"])).stdout
    assert SECRET in log  # the build read its own source: the repository arrived
    # Cloned inside the sandbox: as the build user, when the worker is root.
    work = os.path.join(farm.root, "worker-1", "work")
    (ws,) = [d for d in os.listdir(work) if d.startswith(f"job-{job['id']}-")]
    owner = os.stat(os.path.join(work, ws, "src", "setup.py")).st_uid
    if os.geteuid() == 0:
        assert owner != 0, "the clone ran as root, not inside the sandbox as the build user"
