"""Rough edges a new user hit, each on the real farmd, farm-worker and farmctl: what the
docs tell them to run works, and when something cannot work they are told why, where, and
what to do instead."""
import json
import os
import re
import shutil
import subprocess
import tarfile

import pytest

from farm_harness import EXAMPLE_RECIPE, FARMCTL, pure_python_source, wait_until


def follow(farm, *args, timeout=300):
    """submit --follow in JSON: the build as it ended (farmctl exits 1 for a failed one)."""
    r = farm.ctl("--output", "json", "submit", *args, "--follow", timeout=timeout)
    assert r.returncode in (0, 1) and r.stdout.strip(), (r.returncode, r.stderr)
    return json.loads(r.stdout)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def blob_files(farm):
    root = os.path.join(farm.data, "blobs")
    return sorted(os.path.join(d, f) for d, _, files in os.walk(root) for f in files)


def test_walkthrough_arch_lists_build_and_a_bad_matrix_uploads_nothing(farm):
    farm.start_farmd()
    # The recipe lists "9.0;12.0a;12.1a": any list of those targets is a cell of it.
    for arch in ("12.1a", "9.0", "9.0;12.1a"):
        build = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", arch)
        assert [j["cell"]["arch_list"] for j in build["jobs"]] == [arch], build
    before = blob_files(farm)
    r = farm.ctl("submit", EXAMPLE_RECIPE, "--arch-list", "8.9")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "the matrix has no buildable cell" in r.stderr, r.stderr
    assert "to build 8.9, add it to the recipe's matrix.arch_lists" in r.stderr, r.stderr
    assert "source:" not in r.stdout + r.stderr, r.stdout  # refused before packing
    r = farm.ctl("submit", EXAMPLE_RECIPE, "--arch-list", "12.1")
    assert r.returncode == 2 and "12.1 is built as 12.1a" in r.stderr, r.stderr
    assert blob_files(farm) == before
    assert len(farm.ctl_json("list")["builds"]) == 3


def make_tarball(root):
    """pkg-1.0.tar.gz: every entry under pkg-1.0/, as release tarballs are."""
    src = pure_python_source(root, "tarpkg")
    path = os.path.join(root, "pkg-1.0.tar.gz")
    with tarfile.open(path, "w:gz") as tar:
        for name in sorted(os.listdir(src)):
            tar.add(os.path.join(src, name), arcname="pkg-1.0/" + name)
    return path


TARBALL_RECIPE = """name: tarpkg
source: {{tarball: pkg-1.0.tar.gz}}
subdirectory: {sub}
build: |
  "$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps --no-index -w "$FARM_WHEEL_DIR"
"""


def test_a_subdirectory_the_source_lacks_is_the_recipes_error(farm):
    # Git sources are remote only: the repository is served over HTTPS on 127.0.0.1.
    repos = os.path.join(farm.root, "git")
    repo = pure_python_source(repos, "gitpkg")
    base, ca = farm.start_git_server(repos)
    farm.start_farmd("--git-ca-file", ca)
    make_tarball(farm.root)
    before = blob_files(farm)
    for sub, fix in (("pkg-1.0", "leave subdirectory out"),
                     ("pkg-1.0/lib", "write subdirectory: lib")):
        recipe = write(os.path.join(farm.root, "tar.yaml"), TARBALL_RECIPE.format(sub=sub))
        r = farm.ctl("submit", recipe)
        assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
        assert f"subdirectory {sub} is not in the source" in r.stderr, r.stderr
        assert "its top level holds: setup.py, tarpkg.py" in r.stderr, r.stderr
        assert "single top folder pkg-1.0/ is stripped" in r.stderr and fix in r.stderr, r.stderr
    assert blob_files(farm) == before
    assert farm.ctl_json("list").get("builds", []) == []

    # A git source is fetched by the worker: there the job fails once, as the recipe's
    # failure, and says what the tree holds.
    farm.start_worker("worker-1", "--git-ca-file", ca)
    for args in (["init", "--quiet", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit",
                  "--quiet", "-m", "one"]):
        subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, timeout=60)
    recipe = write(os.path.join(farm.root, "git.yaml"), f"""name: gitpkg
source: {{git: {{url: "{base}/gitpkg-src", ref: main}}}}
subdirectory: gitpkg-1.0
build: |
  true
""")
    build = follow(farm, recipe, timeout=300)
    assert build["state"] == "BUILD_FAILED", build
    job = build["jobs"][0]
    assert len(job["attempts"]) == 1, job  # not retried as infrastructure
    attempt = job["attempts"][0]
    assert attempt["cause"] == "CAUSE_BUILD_FAILED", attempt
    assert attempt["detail"].startswith(
        "subdirectory gitpkg-1.0 does not exist in the source; its top level holds: "), attempt
    assert "gitpkg.py" in attempt["detail"] and "setup.py" in attempt["detail"], attempt


NVCC = "/usr/local/cuda/bin/nvcc"
ARCH_A_SETUP = '''import os, subprocess
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ARCHS = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
if "a" in ARCHS:
    raise SystemExit("archa takes TORCH_CUDA_ARCH_LIST=9.0 and builds sm_90a itself, got " + ARCHS)


class Nvcc(build_ext):
    def get_ext_filename(self, ext_name):
        return os.path.join(*ext_name.split(".")) + ".so"

    def build_extension(self, ext):
        out = os.path.abspath(self.get_ext_fullpath(ext.name))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        nvcc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
        subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC",
                        "-gencode=arch=compute_90a,code=sm_90a", ext.sources[0], "-o", out],
                       check=True)


setup(name="archa", version="1.0", packages=["archa"],
      ext_modules=[Extension("archa._k", sources=["k.cu"])], cmdclass={"build_ext": Nvcc})
'''
ARCH_A_RECIPE = """name: archa
source: {{local: src}}
matrix:
  python: ["3.11"]
  cuda: ["13.0"]
  arch_lists: ["{arch}"]
build: |
  {prefix}"$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps --no-index -w "$FARM_WHEEL_DIR"
system_site_packages: true
retry: {{max_attempts: 1}}
"""


def test_a_package_that_builds_sm90a_for_90_is_told_how_to_ask_for_it(farm):
    if not os.path.exists(NVCC):
        pytest.skip(f"{NVCC} missing: the package compiles a CUDA kernel")
    farm.start_farmd()
    farm.start_worker()
    write(os.path.join(farm.root, "src", "setup.py"), ARCH_A_SETUP)
    write(os.path.join(farm.root, "src", "archa", "__init__.py"), "")
    write(os.path.join(farm.root, "src", "k.cu"), "__global__ void k(float* x) { x[0] = 1; }\n")
    plain = write(os.path.join(farm.root, "plain.yaml"), ARCH_A_RECIPE.format(arch="9.0", prefix=""))
    build = follow(farm, plain, timeout=600)
    assert build["state"] == "BUILD_FAILED", build
    detail = build["jobs"][0]["attempts"][0]["detail"]
    assert "lacks sm_90; it holds sm_90a instead, which runs on cc 9.0" in detail, detail
    assert 'matrix.arch_lists: ["9.0a"]' in detail and "TORCH_CUDA_ARCH_LIST=9.0 " in detail, detail
    # What the message says works.
    fixed = write(os.path.join(farm.root, "fixed.yaml"),
                  ARCH_A_RECIPE.format(arch="9.0a", prefix="TORCH_CUDA_ARCH_LIST=9.0 "))
    build = follow(farm, fixed, timeout=600)
    assert build["state"] == "BUILD_SUCCEEDED", build
    manifest = build["jobs"][0]["artifacts"][0]["manifest"]
    assert {i["arch"] for i in manifest["images"]} == {"sm_90a"}, manifest


def git(repo, *args):
    subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                    *args], check=True, capture_output=True, timeout=60)


def zip_times(path):
    import zipfile
    with zipfile.ZipFile(path) as z:
        return {i.date_time for i in z.infolist()}


SAME_COMMIT_RECIPE = """name: samecommit
source: {local: src}
build: |
  "$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps --no-index -w "$FARM_WHEEL_DIR"
system_site_packages: true
"""


def test_two_checkouts_of_one_commit_build_the_same_wheel(farm):
    farm.start_farmd()
    farm.start_worker()
    repo = pure_python_source(farm.root, "samecommit")
    git(repo, "init", "--quiet", "-b", "main")
    git(repo, "add", "-A")
    subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                    "commit", "--quiet", "-m", "one"], check=True, capture_output=True,
                   timeout=60, env=dict(os.environ, GIT_COMMITTER_DATE="2024-05-01T12:00:00Z",
                                        GIT_AUTHOR_DATE="2024-05-01T12:00:00Z"))
    checkouts = []
    for i, mtime in enumerate((1_600_000_000, 1_700_000_000)):
        dest = os.path.join(farm.root, f"checkout-{i}")
        subprocess.run(["git", "clone", "--quiet", repo, dest], check=True, timeout=60)
        for d, _, files in os.walk(dest):
            for f in files:
                os.utime(os.path.join(d, f), (mtime, mtime))
        checkouts.append(dest)
    os.makedirs(os.path.join(farm.root, "src"))  # the recipe's own; --source-dir replaces it
    recipe = write(os.path.join(farm.root, "same.yaml"), SAME_COMMIT_RECIPE)
    wheels = []
    for dest in checkouts:
        build = follow(farm, recipe, "--source-dir", dest, "--force", timeout=300)
        assert build["state"] == "BUILD_SUCCEEDED", build
        job = build["jobs"][0]
        assert job.get("attempts"), job  # built, not answered from the store
        wheels.append(job["artifacts"][0])
    assert wheels[0]["sha256"] == wheels[1]["sha256"], wheels
    out = os.path.join(farm.root, "dl")
    assert farm.ctl("download", str(build["id"]), "--dir", out).returncode == 0
    path = os.path.join(out, wheels[0]["filename"])
    assert zip_times(path) == {(2024, 5, 1, 12, 0, 0)}, zip_times(path)  # the commit's time

    # A directory outside git: the fixed time, whatever the files' own.
    plain = os.path.join(farm.root, "plain")
    shutil.copytree(checkouts[0], plain, ignore=shutil.ignore_patterns(".git"))
    build = follow(farm, recipe, "--source-dir", plain, timeout=300)
    assert build["state"] == "BUILD_SUCCEEDED", build
    out = os.path.join(farm.root, "dl-plain")
    assert farm.ctl("download", str(build["id"]), "--dir", out).returncode == 0
    (name,) = [n for n in os.listdir(out) if n.endswith(".whl")]  # beside it: its statements
    assert zip_times(os.path.join(out, name)) == {(1980, 1, 1, 0, 0, 0)}


def test_logs_follow_of_a_pending_job_waits_for_its_log(farm):
    farm.start_farmd()
    os.makedirs(os.path.join(farm.root, "src"))
    recipe = write(os.path.join(farm.root, "echo.yaml"), """name: echo
source: {local: src}
build: |
  echo "hello from the build"
retry: {max_attempts: 1}
""")
    job = farm.ctl_json("submit", recipe)["jobs"][0]
    argv = [FARMCTL, "--server", farm.address, "--token-file",
            os.path.join(farm.data, "admin.token"), "logs", str(job["id"]), "--follow"]
    logs = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        try:
            logs.wait(timeout=3)
            raise AssertionError(f"logs --follow of a pending job ended: {logs.communicate()}")
        except subprocess.TimeoutExpired:
            pass
        farm.start_worker()
        out, err = logs.communicate(timeout=120)
    finally:
        if logs.poll() is None:
            logs.kill()
            logs.wait(timeout=10)
    assert logs.returncode == 0, (out, err)
    assert "hello from the build" in out, out
    assert f"farmctl: job {job['id']} waits: no worker is registered" in err, err
    # The build made no wheel: download fails as an operation (1), not as bad usage (2).
    r = farm.ctl("download", str(job["build_id"]), "--dir", os.path.join(farm.root, "dl"))
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "(failed) has no wheel to download" in r.stderr, r.stderr


def test_json_output_is_uniform(farm):
    farm.start_farmd()
    created = farm.ctl_json("schedules", "add", EXAMPLE_RECIPE, "--cron", "@daily", "--paused")
    assert isinstance(created["id"], int), created
    listed = farm.ctl_json("schedules", "list")["schedules"]
    assert [s["id"] for s in listed] == [created["id"]], listed
    request = listed[0]["request"]
    # A list is a summary: no recipe text, no base64 script.
    assert "validation_script" not in request and "recipe_yaml" not in request, request
    shown = farm.ctl_json("schedules", "show", str(created["id"]))["schedules"][0]
    assert shown["id"] == created["id"]
    assert shown["request"]["validation_script"].startswith(('"""', "#", "import")), \
        shown["request"]["validation_script"][:80]  # the script's text, not base64
    with open(os.path.join(os.path.dirname(EXAMPLE_RECIPE), "validate.py")) as f:
        assert shown["request"]["validation_script"] == f.read()

    wheel = os.path.join(farm.root, "w", "tiny-1.0-py3-none-any.whl")
    src = pure_python_source(farm.root, "tiny")
    subprocess.run(["/usr/bin/python3", "-m", "pip", "wheel", ".", "--no-build-isolation",
                    "--no-deps", "--no-index", "-w", os.path.dirname(wheel)], cwd=src,
                   check=True, capture_output=True, timeout=300)
    r = subprocess.run([FARMCTL, "--output", "json", "inspect", wheel], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["filename"] == os.path.basename(wheel) and report["ok"] is True, report
    assert report["name"] == "tiny" and report["problems"] == [], report


def test_list_has_a_header_cells_durations_and_says_blocked(farm):
    farm.start_farmd()
    farm.start_worker()  # CUDA 13.0: the 12.8 cell can never run
    farm.wait_workers(1)
    os.makedirs(os.path.join(farm.root, "src"))
    recipe = write(os.path.join(farm.root, "two.yaml"), """name: two-cells
source: {local: src}
matrix:
  python: ["3.11"]
  cuda: ["13.0", "12.8"]
build: |
  exit 1
retry: {max_attempts: 1}
""")
    build = farm.ctl_json("submit", recipe)

    def listed():
        lines = farm.ctl("list").stdout.splitlines()
        return lines if "failed" in lines[1] else None
    header, row = wait_until(listed, 120, "the 13.0 cell to fail")
    assert header.split() == ["BUILD", "RECIPE", "OWNER", "STATE", "JOBS", "CELLS", "CREATED",
                              "DURATION"]
    assert row.startswith(f"{build['id']} ") and " blocked " in row, row
    assert "2 jobs: 1 no worker, 1 failed" in row and "py3.11 cuda13.0,12.8" in row, row
    assert " for " in row and row.endswith("s"), row  # still running: how long so far


def test_the_log_and_the_attempt_give_one_peak_rss(farm):
    """A build whose child holds 150 MiB: the log's "peak RSS" and the attempt's agree and
    count the child (in the bubblewrap sandbox wait4 sees only bwrap's own 10 MiB)."""
    farm.start_farmd()
    farm.start_worker()
    os.makedirs(os.path.join(farm.root, "src"))
    recipe = write(os.path.join(farm.root, "mem.yaml"), """name: mem
source: {local: src}
build: |
  python3 -c 'x = bytearray(150 << 20); import time; time.sleep(3); print("held")'
retry: {max_attempts: 1}
""")
    build = follow(farm, recipe, timeout=300)
    job = build["jobs"][0]
    peak = job["attempts"][0]["peak_rss_bytes"]
    assert peak >= 150 << 20, peak
    log = farm.ctl("logs", str(job["id"])).stdout
    line = next(l for l in log.splitlines() if "build command exited with code" in l)
    m = re.search(r"peak RSS ([0-9.]+) (MiB|GiB)", line)
    assert m, line
    logged = float(m.group(1)) * (1 << (20 if m.group(2) == "MiB" else 30))
    assert abs(logged - peak) <= 0.05 * (1 << 20) + 1, (line, peak)  # shown to 0.1 MiB


def test_yaml_mistakes_are_named_where_they_are(farm):
    farm.start_farmd()
    os.makedirs(os.path.join(farm.root, "src"))
    tab = write(os.path.join(farm.root, "tab.yaml"), "name: t\nsource:\n\tlocal: src\nbuild: |\n  true\n")
    r = farm.ctl("submit", tab)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "tab.yaml:3:1: a tab indents this line: YAML indents with spaces only" in r.stderr, r.stderr
    flow = write(os.path.join(farm.root, "flow.yaml"),
                 'name: t\nsource: {local: src}\nmatrix:\n  cuda: ["13.0"\n  python: ["3.11"]\n'
                 'build: |\n  true\n')
    r = farm.ctl("submit", flow)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "flow.yaml:4:9: this '[' opens a list that is never closed: a ']' is missing" in \
        r.stderr, r.stderr


def test_small_things(farm):
    r = subprocess.run([FARMCTL, "sumbit"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r
    assert r.stderr.strip().splitlines() == [
        'farmctl: unknown command "sumbit"; `farmctl --help` lists the commands, '
        '`farmctl COMMAND --help` one command\'s flags'], r.stderr
    farm.start_farmd()
    farm.start_worker()
    farm.wait_workers(1)
    worker = farm.ctl_json("workers")["workers"][0]
    versions = [p["version"] for p in worker["capabilities"]["pythons"]]
    header, line = farm.ctl("workers").stdout.splitlines()[:2]
    assert header.split("\t")[:3] == ["ID", "NAME", "STATE"], header
    python = line.split("\tPython ")[1].split("\t")[0].split()
    assert python == sorted(set(versions), key=versions.index), (line, versions)


def test_a_missing_token_says_farmd_reads_secrets_at_start(farm):
    env_backup = {k: os.environ.pop(k) for k in ("FARM_GITHUB_TOKEN", "FARM_HF_TOKEN")
                  if k in os.environ}
    try:
        farm.start_farmd("--publish-pending-hardware", "--publish-interval-ms", "300")
    finally:
        os.environ.update(env_backup)
    farm.start_worker()
    src = pure_python_source(farm.root, "pubpkg")
    recipe = write(os.path.join(farm.root, "pub.yaml"), f"""name: pubpkg
source: {{local: {src}}}
build: |
  "$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps --no-index -w "$FARM_WHEEL_DIR"
system_site_packages: true
publish:
  github_repo: owner/pubpkg
""")
    build = follow(farm, recipe, timeout=300)
    assert build["state"] == "BUILD_SUCCEEDED", build

    def failed():
        rows = farm.ctl_json("publications", str(build["id"])).get("publications", [])
        return rows if rows and all(r.get("state") == "failed" for r in rows) else None
    rows = wait_until(failed, 60, "the publications to fail for want of a token", interval=0.5)
    for row in rows:
        assert "farmd has no GITHUB_TOKEN" in row["error"], row
        assert "then restart farmd, which reads them only at start" in row["error"], row
