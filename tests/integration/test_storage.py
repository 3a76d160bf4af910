"""Storage proportional to content, on the real farmd and farm-worker: a build printing a
gigabyte of hard-to-compress text costs farm.db about the 64 MiB farmd keeps of it and the
write-ahead log stays bounded, while the log still reads line by line (seq, tail, JSON
Lines); an upload cut by kill -9 leaves no temporary file once farmd is back, and the same
upload then goes through."""
import fcntl
import json
import os
import signal
import subprocess

import pytest

from farm_harness import FARMCTL, kill9_tree, pure_python_source, wait_until
from test_limits import chatty_recipe

MIB = 1 << 20


def db_bytes(farm):
    """Bytes of farm.db and its write-ahead log, each."""
    def size(name):
        try:
            return os.path.getsize(os.path.join(farm.data, name))
        except OSError:
            return 0
    return size("farm.db"), size("farm.db-wal")


SHOUT = """\
import base64, os, sys
for _ in range(int(sys.argv[1])):
    block = base64.b64encode(os.urandom(750 * 1049)).decode()
    sys.stdout.write("".join(block[i:i + 1000] + "\\n" for i in range(0, len(block), 1000)))
"""


def loud_recipe(root, megabytes):
    """A pure-Python package whose build first prints about `megabytes` MiB of random
    base64 in lines of 1000 characters (as little compressible as text a build prints gets)."""
    recipe = chatty_recipe(root, 0, prints=f"python3 shout.py {megabytes}")
    with open(os.path.join(root, "chatty-src", "shout.py"), "w") as f:
        f.write(SHOUT)
    return recipe


def test_a_gigabyte_of_log_costs_the_database_about_what_farmd_keeps(farm):
    if farm.store:
        pytest.skip("measures farm.db; on PostgreSQL LogStorageTest (store_pg_test) measures "
                    "the log tables")
    farm.start_farmd()
    farm.start_worker()
    farm.wait_workers(1)
    db_before, _ = db_bytes(farm)
    build = farm.ctl_json("submit", loud_recipe(farm.root, 1024), "--follow", timeout=1800)
    assert build["state"] == "BUILD_SUCCEEDED", build
    job_id = build["jobs"][0]["id"]
    db_after, wal = db_bytes(farm)
    grown = db_after - db_before
    print(f"farm.db grew {grown / MIB:.1f} MiB, write-ahead log {wal / MIB:.1f} MiB")
    # 64 MiB of text kept: at most about 80 MiB on disk, and the log file bounded.
    assert grown <= 80 * MIB, f"farm.db grew {grown} bytes"
    assert wal <= 20 * MIB, f"the write-ahead log holds {wal} bytes"
    # The log still reads line by line: the cut, the tail, and JSON Lines with seq.
    tail = farm.ctl("logs", str(job_id), "--tail", "3")
    assert tail.returncode == 0, tail.stderr
    assert "chatty-1.0" in farm.ctl("logs", str(job_id)).stdout[-200000:]
    lines = [json.loads(line) for line in
             farm.ctl("--output", "json", "logs", str(job_id)).stdout.splitlines()]
    seqs = [line["seq"] for line in lines]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert len(lines) > 60000, len(lines)
    cut = [line for line in lines if "log truncated" in line.get("text", "")]
    assert len(cut) == 1, cut
    kept = sum(len(line.get("text", "")) + 1 for line in lines if line["seq"] < cut[0]["seq"])
    assert 60 * MIB < kept <= 64 * MIB, kept


def temp_files(farm):
    tmp = os.path.join(farm.data, "blobs", "tmp")
    return sorted(os.listdir(tmp)) if os.path.isdir(tmp) else []


def test_an_upload_cut_by_kill_9_leaves_no_temporary_file_once_farmd_is_back(farm):
    farm.start_farmd()
    # 96 MiB of noise: packed and sent, it takes farmd a while to receive.
    src = pure_python_source(farm.root, "bulky")
    with open(os.path.join(src, "noise.bin"), "wb") as f:
        for _ in range(96):
            f.write(os.urandom(MIB))
    recipe = os.path.join(farm.root, "bulky.yaml")
    with open(recipe, "w") as f:
        f.write("name: bulky\nsource: {local: bulky-src}\nbuild: |\n  true\n")
    argv = [FARMCTL, "--server", farm.address, "--token-file",
            os.path.join(farm.data, "admin.token"), "submit", recipe]
    client = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        def receiving():
            tmp = os.path.join(farm.data, "blobs", "tmp")
            return [n for n in temp_files(farm) if os.path.getsize(os.path.join(tmp, n)) > 0]
        partial = wait_until(receiving, 120, "farmd receiving the upload", interval=0.01)
        # Freeze the client so the upload stays cut in the middle, then kill farmd.
        client.send_signal(signal.SIGSTOP)
        kill9_tree(farm.farmd)
    finally:
        client.kill()
        client.wait(timeout=10)
    assert temp_files(farm) == partial, "the crash left the partial upload behind"
    # Another farmd's upload in progress on the same directory (a standby taking over
    # while the old one finishes): its writer holds the lock, so it stays.
    busy = os.path.join(farm.data, "blobs", "tmp", "f" * 64 + ".cafe01")
    with open(busy, "wb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write(b"being written")
        farm.start_farmd()
        assert temp_files(farm) == [os.path.basename(busy)], temp_files(farm)
        assert "temporary file(s)" in farm.log("farmd.log") and "did not finish" in \
            farm.log("farmd.log")
        # The same upload goes through now, and leaves nothing behind.
        again = farm.ctl("submit", recipe, timeout=300)
        assert again.returncode == 0, again.stderr
        assert temp_files(farm) == [os.path.basename(busy)], temp_files(farm)
    os.unlink(busy)
    build = farm.ctl_json("list")
    assert len(build["builds"]) == 1, build
