"""End-to-end test of the web dashboard in real headless Chromium.

The dashboard is served by dashboard_fixture over a store it fills: a 2x2 build whose first
job writes a log line every 300 ms and then succeeds, and a build whose wheel waits for an
RTX 5090 with its validation job pending. The browser opens the overview, follows the
running job's log live, watches the job's cell turn to succeeded, finds the validation job
labelled with the job it validates and what it waits for, and fails on any JavaScript
error. Screenshots go to screenshots/ next to this file.
"""
import os
import shutil
import time

import pytest

import farm_harness

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SHOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "screenshots")
LINES = 50  # 15 s of output: the live check must come before the job ends, even on a loaded machine


def _browser(profile):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("python3-selenium is not installed (apt-get install python3-selenium)")
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            pytest.skip(f"{path} missing (apt-get install chromium chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1400,1000"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


class Page:
    """The browser plus the checks every step repeats."""

    def __init__(self, driver, base):
        self.d = driver
        self.base = base

    def js(self, script):
        return self.d.execute_script(script)

    def go(self, route):
        self.d.get(self.base + "/#" + route) if route == "/" else self.js(
            f"location.hash = '{route}'")

    def wait(self, script, what, timeout=20):
        return farm_harness.wait_until(lambda: self.js(script), timeout, what, interval=0.1)

    def no_errors(self):
        errors = self.js("return window.farmErrors || ['app.js not loaded']")
        severe = [e for e in self.d.get_log("browser") if e.get("level") == "SEVERE"]
        assert not errors and not severe, f"JavaScript errors: {errors} {severe}"

    def shot(self, name):
        os.makedirs(SHOTS, exist_ok=True)
        path = os.path.join(SHOTS, name + ".png")
        self.d.save_screenshot(path)
        print(f"screenshot: {path}")


def test_dashboard_follows_a_live_build(farm):
    address = farm.start_dashboard_fixture("--demo", "--lines", str(LINES), "--line-ms", "300")
    driver = _browser(os.path.join(farm.root, "chromium-profile"))
    try:
        _walk_through(Page(driver, "http://" + address))
    finally:
        driver.quit()


def _walk_through(p):
    # Overview: queue depth, a running job with its elapsed time, the failure, the fleet.
    p.go("/")
    job_id = p.wait("const a = document.querySelector('#running a[href^=\"#/job/\"]');"
                    "return a && a.getAttribute('href').split('/')[2]", "a running job")
    # The 2x2 build's three other cells and the RTX build's validation job.
    assert p.js("return document.getElementById('queue-depth').textContent") == "4"
    assert "nvcc failed" in p.js("return document.getElementById('failures').textContent")
    fleet = p.js("return document.querySelectorAll('tr[data-worker]').length")
    assert fleet == 3
    assert "(sm 12.1)" in p.js("return document.body.textContent")
    p.no_errors()
    p.shot("overview")

    # Job page: the log grows while the job runs (server-sent events), colours converted.
    p.go(f"/job/{job_id}")
    first = p.wait("const n = document.querySelectorAll('#log .l').length; return n > 0 && n",
                   "first log lines")
    time.sleep(2)
    later = p.js("return document.querySelectorAll('#log .l').length")
    assert later > first, f"log did not grow live ({first} -> {later})"
    assert later < LINES, "job finished before the live check"
    assert p.js("return document.querySelectorAll('#log .ansi-fg-2').length") > 0
    p.no_errors()
    p.shot("job-running")

    # Build page: the job's cell is running, then turns to succeeded.
    p.go("/build/1")
    cell = f"document.querySelector('td.cell[data-job=\"{job_id}\"]')"
    p.wait(f"return {cell} && {cell}.dataset.state", "the job's cell")
    p.wait(f"return {cell}.dataset.state === 'JOB_SUCCEEDED'", "the cell to turn succeeded", 30)
    assert p.js("return document.querySelectorAll('td.cell').length") == 4
    # The validated wheel with its speed against the baseline, and how to install it.
    p.wait("return document.querySelector('#wheels tr[data-wheel]')", "the build's wheels")
    wheel = p.js("return document.querySelector('#wheels tr[data-wheel]').textContent")
    assert "passed" in wheel and "718.4 TOPS (baseline 589.0)" in wheel, wheel
    assert "pip install --index-url" in wheel and "sm_90a" in wheel, wheel
    p.no_errors()
    p.shot("build-succeeded")

    # Job page again: the whole log, the end of the attempt, the artifact and its pip line.
    p.go(f"/job/{job_id}")
    p.wait(f"return document.querySelectorAll('#log .l').length === {LINES}", "the whole log")
    p.wait("return document.getElementById('log-state').textContent.includes('succeeded')",
           "the end of the attempt")
    text = p.js("return document.getElementById('job-artifacts').textContent")
    assert "pip install --index-url" in text and "sm_90a" in text
    p.no_errors()
    p.shot("job-finished")

    _validation_job(p)

    # Workers page and the duration chart.
    p.go("/workers")
    p.wait("return document.querySelectorAll('tr[data-worker]').length === 3", "workers table")
    p.go("/chart")
    p.wait("return document.querySelectorAll('#duration-chart circle').length >= 4",
           "chart points")
    p.no_errors()
    p.shot("chart")


def _validation_job(p):
    """The RTX build (#3): its validation job sits in the cell of the job it validates and
    beside that job's wheel, says which GPU it waits for, and has a page of its own."""
    p.go("/builds")
    row = "document.querySelector('tr[data-build=\"3\"]')"
    p.wait(f"return {row} && {row}.textContent.includes('(1 validation)')", "the validation count")
    assert "blocked" not in p.js(f"return {row}.textContent")  # its wheel exists
    p.go("/build/3")
    v = "document.querySelector('td.cell .validation-job')"
    p.wait(f"return {v}", "the validation job in its cell")
    assert p.js("return document.querySelectorAll('td.cell').length") == 1
    text = p.js(f"return {v}.textContent")
    assert "pending" in text and "no worker with a GPU of cc 12.0 can validate it" in text, text
    validation_id = p.js(f"return {v}.dataset.validationJob")
    built_id = p.js("return document.querySelector('td.cell').dataset.job")
    wheel = p.js("return document.querySelector('#wheels tr[data-wheel]').textContent")
    assert "pending hardware" in wheel and f"validation job {validation_id}" in wheel, wheel
    p.no_errors()
    p.shot("build-validation-pending")
    p.go(f"/job/{validation_id}")
    p.wait("return document.getElementById('validation-of')", "the validation job's label")
    head = p.js("return document.getElementById('job-head').textContent")
    assert f"Validation job {validation_id}" in head, head
    target = p.js("return document.querySelector('#validation-of a').getAttribute('href')")
    assert f"validation of job {built_id} attempt 1" in " ".join(head.split()), head
    assert target == f"#/job/{built_id}", target
    summary = p.js("return document.querySelector('#waiting .waiting-summary').textContent")
    assert summary.startswith("no worker with a GPU of cc 12.0 can validate it"), summary
    assert "makes no wheels" in p.js("return document.getElementById('job-artifacts').textContent")
    p.no_errors()
    p.shot("job-validation-pending")


def test_dashboard_of_a_real_farm_follows_a_build_to_success(farm):
    """farmd serves the dashboard itself; a real worker runs a build that prints slowly."""
    farm.start_farmd(http=True)
    farm.start_worker()
    src = os.path.join(farm.root, "slow-src")
    os.makedirs(src)
    with open(os.path.join(src, "setup.py"), "w") as f:
        f.write("from setuptools import setup\nsetup(name='slow', version='1.0', py_modules=[])\n")
    recipe = os.path.join(farm.root, "slow.yaml")
    with open(recipe, "w") as f:
        f.write("name: slow\nsource: {local: slow-src}\nsystem_site_packages: true\nbuild: |\n"
                "  for i in $(seq 1 20); do printf '\\033[32mstep %s\\033[0m\\n' $i; sleep 0.4; done\n"
                "  \"$FARM_PYTHON\" -m pip wheel . --no-build-isolation --no-deps --no-index"
                " -w \"$FARM_WHEEL_DIR\"\n")
    build = farm.ctl_json("submit", recipe)
    job_id = build["jobs"][0]["id"]
    driver = _browser(os.path.join(farm.root, "chromium-profile"))
    try:
        p = Page(driver, "http://" + farm.http_address)
        p.go("/")
        p.wait("return document.querySelectorAll('tr[data-worker]').length === 1", "the worker")
        p.go(f"/job/{job_id}")
        p.wait("return document.getElementById('log').textContent.includes('step 2')",
               "the build's first lines", 60)
        first = p.js("return document.querySelectorAll('#log .l').length")
        time.sleep(2)
        later = p.js("return document.querySelectorAll('#log .l').length")
        assert later > first, f"log did not grow live ({first} -> {later})"
        p.no_errors()
        p.shot("real-farm-job-running")
        p.go(f"/build/{build['id']}")
        cell = f"document.querySelector('td.cell[data-job=\"{job_id}\"]')"
        p.wait(f"return {cell} && {cell}.dataset.state === 'JOB_SUCCEEDED'",
               "the cell to turn succeeded", 90)
        p.no_errors()
        p.shot("real-farm-build-succeeded")
    finally:
        driver.quit()
