"""A farm spread over hosts: farmd, two workers and the client each in a network namespace of
their own (veth pairs on a private bridge) and a mount namespace that hides the other hosts'
files. TLS everywhere, workers present client certificates (mTLS).

The cases share one farm, in this order: a local tree submitted from the client builds on
both workers and comes back, unchanged it uploads nothing, and no token crosses the bridge
in clear; the dashboard serves HTTPS and takes token writes; workers with the wrong CA or
without a certificate are refused; a worker's link cut for 60 s within the lease loses
nothing; a cut past the lease moves the job; plaintext off loopback needs --insecure on
both ends, which they say.
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import zipfile

import pytest

from farm_harness import (FARMCTL, FARMD, FARM_WORKER, PIP_WHEEL, PYTHON, local_recipe,
                          pure_python_source, wait_until)
from netns_hosts import Network, missing_requirements

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = 7443
HTTP_PORT = 8443
LONG_LEASE_MS = 90000  # longer than the 60 s cut
SHORT_LEASE_MS = 3000
TERMINAL = {"BUILD_SUCCEEDED", "BUILD_FAILED", "BUILD_CANCELLED"}

_why_not = missing_requirements()
pytestmark = pytest.mark.skipif(_why_not is not None, reason=str(_why_not))


class MultiHostFarm:
    def __init__(self, root):
        self.root = root
        self.net = Network(root, ["farmd", "w1", "w2", "client"])
        self.procs = {}
        self.capture = None
        self.server = f"{self.net.address['farmd']}:{PORT}"

    def path(self, host, *parts):
        return os.path.join(self.net.dirs[host], *parts)

    def spawn(self, host, name, argv):
        log = open(os.path.join(self.root, f"{name}.log"), "ab")
        proc = subprocess.Popen(self.net.argv(host, argv), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.procs[name] = proc
        return proc

    def stop(self, name):
        proc = self.procs.pop(name)
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=20)

    def log(self, name):
        try:
            with open(os.path.join(self.root, f"{name}.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    # --- certificates, made with farmctl ca on the client (where an operator would) ----
    def make_certificates(self):
        ca = self.path("client", "ca")
        for args in (["init", ca], ["issue", ca, "farmd", "--server-cert", "--host",
                                    self.net.address["farmd"]],
                     ["issue", ca, "w1", "--client-cert"], ["issue", ca, "w2", "--client-cert"],
                     ["init", self.path("client", "other-ca"), "--name", "another farm"]):
            r = subprocess.run([FARMCTL, "ca", *args], capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr
        shutil.copy(f"{ca}/farmd.pem", self.path("farmd"))
        shutil.copy(f"{ca}/farmd.key", self.path("farmd"))
        shutil.copy(f"{ca}/ca.pem", self.path("farmd"))
        for w in ("w1", "w2"):
            for f in ("ca.pem", f"{w}.pem", f"{w}.key"):
                shutil.copy(f"{ca}/{f}", self.path(w))
        shutil.copy(self.path("client", "other-ca", "ca.pem"), self.path("w2", "other-ca.pem"))
        os.unlink(f"{ca}/farmd.key")  # only farmd holds its key

    # --- processes ---------------------------------------------------------------------
    def start_farmd(self, lease_ms):
        ready = self.path("farmd", "ready")
        if os.path.exists(ready):
            os.unlink(ready)
        d = self.path("farmd")
        self.spawn("farmd", "farmd", [
            FARMD, "--data-dir", f"{d}/data", "--listen", self.server, "--ready-file", ready,
            "--http-listen", f"{self.net.address['farmd']}:{HTTP_PORT}",
            "--tls-cert", f"{d}/farmd.pem", "--tls-key", f"{d}/farmd.key",
            "--client-ca", f"{d}/ca.pem", "--lease-ms", str(lease_ms), "--heartbeat-ms", "500"])
        wait_until(lambda: os.path.exists(ready), 30, "farmd's ready file")

    def restart_farmd(self, lease_ms):
        self.stop("farmd")
        self.start_farmd(lease_ms)

    def start_worker(self, host, name, *tls):
        d = self.path(host)
        tls = tls or ("--ca", f"{d}/ca.pem", "--cert", f"{d}/{host}.pem", "--key", f"{d}/{host}.key")
        return self.spawn(host, name, [
            FARM_WORKER, "--server", self.server, "--enroll-token-file", f"{d}/enroll.token",
            "--state-dir", f"{d}/{name}-state", "--work-dir", f"{d}/{name}-work", "--name", name,
            "--python", PYTHON, *tls])

    def start_capture(self):
        ready = os.path.join(self.root, "capture.ready")
        self.capture_file = os.path.join(self.root, "bridge.frames")
        self.capture = subprocess.Popen(
            ["ip", "netns", "exec", self.net.switch, "/usr/bin/python3",
             os.path.join(HERE, "capture_frames.py"), self.capture_file, ready],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_until(lambda: os.path.exists(ready), 20, "the capture to start")

    def stop_capture(self):
        self.capture.send_signal(signal.SIGTERM)
        self.capture.wait(timeout=20)
        with open(self.capture_file, "rb") as f:
            return f.read()

    # --- farmctl on the client ---------------------------------------------------------
    def ctl(self, *args, timeout=300):
        c = self.path("client")
        return self.net.run("client", [FARMCTL, "--server", self.server, "--ca", f"{c}/ca/ca.pem",
                                       "--token-file", f"{c}/admin.token", *args], timeout=timeout)

    def ctl_json(self, *args):
        r = self.ctl("--output", "json", *args)
        assert r.returncode == 0, f"farmctl {args}: {r.stderr}"
        return json.loads(r.stdout)

    def show(self, build_id):
        return self.ctl_json("show", str(build_id))

    def job(self, build_id):
        return self.show(build_id)["jobs"][0]

    def wait_terminal(self, build_id, timeout):
        return wait_until(lambda: (lambda b: b if b["state"] in TERMINAL else None)(
            self.show(build_id)), timeout, f"build {build_id} to end", interval=0.5)

    def wait_running(self, build_id, min_lines, timeout=60):
        def running():
            job = self.job(build_id)
            if job["state"] != "JOB_RUNNING":
                return None
            return job if len(self.ctl("logs", str(job["id"])).stdout.splitlines()) >= min_lines else None
        return wait_until(running, timeout, f"build {build_id} running", interval=0.3)

    def worker_names(self):
        return {w["id"]: w["name"] for w in self.ctl_json("workers").get("workers", [])}

    def close(self):
        for name in list(self.procs):
            self.stop(name)
        if self.capture is not None and self.capture.poll() is None:
            self.capture.kill()
            self.capture.wait(timeout=20)
        self.net.close()


def write_package(client_dir, seconds):
    """A real pip package on the client and a recipe naming it by a local: path."""
    src = pure_python_source(client_dir, "tiny", {
        "tiny.py": "VALUE = 'built from the client tree'\n", ".gitignore": "build-junk/\n"})
    os.makedirs(os.path.join(src, "build-junk"), exist_ok=True)
    with open(os.path.join(src, "build-junk", "big.bin"), "wb") as f:
        f.write(os.urandom(1 << 20))  # ignored: must not travel
    return local_recipe(client_dir, "tiny", f"""\
for i in $(seq 1 {seconds}); do echo "tick $i"; sleep 1; done
test ! -e build-junk
{PIP_WHEEL}""", file_name=f"tiny-{seconds}.yaml")


@pytest.fixture(scope="module")
def mfarm(request):
    root = tempfile.mkdtemp(prefix="farm-multihost-")
    farm = MultiHostFarm(root)
    try:
        farm.make_certificates()
        farm.start_capture()
        farm.start_farmd(LONG_LEASE_MS)
        data = farm.path("farmd", "data")
        for w in ("w1", "w2"):
            shutil.copy(f"{data}/enroll.token", farm.path(w, "enroll.token"))
        shutil.copy(f"{data}/admin.token", farm.path("client", "admin.token"))
        farm.start_worker("w1", "w1")
        farm.start_worker("w2", "w2")
        wait_until(lambda: len(farm.worker_names()) >= 2, 60, "two workers registered")
        yield farm
    finally:
        farm.close()
        if any(getattr(item, "rep_call", None) is not None and item.rep_call.failed
               for item in request.session.items if item.module is request.module):
            print(f"\nkept test directory {root}")
            for name in sorted(os.listdir(root)):
                if name.endswith(".log"):
                    print(f"----- {name} (last 30 lines)")
                    print("\n".join(farm.log(name[:-4]).splitlines()[-30:]))
        else:
            shutil.rmtree(root, ignore_errors=True)


def test_client_tree_builds_on_both_workers_and_no_token_crosses_in_clear(mfarm):
    recipe = write_package(mfarm.path("client"), 3)
    # The workers cannot see the client's tree: only the upload can bring it to them.
    assert mfarm.net.run("w1", ["test", "-e", mfarm.path("client", "tiny-src", "setup.py")]).returncode == 1
    first = mfarm.ctl("--output", "json", "submit", recipe)
    assert first.returncode == 0, first.stderr
    assert "already on farmd" not in first.stderr and " uploaded (sha256 " in first.stderr, first.stderr
    again = mfarm.ctl("--output", "json", "submit", recipe, "--force")
    assert again.returncode == 0, again.stderr
    assert ": 0 B uploaded, already on farmd (sha256 " in again.stderr, again.stderr
    ids = [json.loads(first.stdout)["id"], json.loads(again.stdout)["id"]]
    builds = [mfarm.wait_terminal(i, 180) for i in ids]
    assert [b["state"] for b in builds] == ["BUILD_SUCCEEDED"] * 2, builds
    names = mfarm.worker_names()
    holders = {names[b["jobs"][0]["attempts"][-1]["worker_id"]] for b in builds}
    assert holders == {"w1", "w2"}, builds

    dest = mfarm.path("client", "wheels")
    r = mfarm.ctl("download", str(ids[0]), "--dir", dest)
    assert r.returncode == 0, r.stderr
    (wheel,) = [f for f in os.listdir(dest) if f.endswith(".whl")]
    with zipfile.ZipFile(os.path.join(dest, wheel)) as z:
        assert z.read("tiny.py") == b"VALUE = 'built from the client tree'\n"

    frames = mfarm.stop_capture()
    secrets = [open(mfarm.path("farmd", "data", f)).read().strip() for f in ("admin.token", "enroll.token")]
    for w in ("w1", "w2"):
        with open(mfarm.path(w, f"{w}-state", "worker.json")) as f:
            secrets.append(json.load(f)["worker_token"])
    assert all(len(s) >= 16 for s in secrets)
    # The capture saw the traffic (the wheel and the sources went through it), in TLS records.
    assert len(frames) > 20000, len(frames)
    assert b"\x17\x03\x03" in frames  # TLS application data records
    assert b"PRI * HTTP/2.0" not in frames  # the preface every plaintext gRPC stream opens with
    for secret in secrets:
        assert secret.encode() not in frames
    assert b"built from the client tree" not in frames


HTTPS_PROBE = """
import json, ssl, sys, urllib.error, urllib.request
ca, url, token, method = sys.argv[1:5]
req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
if token:
    req.add_header("Authorization", "Bearer " + token)
try:
    with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=ca), timeout=30) as r:
        print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
"""


def https(mfarm, method, path, token=""):
    """(status, body) of a request to the dashboard from the client, verifying farmd's CA."""
    url = f"https://{mfarm.net.address['farmd']}:{HTTP_PORT}{path}"
    r = mfarm.net.run("client", ["/usr/bin/python3", "-c", HTTPS_PROBE,
                                 mfarm.path("client", "ca", "ca.pem"), url, token, method])
    assert r.returncode == 0, r.stderr
    status, _, body = r.stdout.partition(" ")
    return int(status), body


def test_the_dashboard_serves_https_and_its_token_writes_work(mfarm):
    recipe = write_package(mfarm.path("client"), 30)
    build_id = mfarm.ctl_json("submit", recipe, "--force")["id"]
    status, body = https(mfarm, "GET", "/api/v1/builds")
    assert status == 200 and build_id in [b["id"] for b in json.loads(body)["builds"]], body
    assert https(mfarm, "POST", f"/api/v1/builds/{build_id}/cancel")[0] == 401
    token = open(mfarm.path("client", "admin.token")).read().strip()
    status, body = https(mfarm, "POST", f"/api/v1/builds/{build_id}/cancel", token)
    assert status == 200, body
    assert mfarm.wait_terminal(build_id, 60)["state"] == "BUILD_CANCELLED"


def test_workers_refuse_a_farmd_of_another_ca_and_farmd_refuses_workers_without_certificates(mfarm):
    before = set(mfarm.worker_names().values())
    d = mfarm.path("w2")
    wrong_ca = mfarm.start_worker("w2", "w2-wrong-ca", "--ca", f"{d}/other-ca.pem", "--cert",
                                  f"{d}/w2.pem", "--key", f"{d}/w2.key")
    no_cert = mfarm.start_worker("w2", "w2-no-cert", "--ca", f"{d}/ca.pem")
    assert no_cert.wait(timeout=60) != 0
    assert "requires workers to present a client certificate" in mfarm.log("w2-no-cert")
    wait_until(lambda: "cannot register yet" in mfarm.log("w2-wrong-ca"), 60,
               "the worker of another CA to give up a round")
    text = mfarm.log("w2-wrong-ca").lower()
    assert "certificate" in text or "handshake" in text, text
    assert wrong_ca.poll() is None  # it keeps trying, and never registers
    mfarm.stop("w2-wrong-ca")
    assert set(mfarm.worker_names().values()) == before


def job_holder(mfarm, build_id):
    job = mfarm.job(build_id)
    return job, mfarm.worker_names()[job["attempts"][-1]["worker_id"]]


def log_entries(mfarm, job_id):
    r = mfarm.ctl("--output", "json", "logs", str(job_id))
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def test_a_link_cut_for_60_s_within_the_lease_loses_nothing(mfarm):
    recipe = write_package(mfarm.path("client"), 15)
    build_id = mfarm.ctl_json("submit", recipe, "--force")["id"]
    mfarm.wait_running(build_id, min_lines=3)
    job, holder = job_holder(mfarm, build_id)
    log_before = len(mfarm.log(holder))
    mfarm.net.cut(holder)
    try:
        time.sleep(60)  # the build ends while the link is down; its log waits
    finally:
        mfarm.net.restore(holder)
    build = mfarm.wait_terminal(build_id, 120)
    assert build["state"] == "BUILD_SUCCEEDED", build
    job = build["jobs"][0]
    assert [a.get("cause") for a in job["attempts"]] == ["CAUSE_COMPLETED"], job["attempts"]
    assert len(job["artifacts"]) == 1
    entries = log_entries(mfarm, job["id"])
    seqs = [int(e["seq"]) for e in entries]
    assert seqs == list(range(1, len(seqs) + 1))
    ticks = [e["text"] for e in entries if e["text"].startswith("tick ")]
    assert ticks == [f"tick {i}" for i in range(1, 16)]
    # The worker said so at info level: one warning for the outage, one line when it ended.
    worker_log = mfarm.log(holder)[log_before:]
    assert worker_log.count("heartbeat failed") == 1, worker_log[-3000:]
    assert "heartbeat reached farmd again after" in worker_log, worker_log[-3000:]
    assert "farmd cancelled" not in worker_log, worker_log[-3000:]


def test_a_link_cut_past_the_lease_moves_the_job_and_the_late_report_is_refused(mfarm):
    mfarm.restart_farmd(SHORT_LEASE_MS)
    wait_until(lambda: len(mfarm.worker_names()) >= 2, 60, "workers back")
    recipe = write_package(mfarm.path("client"), 8)
    build_id = mfarm.ctl_json("submit", recipe, "--force")["id"]
    mfarm.wait_running(build_id, min_lines=2)
    _, holder = job_holder(mfarm, build_id)
    mfarm.net.cut(holder)
    try:
        wait_until(lambda: mfarm.job(build_id)["attempt"] == 2, 60, "a second attempt")
    finally:
        mfarm.net.restore(holder)
    build = mfarm.wait_terminal(build_id, 120)
    assert build["state"] == "BUILD_SUCCEEDED", build
    job = build["jobs"][0]
    assert [a.get("cause") for a in job["attempts"]] == ["CAUSE_LOST_WORKER", "CAUSE_COMPLETED"]
    names = mfarm.worker_names()
    assert names[job["attempts"][1]["worker_id"]] != holder
    assert len(job["artifacts"]) == 1
    # The first worker's build ended while it was cut off; once back it reports, and
    # farmd refuses: nothing about the job changes.
    time.sleep(8)
    again = mfarm.show(build_id)
    assert again["jobs"][0]["attempts"] == job["attempts"]
    assert len(again["jobs"][0]["artifacts"]) == 1


def test_plaintext_off_loopback_needs_insecure_and_says_so(mfarm):
    d = mfarm.path("farmd")
    plain = f"{mfarm.net.address['farmd']}:7444"
    argv = [FARMD, "--data-dir", f"{d}/plain-data", "--listen", plain,
            "--ready-file", f"{d}/plain.ready"]
    refused = mfarm.net.run("farmd", argv, timeout=60)
    assert refused.returncode != 0
    assert "--tls-cert" in refused.stdout + refused.stderr and "--insecure" in refused.stdout + refused.stderr
    mfarm.spawn("farmd", "farmd-plain", argv + ["--insecure"])
    wait_until(lambda: os.path.exists(f"{d}/plain.ready"), 30, "the plaintext farmd")
    assert "PLAINTEXT, --insecure" in mfarm.log("farmd-plain")
    shutil.copy(f"{d}/plain-data/admin.token", mfarm.path("client", "plain.token"))
    base = [FARMCTL, "--server", plain, "--token-file", mfarm.path("client", "plain.token")]
    no_ca = mfarm.net.run("client", base + ["workers"])
    assert no_ca.returncode != 0 and "--ca" in no_ca.stderr, no_ca.stderr
    insecure = mfarm.net.run("client", base + ["--insecure", "workers"])
    assert insecure.returncode == 0, insecure.stderr
    assert "IN PLAINTEXT" in insecure.stderr
    mfarm.stop("farmd-plain")
