"""farmd drives the playbooks: farmctl hosts add / provision / list on real components.

The host is this machine ("local", address localhost, connection local) provisioned into a
throwaway prefix with GPU steps, packages, users and systemd left out, as a WSL2 host
without systemd: the farm_worker role's start script then launches the real farm-worker
binary, which must register with farmd by itself. A second run must change nothing.
Skipped without ansible-playbook.
"""
import grp
import json
import os
import pwd
import shutil
import subprocess

import pytest

from farm_harness import FARM_WORKER, REPO, wait_until


def ctl_json_ok(farm, *args, timeout=600):
    r = farm.ctl("--output", "json", *args, timeout=timeout)
    assert r.returncode == 0, f"farmctl {args} failed ({r.returncode}): {r.stderr}\n{r.stdout}"
    return json.loads(r.stdout)


@pytest.fixture
def local_host(farm):
    """The throwaway prefix of host "local"; the worker started there is stopped at the end."""
    if shutil.which("ansible-playbook") is None:
        pytest.skip("ansible-playbook is not installed (apt-get install ansible-core)")
    prefix = os.path.join(farm.root, "host-local")
    # The toolkit is "installed by other means" (GPU steps are skipped): this machine's own,
    # or an empty folder where it has none.
    os.makedirs(os.path.join(prefix, "usr", "local"))
    toolkit = os.path.join(prefix, "usr", "local", "cuda-13.0")
    if os.path.isdir("/usr/local/cuda"):
        os.symlink(os.path.realpath("/usr/local/cuda"), toolkit)
    else:
        os.makedirs(os.path.join(toolkit, "bin"))
    yield prefix
    ctl = os.path.join(prefix, "usr", "local", "sbin", "farm-worker-ctl")
    if os.path.exists(ctl):
        subprocess.run([ctl, "stop"], capture_output=True, timeout=60)


def host_vars(prefix):
    python = "/usr/bin/python3"
    pyver = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    user = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    return {
        "ansible_connection": "local",
        "ansible_python_interpreter": python,
        "ansible_become": "false",
        "farm_prefix": prefix,
        "farm_skip_gpu_steps": "true",
        "farm_manage_services": "false",
        "farm_manage_packages": "false",
        "farm_manage_users": "false",
        "farm_worker_start_script": "true",
        "farm_worker_service_manager": "script",
        "farm_worker_wsl2_min_memory_mb": "512",
        "farm_worker_binary_src": FARM_WORKER,
        "farm_worker_user": user,
        "farm_worker_group": group,
        "farm_worker_log_json": "false",
        "cuda_toolkit_versions": '["13.0"]',
        "cuda_toolkit_default_version": '"13.0"',
        "cuda_toolkit_triton_ptxas_version": '"13.0"',
        "python_envs_versions": f'["{pyver}"]',
        "python_envs_interpreters": json.dumps({pyver: python}),
        "python_envs_system_site_packages": "true",
        "python_envs_build_packages": "[]",
    }


def test_provisioned_host_registers_as_a_worker_and_a_second_run_changes_nothing(farm, local_host):
    farm.start_farmd("--playbooks-dir", os.path.join(REPO, "playbooks"))
    args = ["hosts", "add", "local", "--address", "localhost", "--kind", "wsl2"]
    for k, v in host_vars(local_host).items():
        args += ["--var", f"{k}={v}"]
    added = ctl_json_ok(farm, *args)
    assert added["state"] == "added" and added["kind"] == "wsl2"
    assert farm.ctl("hosts", "add", "local", "--address", "x", "--kind", "wsl2").returncode != 0

    first = ctl_json_ok(farm, "hosts", "provision", "local")
    assert first["state"] == "provisioned", first
    assert int(first.get("changed", 0)) > 10, first
    assert int(first.get("failed", 0)) == 0 and first.get("finished_at")

    def local_worker():
        workers = ctl_json_ok(farm, "workers").get("workers", [])
        return next((w for w in workers if w.get("name") == "local"), None)
    worker = wait_until(local_worker, 60, "the provisioned host's worker to register")
    listed = wait_until(lambda: (lambda h: h if h.get("worker_id") else None)(
        ctl_json_ok(farm, "hosts", "list")["hosts"][0]), 10, "hosts list to show the worker")
    assert listed["worker_id"] == worker["id"], (listed, worker)

    second = ctl_json_ok(farm, "hosts", "provision", "local")
    assert second["state"] == "provisioned", second
    assert int(second.get("changed", 0)) == 0, second
    assert int(second["runs"]) == 2
    assert local_worker()["id"] == worker["id"]  # the running worker was left alone

    # The enrollment token went through a 0600 file only: never in a log or the inventory.
    host_dir = os.path.join(farm.data, "hosts", "local")
    with open(os.path.join(host_dir, "enroll.token")) as f:
        token = f.read().strip()
    assert oct(os.stat(os.path.join(host_dir, "enroll.token")).st_mode & 0o777) == "0o600"
    assert not os.path.exists(os.path.join(host_dir, "secrets.yml"))
    shown = ctl_json_ok(farm, "hosts", "show", "local")["hosts"][0]
    assert "PLAY RECAP" in shown["log"] and "changed=0" in shown["log"]
    for text in (shown["log"], farm.log("farmd.log"),
                 open(os.path.join(host_dir, "inventory.yml")).read()):
        assert token not in text
    token_file = os.path.join(local_host, "etc", "farm", "enroll.token")
    assert oct(os.stat(token_file).st_mode & 0o777) == "0o600"
    print(f"first run changed={first.get('changed', 0)}, second changed={second.get('changed', 0)}")


def test_failed_run_is_recorded_with_its_reason(farm, local_host):
    farm.start_farmd("--playbooks-dir", os.path.join(REPO, "playbooks"))
    vars_ = host_vars(local_host)
    vars_["farm_worker_binary_src"] = os.path.join(farm.root, "no-such-binary")
    args = ["hosts", "add", "broken", "--address", "localhost", "--kind", "wsl2"]
    for k, v in vars_.items():
        args += ["--var", f"{k}={v}"]
    ctl_json_ok(farm, *args)
    r = farm.ctl("hosts", "provision", "broken", timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    (host,) = ctl_json_ok(farm, "hosts", "list")["hosts"]
    assert host["state"] == "failed" and int(host["failed"]) >= 1, host
    assert host["error"], host
    assert not host.get("worker_id")
