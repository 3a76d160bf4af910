"""The worker treats what a build leaves behind as hostile (issue 33, item 2).

On the real farmd and farm-worker (bubblewrap sandbox): a build that replaces its wheel
folder with a link to a host folder must neither make the farm upload a wheel that only the
host has, nor let the worker delete or replace a wheel in a host wheelhouse. Either way the
job fails, saying the build's wheel folder is a link, and the host's files keep their bytes
and modification times. The safe-open rules themselves (links anywhere on the way, FIFOs,
devices, hard links, sizes) are unit-tested in tests/unit/worker/exec/untrusted_dir_test.cc.
"""
import hashlib
import os
import shutil
import subprocess
import sys

import pytest

from farm_harness import PIP_WHEEL, local_recipe, pure_python_source

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap (bwrap) is not installed on this machine")


def host_wheel(root, name):
    """A real wheel of package `name`, built here on the host; returns its path."""
    src = pure_python_source(os.path.join(root, "host-build"), name)
    out = os.path.join(root, "host-wheels-" + name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", src, "--no-build-isolation",
                    "--no-deps", "--no-index", "-w", out, "-q"], check=True, timeout=300,
                   capture_output=True)
    (wheel,) = os.listdir(out)
    return os.path.join(out, wheel)


def linking_recipe(root, name, target, extra=""):
    """A package `name` whose build replaces its wheel folder with a link to `target`."""
    pure_python_source(root, name)
    return local_recipe(root, name, f"""{PIP_WHEEL}
rm -rf "$FARM_WHEEL_DIR"
ln -s {target} "$FARM_WHEEL_DIR"
echo "the wheel folder now links to {target}"
""", tail=extra)


def snapshot(folder):
    """{name: (sha256, mtime_ns)} of every file in `folder`."""
    out = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            out[name] = (hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mtime_ns)
    return out


def build_linked_to(farm, name, folder, extra=""):
    """Builds package `name` whose build links its wheel folder to `folder` (a host folder
    holding a real wheel of `name`): the job must fail as the build's fault, nothing may be
    uploaded, and the host folder must keep its files, bytes and modification times."""
    farm.start_farmd()
    farm.start_worker()
    os.makedirs(folder)
    shutil.copy(host_wheel(farm.root, name), folder)
    before = snapshot(folder)
    r = farm.ctl("--output", "json", "submit", linking_recipe(farm.root, name, folder, extra),
                 "--follow", timeout=600)
    (build,) = farm.ctl_json("list")["builds"][:1]
    shown = farm.ctl_json("show", str(build["id"]))
    (job,) = shown["jobs"]
    log = farm.ctl("logs", str(job["id"])).stdout
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert shown["state"] == "BUILD_FAILED", shown
    assert job.get("artifacts", []) == [], job  # nothing uploaded
    (attempt,) = job["attempts"]
    assert attempt["cause"] == "CAUSE_BUILD_FAILED", attempt
    assert "the build's wheels are refused: wheels is a symbolic link" in attempt["detail"], attempt
    assert f"the wheel folder now links to {folder}" in log
    assert snapshot(folder) == before  # same names, bytes and modification times
    return before


def test_a_wheel_folder_linked_to_a_host_folder_uploads_nothing_of_the_host(farm):
    # A folder only the host has, holding a wheel of the very package the recipe builds.
    before = build_linked_to(farm, "hostonly", os.path.join(farm.root, "host-only"))
    # farmd stores no wheel at all: nothing of the host is downloadable.
    stored = [f for _, _, files in os.walk(os.path.join(farm.data, "blobs")) for f in files]
    assert not any(sha in stored for sha, _ in before.values()), stored


def test_a_wheel_folder_linked_to_a_host_wheelhouse_leaves_its_wheels_alone(farm):
    # A host wheelhouse with a wheel the worker would relabel (the recipe's local version
    # label makes the worker rewrite every wheel it takes), and so remove and replace.
    build_linked_to(farm, "victim", os.path.join(farm.root, "wheelhouse"),
                    extra='publish:\n  local_version: "hostile"\n')
