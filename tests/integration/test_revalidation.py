"""Wheels that wait for hardware are validated when a GPU they run on arrives, and a recipe
that builds on its target GPU waits for one (docs/gpu-validation.md, "Validation when the
GPU arrives").

Real farmd, farm-worker, farmctl, nvcc and pip. This machine has no GPU: the second worker
reports one through its test-only --test-fake-gpu switch, and the recipe's validation
script stands in for the numbers a real GPU would give (it passes when it runs; a worker
without a GPU never runs it). Everything between, the validation job, the wheel download,
the clean venv and the stored report, is the path users run.
"""
import os
import re
import shutil
import time
import urllib.error
import urllib.request

from farm_harness import EXAMPLE_RECIPE, local_recipe, pure_python_source
from test_foundation import only_job

PASSING_SCRIPT = """\
import argparse, json, os
p = argparse.ArgumentParser()
p.add_argument("--device"); p.add_argument("--report"); p.add_argument("--quick", action="store_true")
p.add_argument("--min-cosine", type=float); p.add_argument("--max-relative-l1", type=float)
a = p.parse_args()
import attn_example  # the installed wheel
case = {"name": "b1_h1_n64_d64", "cosine": 1.0, "relative_l1": 0.0, "rmse": 0.0, "passed": True,
        "throughput": 12.5, "throughput_unit": "TOPS", "baseline_throughput": 10.0,
        "baseline_name": "torch SDPA float16"}
report = {"schema": "farm.validation.v2", "state": "passed", "exit_code": 0,
          "message": "1/1 cases passed on Fake H100 (cc 9.0)", "device": a.device,
          "gpu_name": "Fake H100", "compute_capability": "9.0", "cases": [case]}
with open(a.report + ".tmp", "w") as f:
    json.dump(report, f)
os.replace(a.report + ".tmp", a.report)
"""


# A kernel that imports and computes the right numbers, but through a slower path than the
# one its package runs on this GPU when nothing is missing (kernels/VALIDATION.md).
FALLBACK_SCRIPT = PASSING_SCRIPT.replace("import attn_example  # the installed wheel\n", "").replace(
    '"passed": True,', '"passed": True, "implementation": "attn_triton_fallback", '
    '"fast_implementation": "attn_cuda_sm90",')


def example_with_passing_script(root):
    """The example package's recipe beside a validation script that passes when it runs."""
    src = os.path.dirname(EXAMPLE_RECIPE)
    dst = os.path.join(root, "attn_example")
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info"))
    with open(os.path.join(dst, "recipe.yaml")) as f:
        text = f.read()
    head, _, _ = text.partition("validation:")
    head = re.sub(r"arch_lists: \[.*\]", 'arch_lists: ["9.0;12.0a"]', head)
    with open(os.path.join(dst, "recipe.yaml"), "w") as f:
        f.write(head + "validation:\n  script: gpu_check.py\n  import: [attn_example]\n")
    with open(os.path.join(dst, "gpu_check.py"), "w") as f:
        f.write(PASSING_SCRIPT)
    return os.path.join(dst, "recipe.yaml")


def on_target_gpu(recipe):
    """The same package, arch 9.0, built only on a GPU of cc 9.0 (build_on_target_gpu);
    its build prints the GPU it was given."""
    with open(recipe) as f:
        text = f.read()
    text = re.sub(r"arch_lists: \[.*\]", 'arch_lists: ["9.0"]', text)
    text = text.replace("build: |\n", 'build: |\n  echo "target GPU: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"\n')
    path = os.path.join(os.path.dirname(recipe), "on-gpu.yaml")
    with open(path, "w") as f:
        f.write(text + "build_on_target_gpu: true\n")
    return path


def index_of(farm, project):
    try:
        with urllib.request.urlopen(f"http://{farm.http_address}/simple/{project}/",
                                    timeout=30) as resp:
            return resp.read().decode()
    except urllib.error.HTTPError as e:
        assert e.code == 404
        return ""


def wait_for_validation(farm, build_id, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        build = farm.ctl_json("show", str(build_id))
        validations = [j for j in build["jobs"] if j.get("kind") == "JOB_VALIDATE"]
        if validations and validations[0]["state"] in ("JOB_SUCCEEDED", "JOB_FAILED"):
            return build, validations[0]
        time.sleep(0.5)
    raise AssertionError(f"no validation job ended in {seconds} s: {build}")


def wait_for_build(farm, build_id, seconds=180):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        build = farm.ctl_json("show", str(build_id))
        if build["state"] not in ("BUILD_QUEUED", "BUILD_RUNNING"):
            return build
        time.sleep(0.5)
    raise AssertionError(f"build {build_id} did not end in {seconds} s: {build}")


def test_a_gpu_worker_started_later_validates_without_a_new_submission(farm):
    farm.start_farmd(http=True)
    builder = farm.start_worker("builder")
    recipe = example_with_passing_script(farm.root)
    build = farm.ctl_json("submit", recipe, "--arch-list", "9.0;12.0a", "--follow")
    assert build["state"] == "BUILD_SUCCEEDED", build
    (artifact,) = only_job(build)["artifacts"]
    assert artifact["validation"]["state"] == "VALIDATION_PENDING_HARDWARE", artifact
    assert artifact["filename"] not in index_of(farm, "attn-example")

    # A build on its target GPU: the idle GPU-less builder leaves it, and says why.
    on_gpu = farm.ctl_json("submit", on_target_gpu(recipe))
    pending = only_job(farm.ctl_json("show", str(on_gpu["id"])))
    assert pending["state"] == "JOB_PENDING" and pending.get("unplaceable"), pending
    assert pending["waiting_reason"] == (
        "no worker with a GPU of cc 9.0 can build it (the recipe builds on its target GPU): "
        "add one or drop the cell"), pending
    shown = farm.ctl("show", str(on_gpu["id"])).stdout
    assert "the recipe builds on the GPU it targets (build_on_target_gpu): needs a GPU of " \
        "cc 9.0, this worker has no GPU" in shown, shown

    farm.start_worker("gpu-1", "--test-fake-gpu", "Fake H100:9.0")
    on_gpu = wait_for_build(farm, on_gpu["id"])
    assert on_gpu["state"] == "BUILD_SUCCEEDED", on_gpu
    (attempt,) = only_job(on_gpu)["attempts"]
    gpu_id = [w["id"] for w in farm.ctl_json("workers")["workers"] if w["name"] == "gpu-1"]
    assert [attempt["worker_id"]] == gpu_id, (attempt, gpu_id)
    log = farm.ctl("logs", str(only_job(on_gpu)["id"])).stdout
    assert "building on GPU 0 (Fake H100, cc 9.0)" in log, log
    assert "target GPU: CUDA_VISIBLE_DEVICES=0" in log, log
    (wheel,) = only_job(on_gpu)["artifacts"]
    assert wheel["validation"]["state"] == "VALIDATION_PASSED", wheel

    build, validation = wait_for_validation(farm, build["id"])
    assert validation["state"] == "JOB_SUCCEEDED", validation
    (built,) = [j for j in build["jobs"] if j.get("kind", "JOB_BUILD") == "JOB_BUILD"]
    assert str(validation["target_job_id"]) == str(built["id"]), validation
    builds = farm.ctl_json("list")["builds"]
    assert len(builds) == 2, builds  # this one and the build on its target GPU, nothing new
    (stored,) = [a for j in build["jobs"] for a in j.get("artifacts", [])]
    assert stored["validation"]["state"] == "VALIDATION_PASSED", stored
    assert stored["validation"]["gpu_name"] == "Fake H100"
    assert stored["filename"] in index_of(farm, "attn-example")
    shown = farm.ctl("show", str(build["id"])).stdout
    assert f"validation of job {validation['target_job_id']} attempt 1" in shown, shown

    # By hand: a new validation job for the same wheel, which the GPU worker runs again.
    again = farm.ctl_json("validate", str(stored["id"]))
    assert again["kind"] == "JOB_VALIDATE" and again["id"] != validation["id"], again
    r = farm.ctl("validate", "999999")
    assert r.returncode == 2 and "999999" in r.stderr, r.stderr

    # A recipe that requires the fast path: a report naming a fallback fails the job, naming
    # both implementations (the GPU worker alone is left to build and validate it).
    farm.stop(builder)
    pure_python_source(farm.root, "pkgfast")
    with open(os.path.join(farm.root, "fast_check.py"), "w") as f:
        f.write(FALLBACK_SCRIPT)
    fast = local_recipe(farm.root, "pkgfast", tail="validation:\n  script: fast_check.py\n"
                        "  import: [pkgfast]\n  require_fast_path: true\n")
    r = farm.ctl("submit", fast, "--follow")
    assert r.returncode == 1, r.stdout + r.stderr
    newest = farm.ctl_json("list")["builds"][0]  # newest first
    failed = only_job(farm.ctl_json("show", str(newest["id"])))
    assert failed["state"] == "JOB_FAILED", failed
    (attempt,) = failed["attempts"]
    assert attempt["cause"] == "CAUSE_VALIDATION_FAILED", attempt
    assert ("case b1_h1_n64_d64 ran the fallback attn_triton_fallback, not the fast "
            "attn_cuda_sm90 this GPU has; the recipe requires the fast path") in attempt["detail"], attempt
    (case,) = failed["artifacts"][0]["validation"]["cases"]
    assert case["implementation"] == "attn_triton_fallback" and not case.get("passed"), case
