"""Wheel requests (docs/requests.md) on the real farmd, farm-worker, farmctl, nvcc and pip.

One farm serves the module. It knows two recipes only from paused schedules (no build ran
before the requests): the example CUDA package (CUDA 13.0, arch lists 9.0 and 12.0a, a
validation script standing in for a GPU's numbers, as in test_revalidation.py) and a
pure-Python package whose only CUDA is 12.4. The worker reports a GPU of compute capability
9.0 through its test-only --test-fake-gpu switch.

- hostile field values are refused with 400 and nothing is stored;
- a request for a package no recipe builds, and one for a GPU whose arch no CUDA of the
  recipe compiles, are refused at once with their reasons;
- 20 identical requests filed at once make one row and one build; then the install script,
  in a venv whose torch (a real stand-in wheel, 2.9.0+cu130) no wheel fits, files the same
  request (merged), waits for it and installs the wheel with real pip;
- anonymous requests are refused by default; with --anonymous-requests 3 a flood from one
  address gets 3 in and the rest 429, nothing builds before an admin approves, and an
  approval builds.
"""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from farm_harness import make_farm, pure_python_source, wait_until
from test_revalidation import example_with_passing_script
from test_torch_pin import torch_wheels, venv_with_torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "dashboard"))
from test_dashboard_e2e import Page, _browser  # noqa: E402

CUDA_CELL = {"package": "attn-example", "version": "", "python": "3.11", "torch": "2.9",
             "cuda": "13.0", "compute_capability": "9.0", "platform": "linux_x86_64"}


def call(farm, path, body=None, token=None):
    """(status, JSON) of a GET, or of a POST of `body`, on the farm's HTTP port."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(f"http://{farm.http_address}{path}", data=data, headers=headers,
                                 method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def requests_of(farm):
    status, data = call(farm, "/api/v1/requests?limit=1000")
    assert status == 200, data
    return data["requests"]


def builds_of(farm, recipe):
    status, data = call(farm, "/api/v1/builds?recipe=" + recipe)
    assert status == 200, data
    return data["builds"]


def schedule(farm, recipe):
    r = farm.ctl("schedules", "add", recipe, "--cron", "0 0 1 1 *", "--paused")
    assert r.returncode == 0, r.stdout + r.stderr


def cuda_recipe(root):
    """The example package, one cell per arch list, so a request builds one arch."""
    path = example_with_passing_script(root)
    with open(path) as f:
        text = re.sub(r"arch_lists: \[.*\]", 'arch_lists: ["9.0", "12.0a"]', f.read())
    with open(path, "w") as f:
        f.write(text)
    return path


def old_cuda_recipe(root):
    pure_python_source(root, "oldcuda")
    path = os.path.join(root, "oldcuda.yaml")
    with open(path, "w") as f:
        f.write('name: oldcuda\nversion: "1.0"\nsource: {local: oldcuda-src}\n'
                'system_site_packages: true\nbuild: |\n  true\n'
                'matrix:\n  python: ["3.11"]\n  cuda: ["12.4"]\n  arch_lists: ["8.9"]\n')
    return path


def run_at_a_terminal(argv, script, env, answer):
    """Runs `argv` with `script` on its stdin and a pseudo-terminal as its controlling
    terminal (where the install script asks), answering `answer` to the first question;
    returns what the terminal showed and stdout."""
    import fcntl
    import pty
    import select
    import termios
    import time
    master, slave = pty.openpty()

    def own_terminal():
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, preexec_fn=own_terminal,
                            pass_fds=(slave,))
    os.close(slave)
    proc.stdin.write(script.encode())
    proc.stdin.close()
    shown, answered, deadline = b"", False, time.monotonic() + 300
    while time.monotonic() < deadline and not answered:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                shown += os.read(master, 4096)
            except OSError:  # the terminal closed: the script ended without asking
                break
        if b"[y/N]" in shown:
            os.write(master, answer)
            answered = True
    out = proc.stdout.read()  # the script ends on its own: bounded by its --wait and pip
    proc.wait(timeout=300)
    os.close(master)
    return proc.returncode, (shown + out).decode(errors="replace")


@pytest.fixture(scope="module")
def setup(request):
    farm = make_farm(request)
    farm.start_farmd(http=True)
    farm.start_worker("gpu-1", "--test-fake-gpu", "Fake H100:9.0")
    schedule(farm, cuda_recipe(farm.root))
    schedule(farm, old_cuda_recipe(farm.root))
    token = farm.ctl_json("tokens", "create", "--role", "submitter", "--name", "requester")["token"]
    return farm, token


def test_hostile_values_are_refused_and_nothing_is_stored(setup):
    farm, token = setup
    hostile = [dict(CUDA_CELL, package="../../etc/passwd"), dict(CUDA_CELL, package="a" * 65),
               dict(CUDA_CELL, python="3.11; rm -rf /"), dict(CUDA_CELL, torch="2.9\n"),
               dict(CUDA_CELL, cuda="<script>"), dict(CUDA_CELL, compute_capability="99.9"),
               dict(CUDA_CELL, platform="linux x86_64"), dict(CUDA_CELL, version="1.0\x00"),
               dict(CUDA_CELL, package=["attn-example"]), dict(CUDA_CELL, python="")]
    for body in hostile:
        status, data = call(farm, "/api/v1/requests", body, token)
        assert status == 400, (body, status, data)
        assert "<script>" not in json.dumps(data), data
    assert call(farm, "/api/v1/requests", b"{not json", token)[0] == 400
    assert call(farm, "/api/v1/requests", dict(CUDA_CELL), "not-a-token")[0] == 401
    assert requests_of(farm) == []


def test_requests_no_recipe_serves_are_refused_at_once_with_the_reason(setup):
    farm, token = setup
    status, r = call(farm, "/api/v1/requests", dict(CUDA_CELL, package="no-such-kernel"), token)
    assert status == 201 and r["state"] == "refused", r
    assert r["reason"] == "no recipe on this farm builds no-such-kernel", r
    # sm_120 needs CUDA 12.8 or newer; the recipe builds with CUDA 12.4 only.
    old = dict(CUDA_CELL, package="oldcuda", torch="", cuda="12.4", compute_capability="12.0")
    status, r = call(farm, "/api/v1/requests", old, token)
    assert status == 201 and r["state"] == "refused", r
    assert "needs an arch that no CUDA of the recipe of oldcuda supports (CUDA 12.4)" in r["reason"]
    assert builds_of(farm, "oldcuda") == []
    # farmctl requests lists them for admins with their reasons.
    listed = farm.ctl("requests")
    assert listed.returncode == 0 and "no recipe on this farm builds no-such-kernel" in listed.stdout


def test_identical_requests_make_one_build_and_the_install_script_waits_and_installs(setup):
    farm, token = setup
    # The venv and the script first: the script must run while the build is going.
    python = venv_with_torch(farm.root, torch_wheels(farm.root), "2.9.0+cu130")
    with urllib.request.urlopen(f"http://{farm.http_address}/install", timeout=30) as resp:
        script = resp.read().decode()
    env = dict(os.environ, FARM_INSTALL_GPU_CC="9.0", FARM_INSTALL_DRIVER_CUDA="13.0",
               FARM_TOKEN=token)
    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda _: call(farm, "/api/v1/requests", CUDA_CELL, token),
                                range(20)))
    assert all(s in (200, 201) for s, _ in answers), answers
    assert sorted(s for s, _ in answers) == [200] * 19 + [201], [s for s, _ in answers]
    (request_id,) = {r["id"] for _, r in answers}
    (build,) = builds_of(farm, "attn-example")
    rows = [r for r in requests_of(farm) if r["package"] == "attn-example"]
    assert len(rows) == 1 and rows[0]["filings"] == 20 and rows[0]["build_id"] == build["id"], rows
    assert rows[0]["arch_list"] == "9.0" and rows[0]["recipe"] == "attn-example", rows

    r = subprocess.run([python, "-", "attn-example", "--request", "--wait", "600"], input=script,
                       env=env, capture_output=True, text=True, timeout=700)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "missing: no wheel of attn-example" in r.stdout, r.stdout
    assert "merged with an identical request" in r.stdout, r.stdout
    assert f"request {request_id} is built" in r.stdout, r.stdout
    assert "verified: the farm's key signed the build of attn_example-" in r.stdout, r.stdout
    shown = subprocess.run([python, "-m", "pip", "show", "attn-example"], capture_output=True,
                           text=True, timeout=60).stdout
    assert "Version: 0.1.0" in shown, shown
    status, row = call(farm, f"/api/v1/requests/{request_id}")
    assert row["state"] == "built" and row["filings"] == 21, row
    assert row["wheel"].startswith("attn_example-0.1.0") and row["wheel"].endswith(".whl"), row
    assert len(builds_of(farm, "attn-example")) == 1
    # Without --request the script asks at its terminal (here for a GPU no wheel runs on);
    # a no files nothing.
    rc, out = run_at_a_terminal([python, "-", "attn-example"], script,
                                dict(env, FARM_INSTALL_GPU_CC="12.0"), b"n\n")
    assert rc == 1 and "ask the farm to build it? [y/N]" in out, out
    assert "run again with --request" in out, out
    assert len(requests_of(farm)) == 3  # the two refused above and this cell's
    # The feed announces the requested wheel.
    with urllib.request.urlopen(f"http://{farm.http_address}/feeds/wheels.atom", timeout=30) as f:
        feed = f.read().decode()
    assert f"urn:farm:request_built:{request_id}" in feed, feed
    assert "the requested wheel " + row["wheel"] + " is ready" in feed, feed
    # A request for the cell now is answered with the wheel, no build.
    status, again = call(farm, "/api/v1/requests", dict(CUDA_CELL, torch="2.8"), token)
    assert again["state"] == "built" and again["wheel"] == row["wheel"], again
    assert len(builds_of(farm, "attn-example")) == 1


def test_the_coverage_page_shows_the_requests_and_files_one_in_chromium(setup):
    farm, token = setup
    driver = _browser(os.path.join(farm.root, "chromium-profile"))
    try:
        p = Page(driver, "http://" + farm.http_address)
        p.go("/")
        p.js(f"localStorage.setItem('farmToken', {json.dumps(token)})")
        p.go("/coverage")
        p.wait("return document.querySelectorAll('tr.req-cell').length >= 3", "the requested cells")
        built = p.js("""return [...document.querySelectorAll('tr.req-cell[data-state=built]')]
                        .map((r) => r.querySelector('.filings').textContent)""")
        assert "21" in built, built
        text = p.js("return document.getElementById('requests').textContent")
        assert "no recipe on this farm builds no-such-kernel" in text, text
        assert "refused: 2" in text, text
        # The form files a request; the answer and the new row show.
        p.js("document.getElementById('new-request').open = true")
        for name, value in (("package", "<img src=x onerror=alert(1)>"), ("python", "3.11"),
                            ("compute_capability", "9.0")):
            p.js(f"document.getElementById('request-form').elements.namedItem('{name}').value = "
                 f"{json.dumps(value)}")
        p.js("document.querySelector('#request-form button').click()")
        p.wait("return document.getElementById('request-form-result').textContent", "the answer")
        assert "request field package" in p.js(
            "return document.getElementById('request-form-result').textContent")
        p.js("document.getElementById('request-form').elements.namedItem('package').value = "
             "'another-kernel'")
        p.js("document.querySelector('#request-form button').click()")
        p.wait("return document.getElementById('request-form-result').textContent"
               ".includes('no recipe on this farm builds another-kernel')", "the refusal")
        p.wait("return [...document.querySelectorAll('tr.req-cell')].some((r) => "
               "r.textContent.includes('another-kernel'))", "the new row")
        assert not p.js("return document.querySelector('#requests img')")
        assert p.js("return window.farmErrors") == []
        # The one error the browser logs is the refused hostile request's 400.
        severe = [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert all("/api/v1/requests - Failed to load resource" in m and "400" in m
                   for m in severe), severe
        p.shot("requests-coverage")
    finally:
        driver.quit()


def test_anonymous_requests_are_off_then_limited_and_wait_for_approval(setup):
    farm, token = setup
    anonymous = dict(CUDA_CELL, compute_capability="12.0")
    status, data = call(farm, "/api/v1/requests", anonymous)
    assert status == 403 and "no anonymous requests" in data["error"]["message"], data
    farm.stop(farm.farmd)
    farm.start_farmd("--anonymous-requests", "3", http=True)
    flood = [call(farm, "/api/v1/requests", dict(anonymous, python=p))
             for p in ("3.11", "3.12", "3.13", "3.14", "3.10")]
    assert [s for s, _ in flood] == [201, 201, 201, 429, 429], flood
    waiting = flood[0][1]
    assert waiting["state"] == "requested" and waiting["anonymous"], waiting
    assert [r["state"] for _, r in flood[1:3]] == ["refused", "refused"], flood
    assert len(builds_of(farm, "attn-example")) == 1  # nothing built before approval
    # Only an admin approves; the approval builds the cell (cancelled here: the build's
    # own path is the test above).
    assert call(farm, f"/api/v1/requests/{waiting['id']}/approve", {}, token)[0] == 403
    r = farm.ctl("requests", "approve", str(waiting["id"]))
    assert r.returncode == 0, r.stdout + r.stderr
    status, row = call(farm, f"/api/v1/requests/{waiting['id']}")
    assert row["state"] == "building" and row["arch_list"] == "12.0a", row
    assert len(builds_of(farm, "attn-example")) == 2
    assert farm.ctl("cancel", str(row["build_id"])).returncode == 0
