"""Rough edges a new user hit, each on the real farmd, farm-worker and farmctl: what the
docs tell them to run works, and when something cannot work they are told why, where, and
what to do instead."""
import json
import os
import re
import shutil
import subprocess
import tarfile

import pytest

from farm_harness import EXAMPLE_RECIPE, FARMCTL, pure_python_source, wait_until


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def blob_files(farm):
    root = os.path.join(farm.data, "blobs")
    return sorted(os.path.join(d, f) for d, _, files in os.walk(root) for f in files)


def test_walkthrough_arch_lists_build_and_a_bad_matrix_uploads_nothing(farm):
    farm.start_farmd()
    # The recipe lists "9.0;12.0a;12.1a": any list of those targets is a cell of it.
    for arch in ("12.1a", "9.0", "9.0;12.1a"):
        build = farm.ctl_json("submit", EXAMPLE_RECIPE, "--arch-list", arch)
        assert [j["cell"]["arch_list"] for j in build["jobs"]] == [arch], build
    before = blob_files(farm)
    r = farm.ctl("submit", EXAMPLE_RECIPE, "--arch-list", "8.9")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "the matrix has no buildable cell" in r.stderr, r.stderr
    assert "to build 8.9, add it to the recipe's matrix.arch_lists" in r.stderr, r.stderr
    assert "source:" not in r.stdout + r.stderr, r.stdout  # refused before packing
    r = farm.ctl("submit", EXAMPLE_RECIPE, "--arch-list", "12.1")
    assert r.returncode == 2 and "12.1 is built as 12.1a" in r.stderr, r.stderr
    assert blob_files(farm) == before
    assert len(farm.ctl_json("list")["builds"]) == 3
