"""Schedules in the web dashboard, on the real farmd and farmctl (docs/dashboard.md).

The JSON routes are checked over plain HTTP: the list and one schedule with their fire
times and runs, 404 for an unknown id, 400 for a malformed one, 405 for a wrong method,
401 for an action without a token, and nothing of the stored build request in the output.
Then headless Chromium shows a schedule added with farmctl, follows a pause made with
farmctl without reloading, resumes and fires it from the page's buttons, and links the
run to its build, and creates and deletes a schedule from the page's form and button. No
worker runs: the run's build stays queued, which is all the page needs.
"""
import json
import os
import time
import urllib.error
import urllib.request

import pytest

from farm_harness import EXAMPLE_RECIPE, wait_until
from test_dashboard_e2e import Page, _browser

NAME = "nightly <img src=x onerror=\"window.farmErrors.push('xss')\"> & co"
SECRET = "s3cret-pass-word"


def http(farm, method, path, token=None):
    """(status, parsed JSON body) of one request to the dashboard."""
    req = urllib.request.Request("http://" + farm.http_address + path, method=method,
                                 data=b"" if method == "POST" else None)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def admin_token(farm):
    with open(os.path.join(farm.data, "admin.token")) as f:
        return f.read().strip()


def add_schedule(farm, *extra):
    return farm.ctl_json("schedules", "add", EXAMPLE_RECIPE, "--cron", "0 3 * * *",
                         "--tz", "Europe/Berlin", *extra)


def git_recipe(root, url, name):
    """The example recipe with a git source at `url` (ref main)."""
    with open(EXAMPLE_RECIPE) as f:
        text = f.read()
    text = text.replace('source:\n  local: "."\n', f"source:\n  git: {{url: '{url}', ref: main}}\n")
    assert url in text
    path = os.path.join(root, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_schedule_json_routes(farm):
    farm.start_farmd(http=True)
    sid = str(add_schedule(farm, "--name", NAME)["id"])  # farmctl prints ids as numbers
    token = admin_token(farm)

    status, body = http(farm, "GET", "/api/v1/schedules")
    assert status == 200, body
    [s] = body["schedules"]
    assert s["id"] == int(sid) and s["name"] == NAME
    assert s["recipe_name"] == "attn-example" and s["cron"] == "0 3 * * *"
    assert s["time_zone"] == "Europe/Berlin"
    assert s["missed_run_policy"] == "MISSED_SKIP"
    assert s["concurrency_policy"] == "CONCURRENCY_SKIP"
    assert s["paused"] is False and s["last_run"] is None
    now = time.time()
    assert now < s["next_fire_unix"] <= now + 25 * 3600
    assert s["next_fire_time"] == time.strftime("%Y-%m-%dT%H:%M:%S.000Z",
                                                time.gmtime(s["next_fire_unix"]))
    assert s["next_fire_local"].split()[1:] in (["03:00:00", "CET"], ["03:00:00", "CEST"])
    shown = farm.ctl_json("schedules", "show", sid)["schedules"][0]
    assert shown["next_fire_time"] == s["next_fire_time"]

    status, one = http(farm, "GET", f"/api/v1/schedules/{sid}")
    assert status == 200 and one["runs"] == [] and one["cron"] == "0 3 * * *"

    # Unknown and malformed ids, unknown actions, wrong methods, missing tokens.
    status, err = http(farm, "GET", "/api/v1/schedules/999")
    assert status == 404 and err["error"]["code"] == "NOT_FOUND", err
    assert "no schedule 999" in err["error"]["message"]
    for bad in ("abc", "0", "-3", "1x", "99999999999999999999"):
        status, err = http(farm, "GET", f"/api/v1/schedules/{bad}")
        assert status == 400 and err["error"]["code"] == "INVALID_ARGUMENT", (bad, err)
    status, err = http(farm, "POST", "/api/v1/schedules/abc/pause", token)
    assert status == 400, err
    status, err = http(farm, "POST", "/api/v1/schedules/999/pause", token)
    assert status == 404, err
    status, err = http(farm, "GET", f"/api/v1/schedules/{sid}/bogus")
    assert status == 404, err
    status, _ = http(farm, "GET", f"/api/v1/schedules/{sid}/pause")
    assert status == 405
    status, _ = http(farm, "POST", f"/api/v1/schedules/{sid}", token)
    assert status == 405
    status, err = http(farm, "POST", f"/api/v1/schedules/{sid}/pause")
    assert status == 401, err
    status, err = http(farm, "POST", f"/api/v1/schedules/{sid}/run-now", "not-a-token")
    assert status in (401, 403), err
    assert http(farm, "GET", f"/api/v1/schedules/{sid}")[1]["runs"] == []

    # Pause and resume from the API, seen by farmctl.
    status, paused = http(farm, "POST", f"/api/v1/schedules/{sid}/pause", token)
    assert status == 200 and paused["paused"] is True, paused
    assert paused["next_fire_unix"] is None and paused["next_fire_time"] is None
    assert farm.ctl_json("schedules", "show", sid)["schedules"][0]["paused"] is True
    status, resumed = http(farm, "POST", f"/api/v1/schedules/{sid}/resume", token)
    assert status == 200 and resumed["paused"] is False
    assert resumed["next_fire_unix"] > time.time()
    assert farm.ctl_json("schedules", "show", sid)["schedules"][0].get("paused", False) is False

    # Run now: a build linked both ways, then the list's last run names it.
    status, fired = http(farm, "POST", f"/api/v1/schedules/{sid}/run-now", token)
    assert status == 200, fired
    run = fired["run"]
    assert run["outcome"] == "RUN_SUBMITTED" and run["trigger"] == "TRIGGER_MANUAL"
    assert run["build_id"] > 0 and run["build_state"] == "BUILD_QUEUED"
    assert run["build_url"] == f"#/build/{run['build_id']}"
    assert run["skipped_reason"] is None
    status, build = http(farm, "GET", run["build_api"])
    assert status == 200 and build["id"] == run["build_id"], build
    assert farm.ctl_json("show", str(run["build_id"]))["schedule_id"] == int(sid)
    last = http(farm, "GET", "/api/v1/schedules")[1]["schedules"][0]["last_run"]
    assert last["id"] == run["id"] and last["build_id"] == run["build_id"]
    assert [r["id"] for r in http(farm, "GET", f"/api/v1/schedules/{sid}")[1]["runs"]] == [run["id"]]


def test_skipped_and_failed_runs_name_their_reason_without_secrets(farm):
    farm.start_farmd(http=True)
    token = admin_token(farm)
    sid = str(add_schedule(farm)["id"])
    first = http(farm, "POST", f"/api/v1/schedules/{sid}/run-now", token)[1]["run"]
    # The first run's build is still queued (no worker): the next firing is skipped.
    status, second = http(farm, "POST", f"/api/v1/schedules/{sid}/run-now", token)
    assert status == 200, second
    second = second["run"]
    assert second["outcome"] == "RUN_SKIPPED_RUNNING" and second["build_id"] == 0
    assert second["build_url"] is None
    assert second["skipped_reason"] == (f"build {first['build_id']} of a previous run is "
                                        "still going")
    last = http(farm, "GET", "/api/v1/schedules")[1]["schedules"][0]["last_run"]
    assert last["outcome"] == "RUN_SKIPPED_RUNNING"
    assert last["skipped_reason"] == second["skipped_reason"]

    # A git URL that carries a password is refused where it is written, and not repeated.
    refused = farm.ctl("schedules", "add",
                       git_recipe(farm.root, f"https://farm:{SECRET}@127.0.0.1:9/attn.git",
                                  "attn-secret.yaml"), "--cron", "@daily")
    assert refused.returncode == 2 and "carries credentials" in refused.stderr, refused
    assert SECRET not in refused.stdout + refused.stderr
    # A schedule whose repository cannot be reached (a closed port) fails its run, saying so.
    secret_sid = farm.ctl_json("schedules", "add",
                               git_recipe(farm.root, "https://127.0.0.1:9/attn.git",
                                          "attn-closed.yaml"), "--cron", "@daily")["id"]
    status, failed = http(farm, "POST", f"/api/v1/schedules/{secret_sid}/run-now", token)
    assert status == 200, failed
    assert failed["run"]["outcome"] == "RUN_FAILED"
    assert failed["run"]["skipped_reason"].startswith("cannot resolve main")
    for path in ("/api/v1/schedules", f"/api/v1/schedules/{secret_sid}"):
        with urllib.request.urlopen("http://" + farm.http_address + path, timeout=30) as res:
            text = res.read().decode()
        assert SECRET not in text, text
        assert not _keys(json.loads(text)) & {"request", "recipe_yaml", "source", "patches"}


def _keys(value):
    """Every object key anywhere in a parsed JSON value."""
    if isinstance(value, dict):
        return set(value).union(*(_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value))
    return set()


def test_dashboard_shows_schedules_live(farm):
    farm.start_farmd(http=True)
    sid = str(add_schedule(farm, "--name", NAME)["id"])  # farmctl prints ids as numbers
    expected = farm.ctl_json("schedules", "show", sid)["schedules"][0]
    driver = _browser(os.path.join(farm.root, "chromium-profile"))
    try:
        _walk_through(Page(driver, "http://" + farm.http_address), farm, sid, expected)
    finally:
        driver.quit()


def _walk_through(p, farm, sid, expected):
    row = f"document.querySelector('tr[data-schedule=\"{sid}\"]')"
    p.go("/")
    p.js("window.sameDocument = 'yes'")  # gone if the page reloads
    p.js("document.querySelector('a[href=\"#/schedules\"]').click()")
    p.wait(f"return {row}", "the schedule's row")
    assert p.js(f"return {row}.querySelector('code.cron').textContent") == "0 3 * * *"
    assert p.js(f"return {row}.querySelector('.next-utc').textContent") == \
        expected["next_fire_time"]
    assert p.js(f"return {row}.querySelector('.next-local').textContent") == \
        expected["next_fire_local"]
    # The name is shown as text, never parsed as markup.
    assert p.js(f"return {row}.querySelector('a').textContent") == NAME
    assert p.js("return document.querySelectorAll('#schedules img').length") == 0
    assert "never ran" in p.js(f"return {row}.querySelector('.last-run').textContent")
    p.no_errors()
    p.shot("schedules")

    # Paused with farmctl: the row turns paused on the next refresh, no reload.
    assert farm.ctl_json("schedules", "pause", sid)["paused"] is True
    p.wait(f"return {row}.dataset.paused === '1'", "the row to show paused", 10)
    assert "paused" in p.js(f"return {row}.querySelector('.next').textContent")
    assert p.js("return window.sameDocument") == "yes"
    p.no_errors()
    p.shot("schedules-paused")

    # Resumed and fired from the page's buttons, with a submitter token stored.
    p.js(f"localStorage.setItem('farmToken', {json.dumps(admin_token(farm))})")
    p.go(f"/schedule/{sid}")
    head = "document.querySelector('#schedule h1')"
    p.wait(f"return {head} && {head}.dataset.paused === '1'", "the paused schedule page")
    p.js("document.querySelector('button.sched-toggle').click()")
    p.wait(f"return {head}.dataset.paused === '0'", "the schedule to resume", 10)
    assert farm.ctl_json("schedules", "show", sid)["schedules"][0].get("paused", False) is False
    p.js("document.querySelector('button.sched-run').click()")
    link = "document.querySelector('#runs tr[data-run] a.run-build')"
    p.wait(f"return {link}", "the run's build link", 10)
    runs = farm.ctl_json("schedules", "show", sid)["schedules"][0]["recent_runs"]
    assert len(runs) == 1 and runs[0]["trigger"] == "TRIGGER_MANUAL"
    build_id = runs[0]["build_id"]
    assert p.js(f"return {link}.getAttribute('href')") == f"#/build/{build_id}"
    assert p.js("return document.querySelector('#runs tr[data-run]').dataset.outcome") == \
        "RUN_SUBMITTED"
    p.no_errors()
    p.shot("schedule-run")

    # A run made with farmctl appears too; the link leads to the build's page.
    farm.ctl_json("schedules", "run-now", sid)
    p.wait("return document.querySelectorAll('#runs tr[data-run]').length === 2",
           "the second run", 10)
    p.js(f"document.querySelector('#runs a.run-build[href=\"#/build/{build_id}\"]').click()")
    p.wait("const h = document.querySelector('#build h1');"
           f"return h && h.textContent.includes('Build #{build_id}')", "the run's build page")
    assert p.js("return window.sameDocument") == "yes"
    p.no_errors()
    p.shot("schedule-run-build")


def test_dashboard_creates_and_deletes_schedules(farm):
    """The New schedule form and the Delete button, checked against farmctl's view."""
    farm.start_farmd(http=True)
    with open(EXAMPLE_RECIPE) as f:
        recipe = f.read()
    # A pasted recipe lies on no machine that could upload a local tree: it names git.
    local_recipe = recipe
    recipe = recipe.replace('source:\n  local: "."\n',
                            "source:\n  git: {url: 'https://example.invalid/attn.git', ref: main}\n")
    assert "example.invalid" in recipe
    driver = _browser(os.path.join(farm.root, "chromium-profile"))
    try:
        p = Page(driver, "http://" + farm.http_address)
        p.go("/")
        p.js(f"localStorage.setItem('farmToken', {json.dumps(admin_token(farm))})")
        p.go("/schedules")
        p.wait("return document.querySelector('#schedule-form')", "the new-schedule form")
        p.js("document.querySelector('#new-schedule').open = true")

        def fill(cron, yaml_text):
            p.js("const f = document.querySelector('#schedule-form').elements;"
                 f"f.namedItem('name').value = {json.dumps(NAME)};"
                 f"f.namedItem('cron').value = {json.dumps(cron)};"
                 "f.namedItem('time_zone').value = 'Europe/Berlin';"
                 "f.namedItem('missed_run_policy').value = 'once';"
                 f"f.namedItem('recipe_yaml').value = {json.dumps(yaml_text)};"
                 "document.querySelector('#schedule-form button[type=submit]').click()")

        # A bad cron expression: the reason with its position, under the form; nothing stored.
        fill("0 25 * * *", recipe)
        p.wait("return document.querySelector('#schedule-form-error').textContent", "the error")
        error = p.js("return document.querySelector('#schedule-form-error').textContent")
        assert "field 2" in error and "0 25 * * *" in error, error
        assert farm.ctl_json("schedules", "list").get("schedules", []) == []
        # Chromium logs the refused request; that one entry is expected, nothing else.
        logged = [e["message"] for e in p.d.get_log("browser") if e.get("level") == "SEVERE"]
        assert len(logged) == 1 and "/api/v1/schedules" in logged[0] and "400" in logged[0], logged

        # A local source: refused with the reason, nothing stored.
        fill("@nightly", local_recipe)
        p.wait("return document.querySelector('#schedule-form-error').textContent"
               ".includes('path on the submitting machine')", "the source error")
        assert farm.ctl_json("schedules", "list").get("schedules", []) == []
        logged = [e["message"] for e in p.d.get_log("browser") if e.get("level") == "SEVERE"]
        assert len(logged) == 1 and "400" in logged[0], logged

        fill("@nightly", recipe)
        p.wait("return location.hash.startsWith('#/schedule/') && "
               "document.querySelector('#schedule h1')", "the new schedule's page")
        sid = p.js("return location.hash.split('/')[2]")
        [shown] = farm.ctl_json("schedules", "show", sid)["schedules"]
        assert shown["name"] == NAME and shown["cron"] == "@nightly"
        assert shown["time_zone"] == "Europe/Berlin"
        assert shown["missed_run_policy"] == "MISSED_RUN_ONCE"
        assert shown["created_by"] == "bootstrap-admin"  # the token's name
        assert p.js("return document.querySelectorAll('#schedule img').length") == 0
        p.no_errors()
        p.shot("schedule-created")

        p.js("window.confirm = () => true")
        p.js("document.querySelector('button.sched-delete').click()")
        p.wait("return location.hash === '#/schedules' && document.querySelector('#schedules')",
               "the schedule list after deleting")
        assert farm.ctl_json("schedules", "list").get("schedules", []) == []
        assert p.js(f"return document.querySelector('tr[data-schedule=\"{sid}\"]')") is None
        p.no_errors()
    finally:
        driver.quit()
