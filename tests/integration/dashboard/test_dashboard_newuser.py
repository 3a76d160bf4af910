"""What a new user reads on the dashboard and its JSON API, in headless Chromium against the
real farmd, farm-worker and farmctl (or dashboard_fixture's store): why a job waits or
failed, whether its build can go on, and pages that read right. Fails on any JavaScript
error; screenshots go to screenshots/."""
import json
import os
import subprocess
import urllib.request

import pytest

import farm_harness
from farm_harness import FARMCTL, wait_until
from test_commands import LineReader
from test_dashboard_e2e import Page, _browser

FIXTURE = os.environ.get("DASHBOARD_FIXTURE", os.path.join(
    farm_harness.REPO, "build", "tests", "integration", "dashboard", "dashboard_fixture"))
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
