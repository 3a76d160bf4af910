"""Per-principal quotas on the real farmd and farmctl: a submitter token over its
submissions, queued jobs or stored bytes is refused with RESOURCE_EXHAUSTED, a message
naming the quota and when to retry, and farmctl's exit code 5; another principal (and an
admin) is not held back; once the window has passed, or the jobs have ended, the same
principal is accepted again. The window is seconds here (--quota-window-seconds)."""
import os
import re
import time

from farm_harness import pure_python_source

# Long enough that the calls of a test, on a loaded machine, take less than one refill
# (window / 3 submissions = 10 s), short enough to wait for one.
WINDOW_S = 30


def token(farm, name, role="submitter"):
    created = farm.ctl_json("tokens", "create", "--role", role, "--name", name)
    path = os.path.join(farm.root, name + ".token")
    with open(path, "w") as f:
        f.write(created["token"])
    return path


def recipe(farm, name, noise_bytes=0):
    """A small recipe with a local source; `noise_bytes` of random data make the upload big."""
    src = pure_python_source(farm.root, name)
    if noise_bytes:
        with open(os.path.join(src, "noise.bin"), "wb") as f:
            f.write(os.urandom(noise_bytes))
    path = os.path.join(farm.root, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\nsource: {{local: {name}-src}}\nbuild: |\n  true\n")
    return path


def refused(r, quota):
    """The farmctl run `r` was refused over `quota`; returns the seconds it says to wait."""
    assert r.returncode == 5, (r.returncode, r.stdout, r.stderr)
    assert "quota: " in r.stderr and f"({quota};" in r.stderr, r.stderr
    wait = re.search(r"retry after (\d+) s", r.stderr)
    return int(wait.group(1)) if wait else None


def test_a_token_over_its_submissions_is_refused_until_the_window_passes(farm):
    farm.start_farmd("--quota-submitter", "submissions=3", "--quota-window-seconds",
                     str(WINDOW_S))
    alice, bob = token(farm, "alice"), token(farm, "bob")
    r = recipe(farm, "quick")
    for _ in range(3):
        ok = farm.ctl("submit", r, token_file=alice)
        assert ok.returncode == 0, ok.stderr
    over = farm.ctl("submit", r, token_file=alice)
    wait = refused(over, "submissions")
    assert f'"alice" may submit 3 times per {WINDOW_S} s' in over.stderr, over.stderr
    assert wait is not None and 1 <= wait <= WINDOW_S // 3, over.stderr
    # Schedules are submissions too.
    sched = farm.ctl("schedules", "add", r, "--cron", "@daily", token_file=alice)
    refused(sched, "submissions")
    # Others are not held back: another submitter (under a recipe name of its own: alice
    # owns "quick"), and an admin.
    other = farm.ctl("submit", recipe(farm, "bobs"), token_file=bob)
    assert other.returncode == 0, other.stderr
    assert farm.ctl("submit", r).returncode == 0
    # Nothing was stored for the refused calls: three builds of alice's, one of bob's.
    builds = farm.ctl_json("list", "--limit", "50")["builds"]
    by = [b.get("submitted_by") for b in builds]
    assert by.count("alice") == 3 and by.count("bob") == 1, by
    assert farm.ctl_json("schedules", "list").get("schedules", []) == []
    time.sleep(wait + 0.2)
    again = farm.ctl("submit", r, token_file=alice)
    assert again.returncode == 0, again.stderr
    shown = farm.ctl("quota", token_file=alice)
    assert shown.returncode == 0 and "principal alice (submitter defaults)" in shown.stdout, \
        shown.stdout
    assert f"3 per {WINDOW_S} s" in shown.stdout, shown.stdout


def test_queued_jobs_and_stored_bytes_over_the_quota_are_refused(farm):
    farm.start_farmd("--quota-submitter", "queued-jobs=4,stored-bytes=400000")
    carol, dave = token(farm, "carol"), token(farm, "dave")
    small = recipe(farm, "small")
    three = farm.ctl_json("submit", small, "--python", "3.10", "--python", "3.11",
                          "--python", "3.12", token_file=carol)
    assert len(three["jobs"]) == 3
    over = farm.ctl("submit", small, "--python", "3.10", "--python", "3.11", token_file=carol)
    assert refused(over, "queued-jobs") is not None
    assert '"carol" has 3 jobs pending or running and this submission adds 2' in over.stderr
    # Another principal's queue is its own (dave builds a recipe name of his own).
    daves = farm.ctl("submit", recipe(farm, "daves"), "--python", "3.10", "--python", "3.11",
                     token_file=dave)
    assert daves.returncode == 0, daves.stderr
    # Once carol's jobs have ended, there is room again.
    assert farm.ctl("cancel", str(three["id"]), token_file=carol).returncode == 0
    assert farm.ctl("submit", small, "--python", "3.10", "--python", "3.11",
                    token_file=carol).returncode == 0
    # Stored bytes: an upload that would pass the limit is refused before its bytes are
    # kept, and waiting does not help, so no retry is offered.
    big = recipe(farm, "big", noise_bytes=500000)
    upload = farm.ctl("submit", big, token_file=dave)
    assert refused(upload, "stored-bytes") is None
    assert '"dave" holds' in upload.stderr and "over its limit of 400000 bytes" in upload.stderr
    tmp = os.path.join(farm.data, "blobs", "tmp")
    assert os.listdir(tmp) == [], os.listdir(tmp)
    # An admin raises dave's limit; a submitter may not.
    assert farm.ctl("quota", "set", "dave", "--stored-bytes", "2000000",
                    token_file=carol).returncode == 4
    raised = farm.ctl("quota", "set", "dave", "--stored-bytes", "2000000")
    assert raised.returncode == 0 and "with an admin's override" in raised.stdout, raised.stdout
    assert farm.ctl("submit", big, token_file=dave).returncode == 0
    theirs = farm.ctl_json("quota", "dave")
    assert theirs["limits"]["stored_bytes"] == 2000000
    assert 500000 < theirs["stored_bytes"] < 2000000, theirs
