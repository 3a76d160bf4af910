"""Who may change what (docs/security.md, "Who may change what"), on the real farmd,
farm-worker and farmctl: a submitter cannot cancel or retry another submitter's build (over
gRPC and the dashboard's API) and nothing changes, while the owner and an admin can; a
recipe name belongs to its first submitter, a squat under it is refused with the owner
named and stores nothing, and an admin's transfer moves it; a project (wheel) name belongs
to the first submitter whose wheel names it: another's recipe building a wheel of it fails
its wheel check naming the owner, the index lists only the owner's wheel, and `farmctl
verify --owner` holds for it (issue 46, finding 3); schedules are changed only by their
creator or an admin and submit as their creator; every attempt, refusals included, is in
the audit log, which only admins read and which holds no token."""
import json
import os
import urllib.error
import urllib.parse
import urllib.request

from farm_harness import REPO, finished, local_recipe, log_of, pure_python_source, wait_until
from test_foundation import write_recipe

SLEEPER = os.path.join(REPO, "kernels", "examples", "sleeper", "recipe.yaml")
DENIED = 4  # farmctl's exit code for a refused permission


def token(farm, role, name):
    created = farm.ctl_json("tokens", "create", "--role", role, "--name", name)
    path = os.path.join(farm.root, name + ".token")
    with open(path, "w") as f:
        f.write(created["token"])
    return path, created["token"]


def as_(farm, token_file, *args):
    return farm.ctl(*args, token_file=token_file)


def as_json(farm, token_file, *args):
    r = farm.ctl("--output", "json", *args, token_file=token_file)
    assert r.returncode == 0, (args, r.returncode, r.stderr)
    return json.loads(r.stdout)


def audit(farm, *args):
    return farm.ctl_json("audit", "--limit", "500", *args).get("records", [])


def post(farm, path, bearer):
    req = urllib.request.Request(f"http://{farm.http_address}{path}", data=b"", method="POST",
                                 headers={"Authorization": "Bearer " + bearer})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def get(farm, path, bearer=None):
    headers = {"Authorization": "Bearer " + bearer} if bearer else {}
    req = urllib.request.Request(f"http://{farm.http_address}{path}", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_a_submitter_cannot_cancel_or_retry_anothers_build(farm):
    farm.start_farmd("--index-include-pending", http=True)
    farm.start_worker()
    alice, _ = token(farm, "submitter", "alice")
    mallory, mallory_token = token(farm, "submitter", "mallory")
    reader, _ = token(farm, "viewer", "reader")
    admin_token = open(os.path.join(farm.data, "admin.token")).read().strip()

    build = as_json(farm, alice, "submit", SLEEPER)
    build_id, job_id = build["id"], build["jobs"][0]["id"]
    assert build["owner"] == "alice" and build["submitted_by"] == "alice", build
    wait_until(lambda: farm.ctl_json("show", str(build_id))["state"] == "BUILD_RUNNING", 60,
               "alice's build running")

    # Another submitter, over gRPC and over the dashboard's API, and a viewer: refused.
    r = as_(farm, mallory, "cancel", str(build_id))
    assert r.returncode == DENIED, (r.returncode, r.stderr)
    assert f"build {build_id} belongs to alice" in r.stderr, r.stderr
    status, body = post(farm, f"/api/v1/builds/{build_id}/cancel", mallory_token)
    assert status == 403 and "belongs to alice" in body, (status, body)
    assert as_(farm, reader, "cancel", str(build_id)).returncode == DENIED
    r = as_(farm, mallory, "publish", str(build_id), "--to", "all")
    assert r.returncode == DENIED and "belongs to alice" in r.stderr, r.stderr
    shown = farm.ctl_json("show", str(build_id))
    assert shown["state"] == "BUILD_RUNNING", shown  # nothing changed
    assert not shown["jobs"][0].get("cancel_requested") and "cancelled_by" not in shown["jobs"][0]
    listed = farm.ctl("list").stdout.splitlines()
    assert listed[0].split()[:4] == ["BUILD", "RECIPE", "OWNER", "STATE"], listed
    assert [r.split()[:4] for r in listed[1:] if r.split()[0] == str(build_id)] == [
        [str(build_id), "sleeper", "alice", "running"]], listed
    assert "owner alice" in farm.ctl("show", str(build_id)).stdout

    # The owner cancels; the job can then be retried by its owner and an admin only.
    assert as_(farm, alice, "cancel", str(build_id)).returncode == 0
    done = wait_until(lambda: (lambda b: b if b["state"] == "BUILD_CANCELLED" else None)(
        farm.ctl_json("show", str(build_id))), 60, "the build cancelled")
    assert done["jobs"][0]["cancelled_by"] == "alice"
    r = as_(farm, mallory, "retry", str(job_id))
    assert r.returncode == DENIED and "belongs to alice" in r.stderr, r.stderr
    status, _ = post(farm, f"/api/v1/jobs/{job_id}/retry", mallory_token)
    assert status == 403
    assert farm.ctl_json("job", str(job_id))["state"] == "JOB_CANCELLED"
    assert as_json(farm, alice, "retry", str(job_id))["state"] in ("JOB_PENDING", "JOB_RUNNING")
    assert farm.ctl("cancel", str(build_id)).returncode == 0  # an admin cancels anyone's

    # Every attempt is recorded, refusals with who asked and why; only admins read it.
    denied = audit(farm, "--principal", "mallory")
    assert [(r["action"], r["outcome"]) for r in denied] == [
        ("job.retry", "denied"), ("job.retry", "denied"), ("build.publish", "denied"),
        ("build.cancel", "denied"), ("build.cancel", "denied")], denied
    assert all(r["role"] == "submitter" and "belongs to alice" in r["detail"] for r in denied)
    assert denied[-1]["target"] == f"build {build_id}"
    reader_rows = audit(farm, "--principal", "reader")
    assert [(r["role"], r["outcome"]) for r in reader_rows] == [("viewer", "denied")]
    ok = {(r["action"], r["outcome"]) for r in audit(farm, "--principal", "alice")}
    assert ok == {("source.upload", "ok"), ("build.submit", "ok"), ("build.cancel", "ok"),
                  ("job.retry", "ok")}, ok
    assert ("build.cancel", "ok") in {(r["action"], r["outcome"])
                                      for r in audit(farm, "--principal", "bootstrap-admin")}
    r = as_(farm, mallory, "audit")
    assert r.returncode == DENIED, (r.returncode, r.stderr)
    assert get(farm, "/api/v1/audit")[0] == 401  # public reads do not include it
    assert get(farm, "/api/v1/audit", mallory_token)[0] == 403
    status, body = get(farm, "/api/v1/audit?limit=1000", admin_token)
    assert status == 200 and '"build.cancel"' in body
    everything = farm.ctl("--output", "json", "audit", "--limit", "1000").stdout
    for secret in (mallory_token, admin_token, open(alice).read()):
        assert secret not in everything and secret not in body

    # The same farm and principals: a project name squatted through another recipe.
    project_squat_is_refused_naming_the_owner(farm, alice, mallory)


def wheel_recipe(root, recipe_name, version):
    """A recipe `recipe_name` building the pure-Python wheel alib-`version`, with a GPU
    validation script, so that here, without a GPU, it waits for hardware and is listed."""
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "check.py"), "w") as f:
        f.write("raise SystemExit('needs a GPU')\n")
    setup = f"from setuptools import setup\nsetup(name='alib', version='{version}', " \
            "py_modules=['alib'])\n"
    src = pure_python_source(root, "alib", {"setup.py": setup})
    return local_recipe(root, recipe_name, source=os.path.basename(src),
                        tail="validation:\n  script: check.py\n  import: [alib]\n")


def simple_files(farm, project):
    req = urllib.request.Request(f"http://{farm.http_address}/simple/{project}/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)["files"]


def project_squat_is_refused_naming_the_owner(farm, alice, mallory):
    mine = as_json(farm, alice, "submit", wheel_recipe(os.path.join(farm.root, "a"), "alib", "1.0"))
    assert finished(farm, mine["id"])["state"] == "BUILD_SUCCEEDED"
    assert [(n["name"], n["owner"]) for n in farm.ctl_json("projects", "list")["names"]] == [
        ("alib", "alice")]

    # Mallory's own recipe name, alice's project: the wheel check fails naming alice.
    squat = as_json(farm, mallory, "submit",
                    wheel_recipe(os.path.join(farm.root, "b"), "b-squat", "9.0"))
    failed = finished(farm, squat["id"])
    assert failed["state"] == "BUILD_FAILED", failed
    (job,) = failed["jobs"]
    (attempt,) = job["attempts"]
    assert attempt["cause"] == "CAUSE_VALIDATION_FAILED", attempt
    why = 'project "alib" belongs to alice'
    assert why in attempt["detail"] and "alib-9.0" in attempt["detail"], attempt
    assert why in log_of(farm, job["id"])
    status, page = get(farm, f"/api/v1/jobs/{job['id']}")  # what the job's page shows
    assert status == 200, page
    failure = json.loads(page)["failure"]
    assert failure["phase"] == "checks" and why in failure["summary"], failure
    assert not job.get("artifacts"), job  # nothing stored

    # The index lists alice's wheel alone, and its statement names her as the owner.
    files = simple_files(farm, "alib")
    assert [f["filename"].split("-")[1].split("+")[0] for f in files] == ["1.0"], files
    url = urllib.parse.urljoin(f"http://{farm.http_address}/simple/alib/", files[0]["url"])
    ok = farm.ctl("verify", url, "--owner", "alice", timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "project     alib, owner alice" in ok.stdout, ok.stdout
    refused = farm.ctl("verify", url, "--owner", "mallory", timeout=120)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "names owner alice of project alib, not mallory" in refused.stdout, refused.stdout
    assert as_(farm, mallory, "projects", "transfer", "alib", "--to", "mallory"
               ).returncode == DENIED


def test_a_recipe_name_belongs_to_its_first_submitter_until_an_admin_transfers_it(farm):
    farm.start_farmd()
    alice, _ = token(farm, "submitter", "alice")
    mallory, _ = token(farm, "submitter", "mallory")
    mine = write_recipe(farm.root, "alice-kernel", "echo alice's build")
    os.makedirs(os.path.join(farm.root, "m"))
    squat = write_recipe(os.path.join(farm.root, "m"), "alice-kernel", "echo planted >&2")

    first = as_json(farm, alice, "submit", mine)
    assert first["owner"] == "alice"
    names = farm.ctl_json("names", "list")["names"]
    assert [(n["name"], n["owner"]) for n in names] == [("alice-kernel", "alice")], names

    # The squat: refused naming the owner, nothing stored.
    r = as_(farm, mallory, "submit", squat)
    assert r.returncode == DENIED, (r.returncode, r.stderr)
    assert '"alice-kernel" belongs to alice' in r.stderr, r.stderr
    builds = farm.ctl_json("list")["builds"]
    assert [b["id"] for b in builds] == [first["id"]], builds
    assert as_(farm, mallory, "names", "transfer", "alice-kernel", "--to", "mallory"
               ).returncode == DENIED
    # An admin may build under any name without taking it.
    admin_build = farm.ctl_json("submit", mine)
    assert admin_build["owner"] == "bootstrap-admin"
    assert farm.ctl_json("names", "list")["names"][0]["owner"] == "alice"

    # The admin transfers the name: now mallory builds under it and alice does not, not
    # even by retrying her old job (a retry builds under the name).
    moved = farm.ctl_json("names", "transfer", "alice-kernel", "--to", "mallory")
    assert moved["owner"] == "mallory" and moved["updated_at"] >= moved["claimed_at"]
    text = farm.ctl("names", "list").stdout
    assert text.startswith("alice-kernel\tmallory\tclaimed "), text
    assert as_json(farm, mallory, "submit", squat)["owner"] == "mallory"
    r = as_(farm, alice, "submit", mine)
    assert r.returncode == DENIED and "belongs to mallory" in r.stderr, r.stderr
    assert as_(farm, alice, "cancel", str(first["id"])).returncode == 0  # still hers to stop
    r = as_(farm, alice, "retry", str(first["jobs"][0]["id"]))
    assert r.returncode == DENIED and "belongs to mallory" in r.stderr, r.stderr
    r = farm.ctl("names", "transfer", "Not A Name", "--to", "x")
    assert r.returncode == 2, (r.returncode, r.stderr)

    transfers = [r for r in audit(farm) if r["action"] == "name.transfer"]
    assert [(t["principal"], t["outcome"]) for t in transfers] == [
        ("bootstrap-admin", "failed"), ("bootstrap-admin", "ok"), ("mallory", "denied")]
    assert transfers[1]["detail"] == "from alice to mallory"
    assert transfers[1]["target"] == "recipe alice-kernel"
    submits = [(r["principal"], r["outcome"]) for r in audit(farm) if r["action"] == "build.submit"]
    assert submits == [("alice", "denied"), ("mallory", "ok"), ("bootstrap-admin", "ok"),
                       ("mallory", "denied"), ("alice", "ok")], submits


def test_schedules_are_changed_by_their_creator_and_submit_as_their_creator(farm):
    farm.start_farmd()
    alice, _ = token(farm, "submitter", "alice")
    mallory, _ = token(farm, "submitter", "mallory")
    recipe = write_recipe(farm.root, "nightly-kernel", "echo nightly")
    created = as_json(farm, alice, "schedules", "add", recipe, "--cron", "0 3 * * *")
    sid = str(created["id"])  # a number in farmctl's JSON
    assert created["owner"] == "alice", created
    assert farm.ctl_json("names", "list")["names"][0]["owner"] == "alice"

    for verb in ("pause", "resume", "delete", "run-now"):
        r = as_(farm, mallory, "schedules", verb, sid)
        assert r.returncode == DENIED, (verb, r.returncode, r.stderr)
        assert f"schedule {sid} belongs to alice" in r.stderr, r.stderr
    shown = farm.ctl_json("schedules", "show", sid)["schedules"][0]
    assert not shown.get("paused") and not shown.get("recent_runs"), shown
    # Another schedule under alice's name is a squat too.
    r = as_(farm, mallory, "schedules", "add", recipe, "--cron", "@daily")
    assert r.returncode == DENIED and "belongs to alice" in r.stderr, r.stderr
    assert len(farm.ctl_json("schedules", "list")["schedules"]) == 1

    assert as_json(farm, alice, "schedules", "pause", sid)["paused"] is True
    assert not farm.ctl_json("schedules", "resume", sid).get("paused")  # an admin may
    assert "owner alice" in farm.ctl("schedules", "list").stdout
    run = farm.ctl_json("schedules", "run-now", sid)  # the admin fires it: alice's build
    assert run["outcome"] == "RUN_SUBMITTED", run
    assert farm.ctl_json("show", str(run["build_id"]))["owner"] == "alice"
    # Alice's build, so alice (not mallory) may cancel it.
    assert as_(farm, mallory, "cancel", str(run["build_id"])).returncode == DENIED
    assert as_(farm, alice, "cancel", str(run["build_id"])).returncode == 0

    # A creator whose tokens are all revoked no longer builds anything.
    alice_id = [t["id"] for t in farm.ctl_json("tokens", "list")["tokens"]
                if t["name"] == "alice"][0]
    assert farm.ctl("tokens", "revoke", alice_id).returncode == 0
    r = farm.ctl("--output", "json", "schedules", "run-now", sid, "--force")
    assert r.returncode == 1, (r.returncode, r.stderr)  # the run failed
    failed = json.loads(r.stdout)
    assert failed["outcome"] == "RUN_FAILED", failed
    assert '"alice" has no valid client token' in failed["detail"], failed
    assert len(farm.ctl_json("list")["builds"]) == 1

    rows = [(r["principal"], r["action"], r["outcome"]) for r in audit(farm)
            if r["action"].startswith("schedule.")]
    assert ("mallory", "schedule.delete", "denied") in rows
    assert ("mallory", "schedule.create", "denied") in rows
    assert ("alice", "schedule.create", "ok") in rows
    assert rows.count(("bootstrap-admin", "schedule.run", "ok")) == 2
    assert farm.ctl_json("schedules", "delete", sid) == {}
