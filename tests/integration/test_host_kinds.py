"""Host kinds the development machine is not, made real enough for the real binaries.

WSL2: farm-worker runs in a mount namespace whose /usr/lib carries a fake WSL2 driver
layout (/usr/lib/wsl/lib, overlaid on the real /usr/lib), first without libcuda, then with
a stub libcuda.so.1 built here from tests/integration/stubs/libcuda_stub.c. Without it the
worker reports no GPU with the reason and the fix, at start and to farmd; with it, it
reports WSL2, the driver it loaded and the stub's GPU, and its builds and validations get
the WSL2 environment (the driver's directory on the library paths, so `-lcuda` links, and
the allocator setting).

GB10: the stub describes an integrated GPU of compute capability 12.1, loaded through
LD_LIBRARY_PATH; the worker reports unified memory (the GPU's memory is the host's RAM),
a build holds its validation's share of that memory when it derives MAX_JOBS, and farmd
leaves a job whose validation would not fit next to a compile job unplaced, saying why.

The stub runs no kernels, so the workers run without their probe kernels."""
import json
import os
import shutil
import subprocess
import tempfile
import textwrap

import pytest

from farm_harness import (FARM_WORKER, PIP_WHEEL, job_log, local_recipe, pure_python_source,
                          wait_until)

HERE = os.path.dirname(os.path.abspath(__file__))
WSL_LIB = "/usr/lib/wsl/lib"


def _why_no_namespace():
    if os.geteuid() != 0:
        return "mounting a fake /usr/lib/wsl needs root (unshare -m, overlayfs)"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    if os.path.exists("/usr/lib/wsl"):
        return "this machine has a real /usr/lib/wsl; the fake layout would hide it"
    with tempfile.TemporaryDirectory() as empty:
        probe = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c",
             f"mount -t overlay overlay -o lowerdir={empty}:/usr/lib /usr/lib"],
            capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return "overlayfs in a mount namespace is not available: " + probe.stderr.strip()
    return None


def _why_no_compiler():
    return None if shutil.which("gcc") else "gcc is needed to build the stub libcuda"


@pytest.fixture(scope="module")
def stub_lib(tmp_path_factory):
    """Directory holding the stub driver as libcuda.so.1 (and the libcuda.so link)."""
    why = _why_no_compiler()
    if why:
        pytest.skip(why)
    out = tmp_path_factory.mktemp("stub")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(out / "libcuda.so.1"),
                    os.path.join(HERE, "stubs", "libcuda_stub.c")], check=True, timeout=120)
    os.symlink("libcuda.so.1", out / "libcuda.so")
    return str(out)


def wsl_layout(root, stub_dir=None):
    """A directory to overlay on /usr/lib: wsl/lib, with the stub driver when given."""
    layout = os.path.join(root, "fake-usr-lib")
    lib = os.path.join(layout, "wsl", "lib")
    os.makedirs(lib, exist_ok=True)
    if stub_dir:
        shutil.copy(os.path.join(stub_dir, "libcuda.so.1"), lib)
        os.symlink("libcuda.so.1", os.path.join(lib, "libcuda.so"))
    return layout


def in_fake_wsl(layout):
    """argv prefix: a private mount namespace with `layout` over /usr/lib, then exec."""
    return ["unshare", "-m", "--propagation", "private", "sh", "-c",
            f'mount -t overlay overlay -o lowerdir={layout}:/usr/lib /usr/lib && exec "$@"', "sh"]


def probe(prefix, root, env=None):
    """`farm-worker --probe` (no probe kernels): its exit code, JSON and stderr."""
    r = subprocess.run([*prefix, FARM_WORKER, "--probe", "--no-probe-kernels", "--work-dir",
                        os.path.join(root, "probe-work")],
                       capture_output=True, text=True, timeout=300, env=env)
    return r.returncode, json.loads(r.stdout), r.stderr


def workers(farm):
    return {w["name"]: w for w in farm.ctl_json("workers").get("workers", [])}


def package(root, name, build, validate, gpu_memory_gb=None):
    """A pure-Python package whose build runs `build` (bash) first and whose validation
    script runs `validate` (Python) and then says it found no usable device (exit 3), which
    is the truth on a stub: validation waits for hardware."""
    pure_python_source(root, name, {
        "pre_build.sh": textwrap.dedent(build),
        "validate.py": textwrap.dedent(validate) + "\nimport sys\nsys.exit(3)\n"})
    memory = f"  gpu_memory_gb: {gpu_memory_gb}\n" if gpu_memory_gb is not None else ""
    return local_recipe(root, name, "bash pre_build.sh\n" + PIP_WHEEL,
                        head="gb_per_compile_job: 2\n",
                        tail="validation:\n  script: validate.py\n" + memory)


PRINT_ENV = """\
    import os
    for key in ("CUDA_HOME", "LD_LIBRARY_PATH", "LIBRARY_PATH", "PYTORCH_CUDA_ALLOC_CONF"):
        print("validation-env %s=%s" % (key, os.environ.get(key, "")))
    """


def test_a_wsl2_worker_without_libcuda_reports_no_gpu_and_the_fix(farm, tmp_path):
    why = _why_no_namespace()
    if why:
        pytest.skip(why)
    prefix = in_fake_wsl(wsl_layout(str(tmp_path)))
    code, caps, _ = probe(prefix, str(tmp_path))
    assert code == 1, caps
    assert caps["wsl2"] is True
    assert not caps.get("gpus")
    error = caps["gpu_driver_error"]
    assert f"{WSL_LIB}/libcuda.so.1 does not exist" in error, error
    assert "install the current NVIDIA driver" in error and "wsl --update" in error, error
    assert "never install a Linux NVIDIA driver inside WSL2" in error, error

    farm.start_farmd()
    farm.start_worker("wsl-laptop", "--no-probe-kernels", prefix=prefix)
    w = wait_until(lambda: workers(farm).get("wsl-laptop"), 60, "the WSL2 worker to register")
    caps = w["capabilities"]
    assert caps["wsl2"] is True and not caps.get("gpus"), caps
    assert caps["gpu_driver_error"] == error
    assert w["state"] == "idle", w  # it can still build; it says why it cannot validate
    log = farm.log("wsl-laptop.log")
    assert f"{WSL_LIB}/libcuda.so.1 does not exist" in log and "wsl --update" in log, log[-2000:]
    text = farm.ctl("workers").stdout
    assert "(WSL2)" in text and "no GPU" in text and "wsl --update" in text, text


def test_a_wsl2_worker_with_the_driver_reports_it_and_builds_with_the_wsl2_environment(
        farm, tmp_path, stub_lib):
    why = _why_no_namespace()
    if why:
        pytest.skip(why)
    prefix = in_fake_wsl(wsl_layout(str(tmp_path), stub_lib))
    code, caps, stderr = probe(prefix, str(tmp_path))
    assert code == 0, (caps, stderr[-2000:])
    assert caps["wsl2"] is True
    assert caps["cuda_driver_library"] == f"{WSL_LIB}/libcuda.so.1"
    assert not caps.get("gpu_driver_error")
    [gpu] = caps["gpus"]
    # proto3 JSON leaves out zero values: cc_minor 0 is absent.
    assert (gpu["name"], gpu["cc_major"], gpu.get("cc_minor", 0)) == ("NVIDIA GeForce RTX 5080", 12, 0)
    assert not gpu.get("unified_memory")

    farm.start_farmd()
    farm.start_worker("wsl-5080", "--no-probe-kernels", prefix=prefix)
    w = wait_until(lambda: workers(farm).get("wsl-5080"), 60, "the WSL2 worker to register")
    assert w["capabilities"]["cuda_driver_library"] == f"{WSL_LIB}/libcuda.so.1"
    assert "driver /usr/lib/wsl/lib/libcuda.so.1" in farm.log("wsl-5080.log")
    # The build links against -lcuda (the notes' "cannot find -lcuda") through LIBRARY_PATH,
    # and both the build and the validation see the WSL2 settings.
    build = """\
        for key in CUDA_HOME LD_LIBRARY_PATH LIBRARY_PATH PYTORCH_CUDA_ALLOC_CONF; do
          echo "build-env $key=${!key}"
        done
        echo 'int cuInit(unsigned int); int main(void) { return cuInit(0); }' > use_cuda.c
        gcc use_cuda.c -lcuda -o use_cuda && echo "linked -lcuda"
        """
    recipe = package(str(tmp_path), "wsl_probe", build, PRINT_ENV)
    result = farm.ctl_json("submit", recipe, "--follow", timeout=600)
    log = job_log(farm, result["id"])
    assert result["state"] == "BUILD_SUCCEEDED", log[-3000:]
    assert "linked -lcuda" in log, log[-3000:]
    for stage in ("build-env", "validation-env"):
        assert f"{stage} LD_LIBRARY_PATH={WSL_LIB}:" in log, (stage, log[-3000:])
        assert (f"{stage} PYTORCH_CUDA_ALLOC_CONF="
                "backend:native,max_split_size_mb:128,expandable_segments:true") in log, stage
        assert f"{stage} CUDA_HOME=/" in log, stage
    assert f"build-env LIBRARY_PATH={WSL_LIB}" in log
    job = farm.ctl_json("show", str(result["id"]))["jobs"][0]
    validation = job["artifacts"][0]["validation"]
    assert validation["state"] == "VALIDATION_PENDING_HARDWARE", validation


def test_a_gb10_reports_unified_memory_and_builds_leave_the_validation_its_share(
        farm, tmp_path, stub_lib):
    env = dict(os.environ, LD_LIBRARY_PATH=stub_lib, FARM_STUB_GPU_NAME="NVIDIA GB10",
               FARM_STUB_GPU_CC="12.1", FARM_STUB_GPU_INTEGRATED="1",
               FARM_STUB_GPU_MEMORY_MIB="124000")
    code, caps, stderr = probe((), str(tmp_path), env=env)
    assert code == 0, (caps, stderr[-2000:])
    [gpu] = caps["gpus"]
    assert gpu["name"] == "NVIDIA GB10" and gpu["unified_memory"] is True, gpu
    assert int(gpu["memory_bytes"]) == int(caps["ram_bytes"]), caps  # GPU memory = system RAM
    ram_gib = int(caps["ram_bytes"]) / 2**30

    farm.start_farmd()
    farm.start_worker("gb10", "--no-probe-kernels", env=env)
    wait_until(lambda: workers(farm).get("gb10"), 60, "the GB10 worker to register")
    # A validation that fits next to a compile job: the build says what it leaves for it.
    fits = package(str(tmp_path), "gb10_fits", "echo MAX_JOBS=$MAX_JOBS\n", PRINT_ENV,
                   gpu_memory_gb=4)
    result = farm.ctl_json("submit", fits, "--follow", timeout=600)
    log = job_log(farm, result["id"])
    assert result["state"] == "BUILD_SUCCEEDED", log[-3000:]
    assert "4 GB of unified memory held for GPU validation" in log, log[-3000:]
    # One that does not: farmd leaves it unplaced and says why.
    too_big = package(str(tmp_path), "gb10_too_big", "true\n", PRINT_ENV,
                      gpu_memory_gb=round(ram_gib) + 50)
    build = farm.ctl_json("submit", too_big)
    reason = wait_until(
        lambda: farm.ctl_json("show", str(build["id"]))["jobs"][0].get(
            "unplaceable_reasons", {}),
        30, "the placement reason")
    [text] = reason.values()
    assert text.startswith("not enough unified memory for one 2.0 GB compile job next to "
                           f"{round(ram_gib) + 50}.0 GB of GPU validation"), text
    assert "shared by CPU and GPU" in text, text
    assert farm.ctl_json("show", str(build["id"]))["jobs"][0]["state"] == "JOB_PENDING"
    assert farm.ctl("cancel", str(build["id"])).returncode == 0
