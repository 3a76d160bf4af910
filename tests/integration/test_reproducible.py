"""Reproducible wheels on the real farmd and two farm-workers: the example package built
twice, each time in a fresh workspace on another worker, without the compile cache (every
object is compiled again), gives the same bytes: the same sha256 under the same name.
The worker's sandbox builds at one fixed path and sets SOURCE_DATE_EPOCH, PYTHONHASHSEED
and nvcc's -objtemp (docs/reproducibility.md)."""
import shutil

import pytest

from farm_harness import EXAMPLE_RECIPE
from test_foundation import ARCH_LIST, only_job

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap (bwrap) is not installed: builds would run "
                                       "at each workspace's own path")


def build_on(farm, worker):
    """Builds the example on a worker of its own (work dir and state of its own), then
    stops that worker."""
    proc = farm.start_worker(worker, "--no-ccache")
    build = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", ARCH_LIST, "--force",
                          "--follow", timeout=900)
    assert build["state"] == "BUILD_SUCCEEDED", build
    job = only_job(build)
    workers = {w["id"]: w["name"] for w in farm.ctl_json("workers")["workers"]}
    assert workers[job["attempts"][-1]["worker_id"]] == worker
    farm.stop(proc)
    (artifact,) = job["artifacts"]
    return artifact


def test_two_workers_build_the_same_bytes(farm):
    farm.start_farmd()
    first = build_on(farm, "worker-a")
    second = build_on(farm, "worker-b")
    assert first["filename"] == second["filename"]
    assert first["sha256"] == second["sha256"], (first, second)
