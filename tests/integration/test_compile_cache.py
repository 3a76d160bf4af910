"""The worker's compile cache on real components: farmd, farm-worker, ccache and nvcc.

Each build runs in a fresh workspace directory; these tests prove the cache still hits
there, that the hits reach the stored attempt, and that a recipe can turn the cache off.
The example package is copied to the test directory first; kernels/ is never modified.
"""
import os
import re
import shutil

import pytest

from farm_harness import REPO

ARCH_LIST = "9.0"  # one target keeps the two nvcc builds short
EXAMPLE_DIR = os.path.join(REPO, "kernels", "examples", "attn_example")

pytestmark = pytest.mark.skipif(shutil.which("ccache") is None,
                                reason="ccache is not installed on this machine")


def copy_example(farm, extra_yaml=""):
    dest = os.path.join(farm.root, "attn_example")
    shutil.copytree(EXAMPLE_DIR, dest, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    recipe = os.path.join(dest, "recipe.yaml")
    with open(recipe) as f:
        text = f.read()
    # The example's matrix names three targets; the copy supports the one these tests build.
    text, n = re.subn(r'arch_lists: \[.*\]', f'arch_lists: ["{ARCH_LIST}"]', text)
    assert n == 1, text
    with open(recipe, "w") as f:
        f.write(text + extra_yaml)
    return dest, recipe


def change_one_line(src_dir):
    """A one-line code change to attn_cuda.cu: its preprocessed text changes, so it misses."""
    path = os.path.join(src_dir, "csrc", "attn_cuda.cu")
    with open(path, "a") as f:
        f.write('static_assert(sizeof(float) == 4, "a one-line change");\n')


def build(farm, recipe, *args):
    built = farm.ctl_json("submit", recipe, "--arch-list", ARCH_LIST, "--follow", *args)
    assert built["state"] == "BUILD_SUCCEEDED", built
    shown = farm.ctl_json("show", str(built["id"]))
    (job,) = shown["jobs"]
    (attempt,) = job["attempts"]
    log = farm.ctl("logs", str(job["id"])).stdout
    return shown, attempt, log


def cache_counts(attempt):
    cache = attempt.get("compile_cache")
    assert cache is not None, attempt
    # proto3 JSON leaves zeros out and writes int64 as strings.
    return int(cache.get("hits", 0)), int(cache.get("misses", 0))


def test_a_one_line_cu_change_rebuilds_with_cache_hits(farm):
    farm.start_farmd()
    farm.start_worker()
    src, recipe = copy_example(farm)

    first, attempt1, log1 = build(farm, recipe)
    hits1, misses1 = cache_counts(attempt1)
    # A cold cache: attn_cuda.cu and attn_cpu.cc, both compiled by nvcc, both miss.
    assert (hits1, misses1) == (0, 2), attempt1
    assert "compile cache: 0 hits, 2 misses (0%)" in log1, log1
    # The namespace of this principal's recipe: nobody else's builds read what it writes.
    assert re.search(r"compile cache: namespace [0-9a-f]{12} \(max 20G; nvcc through "
                     r"CUDA_HOME=", log1), log1

    change_one_line(src)
    second, attempt2, log2 = build(farm, recipe, "--force")
    assert second["id"] != first["id"]
    hits2, misses2 = cache_counts(attempt2)
    # A new workspace, yet the unchanged file hits; only the changed one compiles again.
    assert (hits2, misses2) == (1, 1), attempt2
    assert "compile cache: 1 hit, 1 miss (50%)" in log2, log2

    shown = farm.ctl("show", str(second["id"])).stdout
    assert "cache 1 hits / 1 misses (50%)" in shown, shown
    assert "farm-worker: compile cache in " in farm.log("worker-1.log")


def test_a_recipe_with_ccache_false_reports_no_cache_use(farm):
    farm.start_farmd()
    farm.start_worker()
    _, recipe = copy_example(farm, extra_yaml="ccache: false\n")
    shown, attempt, log = build(farm, recipe)
    assert "compile_cache" not in attempt, attempt
    assert "compile cache: off (the recipe sets ccache: false)" in log, log
    assert not re.search(r"compile cache: \d+ hit", log), log
    assert "cache " not in farm.ctl("show", str(shown["id"])).stdout
    # Nothing was stored in the worker's cache directory either.
    cache_dir = os.path.join(farm.root, "worker-1", "work", "ccache")
    stored = [f for _, _, files in os.walk(cache_dir) for f in files if f.endswith("R")]
    assert stored == [], stored


def test_no_ccache_on_the_worker_turns_it_off_for_every_job(farm):
    farm.start_farmd()
    farm.start_worker("worker-1", "--no-ccache")
    _, recipe = copy_example(farm)
    _, attempt, log = build(farm, recipe)
    assert "compile_cache" not in attempt, attempt
    assert "compile cache: off (turned off on this worker (--no-ccache))" in log, log
