"""What a new user reads on the dashboard and its JSON API, in headless Chromium against the
real farmd, farm-worker and farmctl (or dashboard_fixture's store): why a job waits or
failed, whether its build can go on, and pages that read right. Fails on any JavaScript
error; screenshots go to screenshots/."""
import json
import os
import subprocess
import urllib.request

from farm_harness import FARMCTL, wait_until
from test_commands import LineReader
from test_dashboard_e2e import Page, _browser

CUDA_128_RECIPE = """name: needs-cuda-128
source: {local: src}
matrix:
  python: ["3.11"]
  cuda: ["12.8"]
build: |
  echo never runs here
retry: {max_attempts: 1}
"""


def follow(farm, *args, timeout=300):
    """submit --follow in JSON: the build as it ended (farmctl exits 1 for a failed one)."""
    r = farm.ctl("--output", "json", "submit", *args, "--follow", timeout=timeout)
    assert r.returncode in (0, 1) and r.stdout.strip(), (r.returncode, r.stderr)
    return json.loads(r.stdout)


def write_recipe(farm, text, name="recipe.yaml"):
    os.makedirs(os.path.join(farm.root, "src"), exist_ok=True)
    path = os.path.join(farm.root, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def api(farm, route):
    with urllib.request.urlopen(f"http://{farm.http_address}{route}", timeout=30) as r:
        return json.load(r)


def test_a_job_merged_onto_one_that_cannot_run_says_why_and_is_blocked(farm):
    farm.start_farmd(http=True)
    farm.start_worker()  # CUDA 13.0 only: no worker can take a CUDA 12.8 cell
    farm.wait_workers(1)
    recipe = write_recipe(farm, CUDA_128_RECIPE)
    first = farm.ctl_json("submit", recipe)
    leader = first["jobs"][0]
    second = farm.ctl_json("submit", recipe)
    job = second["jobs"][0]
    why = (f"waiting for job {leader['id']}, an identical build in flight, which cannot run "
           "either: no worker has CUDA 12.8: provision one or drop the cell")
    assert job["waiting_reason"] == why, job
    assert job["unplaceable"] is True, job
    text = farm.ctl("job", str(job["id"])).stdout
    assert f"waiting: {why} (no worker can take it)" in text, text

    builds = {b["id"]: b for b in api(farm, "/api/v1/builds")["builds"]}
    assert builds[second["id"]]["blocked"] is True, builds[second["id"]]
    assert builds[second["id"]]["blocked_reason"] == why, builds[second["id"]]

    # submit --follow of the same recipe says why at once instead of waiting silently.
    argv = [FARMCTL, "--server", farm.address, "--token-file",
            os.path.join(farm.data, "admin.token"), "submit", recipe, "--follow"]
    follow = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out = LineReader(follow.stdout)
        line = wait_until(lambda: out.find(r"^farmctl: job \d+ \(py3\.11 cuda12\.8\) pending: "),
                          30, "the pending reason under --follow")
        assert why in line and line.endswith("(no worker can take it)"), line
        assert follow.poll() is None
    finally:
        follow.kill()
        follow.wait(timeout=10)

    driver = _browser(os.path.join(farm.root, "chromium-profile"))
    try:
        p = Page(driver, "http://" + farm.http_address)
        p.go("/")
        p.go("/builds")
        badge = p.wait(f"const b = document.querySelector('tr[data-build=\"{second['id']}\"] "
                       f".badge'); return b && b.textContent", "the build's badge in the list")
        assert badge == "blocked", badge
        p.go(f"/build/{second['id']}")
        banner = p.wait("const b = document.getElementById('blocked'); return b && b.textContent",
                        "the blocked banner")
        assert why in banner, banner
        p.no_errors()
        p.shot("merged-blocked")
    finally:
        driver.quit()


NO_WHEEL_RECIPE = """name: no-wheel
source: {local: src}
matrix:
  python: ["3.11"]
  cuda: ["13.0"]
build: |
  echo "compiling the kernels"
  echo "building for 9.0 with CUDA 13.0"
retry: {max_attempts: 1}
"""


def test_a_failed_cell_shows_why_it_failed_and_farmctl_shows_the_lines(farm):
    farm.start_farmd(http=True)
    farm.start_worker()
    build = follow(farm, write_recipe(farm, NO_WHEEL_RECIPE), timeout=300)
    assert build["state"] == "BUILD_FAILED", build
    job = build["jobs"][0]
    assert job["attempts"][0]["detail"] == "build produced no wheel", job
    # farmctl show and job print the lines the dashboard shows under the error.
    for args in (("show", str(build["id"])), ("job", str(job["id"]))):
        text = farm.ctl(*args).stdout
        assert "      | building for 9.0 with CUDA 13.0" in text, text
    assert "building for 9.0 with CUDA 13.0" in farm.ctl_json("job", str(job["id"]))[
        "failure_lines"]

    driver = _browser(os.path.join(farm.root, "chromium-profile"))
    try:
        p = Page(driver, "http://" + farm.http_address)
        p.go("/")
        p.go(f"/build/{build['id']}")
        why = p.wait(f"const c = document.querySelector('td.cell[data-job=\"{job['id']}\"] "
                     ".cell-why'); return c && c.textContent", "the failed cell's reason")
        assert "build produced no wheel" in why and "building for" not in why, why
        title = p.js(f"return document.querySelector('td.cell[data-job=\"{job['id']}\"]').title")
        assert "building for 9.0 with CUDA 13.0" in title, title
        p.no_errors()
        p.shot("failed-cell")
    finally:
        driver.quit()


FAILED_RED = "rgb(212, 63, 58)"  # --failed in style.css


def tiny_wheel(root):
    """A wheel file of a pure Python package (its bytes are not read by these pages)."""
    import zipfile
    path = os.path.join(root, "attn_example-0.1.0-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("attn_example/__init__.py", "")
        z.writestr("attn_example-0.1.0.dist-info/METADATA",
                   "Metadata-Version: 2.1\nName: attn-example\nVersion: 0.1.0\n")
    return path


def test_pages_read_right(farm):
    """The rough edges of the pages: install lines that fit and wrap only inside a URL, a
    running build that has not "taken" anything yet, a cell without a CUDA version not
    called a CPU variant, chart colours unlike the failure red, log phases with their
    durations, and the index's navigation bar the same as the dashboard's."""
    address = farm.start_dashboard_fixture("--demo", "--lines", "6", "--line-ms", "200",
                                           "--wheel", f"{tiny_wheel(farm.root)},,,passed")
    base = "http://" + address
    with urllib.request.urlopen(base + "/api/v1/builds", timeout=30) as r:
        builds = json.load(r)["builds"]
    wheel_build = builds[0]["id"]  # the newest: the --wheel one, its cell without CUDA
    with urllib.request.urlopen(f"{base}/api/v1/builds/{wheel_build}", timeout=30) as r:
        wheel_job = json.load(r)["jobs"][0]["id"]
    driver = _browser(os.path.join(farm.root, "chromium-profile"))
    try:
        p = Page(driver, base)
        driver.set_window_size(900, 900)
        p.go("/")
        # A running build: "running for", not "took".
        p.go("/build/1")
        text = p.wait("const d = document.getElementById('build-duration'); return d && d.textContent",
                      "the build's duration")
        assert text.startswith("running for "), text

        # The job of a cell without a CUDA version, and its install lines.
        p.go(f"/job/{wheel_job}")
        p.wait("return document.querySelector('pre.pip')", "the install lines")
        head = p.js("return document.getElementById('job-head').textContent")
        assert "variant cpu" not in " ".join(head.split()), head
        assert "no CUDA version in the cell" in p.js(
            "return document.getElementById('variant').textContent")
        width = p.js("return [document.documentElement.scrollWidth, "
                     "document.documentElement.clientWidth]")
        assert width[0] <= width[1], f"the page runs {width[0] - width[1]}px off the screen"

        # The wheels table: a narrow install cell splits the URL, never "install".
        p.go(f"/build/{wheel_build}")
        code = "document.querySelector('#wheels code.pip')"
        p.wait(f"return {code}", "the wheels table")
        rects = p.js(f"""const c = {code}; c.style.maxWidth = '9ch';
            const t = c.firstChild, at = t.textContent.indexOf('install');
            const r = document.createRange(); r.setStart(t, at); r.setEnd(t, at + 7);
            return [...r.getClientRects()].filter((x) => x.width > 0).length;""")
        assert rects == 1, f"'install' is split over {rects} lines"

        # The duration chart: no series in the failure red.
        p.go("/chart")
        colours = p.wait("const l = [...document.querySelectorAll('.legend i')];"
                         "return l.length >= 2 && l.map((i) => getComputedStyle(i).backgroundColor)",
                         "the chart's legend")
        assert FAILED_RED not in colours, colours

        # The demo job's log: each phase says how long it took.
        def finished():
            with urllib.request.urlopen(f"{base}/api/v1/jobs/1", timeout=30) as r:
                return json.load(r)["state"] == "JOB_SUCCEEDED"
        wait_until(finished, 60, "the demo job to finish")
        p.go("/job/1")
        took = p.wait("const t = document.querySelector('#log .phase-took'); return t && t.textContent",
                      "a phase's duration")
        assert took.endswith("s"), took
        p.no_errors()
        p.shot("polish-job")

        # The index's pages carry the dashboard's navigation bar.
        p.go("/")
        nav = p.js("return [...document.querySelectorAll('header nav a')].map((a) => a.textContent.trim())")
        driver.get(base + "/simple/")
        index_nav = p.js("return [...document.querySelectorAll('header nav a')].map((a) => a.textContent.trim())")
        assert index_nav == nav, (index_nav, nav)
    finally:
        driver.quit()


def test_the_overview_counts_one_queued_job(farm):
    farm.start_farmd(http=True)
    recipe = write_recipe(farm, "name: one\nsource: {local: src}\nbuild: |\n  true\n")
    farm.ctl_json("submit", recipe)
    driver = _browser(os.path.join(farm.root, "chromium-profile"))
    try:
        p = Page(driver, "http://" + farm.http_address)
        p.go("/")
        card = p.wait("const n = document.getElementById('queue-depth');"
                      "return n && [n.textContent, n.nextSibling.textContent.trim()]",
                      "the queue card")
        assert card == ["1", "queued job"], card
        p.no_errors()
    finally:
        driver.quit()


def ms(rfc3339):
    from datetime import datetime
    return int(datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp() * 1000)


def test_a_retried_job_ran_for_its_attempts_not_its_backoff(farm):
    farm.start_farmd(http=True)
    farm.start_worker()
    recipe = write_recipe(farm, """name: flaky
source: {local: src}
build: |
  exit 3
retry: {max_attempts: 2, backoff_seconds: 20, retry_build_failures: true}
""")
    build = follow(farm, recipe, timeout=300)
    assert build["state"] == "BUILD_FAILED", build
    job = api(farm, f"/api/v1/jobs/{build['jobs'][0]['id']}")
    attempts = job["attempts"]
    assert len(attempts) == 2, attempts
    ran = sum(ms(a["finished_at"]) - ms(a["started_at"]) for a in attempts)
    assert job["ran_ms"] == ran, (job["ran_ms"], ran)
    assert job["waited_ms"] >= 20_000, job  # the backoff is waiting
    life = ms(job["finished_at"]) - ms(job["created_at"])
    assert job["ran_ms"] + job["waited_ms"] == life, (job["ran_ms"], job["waited_ms"], life)
