"""The dashboard a release engineer keeps open, in headless Chromium against the real farmd
and farm-worker (docs/dashboard.md): why a job waits, how far a build is, what failed,
where the wheels went, and the names, times and filters people use.

One farm serves every test of this file: farmd with the dashboard, the GitHub and Hugging
Face fakes (tests/fakes; farmd holds a wrong Hub token, so the Hub file's publication
fails) and one worker, "gpu-box-1", with CUDA 13.0 only. Four builds run on it: a quick
one that sets the expected time, a slow one whose CUDA 12.8 cell no worker can take, one
that fails to compile, and one that publishes. Every step saves a screenshot and fails on
any JavaScript error.
"""
import os
import re
import sys
import textwrap
import time
import urllib.request

import pytest

import farm_harness
from farm_harness import wait_until
from test_dashboard_e2e import Page, _browser
from test_publish import GH_REPO, GH_TOKEN, HF_REPO, HF_TOKEN, Fake, start_farmd_with_fakes

WORKER = "gpu-box-1"
UNITS = 60  # the slow build's [n/m] units, 0.4 s each

WHEEL = '"$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps --no-index -w "$FARM_WHEEL_DIR"'


def _recipe(root, file_name, name, build, cudas=("13.0",), extra=""):
    path = os.path.join(root, file_name)
    with open(path, "w") as f:
        f.write(f"name: {name}\nversion: \"1.0\"\nsource: {{local: src}}\n"
                f"system_site_packages: true\nretry: {{max_attempts: 1}}\n"
                f"matrix:\n  cuda: [{', '.join(repr(c) for c in cudas)}]\n{extra}"
                f"build: |\n{textwrap.indent(textwrap.dedent(build).strip(), '  ')}\n")
    return path


def _progress_build(units, seconds):
    # A 96 MiB process runs beside the units, so the live peak RSS has something to show.
    return f"""
        "$FARM_PYTHON" -c "import time; b = b'x' * (96 << 20); time.sleep({units * seconds + 2})" &
        for i in $(seq 1 {units}); do echo "[$i/{units}] nvcc -c csrc/unit$i.cu"; sleep {seconds}; done
        wait
        {WHEEL}
        """


FAILING_BUILD = r"""
    echo "Processing /src (pip writes its progress to stderr)" >&2
    printf 'int main(void) {\n  return undeclared_thing;\n}\n' > bad.c
    gcc -c bad.c -o bad.o
    """

# The wheel is installed and imported in a clean venv; its script needs a GPU, so on a
# worker without one the wheel waits for hardware (listed and published all the same here:
# --index-include-pending, --publish-pending-hardware).
PUBLISH = f"""validation:
  script: validate.py
  import: [wheel_demo]
publish:
  github_repo: {GH_REPO}
  github_tag_template: "v{{version}}-build{{build_id}}"
  hf_repo: {HF_REPO}
  hf_path_template: "build/{{variant}}/{{wheel}}"
  local_version: "cu{{cuda_nodot}}"
"""


class ReleaseFarm:
    """The shared farm and what was submitted to it."""

    def __init__(self, farm):
        self.farm = farm
        self.gh = Fake(farm, "fake_github.py", GH_TOKEN, "fake_github")
        self.hf = Fake(farm, "fake_hf.py", HF_TOKEN, "fake_hf")
        start_farmd_with_fakes(farm, self.gh, self.hf, "--publish-pending-hardware",
                               "--index-include-pending",
                               hf_token="hf_wrongTokenForTheDashboard00000")
        farm.start_worker(WORKER, "--max-jobs", "2")
        farm.wait_workers(1)
        src = os.path.join(farm.root, "src")
        os.makedirs(src)
        with open(os.path.join(src, "setup.py"), "w") as f:
            f.write("from setuptools import setup\n"
                    "setup(name='wheel-demo', version='1.0', py_modules=['wheel_demo'])\n")
        with open(os.path.join(src, "wheel_demo.py"), "w") as f:
            f.write("VALUE = 1\n")
        with open(os.path.join(src, "validate.py"), "w") as f:
            f.write("raise SystemExit(3)  # no device here\n")
        root = farm.root
        # The quick build of the CUDA 13.0 cell gives the slow one its expected time.
        quick = farm.ctl_json("submit", _recipe(root, "quick.yaml", "wheel-progress",
                                                _progress_build(3, 0)), "--follow", timeout=300)
        assert quick["state"] == "BUILD_SUCCEEDED", quick
        self.slow = farm.ctl_json("submit", _recipe(root, "slow.yaml", "wheel-progress",
                                                    _progress_build(UNITS, 0.4), ("13.0", "12.8")))
        self.failing = farm.ctl_json("submit", _recipe(root, "broken.yaml", "broken-kernel",
                                                       FAILING_BUILD))
        self.published = farm.ctl_json("submit", _recipe(root, "publish.yaml", "wheel-publish",
                                                         WHEEL, extra=PUBLISH))

    def job(self, build, cuda="13.0"):
        return next(j for j in build["jobs"] if j["cell"]["cuda"] == cuda)["id"]

    def show(self, build):
        return self.farm.ctl_json("show", str(build["id"]))


@pytest.fixture(scope="module")
def release(request):
    farm = farm_harness.make_farm(request)
    return ReleaseFarm(farm)


@pytest.fixture(scope="module")
def page(release):
    driver = _browser(os.path.join(release.farm.root, "chromium-profile"))
    yield Page(driver, "http://" + release.farm.http_address)
    driver.quit()


def _text(p, selector):
    return p.js(f"const e = document.querySelector({selector!r}); return e ? e.textContent : ''")


def test_a_running_job_shows_progress_peak_rss_and_expected_time(release, page):
    p = page
    job = release.job(release.slow)
    p.go("/")
    p.go(f"/job/{job}")
    p.wait("return document.getElementById('job-head').textContent.includes('units')",
           "compile units on the job page", 90)
    head = _text(p, "#job-head")
    assert re.search(rf"\d+/{UNITS} units \(\d+%\)", head), head
    assert "of ~" in head, head  # the quick build's run time
    # The build's 96 MiB process shows once it has filled its memory and a heartbeat passed.
    p.wait("const m = /peak RSS ([0-9.]+) MiB/.exec(document.getElementById('job-head')"
           ".textContent); return m && Number(m[1]) >= 96", "a live peak RSS of 96 MiB or more", 30)
    assert "so far" in _text(p, "#attempts")  # the attempt is still running
    p.no_errors()
    p.shot("release-job-progress")
    p.go(f"/build/{release.slow['id']}")
    cell = f"document.querySelector('td.cell[data-job=\"{job}\"]')"
    p.wait(f"return {cell} && {cell}.querySelector('.bar')", "the progress bar in the matrix")
    p.no_errors()
    p.shot("release-build-progress")


def test_a_cell_no_worker_can_take_says_why_and_blocks_its_build(release, page):
    p = page
    stuck = release.job(release.slow, "12.8")
    p.go(f"/build/{release.slow['id']}")
    cell = f"document.querySelector('td.cell[data-job=\"{stuck}\"]')"
    p.wait(f"return {cell} && {cell}.classList.contains('unplaceable')", "the unplaceable cell")
    title = p.js(f"return {cell}.title")
    assert title.startswith("no worker has CUDA 12.8: provision one or drop the cell"), title
    assert f"{WORKER}: no CUDA toolkit 12.8" in title, title
    p.go(f"/job/{stuck}")
    p.wait("return document.getElementById('waiting')", "the waiting banner")
    waiting = _text(p, "#waiting")
    assert "No worker can take this job" in waiting, waiting
    assert "no worker has CUDA 12.8: provision one or drop the cell" in waiting
    assert WORKER in waiting and "no CUDA toolkit 12.8" in waiting, waiting
    assert "Not started yet" not in _text(p, "body")
    p.no_errors()
    p.shot("release-job-unplaceable")
    # Once the other cell is done the build is blocked, not "running" for ever.
    wait_until(lambda: any(j["cell"]["cuda"] == "13.0" and j["state"] == "JOB_SUCCEEDED"
                           for j in release.show(release.slow)["jobs"]),
               120, "the CUDA 13.0 cell to succeed", interval=1)
    p.go(f"/build/{release.slow['id']}")
    p.wait("return document.getElementById('blocked') && "
           "document.querySelector('h1 .s-blocked')", "the blocked build", 30)
    assert "no worker has CUDA 12.8" in _text(p, "#blocked")
    p.no_errors()
    p.shot("release-build-blocked")
    p.go("/builds")
    row = f"document.querySelector('tr[data-build=\"{release.slow['id']}\"]')"
    p.wait(f"return {row} && {row}.querySelector('.s-blocked')", "blocked in the builds list")
    p.no_errors()


def test_a_failed_build_says_where_and_why_and_its_log_is_readable(release, page):
    p = page
    job = release.job(release.failing)
    wait_until(lambda: release.show(release.failing)["state"] == "BUILD_FAILED", 120,
               "the broken build to fail")
    p.go(f"/build/{release.failing['id']}")
    cell = f"document.querySelector('td.cell[data-job=\"{job}\"]')"
    p.wait(f"return {cell} && {cell}.dataset.state === 'JOB_FAILED'", "the failed cell")
    title = p.js(f"return {cell}.title")
    assert title.startswith("failed in build: build command exited with code 1"), title
    assert re.search(r"bad\.c:2:\d+: error: .undeclared_thing. undeclared", title), title
    assert "build" in p.js(f"return {cell}.querySelector('.cell-why').textContent")
    p.no_errors()
    p.shot("release-build-failed")

    p.go(f"/job/{job}")
    p.wait("return document.getElementById('failure')", "the failure at the top")
    failure = _text(p, "#failure")
    assert "Failed in build" in failure and "undeclared_thing" in failure, failure
    p.wait("return document.getElementById('log-state').textContent.includes('failed')",
           "the whole log", 30)
    phases = p.js("return [...document.querySelectorAll('#log details.phase')]"
                  ".map((g) => g.dataset.phase)")
    assert phases[:3] == ["setup", "fetch", "build"], phases
    assert p.js("return document.querySelector('#log details[data-phase=\"build\"]').open")
    error = p.js("return [...document.querySelectorAll('#log .l.lvl-error')]"
                 ".map((l) => l.dataset.seq + ' ' + l.querySelector('.t').textContent)")
    assert any(re.search(r"error: .undeclared_thing. undeclared", e) for e in error), error
    noise = p.js("return [...document.querySelectorAll('#log .l')].find((l) => "
                 "l.textContent.includes('Processing /src')).className")
    assert "stderr" in noise and "lvl-error" not in noise, noise  # stderr alone is no error
    assert p.js("return /\\d\\d:\\d\\d:\\d\\d\\.\\d{3}/.test("
                "document.querySelector('#log .l .ts').textContent)")
    # Search counts and walks the matches.
    p.js("const s = document.getElementById('log-search'); s.value = 'undeclared';"
         "s.dispatchEvent(new Event('input'));"
         "s.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'}))")
    assert re.match(r"1 of \d+ match", _text(p, "#search-count")), _text(p, "#search-count")
    assert p.js("return document.querySelectorAll('#log .l.match').length") >= 1
    # A line anchor survives a reload and marks its line.
    seq = error[0].split()[0]
    p.js(f"document.querySelector('#L{seq} a.ln').click()")
    p.wait(f"return location.hash === '#/job/{job}/L{seq}'", "the line's anchor")
    p.d.refresh()
    p.wait(f"return document.querySelector('#L{seq}.target')", "the anchored line after a reload")
    p.no_errors()
    p.shot("release-job-failed")
    p.go("/")
    p.wait(f"return document.getElementById('failures') && "
           f"document.getElementById('failures').textContent.includes('broken-kernel')",
           "the failure on the overview")
    assert "build" in p.js("return document.querySelector('#failures .phase-tag').textContent")
    p.no_errors()


def test_the_build_lists_its_wheels_and_where_each_went(release, page):
    p = page
    farm = release.farm
    build_id = release.published["id"]

    def states():
        rows = farm.ctl_json("publications", str(build_id)).get("publications", [])
        return {(r["target"], r["kind"]): r["state"] for r in rows}
    wait_until(lambda: states().get(("hf", "file")) == "failed" and
               states().get(("github", "release")) == "published", 150,
               "the GitHub release published and the Hub file failed")
    p.go(f"/build/{build_id}")
    p.wait("return document.querySelector('#wheels tr[data-wheel]')", "the wheels table")
    row = _text(p, "#wheels tr[data-wheel]")
    assert "cu130" in row and "pending hardware" in row, row  # variant and validation state
    assert f"pip install --index-url http://{farm.http_address}/cu130/simple/ wheel-demo==" in row
    assert "github published" in re.sub(r"\s+", " ", row), row
    assert "hf failed" in re.sub(r"\s+", " ", row) and "401" in row, row
    link = p.js("return document.querySelector('#wheels a[href*=\"/releases/\"]').href")
    assert GH_REPO in link, link
    p.no_errors()
    p.shot("release-build-wheels")
    p.go("/publications")
    first = "document.querySelector('#all-publications tr[data-publication]')"
    p.wait(f"return {first}", "the publications across builds")
    assert "failed" in p.js(f"return {first}.className")  # failures first
    assert "wheel-publish" in p.js(f"return {first}.textContent")
    p.no_errors()
    p.shot("release-publications")
    with urllib.request.urlopen(f"http://{farm.http_address}/metrics", timeout=30) as r:
        metrics = r.read().decode()
    assert "farm_publish_failures_total 1\n" in metrics, metrics


def test_names_relative_times_durations_and_filters_that_survive_a_reload(release, page):
    p = page
    p.go("/builds")
    p.wait("return document.querySelectorAll('#builds tr[data-build]').length >= 4", "the builds")
    created = p.js("return [...document.querySelectorAll('#builds time.rel')].map((t) => t.title)")
    assert created and all("Z)" in t for t in created), created  # exact time on hover
    durations = p.js("return [...document.querySelectorAll('#builds td.duration')]"
                     ".map((d) => d.textContent.trim())")
    assert all(re.search(r"\d+s|\d+m", d) for d in durations), durations
    assert " 1 jobs" not in _text(p, "#builds")
    # The state filter goes into the URL and stays there through a reload.
    p.js("const f = document.getElementById('build-filters');"
         "f.elements.namedItem('state').value = 'failed'; f.requestSubmit()")
    p.wait("return location.hash === '#/builds?state=failed'", "the filter in the URL")
    p.d.refresh()
    p.wait("return document.querySelectorAll('#builds tr[data-build]').length === 1",
           "only the failed build")
    assert "broken-kernel" in _text(p, "#builds")
    assert p.js("return document.getElementById('build-filters').elements"
                ".namedItem('state').value") == "failed"
    p.js(f"location.hash = '#/builds?worker={WORKER}&recipe=wheel-progress'")
    p.wait("return document.querySelectorAll('#builds tr[data-build]').length === 2",
           "the builds of one recipe that ran on the worker")
    p.no_errors()
    p.shot("release-builds-filtered")
    # Worker names everywhere, ids on hover.
    p.go(f"/build/{release.failing['id']}")
    p.wait("return document.querySelector('td.cell .worker')", "the worker in the matrix")
    worker_id = release.show(release.failing)["jobs"][0]["worker_id"]
    names = p.js("return [...document.querySelectorAll('.worker')].map((w) => [w.textContent, w.title])")
    assert names and all(n == [WORKER, worker_id] for n in names), names
    p.go("/workers")
    p.wait(f"return document.querySelector('tr[data-worker=\"{worker_id}\"] .worker')", "workers")
    assert p.js(f"return document.querySelector('tr[data-worker=\"{worker_id}\"] .worker').title") \
        == worker_id
    p.no_errors()
    p.shot("release-workers")


def test_the_index_is_styled_and_says_how_to_install(release, page):
    p = page
    farm = release.farm
    p.d.get(f"http://{farm.http_address}/cu130/simple/")
    p.wait("return document.querySelector('p.install code')", "the install line")
    assert _text(p, "p.install code") == \
        f"pip install --index-url http://{farm.http_address}/cu130/simple/ wheel-demo"
    # The dashboard's style sheet and header: a dark header bar, not a bare page.
    assert p.js("return getComputedStyle(document.querySelector('header')).display") == "flex"
    assert p.js("return getComputedStyle(document.body).backgroundColor") == "rgb(246, 247, 249)"
    p.shot("release-index-variant")
    with urllib.request.urlopen(f"http://{farm.http_address}/cu130/simple/wheel-demo/",
                                timeout=30) as r:
        project = r.read().decode()
    # Installers read project pages: every link there is a file.
    links = re.findall(r'<a href="([^"]+)"', project)
    assert links and all(h.startswith("/files/") for h in links), project
    p.d.get(f"http://{farm.http_address}/#/")
    p.wait("return document.getElementById('queue-depth')", "the dashboard again")
    p.no_errors()
