"""Publishing on real components: farmd + farm-worker build the example package, farmd's
publisher puts the labelled wheel on the GitHub and Hugging Face fakes (tests/fakes), and
survives SIGKILL between an upload and its commit or publish without uploading twice.
Tokens go to farmd only; the test proves they appear nowhere else."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request


from farm_harness import REPO, example_recipe, kill9_tree, read_file, wait_until

FAKES = os.path.join(REPO, "tests", "fakes")
GH_TOKEN = "ghp_publishTestToken0123456789abcdef"
HF_TOKEN = "hf_publishTestTokenZYXWVUT987654321"
GH_REPO = "farm/attn-wheels"
HF_REPO = "farm/attn-kernels"


# --- fakes ------------------------------------------------------------------------------
class Fake:
    def __init__(self, farm, script, token, name, *flags):
        ready = os.path.join(farm.root, name + ".url")
        self.proc = farm._spawn([sys.executable, os.path.join(FAKES, script), "--ready-file",
                                 ready, "--token", token, *flags], name + ".log")
        self.url = wait_until(lambda: read_file(ready), 30, name + " ready").strip()

    def control(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + "/_control/" + path, data=data,
                                     method="POST" if data is not None else "GET")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read().decode() or "null")

    def fail_next(self, **spec):
        self.control("fail-next", spec)

    def counters(self):
        return self.control("counters")

    def reset(self):
        """Drops scripted faults (and counters); returns the counters before."""
        before = self.counters()
        self.control("reset", {})
        return before


# --- farm set-up ------------------------------------------------------------------------
def write_recipe(root, extra_build="", tag="v{version}-build{build_id}", label="cu{cuda_nodot}",
                 hf=True, file_name="attn_publish.yaml"):
    """The example recipe with a publish section; farmd applies the label itself. `tag` is
    the GitHub tag template, `label` the local version template."""
    hf_lines = (f"""  hf_repo: {HF_REPO}
  hf_path_template: "build/{{variant}}/{{wheel}}"
""" if hf else "")
    return example_recipe(root, file_name, """\
  python: ["3.11"]
  cuda: ["13.0"]
  arch_lists: ["9.0"]
  platform: [linux_x86_64]
""", f"""publish:
  github_repo: {GH_REPO}
  github_tag_template: "{tag}"
{hf_lines}  local_version: "{label}"
""", build_first=f"  {extra_build}\n")


def secrets_file(github_token=GH_TOKEN):
    """A 0600 secrets file outside the farm's directory (so greps of it stay meaningful)."""
    d = tempfile.mkdtemp(prefix="farm-secrets-")
    path = os.path.join(d, "farmd.secrets")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"# publishing tokens\nGITHUB_TOKEN={github_token}\n")
    return path


def start_farmd_with_fakes(farm, gh, hf, *flags, secrets=None, hf_token=HF_TOKEN):
    """farmd (with its HTTP server) publishing to the GitHub and Hub fakes every 300 ms, with
    `flags` after; `secrets` defaults to a fresh secrets_file(). farmd gets `hf_token`
    through its environment only; no other process inherits it."""
    os.environ["FARM_HF_TOKEN"] = hf_token
    try:
        return farm.start_farmd("--secrets-file", secrets or secrets_file(), "--github-api",
                                gh.url, "--hf-endpoint", hf.url, "--publish-interval-ms", "300",
                                *flags, http=True)
    finally:
        del os.environ["FARM_HF_TOKEN"]


def start_farmd(farm, gh, hf, secrets, hf_token=HF_TOKEN):
    """farmd publishing wheels that wait for hardware. These tests count the wheels' uploads
    and commits: the provenance files that go out beside them by default are
    test_provenance.py's."""
    return start_farmd_with_fakes(farm, gh, hf, "--publish-pending-hardware",
                                  "--publish-without-provenance", secrets=secrets,
                                  hf_token=hf_token)


def publications(farm, build_id):
    return farm.ctl_json("publications", str(build_id)).get("publications", [])


def wait_published(farm, build_id, timeout=120):
    def done():
        rows = publications(farm, build_id)
        states = {(r["target"], r["kind"]): r.get("state") for r in rows}
        return rows if len(rows) == 3 and set(states.values()) == {"published"} else None
    return wait_until(done, timeout, f"build {build_id} published", interval=0.5)


def wait_github_published(farm, build_id, timeout=120):
    """For recipes without a Hub target: the asset and release rows published."""
    def done():
        rows = publications(farm, build_id)
        return rows if len(rows) == 2 and {r.get("state") for r in rows} == {"published"} \
            else None
    return by_kind(wait_until(done, timeout, f"build {build_id} published on GitHub",
                              interval=0.5))


def submit(farm, recipe):
    build = farm.ctl_json("submit", recipe, "--follow", timeout=900)
    assert build["state"] == "BUILD_SUCCEEDED", build
    return build


def by_kind(rows):
    return {(r["target"], r["kind"]): r for r in rows}


def fake_asset(gh):
    state = gh.control("state")
    (release,) = [r for r in state["releases"].values() if r["repo"] == GH_REPO]
    assets = [a for a in state["assets"].values() if a["release_id"] == release["id"]]
    return release, assets


def hf_file(hf, path):
    repo = hf.control("state")["repos"]["model:" + HF_REPO]
    head = repo["branches"]["main"]
    return repo["commits"][head]["files"].get(path)


# --- tests ------------------------------------------------------------------------------
def test_publishes_labelled_wheel_to_both_and_keeps_tokens_inside_farmd(farm):
    gh = Fake(farm, "fake_github.py", GH_TOKEN, "fake_github")
    hf = Fake(farm, "fake_hf.py", HF_TOKEN, "fake_hf")
    secrets = secrets_file()
    start_farmd(farm, gh, hf, secrets)
    farm.start_worker()
    # The build prints its whole environment: no token may be in it.
    build = submit(farm, write_recipe(farm.root, extra_build="env | sort"))
    rows = by_kind(wait_published(farm, build["id"]))

    asset = rows[("github", "asset")]
    name = asset["filename"]
    assert name.startswith("attn_example-0.1.0+cu130-cp311-cp311-linux_x86_64"), name
    assert asset["label"] == "cu130"
    release, assets = fake_asset(gh)
    assert release["draft"] is False and release["tag_name"] == f"v0.1.0-build{build['id']}"
    assert [a["name"] for a in assets] == [name]
    assert assets[0]["digest"] == "sha256:" + asset["sha256"]
    body = release["body"]
    for text in (name, asset["sha256"], "pip install", "| 3.11 |", "| 13.0 |", "sm_90"):
        assert text in body, (text, body)
    hf_path = f"build/cu130-x86_64-linux/{name}"
    assert rows[("hf", "file")]["path"] == hf_path
    assert hf_file(hf, hf_path)["lfs"]["oid"] == asset["sha256"]
    counters = gh.counters()
    assert counters.get("upload_posts") == 1 and hf.counters().get("commits") == 1

    # pip installs the labelled wheel and reports the labelled version.
    wheel = os.path.join(farm.root, name)
    with urllib.request.urlopen(asset["remote_url"], timeout=30) as r, \
            open(wheel, "wb") as out:
        shutil.copyfileobj(r, out)
    venv = os.path.join(farm.root, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=120)
    pip = os.path.join(venv, "bin", "pip")
    subprocess.run([pip, "install", "--no-deps", "--no-index", wheel], check=True,
                   capture_output=True, timeout=300)
    shown = subprocess.run([pip, "show", "attn-example"], check=True, capture_output=True,
                           text=True, timeout=60).stdout
    assert "Version: 0.1.0+cu130" in shown, shown

    # A re-run finds everything in place: no second upload, no second commit.
    r = farm.ctl("publish", str(build["id"]), "--to", "all")
    assert r.returncode == 0, r.stderr
    wait_published(farm, build["id"])
    assert gh.counters().get("upload_posts") == 1 and hf.counters().get("commits") == 1

    # The tokens are nowhere but in farmd's memory.
    job = build["jobs"][0]
    log = farm.ctl("logs", str(job["id"])).stdout
    assert "FARM_WHEEL_DIR=" in log  # the environment was printed
    responses = [log, json.dumps(farm.ctl_json("show", str(build["id"]))),
                 json.dumps(publications(farm, build["id"]))]
    for path in ("/api/v1/builds", f"/api/v1/builds/{build['id']}", f"/api/v1/jobs/{job['id']}",
                 "/api/v1/workers", "/api/v1/overview", "/metrics", "/simple/"):
        try:
            with urllib.request.urlopen(f"http://{farm.http_address}{path}", timeout=10) as r:
                responses.append(r.read().decode(errors="replace"))
        except urllib.error.HTTPError as e:
            responses.append(e.read().decode(errors="replace"))
    for token in (GH_TOKEN, HF_TOKEN):
        for text in responses:
            assert token not in text
        assert_token_in_no_file(farm.root, token)
    farm.stop(farm.farmd)
    for token in (GH_TOKEN, HF_TOKEN):
        assert_token_in_no_file(farm.root, token)  # the database after its last write


def test_bad_token_fails_the_publication_with_a_redacted_message(farm):
    gh = Fake(farm, "fake_github.py", GH_TOKEN, "fake_github")
    hf = Fake(farm, "fake_hf.py", HF_TOKEN, "fake_hf")
    wrong = "hf_wrongTokenForThisTest0000000000"
    start_farmd(farm, gh, hf, secrets_file(), hf_token=wrong)
    farm.start_worker()
    build = submit(farm, write_recipe(farm.root))

    def hf_failed():
        rows = by_kind(publications(farm, build["id"]))
        row = rows.get(("hf", "file"))
        return row if row and row.get("state") == "failed" else None
    row = wait_until(hf_failed, 90, "the Hub publication to fail")
    assert "UNAUTHENTICATED" in row["error"] and "401" in row["error"], row
    assert wrong not in row["error"]
    wait_until(lambda: by_kind(publications(farm, build["id"]))[("github", "release")]
               .get("state") == "published", 90, "the GitHub release")
    assert hf.counters().get("commits") is None
    assert wrong not in farm.log("farmd.log")
    r = farm.ctl("publications", str(build["id"]))
    assert "failed" in r.stdout and wrong not in r.stdout


def test_sigkill_between_upload_and_commit_or_publish_uploads_each_asset_once(farm):
    gh = Fake(farm, "fake_github.py", GH_TOKEN, "fake_github")
    hf = Fake(farm, "fake_hf.py", HF_TOKEN, "fake_hf")
    # GitHub: the asset goes up but its answer is lost (the client finds it by listing),
    # then publishing the release keeps failing (503).
    gh.fail_next(method="POST", path="/api/uploads/", drop_response=True)
    gh.fail_next(method="PATCH", path=r"/releases/\d+$", status=503, times=1000)
    # Hub: the LFS upload goes through, every commit is refused (503).
    hf.fail_next(method="POST", path="/commit/", status=503, times=1000)
    secrets = secrets_file()
    start_farmd(farm, gh, hf, secrets)
    farm.start_worker()
    build = submit(farm, write_recipe(farm.root))

    def in_between():
        g, h = gh.counters(), hf.counters()
        return (g.get("upload_posts") == 1 and g.get("fault", 0) >= 1 and
                h.get("basic_puts") == 1 and h.get("fault", 0) >= 1)
    wait_until(in_between, 120, "the asset and the LFS object uploaded, neither committed")
    rows = by_kind(publications(farm, build["id"]))
    assert rows[("github", "release")]["state"] in ("pending", "uploading"), rows
    assert rows[("hf", "file")]["state"] in ("pending", "uploading"), rows
    kill9_tree(farm.farmd)
    gh_before, hf_before = gh.reset(), hf.reset()

    # Rate limits on the way back: 429 with retry-after, a secondary-limit 403, and the
    # Hub's RateLimit header; all are waited out.
    gh.fail_next(method="GET", path="/releases$", status=429, retry_after=1)
    gh.fail_next(method="PATCH", path=r"/releases/\d+$", status=403, secondary=True, retry_after=1)
    hf.fail_next(path="/paths-info/", status=429, ratelimit='"api";r=0;t=1')
    start_farmd(farm, gh, hf, secrets)
    rows = by_kind(wait_published(farm, build["id"]))
    gh_after, hf_after = gh.counters(), hf.counters()
    assert gh_after.get("fault", 0) >= 2 and hf_after.get("fault", 0) >= 1, (gh_after, hf_after)
    # Exactly one upload per asset and one commit per file, across the crash.
    assert gh_before.get("upload_posts", 0) + gh_after.get("upload_posts", 0) == 1
    assert hf_before.get("commits", 0) + hf_after.get("commits", 0) == 1
    assert hf_before.get("basic_puts", 0) + hf_after.get("basic_puts", 0) == 1
    release, assets = fake_asset(gh)
    assert release["draft"] is False and len(assets) == 1
    assert rows[("github", "asset")]["attempts"] >= 1
    assert rows[("hf", "file")]["attempts"] >= 2  # worked again after the restart


# Two builds of one version on one tag: the second is labelled apart (as a rebuild or a
# newly added cell would be), so its wheel is a new asset on the first build's release.
SHARED_TAG = "v{version}"
REBUILD_LABEL = "cu{cuda_nodot}.rebuild"


def submit_on_shared_tag(farm, label="cu{cuda_nodot}", file_name="attn_first.yaml"):
    return submit(farm, write_recipe(farm.root, tag=SHARED_TAG, label=label, hf=False,
                                     file_name=file_name))


def start_github_farm(farm, *fake_flags):
    gh = Fake(farm, "fake_github.py", GH_TOKEN, "fake_github", *fake_flags)
    hf = Fake(farm, "fake_hf.py", HF_TOKEN, "fake_hf")
    start_farmd(farm, gh, hf, secrets_file())
    farm.start_worker()
    return gh


def test_a_second_build_adds_its_wheel_to_the_published_release_and_its_notes(farm):
    gh = start_github_farm(farm)
    first = submit_on_shared_tag(farm)
    first_asset = wait_github_published(farm, first["id"])[("github", "asset")]
    release, _ = fake_asset(gh)
    assert release["draft"] is False and release["tag_name"] == "v0.1.0"

    second = submit_on_shared_tag(farm, REBUILD_LABEL, "attn_rebuild.yaml")
    second_asset = wait_github_published(farm, second["id"])[("github", "asset")]
    assert second_asset["filename"].startswith("attn_example-0.1.0+cu130.rebuild-cp311"), \
        second_asset
    release, assets = fake_asset(gh)
    assert release["draft"] is False, release  # still published, never back to draft
    wheels = {first_asset["filename"]: first_asset, second_asset["filename"]: second_asset}
    assert sorted(a["name"] for a in assets) == sorted(wheels)
    for a in assets:
        assert a["digest"] == "sha256:" + wheels[a["name"]]["sha256"]
    counters = gh.counters()
    assert counters.get("release_creates") == 1, counters
    assert counters.get("upload_posts") == 2, counters
    for name in wheels:
        assert counters.get("uploads_stored:" + name) == 1, counters
    # The second wheel went straight to the published release.
    assert counters.get("upload_posts_published:%d" % release["id"]) == 1, counters
    # The notes list both builds' wheels, each with what the farm knows of it.
    body = release["body"]
    for asset in wheels.values():
        assert asset["filename"] in body and asset["sha256"] in body, body
    assert body.count("| 3.11 | — | 13.0 | sm_90") == 2, body
    assert f"(builds {first['id']}, {second['id']})" in body, body


def test_an_immutable_release_refuses_a_second_build_and_takes_a_rerun_without_uploads(farm):
    gh = start_github_farm(farm, "--immutable")
    first = submit_on_shared_tag(farm)
    first_asset = wait_github_published(farm, first["id"])[("github", "asset")]
    release, _ = fake_asset(gh)
    assert release["draft"] is False
    assert gh.counters().get("upload_posts") == 1

    second = submit_on_shared_tag(farm, REBUILD_LABEL, "attn_rebuild.yaml")

    def asset_failed():
        row = by_kind(publications(farm, second["id"])).get(("github", "asset"))
        return row if row and row.get("state") == "failed" else None
    row = wait_until(asset_failed, 90, "the second build's asset to fail")
    assert row["attempts"] == 1, row  # at once, without retries
    for text in (GH_REPO, "release v0.1.0 ", "immutable", "missing: " + row["filename"],
                 "Nothing was uploaded", "bump the recipe's version",
                 "github_tag_template"):
        assert text in row["error"], (text, row["error"])
    assert GH_TOKEN not in row["error"]
    shown = farm.ctl("publications", str(second["id"]))
    assert "immutable" in shown.stdout, shown.stdout
    counters = gh.counters()
    assert counters.get("upload_posts") == 1, counters
    assert counters.get("upload_posts_published:%d" % release["id"]) is None, counters
    _, assets = fake_asset(gh)
    assert [a["name"] for a in assets] == [first_asset["filename"]]

    # Re-running the first build's publication finds every wheel in place.
    r = farm.ctl("publish", str(first["id"]), "--to", "github")
    assert r.returncode == 0, r.stderr
    rows = wait_github_published(farm, first["id"])
    assert rows[("github", "asset")]["remote_url"] == first_asset["remote_url"]
    assert "already on immutable release v0.1.0" in farm.log("farmd.log")
    counters = gh.counters()
    assert counters.get("upload_posts") == 1, counters
    assert counters.get("upload_posts_published:%d" % release["id"]) is None, counters
    assert GH_TOKEN not in farm.log("farmd.log")


def assert_token_in_no_file(root, token):
    needle = token.encode()
    for dirpath, _, names in os.walk(root):
        for n in names:
            path = os.path.join(dirpath, n)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                assert needle not in f.read(), f"{token[:6]}... found in {path}"
