"""Storage proportional to content, on the real farmd and farm-worker: a build printing a
gigabyte of hard-to-compress text costs farm.db about the 64 MiB farmd keeps of it and the
write-ahead log stays bounded, while the log still reads line by line (seq, tail, JSON
Lines)."""
import json
import os
import textwrap

from farm_harness import pure_python_source

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
    pure_python_source(root, "loud", {"shout.py": SHOUT})
    recipe = os.path.join(root, "loud.yaml")
    with open(recipe, "w") as f:
        f.write(textwrap.dedent(f"""\
            name: loud
            source: {{local: loud-src}}
            system_site_packages: true
            build: |
              python3 shout.py {megabytes}
              "$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps --no-index -w "$FARM_WHEEL_DIR"
            """))
    return recipe


def test_a_gigabyte_of_log_costs_the_database_about_what_farmd_keeps(farm):
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
    assert "loud-1.0" in farm.ctl("logs", str(job_id)).stdout[-200000:]
    lines = [json.loads(line) for line in
             farm.ctl("--output", "json", "logs", str(job_id)).stdout.splitlines()]
    seqs = [line["seq"] for line in lines]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert len(lines) > 60000, len(lines)
    cut = [line for line in lines if "log truncated" in line.get("text", "")]
    assert len(cut) == 1, cut
    kept = sum(len(line.get("text", "")) + 1 for line in lines if line["seq"] < cut[0]["seq"])
    assert 60 * MIB < kept <= 64 * MIB, kept

