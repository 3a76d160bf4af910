"""farmctl export-index on the real farmd, farm-worker, farmctl and pip: a package built for
two GPUs (sm_90 and sm_121a, one real nvcc wheel each) is exported as static files; with
farmd stopped, `python3 -m http.server` serves the export and the real pip in clean venvs
installs the wheel of each GPU from its view; the install script picks the view from the
export and verifies the wheel's signed provenance there. A second export downloads no
wheel. A farmd that serves hostile pages (a "../" link, a file name with "/", a wrong
sha256) gets nothing written outside DIR and nothing renamed into place, and a farmctl
killed with -9 mid-export leaves the previous export as it was."""
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

import farm_harness
from farm_harness import FARMCTL, local_recipe, venv, wait_until

PACKAGE_DIR = os.path.join(os.path.dirname(__file__), "packages", "arch_list_kernel")
NVCC = "/usr/local/cuda/bin/nvcc"
PROJECT = "arch-list-kernel"


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "FARM_INSTALL_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


def export(out, source, *args, timeout=300):
    """farmctl export-index; (returncode, the JSON summary or None, stderr)."""
    r = subprocess.run([FARMCTL, "--output", "json", "export-index", out, "--from", source, *args],
                       capture_output=True, text=True, timeout=timeout)
    return r.returncode, (json.loads(r.stdout) if r.returncode == 0 else None), r.stderr


def snapshot(root):
    """Every path under `root` with the sha256 of each file: what a test compares."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(d, name), root) + "/"] = None
        for name in files:
            with open(os.path.join(d, name), "rb") as f:
                out[os.path.relpath(os.path.join(d, name), root)] = hashlib.sha256(f.read()).hexdigest()
    return out


@pytest.fixture(scope="module")
def built(request):
    """One farm for the module: the package built for sm_90 and for sm_121a (no GPU here, so
    the index lists wheels waiting for hardware), and a first export made while farmd runs."""
    if not os.path.exists(NVCC):
        pytest.skip(f"{NVCC} missing: the package compiles a CUDA kernel")
    farm = farm_harness.make_farm(request)
    farm.start_farmd("--index-include-pending", http=True)
    farm.start_worker()
    recipe = local_recipe(farm.root, PROJECT, source=PACKAGE_DIR, file_name="recipe.yaml",
                          tail="""matrix:
  cuda: ["13.0"]
  arch_lists: ["9.0", "12.1a"]
  platform: [linux_x86_64]
validation:
  script: validate.py
  import: [arch_list_kernel]
""")
    build = farm.ctl_json("submit", recipe, "--follow", timeout=600)
    assert build["state"] == "BUILD_SUCCEEDED", build
    wheels = sorted(a["filename"] for j in build["jobs"] for a in j["artifacts"])
    assert len(wheels) == 2, wheels
    pristine = os.path.join(farm.root, "pristine", "index")
    start = time.monotonic()
    rc, summary, err = export(pristine, "http://" + farm.http_address)
    first = time.monotonic() - start
    assert rc == 0, err
    assert summary["wheels"] == 2 and summary["wheels_downloaded"] == 2, summary
    return farm, wheels, pristine, first


class FakeFarmd:
    """farmd's HTTP side as far as the export reads it, answered from an export of the real
    farmd: a directory URL gets its index.json for a JSON Accept and its index.html
    otherwise, as farmd negotiates; `override` replaces one answer (a hostile page), and
    `stall` makes one file stop halfway until `release` is set."""

    def __init__(self, root):
        self.root, self.override, self.stall = root, {}, None
        self.stalled, self.release = threading.Event(), threading.Event()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                status, body = fake.answer(self.path, self.headers.get("Accept") or "")
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.path == fake.stall:
                    self.wfile.write(body[:len(body) // 2])
                    self.wfile.flush()
                    fake.stalled.set()
                    fake.release.wait(60)
                    return
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path, accept):
        if path in self.override:
            return 200, self.override[path]
        local = path.lstrip("/")
        if path.endswith("/"):
            local += "index.json" if "json" in accept else "index.html"
        full = os.path.join(self.root, local)
        if ".." in path.split("/") or not os.path.isfile(full):
            return 404, b'{"error": {"message": "not found"}}'
        with open(full, "rb") as f:
            return 200, f.read()

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def serve_static(farm, directory):
    """`python3 -m http.server` on 127.0.0.1, port 0: its base URL, read from what it prints."""
    log = f"static-{len(farm.procs)}.log"
    farm._spawn([sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1",
                 "--directory", directory, "0"], log)
    line = wait_until(lambda: "port " in farm.log(log) and farm.log(log), 30, "http.server")
    port = int(line.split("port ")[1].split()[0])
    return f"http://127.0.0.1:{port}"


def test_the_export_serves_each_gpu_its_wheel_with_farmd_stopped(built):
    farm, wheels, pristine, first = built
    site = os.path.join(farm.root, "site", "index")
    shutil.copytree(pristine, site, copy_function=os.link)
    # A second export of the unchanged index downloads no wheel: it links them.
    start = time.monotonic()
    rc, summary, err = export(site, "http://" + farm.http_address)
    second = time.monotonic() - start
    assert rc == 0, err
    assert summary["wheels_downloaded"] == 0 and summary["wheels_reused"] == 2, summary
    assert summary["bytes_downloaded"] == 0, summary
    print(f"\nexport: first {first:.2f} s (2 wheels downloaded), second {second:.2f} s "
          f"({summary['bytes_reused']} bytes of wheels reused)")
    assert sorted(os.listdir(os.path.dirname(site))) == ["index"]  # no sibling left

    farm.stop(farm.farmd)
    base = serve_static(farm, site)
    for gpu, label in (("sm90", "+cu130.sm90"), ("sm121", "+cu130.sm121a")):
        python = venv(farm.root, gpu)
        r = subprocess.run([python, "-m", "pip", "install", "--no-cache-dir", "--no-deps",
                            "--index-url", f"{base}/cu130/{gpu}/simple/", PROJECT],
                           capture_output=True, text=True, timeout=300, env=clean_env())
        assert r.returncode == 0, r.stdout + r.stderr
        version = subprocess.run([python, "-c", "import importlib.metadata as m; "
                                  f"print(m.version('{PROJECT}'))"], capture_output=True,
                                 text=True, timeout=60).stdout.strip()
        assert version == "1.0" + label, (gpu, version, wheels)

    # The install script of the export: asked for the URL it is served at, it picks the view
    # from the export's directory and checks the wheel's signed provenance there.
    with open(os.path.join(site, "install")) as f:
        script = f.read()
    env = dict(clean_env(), FARM_INSTALL_GPU_CC="12.1")
    r = subprocess.run([python, "-", PROJECT, "--dry-run"], input=script, capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode != 0 and "pass --farm URL" in r.stdout + r.stderr, r.stdout + r.stderr
    r = subprocess.run([python, "-", PROJECT, "--farm", base, "--dry-run"], input=script,
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"chose {base}/cu130/sm121/simple/ (cu130)" in r.stdout, r.stdout
    assert "verified: the farm's key signed the build of arch_list_kernel-1.0+cu130.sm121a" \
        in r.stdout, r.stdout
    assert f"--index-url {base}/cu130/sm121/simple/" in r.stdout, r.stdout


HOSTILE = {
    "a file link that climbs out": lambda page: page.replace(
        '"url":"../../../../files/', '"url":"../../../../../../../../tmp/files/', 1),
    "a file name with a slash": lambda page: page.replace(
        '"filename":"arch_list_kernel-', '"filename":"../../arch_list_kernel-', 1),
    "a project named ../": None,  # the project list, below
    "a fragment that is not the sha256": lambda page: page.replace(
        '.whl","hashes"', '.whl#sha256=' + "0" * 64 + '","hashes"', 1),
}


@pytest.mark.parametrize("case", sorted(HOSTILE) + ["a wheel whose bytes are not its sha256"])
def test_hostile_pages_write_nothing_outside_and_rename_nothing(built, case):
    farm, _, pristine, _ = built
    parent = os.path.join(farm.root, "hostile-" + str(len(os.listdir(farm.root))))
    site = os.path.join(parent, "index")
    shutil.copytree(pristine, site)
    before, outside = snapshot(site), set(os.listdir(farm.root))
    fake = FakeFarmd(pristine)
    try:
        page = "/cu130/sm90/simple/%s/" % PROJECT
        with open(os.path.join(pristine, page.strip("/"), "index.json")) as f:
            project_json = f.read()
        if case == "a project named ../":
            fake.override["/cu130/simple/"] = json.dumps(
                {"projects": [{"name": "../../../escape"}]}).encode()
        elif case == "a wheel whose bytes are not its sha256":
            wheel = json.loads(project_json)["files"][0]
            url = "/files/%s/%s" % (wheel["hashes"]["sha256"], wheel["filename"])
            with open(os.path.join(pristine, url.lstrip("/")), "rb") as f:
                data = bytearray(f.read())
            data[len(data) // 2] ^= 0xFF  # the same size, one byte flipped
            fake.override[url] = bytes(data)
            shutil.rmtree(os.path.join(site, "files"))  # not reusable: it must be fetched
            before = snapshot(site)
        else:
            hostile = HOSTILE[case](project_json)
            assert hostile != project_json
            fake.override[page] = hostile.encode()
        rc, _, err = export(site, fake.url)
    finally:
        fake.close()
    assert rc != 0, case
    assert "refusing to export" in err or "its index page says" in err, err
    if case == "a wheel whose bytes are not its sha256":
        assert "the bytes farmd served are not the wheel it lists" in err, err
    assert snapshot(site) == before, case  # the previous export, untouched
    assert os.listdir(parent) == ["index"], os.listdir(parent)  # no sibling left
    assert set(os.listdir(farm.root)) == outside
    assert not os.path.exists(os.path.join(farm.root, "escape"))


def test_kill_9_mid_export_leaves_the_previous_export(built):
    farm, _, pristine, _ = built
    parent = os.path.join(farm.root, "killed")
    site = os.path.join(parent, "index")
    shutil.copytree(pristine, site)
    before = snapshot(site)
    fake = FakeFarmd(pristine)
    try:
        # A metadata file is fetched on every export (wheels are linked from the previous
        # one), so the export stops there with a partial file in its sibling directory.
        metadata = next(os.path.join(d, f)[len(pristine):] for d, _, files in os.walk(pristine)
                        for f in files if f.endswith(".metadata"))
        fake.stall = metadata
        proc = subprocess.Popen([FARMCTL, "export-index", site, "--from", fake.url],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert fake.stalled.wait(60), "the export never reached the metadata file"
            siblings = [n for n in os.listdir(parent) if n != "index"]
            assert len(siblings) == 1 and siblings[0].startswith(".index.export-"), siblings
            partial = os.path.join(parent, siblings[0], metadata.lstrip("/"))
            assert os.path.exists(partial), partial
        finally:
            proc.kill()
            proc.wait(timeout=30)
        fake.release.set()
        assert snapshot(site) == before  # DIR is the previous export, whole
        # The next export finishes and removes what the killed one left.
        fake.stall = None
        rc, summary, err = export(site, fake.url)
        assert rc == 0, err
        assert summary["wheels_downloaded"] == 0, summary
        assert os.listdir(parent) == ["index"], os.listdir(parent)
    finally:
        fake.close()


def test_clear_errors_unreachable_farmd_and_a_dir_that_is_not_an_export(built):
    farm, _, pristine, _ = built
    out = os.path.join(farm.root, "errors", "index")
    rc, _, err = export(out, "http://127.0.0.1:9")
    assert rc == 3 and "is farmd running" in err, (rc, err)
    assert not os.path.exists(out) and os.listdir(os.path.dirname(out)) == []
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "notes.txt"), "w") as f:
        f.write("mine")
    fake = FakeFarmd(pristine)
    try:
        rc, _, err = export(out, fake.url)
        assert rc == 2 and "is not an export of farmctl export-index" in err, (rc, err)
        assert os.listdir(out) == ["notes.txt"]
        rc, _, err = export(out, fake.url, "--force")
        assert rc == 0, err
        assert not os.path.exists(os.path.join(out, "notes.txt"))
    finally:
        fake.close()
