"""A build cannot reach the farm's credentials or other jobs: on the real farmd and
farm-worker (native executor in its bubblewrap sandbox), recipes that try to read the
worker's token, farmd's admin token and another job's workspace, to write into another
recipe's compile cache, to reach farmd over the network and to leave a process behind are
all refused, and the job log shows each refusal."""
import os
import re
import shutil
import textwrap

import pytest

from farm_harness import (PIP_WHEEL, job_log, local_recipe, pids_with_args, pure_python_source,
                          wait_until)

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap (bwrap) is not installed on this machine")


def package(root, name, probes):
    """A pure-Python package whose build first runs `probes` (bash), then builds its wheel."""
    pure_python_source(root, name, {"probes.sh": textwrap.dedent(probes)})
    return local_recipe(root, name, "bash probes.sh\n" + PIP_WHEEL)


def test_a_build_reaches_no_credentials_no_other_job_and_leaves_nothing_running(farm):
    farm.start_farmd()
    farm.start_worker("worker-1", "--keep-workspaces")
    work = os.path.join(farm.root, "worker-1", "work")
    # A first job leaves a file in its (kept) workspace.
    first = farm.ctl_json("submit", package(farm.root, "first", "echo secret > marker\n"),
                          "--follow", timeout=600)
    assert first["state"] == "BUILD_SUCCEEDED", first
    [first_ws] = [d for d in os.listdir(work) if d.startswith("job-1-")]
    assert os.path.exists(os.path.join(work, first_ws, "src", "marker"))

    # The first recipe's namespace of the compile cache, as the worker made it.
    cached = shutil.which("ccache") is not None
    [first_ns] = os.listdir(os.path.join(work, "ccache", "ns")) if cached else ["0" * 32]
    other_ns = os.path.join(work, "ccache", "ns", first_ns)
    host, port = farm.address.rsplit(":", 1)
    probes = f"""\
        try() {{ if eval "$2" >/dev/null 2>&1; then echo "REACHED $1"; else echo "REFUSED $1"; fi; }}
        try worker-token "cat {farm.root}/worker-1/worker.json"
        try admin-token "cat {farm.data}/admin.token"
        try other-workspace "cat {work}/{first_ws}/src/marker"
        try work-listing "ls {work}/{first_ws}"
        try other-recipe-cache "ls {other_ns}"
        echo "cache holds: $(ls {work}/ccache/ns 2>&1 | tr '\\n' ' ')"
        # Writes land nowhere on the host (checked by the test there).
        mkdir -p {other_ns} 2>/dev/null && echo x > {other_ns}/poison
        echo x > {work}/ccache/poison 2>/dev/null || true
        try farmd-network "python3 -c 'import socket; socket.create_connection((\\"{host}\\", {port}), 3)'"
        try system-write "touch /usr/poison"
        setsid sleep 6011 > /dev/null 2>&1 < /dev/null &
        echo "left sleep 6011 behind"
        """
    build = farm.ctl_json("submit", package(farm.root, "prober", probes), "--follow", timeout=600)
    log = job_log(farm, build["id"])
    assert build["state"] == "BUILD_SUCCEEDED", log[-3000:]
    for what in ("worker-token", "admin-token", "other-workspace", "work-listing",
                 "other-recipe-cache", "farmd-network", "system-write"):
        assert f"REFUSED {what}" in log, (what, log[-3000:])
    assert "REACHED" not in log, log[-3000:]
    # The cache seen from inside holds only the build's own namespace.
    [seen] = re.findall(r"cache holds: (.*)\n", log)
    assert not cached or (re.fullmatch(r"[0-9a-f]{32} ", seen) and first_ns not in seen), seen
    assert "executor sandbox" in log
    assert not os.path.exists(os.path.join(other_ns, "poison"))
    assert not os.path.exists(os.path.join(work, "ccache", "poison"))
    assert not os.path.exists("/usr/poison")
    # The process the build left behind died with the build.
    wait_until(lambda: not pids_with_args("sleep", "6011"), 10, "the left-behind sleep to end")


def test_a_root_workers_builds_run_as_an_unprivileged_user(farm):
    if os.geteuid() != 0:
        pytest.skip("the worker must run as root for this test; this one runs as uid %d"
                    % os.geteuid())
    farm.start_farmd()
    farm.start_worker()
    probes = """\
        echo "build uid $(id -u) gid $(id -g) groups $(id -G)"
        if cat /etc/shadow >/dev/null 2>&1; then echo "REACHED shadow"; else echo "REFUSED shadow"; fi
        if touch /farm/job/owned 2>/dev/null; then echo "workspace writable"; fi
        """
    build = farm.ctl_json("submit", package(farm.root, "whoami", probes), "--follow", timeout=600)
    log = job_log(farm, build["id"])
    assert build["state"] == "BUILD_SUCCEEDED", log[-3000:]
    [uid, gid, groups] = re.search(r"build uid (\d+) gid (\d+) groups ([\d ]+)\n", log).groups()
    assert int(uid) != 0 and int(gid) != 0 and "0" not in groups.split(), log[-3000:]
    assert "REFUSED shadow" in log and "REACHED shadow" not in log, log[-3000:]
    assert "workspace writable" in log
    assert "builds run as " in farm.log("worker-1.log")
