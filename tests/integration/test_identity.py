"""One name, one wheel, on the real farmd, farm-worker, farmctl, pip and the GitHub and Hub
fakes: the example package built for "9.0;12.0a;12.1a" and for "12.1a" in one build gives
two wheels of two names; clean venvs installing with the real pip from the per-GPU index
views get the wheel for their GPU (and cc 8.9 gets none); farmctl download leaves both;
publishing puts two assets and two Hub files up, and a second publish uploads nothing;
the install script picks the right view for faked GPUs; a recipe whose matrix would give
two wheels one name is refused at submit with its line and column."""
import json
import os
import stat
import subprocess
import urllib.request

import pytest

from farm_harness import example_recipe, venv, wait_until
from test_publish import (GH_REPO, GH_TOKEN, HF_REPO, HF_TOKEN, Fake, fake_asset, hf_file,
                          publications, start_farmd_with_fakes)

WIDE = "attn_example-0.1.0+cu130.sm90.sm120a.sm121a-cp311-cp311-linux_x86_64.whl"
NARROW = "attn_example-0.1.0+cu130.sm121a-cp311-cp311-linux_x86_64.whl"


def write_recipe(root, name="two_archs.yaml", label=None):
    local = f'  local_version: "{label}"\n' if label else ""
    return example_recipe(root, name, """\
  python: ["3.11"]
  cuda: ["13.0"]
  arch_lists: ["9.0;12.0a;12.1a", "12.1a"]
  platform: [linux_x86_64]
""", f"""validation:
  script: validate.py
  import: [attn_example]
publish:
  github_repo: {GH_REPO}
  hf_repo: {HF_REPO}
  hf_path_template: "build/{{variant}}/{{arch}}/{{wheel}}"
{local}""")


@pytest.fixture
def farm_with_fakes(farm):
    gh = Fake(farm, "fake_github.py", GH_TOKEN, "fake_github")
    hf = Fake(farm, "fake_hf.py", HF_TOKEN, "fake_hf")
    # No GPU here: wheels wait for hardware; the index and publisher take them anyway.
    start_farmd_with_fakes(farm, gh, hf, "--publish-pending-hardware", "--index-include-pending",
                           "--publish-without-provenance")
    farm.start_worker()
    return farm, gh, hf


def installed_version(python):
    return subprocess.run([python, "-c", "import importlib.metadata as m; "
                           "print(m.version('attn-example'))"], capture_output=True, text=True,
                          timeout=60).stdout.strip()


def pip_install(python, index):
    return subprocess.run([python, "-m", "pip", "install", "--no-cache-dir", "--no-deps",
                           "--index-url", index, "attn-example"], capture_output=True, text=True,
                          timeout=300)


def get(url, accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def fake_nvidia_smi(root, name, cc):
    """An nvidia-smi that answers like the real one for one GPU."""
    d = os.path.join(root, "smi-" + cc)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "nvidia-smi")
    with open(path, "w") as f:
        f.write(f"""#!/bin/sh
case "$1" in
  --query-gpu=*) echo "{name}, {cc}" ;;
  *) echo "| NVIDIA-SMI 580.95.05    Driver Version: 580.95.05    CUDA Version: 13.0 |" ;;
esac
""")
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return d


def run_install_script(farm, python, smi_dir, *args):
    base = "http://" + farm.http_address
    _, script = get(base + "/install")
    env = dict(os.environ, PATH=smi_dir + ":" + os.environ["PATH"])
    env.pop("FARM_INSTALL_GPU_CC", None)
    return subprocess.run([python, "-", "attn-example", *args], input=script, env=env,
                          capture_output=True, text=True, timeout=300)


def test_two_arch_lists_give_two_wheels_each_gpu_gets_its_own(farm_with_fakes):
    farm, gh, hf = farm_with_fakes
    build = farm.ctl_json("submit", write_recipe(farm.root), "--follow", timeout=900)
    assert build["state"] == "BUILD_SUCCEEDED", build
    names = sorted(a["filename"] for j in build["jobs"] for a in j["artifacts"])
    assert names == sorted([WIDE, NARROW]), names

    # pip against the GPU views, each from a clean venv with the farm as its only index.
    base = "http://" + farm.http_address
    for gpu, want in (("sm90", WIDE), ("sm121", NARROW), ("sm120", WIDE)):
        python = venv(farm.root, gpu)
        r = pip_install(python, f"{base}/cu130/{gpu}/simple/")
        assert r.returncode == 0, r.stdout + r.stderr
        assert installed_version(python) == want.split("-")[1], (gpu, r.stdout)
    python = venv(farm.root, "sm89")
    r = pip_install(python, f"{base}/cu130/sm89/simple/")
    assert r.returncode != 0
    status, body = get(f"{base}/cu130/sm89/simple/attn-example/")
    assert status == 404 and "runs on compute capability 8.9" in body, body

    # The directory of views, as a tool reads it.
    _, text = get(base + "/", "application/json")
    views = {(v["variant"], v["gpu"]) for v in json.loads(text)["variants"]}
    assert views == {("cu130", "sm90"), ("cu130", "sm120"), ("cu130", "sm121")}, views

    out = os.path.join(farm.root, "dl")
    r = farm.ctl("download", str(build["id"]), "--dir", out)
    assert r.returncode == 0, r.stderr
    # Each wheel with its statements beside it, which `farmctl verify` reads.
    assert sorted(os.listdir(out)) == sorted([WIDE, NARROW, WIDE + ".intoto.jsonl",
                                              NARROW + ".intoto.jsonl"])
    again = farm.ctl("download", str(build["id"]), "--dir", out)  # same files: kept
    assert again.returncode == 0 and "already there" in again.stdout, again.stdout

    def published():
        rows = publications(farm, build["id"])
        return rows if len(rows) == 5 and {r["state"] for r in rows} == {"published"} else None
    rows = wait_until(published, 180, "both wheels published", interval=0.5)
    _, assets = fake_asset(gh)
    assert sorted(a["name"] for a in assets) == sorted([WIDE, NARROW])
    for name, arch in ((WIDE, "sm90.sm120a.sm121a"), (NARROW, "sm121a")):
        assert hf_file(hf, f"build/cu130-x86_64-linux/{arch}/{name}") is not None, name
    before = (gh.counters().get("upload_posts"), hf.counters().get("commits"))
    assert before == (2, 2), before
    r = farm.ctl("publish", str(build["id"]), "--to", "all")
    assert r.returncode == 0, r.stderr
    wait_until(published, 120, "the second publish settled", interval=0.5)
    assert (gh.counters().get("upload_posts"), hf.counters().get("commits")) == before
    assert rows

    # The install script, with an nvidia-smi answering for three GPUs.
    for name, cc, view in (("NVIDIA H100 80GB HBM3", "9.0", "sm90"),
                           ("NVIDIA GeForce RTX 5090", "12.0", "sm120"),
                           ("NVIDIA GB10", "12.1", "sm121")):
        r = run_install_script(farm, venv(farm.root, "script-" + view),
                               fake_nvidia_smi(farm.root, name, cc), "--index-only", "--dry-run")
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"chose {base}/cu130/{view}/simple/" in r.stdout, r.stdout
    python = venv(farm.root, "script-install")
    r = run_install_script(farm, python, fake_nvidia_smi(farm.root, "NVIDIA H100", "9.0"),
                           "--index-only")
    assert r.returncode == 0, r.stdout + r.stderr
    assert installed_version(python) == WIDE.split("-")[1]
    r = run_install_script(farm, venv(farm.root, "script-89"),
                           fake_nvidia_smi(farm.root, "NVIDIA GeForce RTX 4090", "8.9"),
                           "--index-only")
    assert r.returncode == 1, r.stdout
    assert "missing: no wheel of attn-example runs on compute capability 8.9" in r.stdout, r.stdout
    assert "farmctl submit" in r.stdout


def test_a_matrix_that_would_give_two_wheels_one_name_is_refused_at_submit(farm):
    farm.start_farmd()
    path = write_recipe(farm.root, "collide.yaml", label="cu{cuda_nodot}")
    r = farm.ctl("submit", path)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    # local_version is on line 24 of the recipe, its value at column 18.
    assert "collide.yaml:24:18: " in r.stderr, r.stderr
    assert "add {arch} to publish.local_version" in r.stderr, r.stderr
    assert farm.ctl_json("list").get("builds", []) == []
