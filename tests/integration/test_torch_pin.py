"""Honest torch requirements, on the real farmd, farm-worker, farmctl and pip: the example
package built over two torch versions (each in an interpreter that really has it: real
`torch` stand-in wheels 2.9.0+cu130 and 2.11.0+cu130 installed with pip, from
tests/fakes/upstream_data.py) gives two wheels whose label and METADATA name the torch the
build ran against (and only the torch >= 2.10 cell gets the recipe's per-cell setting,
read back from its build's environment); pip then refuses to install such a wheel next to another torch and
accepts it next to its own; farmctl inspect shows the requirement; the example built
without a torch axis requires no torch."""
import json
import os
import subprocess
import urllib.request
import zipfile

from farm_harness import FARMCTL, PYTHON, REPO, example_recipe, venv

FAKES = os.path.join(REPO, "tests", "fakes")
TORCHES = ("2.9.0+cu130", "2.11.0+cu130")


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, **kw)


def torch_wheels(root):
    out = os.path.join(root, "torch-wheels")
    tag = run([PYTHON, "-c", "import sys; print('cp%d%d' % sys.version_info[:2])"]).stdout.strip()
    argv = [PYTHON, os.path.join(FAKES, "upstream_data.py"), "torch-wheels", "--out", out,
            "--python-tag", tag]
    for v in TORCHES:
        argv += ["--version", v]
    r = run(argv)
    assert r.returncode == 0, r.stderr
    return out


def venv_with_torch(root, wheels, version):
    """A venv (seeing Debian's setuptools and wheel) into which pip installed the stand-in."""
    python = venv(root, "torch-" + version.split("+")[0], "--system-site-packages")
    r = run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--find-links", wheels,
             "torch==" + version])
    assert r.returncode == 0, r.stdout + r.stderr
    return python


# A per-cell setting (docs/recipes.md, "Per-cell settings") for the newer torch only; the
# build prints what its environment holds.
CELL_SETTINGS = """\
cells:
  - when: {torch: ">=2.10"}
    env: {CELL_FLAG: "new-torch"}
"""
PRINT_FLAG = '  echo "cell flag: ${CELL_FLAG:-unset}"\n'
APPLIED = "(torch >=2.10): env CELL_FLAG=new-torch"


def write_recipe(root, torch_axis):
    torch_line = f"  torch: {json.dumps(list(torch_axis))}\n" if torch_axis else ""
    return example_recipe(root, "pinned.yaml" if torch_axis else "plain.yaml", f"""\
  python: ["3.11"]
{torch_line}  cuda: ["13.0"]
  arch_lists: ["9.0"]
  platform: [linux_x86_64]
""", tail=CELL_SETTINGS if torch_axis else "", build_first=PRINT_FLAG if torch_axis else "")


def metadata(wheel):
    with zipfile.ZipFile(wheel) as z:
        [name] = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        return z.read(name).decode()


def requires(text, project="torch"):
    return [line.split(":", 1)[1].strip() for line in text.split("\n\n", 1)[0].splitlines()
            if line.lower().startswith("requires-dist:") and
            line.split(":", 1)[1].strip().lower().startswith(project)]


def download(farm, build_id):
    out = os.path.join(farm.root, f"download-{build_id}")
    r = farm.ctl("download", str(build_id), "--dir", out)
    assert r.returncode == 0, r.stderr
    # The wheels; their signed provenance (.intoto.jsonl) comes down beside them.
    return {name: os.path.join(out, name) for name in os.listdir(out) if name.endswith(".whl")}


def check_cell_settings(farm, job):
    """Only the torch >= 2.10 cell got CELL_FLAG: its build printed it, and its log, farmctl
    show and the job page name the setting; the 2.9 cell got none of it."""
    log = farm.ctl("logs", str(job["id"])).stdout
    page = json.loads(urllib.request.urlopen(
        "http://%s/api/v1/jobs/%d" % (farm.http_address, job["id"]), timeout=30).read())
    if job["cell"]["torch"] == "2.11":
        assert "cell flag: new-torch" in log, log
        [line] = [l for l in log.splitlines() if "farm: cell settings: " in l]
        assert line.endswith(APPLIED) and "cells[0] at line " in line, line
        [shown] = job["cell_settings"]
        assert shown == line.split("farm: cell settings: ", 1)[1], (shown, line)
        assert page["cell_settings"] == [shown], page["cell_settings"]
    else:
        assert job["cell"]["torch"] == "2.9", job
        assert "cell flag: unset" in log and "cell settings" not in log, log
        assert "cell_settings" not in job and page["cell_settings"] == [], (job, page)


def test_each_wheel_requires_the_torch_its_build_ran_against(farm):
    wheels = torch_wheels(farm.root)
    pythons = [venv_with_torch(farm.root, wheels, v) for v in TORCHES]
    farm.start_farmd(http=True)
    farm.start_worker("worker-1", *[a for p in pythons for a in ("--python", p)])
    farm.wait_workers(1)
    [worker] = farm.ctl_json("workers")["workers"]
    probed = sorted(p.get("torch_version", "") for p in worker["capabilities"]["pythons"])
    assert [t for t in probed if t] == sorted(TORCHES), worker["capabilities"]["pythons"]

    build = farm.ctl_json("submit", write_recipe(farm.root, ["2.9", "2.11"]), "--follow",
                          timeout=900)
    assert build["state"] == "BUILD_SUCCEEDED", build
    got = download(farm, build["id"])
    assert sorted(got) == [
        "attn_example-0.1.0+cu130torch2.11.sm90-cp311-cp311-linux_x86_64.whl",
        "attn_example-0.1.0+cu130torch2.9.sm90-cp311-cp311-linux_x86_64.whl",
    ], sorted(got)
    for name, path in got.items():
        minor = name.split("torch")[1].split(".sm")[0]
        assert requires(metadata(path)) == [f"torch=={minor}.*"], metadata(path)
        shown = run([FARMCTL, "inspect", path])
        assert shown.returncode == 0, shown.stdout + shown.stderr
        assert f"torch requirement: torch=={minor}.*" in shown.stdout, shown.stdout
        as_json = run([FARMCTL, "--output", "json", "inspect", path])
        assert json.loads(as_json.stdout)["torch_requirement"] == f"torch=={minor}.*", as_json
    for job in build["jobs"]:
        log = farm.ctl("logs", str(job["id"])).stdout
        assert ", requires torch==" in log, log
        check_cell_settings(farm, job)

    # pip honours it: with only the installed torch to choose from, the 2.9 wheel does not
    # install next to torch 2.11 and does next to 2.9 (offered the torch wheels, pip would
    # replace 2.11 with 2.9 instead).
    wheel_29 = got["attn_example-0.1.0+cu130torch2.9.sm90-cp311-cp311-linux_x86_64.whl"]
    clash = run([pythons[1], "-m", "pip", "install", "--no-index", "--dry-run", wheel_29])
    assert clash.returncode != 0, clash.stdout
    assert "torch==2.9" in clash.stdout + clash.stderr, clash.stdout + clash.stderr
    fits = run([pythons[0], "-m", "pip", "install", "--no-index", "--dry-run", wheel_29])
    assert fits.returncode == 0, fits.stdout + fits.stderr
    assert "Would install attn-example-0.1.0+cu130torch2.9.sm90\n" in fits.stdout, fits.stdout
    # A forced install next to the wrong torch is caught by pip check.
    forced = run([pythons[1], "-m", "pip", "install", "--no-index", "--no-deps", wheel_29])
    assert forced.returncode == 0, forced.stdout + forced.stderr
    check = run([pythons[1], "-m", "pip", "check"])
    assert check.returncode != 0, check.stdout
    assert "torch==2.9.*" in check.stdout and "2.11.0+cu130" in check.stdout, check.stdout


def test_a_package_without_a_torch_axis_requires_no_torch(farm):
    farm.start_farmd()
    farm.start_worker("worker-1", "--python", PYTHON)
    farm.wait_workers(1)
    build = farm.ctl_json("submit", write_recipe(farm.root, []), "--follow", timeout=900)
    assert build["state"] == "BUILD_SUCCEEDED", build
    [(name, path)] = download(farm, build["id"]).items()
    assert name == "attn_example-0.1.0+cu130.sm90-cp311-cp311-linux_x86_64.whl", name
    assert requires(metadata(path)) == [], metadata(path)
    shown = run([FARMCTL, "inspect", path])
    assert "torch requirement: none in METADATA" in shown.stdout, shown.stdout
    as_json = run([FARMCTL, "--output", "json", "inspect", path])
    assert json.loads(as_json.stdout)["torch_requirement"] == "", as_json
