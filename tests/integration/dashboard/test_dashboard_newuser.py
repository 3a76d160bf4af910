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
