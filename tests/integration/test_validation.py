"""Every wheel is proved before it is kept (kernels/VALIDATION.md, docs/wheel-checks.md).

Real farmd, farm-worker and farmctl; real pip wheels and nvcc. This machine has no GPU, so
hardware validation ends "pending hardware" here (never "passed"); tests/gpu/ runs the same
path on a GPU host, where it passes with numbers.
"""
import json
import os
import textwrap
import urllib.error
import urllib.request

from farm_harness import EXAMPLE_RECIPE, PIP_WHEEL, local_recipe, pure_python_source
from test_foundation import ARCH_LIST, only_job

EXAMPLE_DIR = os.path.dirname(EXAMPLE_RECIPE)


def job_log(farm, job_id):
    r = farm.ctl("logs", str(job_id))
    assert r.returncode == 0, r.stderr
    return r.stdout


def pure_package(root, name, validation, build_extra=""):
    """A recipe building a small pure-Python wheel (no nvcc) with a `validation` section."""
    pure_python_source(root, name)
    return local_recipe(root, name, build_extra or PIP_WHEEL, tail=textwrap.dedent(validation))


def submit_and_wait(farm, recipe, *args):
    r = farm.ctl("--output", "json", "submit", recipe, "--follow", *args)
    build = farm.ctl_json("list")["builds"][0]
    return r, farm.ctl_json("show", str(build["id"]))


def test_example_is_checked_imported_and_waits_for_hardware_without_a_gpu(farm):
    farm.start_farmd("--index-include-pending", http=True)
    farm.start_worker()
    build = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", ARCH_LIST, "--follow")
    assert build["state"] == "BUILD_SUCCEEDED", build
    job = only_job(build)
    (artifact,) = job["artifacts"]
    manifest = artifact["manifest"]
    sass = sorted({i["arch"] for i in manifest["images"] if i["kind"] == "sass"})
    assert sass == ["sm_120a", "sm_121a", "sm_90"], manifest
    assert "missing" not in manifest
    assert {"9.0", "12.0", "12.1"} <= set(manifest["runs_on"]), manifest
    validation = artifact["validation"]
    assert validation["state"] == "VALIDATION_PENDING_HARDWARE", validation
    assert "installed and imported in a clean venv" in validation["message"]
    assert "this worker has no GPU" in validation["message"]
    assert validation["worker_id"]
    log = job_log(farm, job["id"])
    assert "validating in a clean venv" in log
    imported = [l for l in log.splitlines() if "farm: imported attn_example from" in l]
    assert imported and "/validate/venv/" in imported[0], log  # the installed copy
    assert "runs on cc" in log and "sm_121a" in log


def test_a_wheel_missing_a_requested_arch_fails_naming_arch_and_module(farm):
    farm.start_farmd()
    farm.start_worker()
    recipe = os.path.join(farm.root, "short.yaml")
    with open(EXAMPLE_RECIPE) as f:
        text = f.read()
    # The build ignores the requested list and compiles for sm_90 only.
    text = text.replace('source:\n  local: "."', f"source:\n  local: {EXAMPLE_DIR}")
    text = text.replace('"$FARM_PYTHON" -m pip wheel',
                        'TORCH_CUDA_ARCH_LIST="9.0" "$FARM_PYTHON" -m pip wheel')
    text = text.replace('arch_lists: ["9.0;12.0a;12.1a"]', 'arch_lists: ["9.0;12.0a"]')
    assert 'arch_lists: ["9.0;12.0a"]' in text
    with open(recipe, "w") as f:
        f.write(text)
    r, build = submit_and_wait(farm, recipe)
    assert r.returncode == 1, r.stderr
    job = only_job(build)
    assert job["state"] == "JOB_FAILED"
    (attempt,) = job["attempts"]
    assert attempt["cause"] == "CAUSE_VALIDATION_FAILED", attempt
    assert "arch-missing" in attempt["detail"] and "lacks sm_120a" in attempt["detail"]
    assert "_attn_example" in attempt["detail"], attempt  # the module is named
    assert job.get("artifacts", []) == []  # nothing was stored


def test_an_import_that_fails_in_the_clean_venv_fails_the_job_and_the_wheel_is_not_indexed(farm):
    farm.start_farmd("--index-include-pending", http=True)
    farm.start_worker()
    recipe = pure_package(farm.root, "pkgimport", """\
        validation:
          import: [pkgimport, pkgimport_helpers]
        """)
    r, build = submit_and_wait(farm, recipe)
    assert r.returncode == 1, r.stderr
    job = only_job(build)
    (attempt,) = job["attempts"]
    assert attempt["cause"] == "CAUSE_VALIDATION_FAILED", attempt
    assert "import pkgimport_helpers failed in a clean venv" in attempt["detail"]
    (artifact,) = job["artifacts"]  # kept for inspection, with its report
    assert artifact["validation"]["state"] == "VALIDATION_FAILED"
    with urllib.request.urlopen(f"http://{farm.http_address}/simple/", timeout=30) as resp:
        assert resp.status == 200
    try:
        with urllib.request.urlopen(f"http://{farm.http_address}/simple/pkgimport/",
                                    timeout=30) as resp:
            index = resp.read().decode()
    except urllib.error.HTTPError as e:
        assert e.code == 404
        index = ""
    assert artifact["filename"] not in index


def test_a_script_with_no_gpu_to_run_on_is_pending_and_no_validation_is_not_run(farm):
    farm.start_farmd()
    farm.start_worker()
    recipe = pure_package(farm.root, "pkgscript", """\
        validation:
          script: check.py
          import: [pkgscript]
        """)
    with open(os.path.join(farm.root, "check.py"), "w") as f:
        f.write("raise SystemExit('a script that must not run without a GPU')\n")
    r, build = submit_and_wait(farm, recipe)
    assert r.returncode == 0, r.stderr
    validation = only_job(build)["artifacts"][0]["validation"]
    assert validation["state"] == "VALIDATION_PENDING_HARDWARE", validation
    assert "this worker has no GPU" in validation["message"]

    plain = pure_package(farm.root, "pkgplain", "")
    r, build = submit_and_wait(farm, plain)
    assert r.returncode == 0, r.stderr
    validation = only_job(build)["artifacts"][0]["validation"]
    assert validation == {"state": "VALIDATION_NOT_RUN",
                          "message": "the recipe asks for no validation"}


def test_hostile_wheels_are_rejected_before_upload(farm):
    farm.start_farmd()
    farm.start_worker()
    maker = textwrap.dedent("""\
        import sys, zipfile
        with zipfile.ZipFile(sys.argv[1], "w") as z:
            z.writestr("evil-1.0.dist-info/METADATA", "Metadata-Version: 2.1\\nName: evil\\nVersion: 1.0\\n")
            z.writestr("../../outside.txt", "escaped")
        """)
    recipe = pure_package(farm.root, "evil", "", build_extra=(
        '"$FARM_PYTHON" make_evil.py "$FARM_WHEEL_DIR/evil-1.0-py3-none-any.whl"'))
    # In the source tree: the build sees only its workspace.
    with open(os.path.join(farm.root, "evil-src", "make_evil.py"), "w") as f:
        f.write(maker)
    r, build = submit_and_wait(farm, recipe)
    assert r.returncode == 1, r.stderr
    job = only_job(build)
    (attempt,) = job["attempts"]
    assert attempt["cause"] == "CAUSE_VALIDATION_FAILED", attempt
    assert "path-dotdot" in attempt["detail"], attempt
    assert job.get("artifacts", []) == []
    assert not os.path.exists(os.path.join(farm.root, "outside.txt"))
    # The worker refused it: farmd never received it.
    assert "evil-1.0-py3-none-any.whl" not in farm.log("farmd.log")


FIXED_ARCH_DIR = os.path.join(os.path.dirname(__file__), "packages", "fixed_arch")


def fixed_arch_recipe(root, name, policy):
    """The fixed_arch package (it compiles sm_75, sm_90 and sm_121 whatever it is asked)."""
    return local_recipe(root, name, source=FIXED_ARCH_DIR,
                        head=f"unrequested_archs: {policy}\n", tail=textwrap.dedent("""\
                            matrix:
                              cuda: ["13.0"]
                              arch_lists: ["9.0"]
                              platform: [linux_x86_64]
                            """))


def test_a_package_that_ignores_the_arch_list_is_flagged_and_can_be_made_to_fail(farm):
    farm.start_farmd(http=True)
    farm.start_worker()
    warned = "this package ignored TORCH_CUDA_ARCH_LIST: asked 9.0, built sm_75, sm_90, sm_121 " \
             "(not asked for: sm_75, sm_121)"

    r, build = submit_and_wait(farm, fixed_arch_recipe(farm.root, "fixed-warn", "warn"))
    assert r.returncode == 0, r.stderr
    job = only_job(build)
    assert job["state"] == "JOB_SUCCEEDED", job
    (artifact,) = job["artifacts"]
    assert artifact["manifest"]["unrequested"] == ["sm_75", "sm_121"], artifact["manifest"]
    assert "missing" not in artifact["manifest"]  # sm_90, the one asked for, is there
    assert "farm: warning: fixed_arch-1.0" in job_log(farm, job["id"])
    assert warned in job_log(farm, job["id"])
    shown = farm.ctl("show", str(build["id"]))
    assert shown.returncode == 0 and "warning: " + warned in shown.stdout, shown.stdout
    with urllib.request.urlopen(f"http://{farm.http_address}/api/v1/jobs/{job['id']}",
                                timeout=30) as resp:
        page = json.loads(resp.read())
    assert page["artifacts"][0]["arch_warning"] == warned, page["artifacts"][0]
    assert warned in farm.log("farmd.log")  # farmd's own check saw it too

    r, build = submit_and_wait(farm, fixed_arch_recipe(farm.root, "fixed-fail", "fail"))
    assert r.returncode == 1, r.stderr
    job = only_job(build)
    assert job["state"] == "JOB_FAILED", job
    (attempt,) = job["attempts"]
    assert attempt["cause"] == "CAUSE_VALIDATION_FAILED", attempt
    assert "arch-unrequested: fixed_arch/_kernel.so" in attempt["detail"], attempt
    assert "holds sm_75, sm_121, which the arch list 9.0 does not ask for" in attempt["detail"]
    assert job.get("artifacts", []) == []
