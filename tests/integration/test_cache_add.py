"""`farmctl cache add` on a farm cut off from its upstream, with the real farmd,
farm-worker, farmctl, pip and the protocol-faithful index of tests/fakes:

- farmd is configured with the index fake as its cu128 upstream, which is then stopped:
  upstream is unreachable. An admin preloads the torch stand-in (2.8.0+cu128) and its
  build's dependency (Debian's setuptools wheel) with `farmctl cache add`;
  adding them again is a no-op that says so; `farmctl cache list` shows them; a
  submitter's token and a file that is no distribution are refused with nothing stored.
- A worker with --provision then builds the torch 2.8 cell of a recipe with
  `environment:` from farmd's cache alone (farmd resolves its lock on the preloaded
  files): the upstream fake counted no request.

The hostile uploads (path names, NUL, a huge name, cut streams, a manifest whose sha256
disagrees) are tested at the RPC in tests/unit/daemon/api/cache_rpc_test.cc.
"""

import json
import os
import shutil
import tempfile

import pytest

from farm_harness import finished, log_of
from test_environments import HOST_WHEELS, TORCH, recipe
from test_provision import RunningFake, make


@pytest.fixture(scope="module")
def wheelhouse():
    work = tempfile.mkdtemp(prefix="cache-add-")
    folder = os.path.join(work, "cu128")
    make("torch-wheels", "--out", folder, "--version", "2.8.0+cu128", "--python-tag", "cp311")
    make("host-wheels", "--out", folder)
    yield {"work": work, "folder": folder}
    shutil.rmtree(work, ignore_errors=True)


def test_an_offline_farm_provisions_a_cell_from_preloaded_files(farm, wheelhouse):
    index = RunningFake("fake_pyindex.py", ["--index", "/whl/cu128=" + wheelhouse["folder"]],
                        wheelhouse["work"], "index")
    try:
        farm.start_farmd("--upstream-index", "cu128=%s/whl/cu128/" % index.url, http=True)
        counted = index.counters()
    finally:
        index.stop()  # upstream is out of reach from here on
    files = [os.path.join(wheelhouse["folder"], n) for n in (TORCH["cu128"], *HOST_WHEELS)]

    r = farm.ctl("cache", "add", *files, "--index", "cu128")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("preloaded: cu128/") == 2, r.stdout
    r = farm.ctl("cache", "add", *files)  # the only index is the default
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("already preloaded: cu128/") == 2, r.stdout
    listed = farm.ctl_json("cache", "list")["files"]
    assert sorted(f["path"] for f in listed) == sorted(os.path.basename(f) for f in files)
    assert all(f["kind"] == "index-file" and f["added_by"] == "bootstrap-admin" for f in listed)

    # Refused: a non-admin token; a file that is not a wheel or sdist.
    token = farm.ctl_json("tokens", "create", "--role", "submitter", "--name", "dev")["token"]
    token_file = os.path.join(farm.root, "dev.token")
    with open(token_file, "w") as f:
        f.write(token + "\n")
    r = farm.ctl("cache", "add", files[0], token_file=token_file)
    assert r.returncode == 4, (r.returncode, r.stderr)
    notes = os.path.join(farm.root, "notes.txt")
    with open(notes, "w") as f:
        f.write("not a wheel\n")
    r = farm.ctl("cache", "add", notes)
    assert r.returncode == 2 and "neither a wheel" in r.stderr, (r.returncode, r.stderr)
    assert len(farm.ctl_json("cache", "list")["files"]) == 2

    farm.start_worker("prov-1", "--provision", "--no-probe-kernels")
    farm.wait_workers(1)
    build = farm.ctl_json("submit", "--torch", "2.8", recipe(farm))
    done = finished(farm, build["id"])
    assert done["state"] == "BUILD_SUCCEEDED", json.dumps(done, indent=1)
    log = log_of(farm, done["jobs"][0]["id"])
    assert "farm: provisions Python 3.11 + torch 2.8.0+cu128, locked: 2 packages" in log, log
    assert "from the farm's cache" in log, log
    assert "installed and imported in a clean venv" in log, log
    # While the upstream was up, at most farmd's start-up check of the index read its torch
    # page; no file was fetched, and nothing could be after.
    assert set(counted) <= {"page:/whl/cu128/torch/", "requests"}, counted
    assert counted.get("requests", 0) <= 1, counted
