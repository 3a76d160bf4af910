"""Release day on the real farmd, farm-worker and farmctl (docs/schedules.md "Watches"):
upstream changes become validated wheels with no human step.

- A recipe whose torch axis follows the per-CUDA index (`torch: ">=2.9"`) is resolved at
  submit against the index; a schedule watches that index. When a new torch release
  (a real stand-in wheel, 2.10.0+cu130) appears on the protocol-faithful fake index, the
  next poll fires one build: the old cell is answered from the store, the new one is built
  on a worker that provisions it, validated (a test-only fake GPU runs the script), pins
  torch==2.10.*, and is published to the GitHub fake. The run records the release's upload
  time. Polls of an unchanged index are answered 304 (conditional GETs). The test reports
  the time from the release's appearance to the published wheel, phase by phase (poll,
  resolve, queue, provision, build and validate, publish); with FARM_RELEASE_DAY_REPORT
  set it writes them there as JSON (tests/bench/release_day_bench.py, docs/benchmarks.md).
- A watch on the tags of a git source (a git server on 127.0.0.1 speaking git's smart
  HTTP over TLS): a tag pushed while farmd is down (kill -9) fires exactly once after it
  comes back, and a second kill -9 and restart fire nothing more.
- Release candidates (docs/schedules.md): before the release, a second schedule of the same
  recipe follows the test channel too (--watch-candidates). torch 2.10.0 published there
  (under its final numbers) builds a wheel labelled as a release candidate
  (+cu130torch2.10rc), announced as one in coverage and the feed, left out of the default
  index views and of publishing, and listed in the /rc/ views, where real pip downloads it;
  the release watch does not fire. The release's build then replaces the candidate's in
  coverage and in every view, and the candidate's build stays recorded.
- A new redistrib_X.Y.Z.json in the redist listing fires a toolkit watch.
- Bad watches are refused when the schedule is created, with the reason.
"""

import calendar
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
import zipfile

import pytest

from farm_harness import finished, log_of, wait_until
from test_environments import BUILD_WHEEL, start_worker
from test_provision import RunningFake, make, serve_index_and_python
from test_publish import GH_REPO, GH_TOKEN, Fake, publications, secrets_file
from test_schedules import git

FOLLOWING = """name: relpkg
source: {local: %(src)s}
build: python build_wheel.py
matrix:
  python: ["3.11"]
  torch: ">=2.9"
  cuda: ["13.0"]
environment:
  build_requirements: ["setuptools==66.1.1"]
  toolkit: false
retry: {max_attempts: 3}
timeout: 600
validation: {import: [envpkg.torch_check], script: validate.py, gpu_memory_gb: 0.1}
publish: {github_repo: %(repo)s, github_tag_template: "v{version}"}
"""

VALIDATE = """import torch, envpkg
print("validated next to torch", torch.__version__, flush=True)
"""

TAGGED = """name: tagpkg
source: {git: {url: '%(url)s', ref: main}}
build: python build_wheel.py
matrix:
  python: ["3.11"]
  torch: ["2.9"]
  cuda: ["13.0"]
environment:
  torch: {"2.9": "2.9.0"}
  build_requirements: ["setuptools==66.1.1"]
  toolkit: false
timeout: 600
"""


@pytest.fixture(scope="module")
def upstreams():
    work = tempfile.mkdtemp(prefix="release-day-upstreams-")
    data = os.path.join(work, "data")
    python, fakes = serve_index_and_python(work, data)
    yield {"work": work, "data": data, **fakes}
    for fake in fakes.values():
        fake.stop()
    shutil.rmtree(work, ignore_errors=True)


def farmd_flags(up):
    return ("--upstream-index", "cu130=%s/whl/cu130/" % up["index"].url,
            "--upstream-index", "test-cu130=%s/whl/test/cu130/" % up["index"].url,
            "--upstream-tree", "python=%s/" % up["python"].url, "--watch-min-poll-s", "1")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def following_recipe(farm):
    src = write(os.path.join(farm.root, "relpkg", "build_wheel.py"), BUILD_WHEEL)
    write(os.path.join(farm.root, "validate.py"), VALIDATE)
    return write(os.path.join(farm.root, "relpkg.yaml"),
                 FOLLOWING % {"src": os.path.dirname(src), "repo": GH_REPO})


def runs_of(farm, schedule_id):
    shown = farm.ctl_json("schedules", "show", str(schedule_id), "--limit", "50")
    return shown["schedules"][0].get("recent_runs", [])


def wait_runs(farm, schedule_id, count, what, timeout=60):
    return wait_until(lambda: (lambda r: r if len(r) >= count else None)(runs_of(farm, schedule_id)),
                      timeout, what, interval=0.3)


def publish_torch(up, version, upload_unix_s, index="cu130"):
    """Puts a new torch stand-in on the cu130 index (or its test channel, "test-cu130") the
    way an index gains a file: written aside, then renamed in, with its upload time set."""
    staging = tempfile.mkdtemp(dir=up["work"])
    make("torch-wheels", "--out", staging, "--version", version, "--python-tag", "cp311")
    for entry in os.listdir(staging):
        os.utime(os.path.join(staging, entry), (upload_unix_s, upload_unix_s))
        os.rename(os.path.join(staging, entry), os.path.join(up["data"], index, entry))


def seconds(rfc3339):
    """Unix seconds of an RFC 3339 UTC time with an optional fraction."""
    head, _, frac = rfc3339.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(head, "%Y-%m-%dT%H:%M:%S")) + float("0." + (frac or "0"))


def release_day_phases(farm, released_at, fired, build, cell):
    """The seconds from `released_at` (when the release appeared on the index) to the
    published wheel of `cell` (a coverage cell of `build`; published when every row of
    the build's GitHub release is), phase by phase."""
    job = next(j for j in build["jobs"] if j["cell"]["torch"] == cell["torch"])
    attempt = job["attempts"][-1]
    log = log_of(farm, job["id"])
    ready = re.search(r"environment ready in (\d+) ms", log)
    published = max(seconds(r["updated_at"]) for r in publications(farm, build["id"]))
    # The environments locked when the run's build was submitted: farmd's last such line.
    locked = re.findall(r"locked \d+ environment\(s\) with \d+ resolution\(s\) in (\d+) ms",
                        farm.log("farmd.log"))
    out = {"poll": round(seconds(fired["fire_time"]) - released_at, 2),
           "resolve": round(int(locked[-1]) / 1000, 2) if locked else None}
    last = seconds(attempt["started_at"])
    out["queue"] = round(last - seconds(fired["fire_time"]) - (out["resolve"] or 0), 2)
    out["provision"] = round(int(ready.group(1)) / 1000, 2) if ready else None
    out["build_and_validate"] = round(seconds(cell["validated_at"]) - last -
                                      (out["provision"] or 0), 2)
    out["publish"] = round(published - seconds(cell["validated_at"]), 2)
    out["total"] = round(published - released_at, 2)
    return out


def test_a_new_torch_on_the_index_becomes_a_validated_wheel(farm, upstreams, tmp_path):
    up = upstreams
    gh = Fake(farm, "fake_github.py", GH_TOKEN, "fake_github")
    farm.start_farmd(*farmd_flags(up), "--secrets-file", secrets_file(), "--github-api", gh.url,
                     "--publish-interval-ms", "300", http=True)
    start_worker(farm, "--test-fake-gpu", "FakeGPU:9.0")
    farm.wait_workers(1)
    recipe = following_recipe(farm)

    # Submitted by hand once: the axis resolves to what the index has now, torch 2.9.
    first = finished(farm, farm.ctl_json("submit", recipe)["id"])
    assert first["state"] == "BUILD_SUCCEEDED", json.dumps(first, indent=1)
    assert [j["cell"]["torch"] for j in first["jobs"]] == ["2.9"]

    made = farm.ctl_json("schedules", "add", recipe, "--watch-torch", ">=2.9", "--poll", "1")
    sid = made["id"]
    baseline = wait_runs(farm, sid, 1, "the watch's first poll")
    assert baseline[0]["trigger"] == "TRIGGER_WATCH", baseline
    assert baseline[0]["outcome"] == "RUN_SKIPPED_UNCHANGED", baseline
    assert "first poll: watching 1 upstream item(s)" in baseline[0]["detail"], baseline
    # Unchanged polls cost a 304, and record nothing.
    wait_until(lambda: up["index"].counters().get("not-modified:/whl/cu130/torch/", 0) >= 2,
               30, "two conditional polls answered 304")
    assert len(runs_of(farm, sid)) == 1
    # Weeks before, the release's candidate on the test channel.
    candidate = release_candidate(farm, up, recipe, sid, tmp_path)

    released = int(time.time()) - 3600  # published an hour ago, seen now
    appeared = time.time()
    publish_torch(up, "2.10.0+cu130", released)
    fired = wait_runs(farm, sid, 2, "the watch to fire on torch 2.10.0")[0]
    assert fired["outcome"] == "RUN_SUBMITTED", fired
    assert "new upstream: torch 2.10.0 (cu130)" in fired["detail"], fired
    assert fired["upstream_time"].startswith(
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(released))), fired
    # The dashboard's API says what the schedule watches and when upstream published.
    with urllib.request.urlopen("http://%s/api/v1/schedules/%s" % (farm.http_address, sid),
                                timeout=30) as res:
        shown = json.loads(res.read())
    assert shown["watch"] == "torch >=2.9, every 1 s", shown
    assert shown["watch_status"] == "2 upstream item(s) seen", shown
    assert shown["runs"][0]["upstream_time"] == fired["upstream_time"], shown
    build = finished(farm, int(fired["build_id"]))
    assert build["state"] == "BUILD_SUCCEEDED", json.dumps(build, indent=1)
    # The build says which releases the axis followed to, not the recipe's ">=2.9".
    followed = 'torch ">=2.9" resolved to 2.9.0, 2.10.0'
    assert followed in farm.ctl("show", str(build["id"])).stdout
    with urllib.request.urlopen("http://%s/api/v1/builds/%s" % (farm.http_address, build["id"]),
                                timeout=30) as res:
        assert json.loads(res.read())["torch_followed"] == followed
    cells = {j["cell"]["torch"]: j for j in build["jobs"]}
    assert sorted(cells) == ["2.10", "2.9"], cells
    # The cell whose inputs did not change is answered from the store, the new one built.
    # (from the first build, or from its copy in the candidate's build)
    answered_by = [int(first["jobs"][0]["id"])] + [
        int(j["id"]) for j in candidate["build"]["jobs"] if j["cell"]["torch"] == "2.9"]
    assert int(cells["2.9"].get("reused_from", 0)) in answered_by, cells["2.9"]
    assert int(cells["2.10"].get("reused_from", 0)) == 0, cells["2.10"]

    assert_torch_pins(farm, build, tmp_path / "wheels")
    assert_published_and_timed(farm, build, appeared, fired)
    time.sleep(2.5)  # more polls: the release is seen, nothing fires again
    assert len(runs_of(farm, sid)) == 2
    final_supersedes_candidate(farm, candidate, build)


def assert_torch_pins(farm, build, out):
    """Each downloaded wheel of `build` pins the torch minor of its cell."""
    r = farm.ctl("download", str(build["id"]), "--dir", str(out))
    assert r.returncode == 0, r.stderr
    pins = []
    for wheel in sorted(out.glob("*.whl")):
        with zipfile.ZipFile(wheel) as z:
            meta = z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode()
        pins += [line for line in meta.splitlines() if line.startswith("Requires-Dist: torch")]
    assert sorted(pins) == ["Requires-Dist: torch==2.10.*", "Requires-Dist: torch==2.9.*"], pins


def assert_published_and_timed(farm, build, appeared, fired):
    """The new cell is validated in coverage with its time from the release, its wheels
    reach the GitHub fake, and the path's time is reported phase by phase."""
    # Coverage: the new cell's time from the release's publication to its validated wheel.
    with urllib.request.urlopen("http://%s/api/v1/coverage?package=relpkg" % farm.http_address,
                                timeout=30) as res:
        cov = {c["torch"]: c for c in json.loads(res.read())["cells"]}
    assert cov["2.10"]["state"] == "validated", cov
    lag = cov["2.10"]["release_to_wheel_seconds"]
    assert 3600 <= lag < 3600 + 300, cov["2.10"]  # published an hour before it was seen
    assert cov["2.9"]["release_to_wheel_seconds"] is None, cov["2.9"]  # answered from the store
    # Published: the GitHub fake has the new cell's wheel. The path's time, phase by phase.
    def published():
        rows = publications(farm, build["id"])
        return len(rows) >= 2 and all(r["state"] == "published" for r in rows)
    wait_until(published, 120, "the build's wheels published on GitHub", interval=0.3)
    phases = release_day_phases(farm, appeared, fired, build, cov["2.10"])
    print("release day, seconds from the release to the published wheel:", json.dumps(phases))
    assert all(v is None or v >= -1 for v in phases.values()), phases
    if os.environ.get("FARM_RELEASE_DAY_REPORT"):
        with open(os.environ["FARM_RELEASE_DAY_REPORT"], "w") as f:
            json.dump(phases, f)


def http_get(farm, path, accept="application/vnd.pypi.simple.v1+json"):
    """(status, body) of farmd's HTTP port."""
    req = urllib.request.Request("http://%s%s" % (farm.http_address, path),
                                 headers={"Accept": accept})
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, res.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def listed(farm, view):
    """The real wheels of relpkg's project (envpkg) a view lists (its placeholder left out)."""
    status, body = http_get(farm, view + "envpkg/")
    # A view with no wheel of the project may answer 404 with why; anything else is a fault.
    assert status in (200, 404), (view, status, body[:500])
    if status == 404:
        return []
    return sorted(f["filename"] for f in json.loads(body)["files"]
                  if "+no.wheel.for." not in f["filename"])


def pip_download(farm, view, out):
    return subprocess.run(
        ["/usr/bin/python3", "-m", "pip", "download", "--no-deps", "--no-cache-dir",
         "--disable-pip-version-check", "--only-binary", ":all:", "--python-version", "3.11",
         "--index-url", "http://%s%s" % (farm.http_address, view), "-d", str(out), "envpkg"],
        capture_output=True, text=True, timeout=120)


# The views of torch 2.10 on CUDA 13.0 a user might point pip at.
CANDIDATE_VIEWS = ["/cu130-torch2.10/simple/", "/cu130/sm90/torch2.10.0/simple/"]


def cell_of(farm, torch):
    with urllib.request.urlopen("http://%s/api/v1/coverage?package=relpkg&torch=%s"
                                % (farm.http_address, torch), timeout=30) as res:
        (cell,) = json.loads(res.read())["cells"]
    return cell


def release_candidate(farm, up, recipe, release_sid, tmp_path):
    """torch 2.10.0 on the test channel, followed by a second schedule of the recipe: its
    build and wheel (module docstring). The schedule is paused after it, so that the
    release's build and its phases are the release watch's alone."""
    rc_sid = farm.ctl_json("schedules", "add", recipe, "--watch-torch", ">=2.9",
                           "--watch-candidates", "--poll", "1")["id"]
    wait_runs(farm, rc_sid, 1, "the candidate watch's first poll")
    publish_torch(up, "2.10.0+cu130", int(time.time()), index="test-cu130")
    fired = wait_runs(farm, rc_sid, 2, "the watch to fire on the release candidate")[0]
    assert "torch 2.10.0 release candidate (test-cu130)" in fired["detail"], fired
    farm.ctl("schedules", "pause", str(rc_sid))
    build = finished(farm, int(fired["build_id"]))
    assert build["state"] == "BUILD_SUCCEEDED", json.dumps(build, indent=1)
    assert 'torch ">=2.9" resolved to 2.9.0, 2.10.0 (release candidate)' in \
        farm.ctl("show", str(build["id"])).stdout
    (job,) = [j for j in build["jobs"] if j["cell"]["torch"] == "2.10"]
    (wheel,) = [a["filename"] for a in job["artifacts"]]
    assert "+cu130torch2.10rc-" in wheel, wheel
    assert "(release candidate, from test-cu130)" in log_of(farm, job["id"])
    cell = cell_of(farm, "2.10")
    assert cell["release_candidate"] and cell["state"] == "validated", cell
    assert cell["cause"].startswith("release candidate: built against torch 2.10.0"), cell
    status, feed = http_get(farm, "/feeds/wheels.atom", "application/atom+xml")
    assert status == 200 and "a release candidate build for torch 2.10" in feed, feed[:2000]
    # Out of the default views, in the /rc/ ones, from which real pip takes it.
    for view in CANDIDATE_VIEWS:
        assert listed(farm, view) == [], view
        assert listed(farm, "/rc" + view) == [wheel], view
    got = pip_download(farm, "/rc" + CANDIDATE_VIEWS[1], tmp_path / "rc")
    assert got.returncode == 0, got.stderr
    assert os.listdir(tmp_path / "rc") == [wheel]
    install_script_takes_the_candidate(farm, up, tmp_path, wheel)
    assert len(runs_of(farm, release_sid)) == 1  # the release watch saw nothing new
    return {"build": build, "job": job, "wheel": wheel}


def install_script_takes_the_candidate(farm, up, tmp_path, wheel):
    """The install script, next to the candidate torch from the test channel: without
    --release-candidates nothing is installed and the flag is named; with it, the
    candidate's wheel comes from the /rc/ view, checked against its signed provenance."""
    venv = tmp_path / "rc-venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    folder = os.path.join(up["data"], "test-cu130")
    (torch,) = [n for n in os.listdir(folder) if n.startswith("torch-2.10.0") and
                n.endswith(".whl")]
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                    os.path.join(folder, torch)], check=True, timeout=300)
    status, script = http_get(farm, "/install", "text/x-python")
    assert status == 200, script[:500]
    env = dict(os.environ, FARM_INSTALL_GPU_CC="9.0", FARM_INSTALL_DRIVER_CUDA="13.0")

    def run(*args):
        return subprocess.run([python, "-", "envpkg", *args], input=script, env=env,
                              capture_output=True, text=True, timeout=300)
    r = run()
    assert r.returncode == 1, r.stdout + r.stderr
    assert "a release candidate of torch 2.10.0: --release-candidates installs it" in r.stdout, \
        r.stdout
    r = run("--release-candidates")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "/rc/cu130/sm90/torch2.10.0/simple/" in r.stdout, r.stdout
    assert "verified: the farm's key signed the build of " + wheel in r.stdout, r.stdout
    shown = subprocess.run([python, "-m", "pip", "show", "envpkg"], capture_output=True,
                           text=True, timeout=60).stdout
    assert "Version: " + wheel.split("-")[1] in shown, shown


def final_supersedes_candidate(farm, candidate, final):
    """The release's build (`final`) replaces the candidate's in coverage and every view;
    the candidate's build stays recorded, its wheel served by its URL, never published."""
    (job,) = [j for j in final["jobs"] if j["cell"]["torch"] == "2.10"]
    (wheel,) = [a["filename"] for a in job["artifacts"]]
    assert "+cu130torch2.10-" in wheel, wheel
    cell = cell_of(farm, "2.10")
    assert not cell["release_candidate"] and cell["wheel"] == wheel, cell
    for view in CANDIDATE_VIEWS:
        assert listed(farm, view) == [wheel], view
        assert listed(farm, "/rc" + view) == [wheel], view
    rc_build = candidate["build"]
    assert farm.ctl_json("show", str(rc_build["id"]))["state"] == "BUILD_SUCCEEDED"
    url = "http://%s/files/%s/%s" % (farm.http_address, candidate["job"]["artifacts"][0]["sha256"],
                                     candidate["wheel"])
    with urllib.request.urlopen(url, timeout=30) as res:
        assert res.status == 200
    # The release's wheels are published (waited for above), and the publisher plans wheels
    # in the order they were stored: the candidate's was planned before, with no row.
    assert not [p for p in publications(farm, rc_build["id"])
                if p.get("filename") == candidate["wheel"]]


def test_a_tag_pushed_while_farmd_is_down_fires_once_across_kill_9(farm, upstreams):
    up = upstreams
    repos = os.path.join(farm.root, "git")
    repo = os.path.join(repos, "tagpkg")
    write(os.path.join(repo, "build_wheel.py"), BUILD_WHEEL)
    subprocess.run(["git", "init", "--quiet", "-b", "main", repo], check=True, timeout=60)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "initial")
    git(repo, "tag", "v1.0")
    base, ca = farm.start_git_server(repos)
    flags = (*farmd_flags(up), "--git-ca-file", ca)
    farm.start_farmd(*flags, http=True)
    start_worker(farm, "--git-ca-file", ca)
    farm.wait_workers(1)
    recipe = write(os.path.join(farm.root, "tagpkg.yaml"), TAGGED % {"url": base + "/tagpkg"})
    sid = farm.ctl_json("schedules", "add", recipe, "--watch-tags", "v*", "--poll", "1")["id"]
    baseline = wait_runs(farm, sid, 1, "the tag watch's first poll")
    assert "watching 1 upstream item(s) (tag v1.0)" in baseline[0]["detail"], baseline

    farm.stop(farm.farmd, signal.SIGKILL)
    with open(os.path.join(repo, "NEWS"), "w") as f:
        f.write("1.1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "release 1.1")
    git(repo, "tag", "-a", "v1.1", "-m", "1.1")  # annotated: the watch builds its commit
    commit = git(repo, "rev-parse", "HEAD")
    # On another address (port 0 again): the worker learns the upstream URL it fetches
    # through from its next heartbeat.
    farm.start_farmd(*flags, http=True)
    fired = wait_runs(farm, sid, 2, "the watch to fire on tag v1.1")[0]
    assert fired["outcome"] == "RUN_SUBMITTED", fired
    assert fired["resolved_commit"] == commit, fired
    assert "building tag v1.1" in fired["detail"], fired
    build = finished(farm, int(fired["build_id"]))
    assert build["state"] == "BUILD_SUCCEEDED", json.dumps(build, indent=1)

    farm.stop(farm.farmd, signal.SIGKILL)
    farm.start_farmd(*flags, http=True)
    time.sleep(3)  # three polls after the restart: the tag was recorded with its run
    runs = runs_of(farm, sid)
    assert len(runs) == 2, runs
    assert len(farm.ctl_json("list").get("builds", [])) == 1


def test_a_new_toolkit_in_the_redist_listing_fires_the_watch(farm, upstreams):
    up = upstreams
    redist = os.path.join(up["work"], "redist")
    write(os.path.join(redist, "redistrib_12.8.0.json"), "{}")
    fake = RunningFake("fake_redist.py", ["--root", redist], up["work"], "redist")
    try:
        farm.start_farmd(*farmd_flags(up), "--upstream-tree", "cuda=%s/" % fake.url, http=True)
        recipe = following_recipe(farm)
        sid = farm.ctl_json("schedules", "add", recipe, "--watch-toolkit", ">=12.8",
                            "--poll", "1")["id"]
        baseline = wait_runs(farm, sid, 1, "the toolkit watch's first poll")
        assert "(CUDA 12.8.0 redist)" in baseline[0]["detail"], baseline
        write(os.path.join(redist, "redistrib_11.8.0.json"), "{}")  # below the spec
        write(os.path.join(redist, "redistrib_12.9.1.json"), "{}")
        fired = wait_runs(farm, sid, 2, "the watch to fire on CUDA 12.9.1")[0]
        assert fired["outcome"] == "RUN_SUBMITTED", fired
        assert fired["detail"].startswith("new upstream: CUDA 12.9.1 redist"), fired
    finally:
        fake.stop()


def test_bad_watches_are_refused_with_the_reason(farm, upstreams):
    up = upstreams
    farm.start_farmd(*farmd_flags(up), http=True)
    recipe = following_recipe(farm)
    cases = [
        (("--watch-torch", "2.9"), "is not a version clause"),
        (("--watch-torch", ">=2.9", "--watch-index", "cu999"), "does not know"),
        # A test channel read as a release index would build its candidates as finals.
        (("--watch-torch", ">=2.9", "--watch-index", "test-cu130"), "is a pre-release index"),
        (("--watch-torch", ">=2.9", "--poll", "0"), None),  # default poll: accepted
        (("--watch-tags", "v*"), "needs a recipe whose source is git"),
        (("--watch-toolkit", ">=12.8"), "--upstream-tree cuda"),
        (("--watch-torch", ">=2.9", "--cron", "@daily"), "usage"),
    ]
    for args, why in cases:
        r = farm.ctl("schedules", "add", recipe, *args)
        if why is None:
            assert r.returncode == 0, (args, r.stderr)
            continue
        assert r.returncode != 0, args
        assert why in r.stderr, (args, r.stderr)
