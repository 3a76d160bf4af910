"""Wheels that fit where they go, on one real farmd, farm-worker, farmctl, the real pip and
the GitHub and Hub fakes with their size limits enforced (tests/fakes):

- a recipe with matrix.families plans one wheel per SM family from one arch list, each
  labelled by its family, and the real pip through the GPU views installs the right one
  for four compute capabilities;
- a wheel larger than GitHub takes is refused before a byte is uploaded, with the limit,
  its size and its largest parts (farmctl, the API, /metrics, the feed), while the Hub
  gets it and the family wheels go up everywhere;
- a recipe's size_budget fails the job's wheel check with where the bytes go;
- the example built with fatbin_compression: size is smaller and passes its checks;
- the PEP 825 variants path passes a checker written from the PEP (pep825_check.py).

farmd is given a GitHub limit (--github-max-asset-bytes) between the size of a one-family
wheel and that of the wheel of all four families; the fakes keep their documented limits
(their enforcement is tests/fakes/test_fake_limits.py's)."""
import json
import os
import shutil
import subprocess
import urllib.request

import pytest

import pep825_check
from farm_harness import (EXAMPLE_DIR, PIP_WHEEL, PYTHON, REPO, example_recipe, make_farm,
                          wait_until)
from test_publish import GH_REPO, GH_TOKEN, HF_REPO, HF_TOKEN, Fake, start_farmd_with_fakes

KERNEL = os.path.join(REPO, "tests", "integration", "packages", "arch_list_kernel")
FAMILIES = "[sm80-89, sm90, sm100-103, sm120-121]"
ARCHS = "8.0;9.0;10.0;12.0"
GH_LIMIT = None  # set by the fixture (github_limit)
BUILT = {}  # recipe name -> its build, for the later tests of the module


def kernel_source(root, name, where=None):
    """The kernel package copied to `where` (default `root`/`name`-src) as package `name`,
    so that each recipe's wheels are a project of their own in the index."""
    src = where or os.path.join(root, name + "-src")
    if not os.path.isdir(src):
        shutil.copytree(KERNEL, src)
        os.rename(os.path.join(src, "arch_list_kernel"), os.path.join(src, name))
        setup = os.path.join(src, "setup.py")
        with open(setup) as f:
            text = f.read().replace("arch_list_kernel", name)
        with open(setup, "w") as f:
            f.write(text)
    return src


def kernel_recipe(root, name, families=True, extra=""):
    src = kernel_source(root, name)
    path = os.path.join(root, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"""name: {name}
version: "1.0"
source: {{local: {src}}}
system_site_packages: true
build: |
  {PIP_WHEEL}
matrix:
  python: ["3.11"]
  cuda: ["13.0"]
  arch_lists: ["{ARCHS}"]
{"  families: " + FAMILIES if families else ""}
validation:
  script: validate.py
publish:
  github_repo: {GH_REPO}
  github_tag_template: "{name}-v{{version}}-{{build_id}}"
  hf_repo: {HF_REPO}
  hf_path_template: "build/{name}/{{wheel}}"
{extra}""")
    return path


def get(farm, path, accept=None):
    req = urllib.request.Request("http://" + farm.http_address + path,
                                 headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


def submit(farm, recipe, want="BUILD_SUCCEEDED"):
    r = farm.ctl("--output", "json", "submit", recipe, "--follow", timeout=900)
    assert r.stdout.strip(), r.stderr
    build = json.loads(r.stdout)
    assert build["state"] == want, build
    return build


def wheels_of(build):
    return sorted(a["filename"] for j in build["jobs"] for a in j["artifacts"])


def rows(farm, build_id):
    return farm.ctl_json("publications", str(build_id)).get("publications", [])


def settled(farm, build_id, count):
    """The build's publication rows once none is pending or uploading any more."""
    def done():
        r = rows(farm, build_id)
        states = {x.get("state") for x in r}
        return r if len(r) == count and not states & {"pending", "uploading", None} else None
    return wait_until(done, 180, f"publications of build {build_id} settled", interval=0.5)


@pytest.fixture(scope="module")
def setup(request):
    farm = make_farm(request)
    global GH_LIMIT
    GH_LIMIT = github_limit(farm.root)
    gh = Fake(farm, "fake_github.py", GH_TOKEN, "fake_github")
    hf = Fake(farm, "fake_hf.py", HF_TOKEN, "fake_hf")
    start_farmd_with_fakes(farm, gh, hf, "--publish-pending-hardware", "--index-include-pending",
                           "--publish-without-provenance", "--github-max-asset-bytes",
                           str(GH_LIMIT))
    farm.start_worker()
    return farm, gh, hf


def github_limit(root):
    """A GitHub limit the wheel of all four families is over and each one-family wheel is
    under: the four-family wheel as pip wheel makes it here, less 300 bytes. A one-family
    wheel lacks three SASS images (over 1 KiB deflated, measured), and the farm's labels add
    about 100 bytes more to the wide wheel than to a family one."""
    src = kernel_source(root, "fitwide", os.path.join(root, "measure"))
    dist = os.path.join(src, "dist")
    env = dict(os.environ, TORCH_CUDA_ARCH_LIST=ARCHS, PIP_CONFIG_FILE=os.devnull)
    r = subprocess.run([PYTHON, "-m", "pip", "wheel", ".", "--no-build-isolation", "--no-deps",
                        "--no-index", "-w", dist], cwd=src, env=env, capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        pytest.skip("the kernel package does not build here: " + r.stderr[-500:])
    (name,) = os.listdir(dist)
    return os.path.getsize(os.path.join(dist, name)) - 300


def test_families_plan_one_wheel_each_and_pip_gets_the_right_one(setup):
    farm, gh, hf = setup
    build = submit(farm, kernel_recipe(farm.root, "fitfam"))
    lists = sorted(j["cell"]["arch_list"] for j in build["jobs"])
    assert lists == ["10.0", "12.0", "8.0", "9.0"], lists
    names = wheels_of(build)
    labels = sorted(n.split("-")[1] for n in names)
    assert labels == ["1.0+cu130.sm100to103", "1.0+cu130.sm120to121", "1.0+cu130.sm80to89",
                      "1.0+cu130.sm90"], names

    # The real pip, through four GPU views, with the farm as its only index.
    base = "http://" + farm.http_address
    for gpu, want in (("sm86", "sm80to89"), ("sm90", "sm90"), ("sm103", "sm100to103"),
                      ("sm121", "sm120to121")):
        target = os.path.join(farm.root, "pip-" + gpu)
        r = subprocess.run([PYTHON, "-m", "pip", "install", "--no-cache-dir", "--no-deps",
                            "--target", target, "--index-url", f"{base}/cu130/{gpu}/simple/",
                            "fitfam"], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, PIP_CONFIG_FILE=os.devnull))
        assert r.returncode == 0, r.stdout + r.stderr
        (dist_info,) = [d for d in os.listdir(target) if d.endswith(".dist-info")]
        assert dist_info == f"fitfam-1.0+cu130.{want}.dist-info", (gpu, dist_info)

    # Every family wheel fits GitHub: each is an asset of the build's release and a Hub file.
    published = settled(farm, build["id"], 9)
    assert {(r["kind"], r["state"]) for r in published} == {
        ("asset", "published"), ("release", "published"), ("file", "published")}, published


def test_a_wheel_too_large_for_github_is_refused_before_upload_and_the_hub_gets_it(setup):
    farm, gh, hf = setup
    build = submit(farm, kernel_recipe(farm.root, "fitwide", families=False))
    BUILT["fitwide"] = build
    (wheel,) = wheels_of(build)
    by = {(r["target"], r["kind"]): r for r in settled(farm, build["id"], 3)}
    asset, release, hub = by[("github", "asset")], by[("github", "release")], by[("hf", "file")]
    assert asset["state"] == "refused", asset
    error = asset["error"]
    assert error.startswith(f"too large for GitHub Releases: {wheel} is "), error
    assert f"({GH_LIMIT} bytes; farmd's --github-max-asset-bytes)" in error, error
    # The host code (nvcc's static runtime) outweighs this kernel's four SASS images.
    assert "; largest parts: fitwide/_kernel.so (other) " in error, error
    assert ", sm_120 in fitwide/_kernel.so " in error, error
    assert "Nothing was uploaded" in error
    assert release["state"] == "refused" and "too large for GitHub Releases" in release["error"]
    assert hub["state"] == "published", hub
    # Not one byte went to GitHub for it; the Hub has it.
    counters = gh.counters()
    assert not any(k.startswith("upload_posts:fitwide") for k in counters), counters
    files = {f for r in hf.control("state")["repos"].values()
             for c in r["commits"].values() for f in c["files"]}
    assert f"build/fitwide/{wheel}" in files, files

    # The refusal, wherever a publisher looks.
    text = farm.ctl("publications", str(build["id"])).stdout
    assert "refused" in text and "too large for GitHub Releases" in text, text
    api = json.loads(get(farm, f"/api/v1/builds/{build['id']}"))
    assert any(p["state"] == "refused" and "largest parts" in p["error"]
               for p in api["publications"]), api["publications"]
    metrics = get(farm, "/metrics")
    assert 'farm_publications{state="refused"} 2' in metrics, metrics
    assert "farm_publish_refusals_total 2" in metrics
    feed = get(farm, "/feeds/wheels.atom")
    assert f"{wheel} too large for GitHub Releases" in feed, feed
    assert 'term="publication_refused"' in feed


def test_the_breakdown_is_shown_by_farmctl_the_api_and_in_the_job_log(setup):
    farm, _, _ = setup
    build = BUILT["fitwide"]
    text = farm.ctl("show", str(build["id"])).stdout
    assert "where the bytes go (in the wheel / unpacked):" in text, text
    for arch in ("sm_80", "sm_90", "sm_100", "sm_120"):
        assert f"{arch} in fitwide/_kernel.so" in text, text
    api = json.loads(get(farm, f"/api/v1/builds/{build['id']}"))
    (wheel,) = api["wheels"]
    b = wheel["manifest"]["bytes"]
    images = wheel["manifest"]["images"]
    total = sum(int(i["compressed_bytes"]) for i in images) + sum(
        int(p["compressed_bytes"]) for p in b.get("largest", [])) + int(
        b["rest"].get("compressed_bytes", 0))
    assert total == int(b["wheel_bytes"]) == int(wheel["size"]), (total, b, wheel["size"])
    log = farm.ctl("logs", str(api["jobs"][0]["id"])).stdout
    assert "where the bytes go" in log and "sm_90 in fitwide/_kernel.so" in log, log


def test_a_size_budget_fails_the_wheel_check_with_the_breakdown(setup):
    farm, _, _ = setup
    recipe = kernel_recipe(farm.root, "fitbudget", families=False, extra="size_budget: 2 KiB\n")
    build = submit(farm, recipe, want="BUILD_FAILED")
    (job,) = build["jobs"]
    detail = job["attempts"][-1]["detail"]
    assert "size-budget: the wheel is " in detail, detail
    assert ("over the recipe's size_budget of 2.0 KiB (2048 bytes); largest parts: "
            "fitbudget/_kernel.so (other) ") in detail, detail
    assert ", sm_90 in fitbudget/_kernel.so " in detail, detail
    assert not job.get("artifacts"), job
    log = farm.ctl("logs", str(job["id"])).stdout
    assert "where the bytes go" in log, log


def test_the_example_compressed_for_size_is_smaller_and_passes_its_checks(setup):
    farm, _, _ = setup
    matrix = '  python: ["3.11"]\n  cuda: ["13.0"]\n  arch_lists: ["9.0"]\n  platform: [linux_x86_64]\n'
    tail = "validation:\n  script: validate.py\n  import: [attn_example]\n"
    plain = submit(farm, example_recipe(farm.root, "plain.yaml", matrix, tail))
    packed_recipe = example_recipe(farm.root, "packed.yaml", matrix,
                                   tail + "fatbin_compression: size\n")
    # Another recipe name: its own compile-cache namespace besides its own flags'.
    with open(packed_recipe) as f:
        text = f.read().replace("name: attn-example", "name: attn-example-packed")
    with open(packed_recipe, "w") as f:
        f.write(text)
    packed = submit(farm, packed_recipe)
    (a,) = [x for j in plain["jobs"] for x in j["artifacts"]]
    (b,) = [x for j in packed["jobs"] for x in j["artifacts"]]
    assert int(b["size"]) < int(a["size"]), (a["size"], b["size"])
    assert all(not i.get("compressed") for i in a["manifest"]["images"])
    assert all(i.get("compressed") for i in b["manifest"]["images"]), b["manifest"]
    for art in (a, b):
        # Its checks: the wheel checks passed (it is stored), it installed and imported in
        # a clean venv, and its validation waits for a GPU this machine lacks.
        v = art["validation"]
        assert v["state"] == "VALIDATION_PENDING_HARDWARE", v
        assert "installed and imported in a clean venv" in v["message"], v
    log = farm.ctl("logs", str(packed["jobs"][0]["id"])).stdout
    assert "device code compressed by nvcc (NVCC_APPEND_FLAGS --compress-mode=size)" in log, log


def test_the_variants_path_passes_the_pep_825_checker(setup):
    farm, _, _ = setup
    base = "http://" + farm.http_address
    problems, labels = pep825_check.check_project(f"{base}/variants/cu130/simple/fitfam/")
    assert not problems, problems
    assert sorted(labels) == ["sm100", "sm120", "sm80", "sm90"], labels
    problems, labels = pep825_check.check_project(f"{base}/variants/cu130/simple/fitwide/")
    assert not problems and sorted(labels) == ["sm80.90.100.120"], (problems, labels)
    html = get(farm, "/variants/cu130/simple/fitfam/")
    assert "fitfam-1.0-variants.json" in html, html
    # The pip-compatible views keep pip-compatible names.
    page = json.loads(get(farm, "/cu130/simple/fitfam/", "application/vnd.pypi.simple.v1+json"))
    assert all("+cu130." in f["filename"] for f in page["files"]), page
