"""Coverage (docs/coverage.md): the API's cell states, the Atom feed and webhooks, on the real
farmd, farm-worker and farmctl with pure-Python wheels (no nvcc: the cheapest real builds).

This machine has no GPU: the worker reports one through its test-only --test-fake-gpu switch,
so validation scripts run; one passes (validated), one answers exit code 5, a script's own
"the hardware this wheel needs is not here" (pending hardware). A third recipe's build fails,
and a cell of the first recipe's matrix is never submitted (missing). One farm serves the
whole module: the builds take most of its time.
"""
import http.server
import json
import os
import shutil
import signal
import subprocess
import textwrap
import threading
import time
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import pytest

from farm_harness import make_farm, pure_python_source, wait_until

ATOM = "{http://www.w3.org/2005/Atom}"
SECRET_PATH = "/hooks/T0001/very-secret-token"

CHECK_OK = "import sys; sys.exit(0)\n"
CHECK_NO_HARDWARE = "import sys; sys.exit(5)\n"


class Receiver:
    """A webhook receiver on 127.0.0.1:0: records every POST (its Idempotency-Key, body and
    the status it was answered) and answers 500 to the first POST of each key, and to every
    POST of a key starting with `refusing`, 200 otherwise."""

    def __init__(self):
        self.posts = []
        self.refusing = "build_failed:"
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                key = self.headers.get("Idempotency-Key")
                with receiver.lock:
                    seen = any(p["key"] == key for p in receiver.posts)
                    refused = receiver.refusing and key.startswith(receiver.refusing)
                    status = 200 if seen and not refused else 500
                    receiver.posts.append({"key": key,
                                           "path": self.path, "status": status,
                                           "body": json.loads(body)})
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{SECRET_PATH}"

    def snapshot(self):
        with self.lock:
            return list(self.posts)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def pure_recipe(root, name, validation, build=None, matrix=""):
    pure_python_source(root, name)
    build = build or ('"$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps '
                      '--no-index -w "$FARM_WHEEL_DIR"')
    path = os.path.join(root, name + ".yaml")
    with open(path, "w") as f:
        f.write(textwrap.dedent(f"""\
            name: {name}
            version: "1.0"
            source: {{local: {name}-src}}
            system_site_packages: true
            build: |
              {build}
            """) + matrix)
        if validation is not None:
            f.write(f"validation:\n  script: {name}_check.py\n  import: [{name}]\n")
            with open(os.path.join(root, name + "_check.py"), "w") as c:
                c.write(validation)
    return path


def get(farm, path):
    with urllib.request.urlopen(f"http://{farm.http_address}{path}", timeout=30) as resp:
        return resp.status, resp.headers.get("Content-Type"), resp.read()


def coverage(farm, **query):
    q = urllib.parse.urlencode(query)
    return json.loads(get(farm, "/api/v1/coverage" + ("?" + q if q else ""))[2])


@pytest.fixture(scope="module")
def setup(request):
    farm = make_farm(request)
    # FARM_TEST_STORE=postgres runs the module's farm on PostgreSQL, as conftest's farm does.
    if os.environ.get("FARM_TEST_STORE") == "postgres":
        farm.store = request.getfixturevalue("postgres_server").create_database()
    receiver = Receiver()
    request.addfinalizer(receiver.close)
    secrets = os.path.join(farm.root, "secrets")
    with open(secrets, "w") as f:
        f.write(f"WEBHOOK_URL_OPS={receiver.url}\n")
    os.chmod(secrets, 0o600)
    flags = ("--secrets-file", secrets, "--webhook", "ops", "--webhook-interval-ms", "200",
             "--webhook-backoff-ms", "3000")
    farm.start_farmd(*flags, http=True)
    farm.start_worker("gpu-1", "--test-fake-gpu", "Fake H100:9.0")
    recipes = {
        "covok": pure_recipe(farm.root, "covok", CHECK_OK,
                             matrix='matrix:\n  python: ["3.11", "3.12"]\n'),
        "covwait": pure_recipe(farm.root, "covwait", CHECK_NO_HARDWARE),
        # The build names its output to carry Slack markup into the failure's cause.
        "covbad": pure_recipe(farm.root, "covbad", None,
                              build="echo 'no <wheel> & no luck'; mkdir -p \"$FARM_WHEEL_DIR\"; "
                                    "printf x > "
                                    "\"$FARM_WHEEL_DIR/<!channel> <mailto:ops@evil.example|docs> &.whl\""),
    }
    builds = {}
    for name, recipe in recipes.items():
        args = ("--python", "3.11") if name == "covok" else ()
        r = farm.ctl("--output", "json", "submit", recipe, *args, "--follow", timeout=300)
        assert r.returncode in (0, 1) and r.stdout.strip(), (name, r.returncode, r.stderr)
        builds[name] = json.loads(r.stdout)
    return farm, receiver, builds, flags


def cell(cells, package, python=None):
    found = [c for c in cells if c["package"] == package and (python is None or c["python"] == python)]
    assert len(found) == 1, (package, python, cells)
    return found[0]


def test_coverage_api_states_and_filters(setup):
    farm, _, builds, _ = setup
    assert builds["covok"]["state"] == "BUILD_SUCCEEDED", builds["covok"]
    assert builds["covbad"]["state"] == "BUILD_FAILED", builds["covbad"]
    data = coverage(farm)
    cells = data["cells"]
    ok = cell(cells, "covok", "3.11")
    assert ok["state"] == "validated" and ok["state_words"] == "built and validated", ok
    job = builds["covok"]["jobs"][0]
    assert ok["job_id"] == int(job["id"]) and ok["build_id"] == int(builds["covok"]["id"])
    assert ok["wheel"].startswith("covok-1.0-") and ok["wheel"].endswith(".whl"), ok
    assert ok["built_at"] and ok["validated_at"], ok
    assert ok["release_to_wheel_seconds"] is None
    missing = cell(cells, "covok", "3.12")
    assert missing["state"] == "missing" and missing["job_id"] == 0, missing
    assert missing["build_id"] == int(builds["covok"]["id"]), missing
    wait = cell(cells, "covwait")
    assert wait["state"] == "pending_hardware" and wait["validated_at"] == "", wait
    bad = cell(cells, "covbad")
    assert bad["state"] == "failed" and bad["cause"], bad
    assert bad["job_id"] == int(builds["covbad"]["jobs"][0]["id"]), bad
    assert data["counts"]["validated"] == 1 and data["counts"]["missing"] == 1, data["counts"]
    # Filters.
    assert [c["package"] for c in coverage(farm, state="failed")["cells"]] == ["covbad"]
    assert {c["python"] for c in coverage(farm, package="covok")["cells"]} == {"3.11", "3.12"}
    assert [c["state"] for c in coverage(farm, package="covok", python="3.12")["cells"]] == \
        ["missing"]
    try:
        get(farm, "/api/v1/coverage?state=<script>")
        raise AssertionError("an unknown state was accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 400
        assert b"<script>" not in e.read()


def test_farmctl_coverage_prints_the_same_cells(setup):
    farm, _, builds, _ = setup
    r = farm.ctl("coverage")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:3] == ["PACKAGE", "VERSION", "TORCH"], r.stdout
    by_package = {}
    for line in lines[1:]:
        by_package.setdefault(line.split()[0], []).append(line)
    assert any("built and validated" in l and " 3.11 " in l for l in by_package["covok"]), r.stdout
    assert any("missing" in l and " 3.12 " in l for l in by_package["covok"]), r.stdout
    assert "validation pending hardware" in by_package["covwait"][0], r.stdout
    bad_job = int(builds["covbad"]["jobs"][0]["id"])
    assert f"job {bad_job} (covbad): " in r.stdout, r.stdout  # the cause under the table
    failed = farm.ctl_json("coverage", "--state", "failed")
    assert [c["package"] for c in failed["cells"]] == ["covbad"], failed
    assert failed["cells"][0]["job_id"] == bad_job and "release_to_wheel_seconds" not in \
        failed["cells"][0]
    assert [c["python"] for c in farm.ctl_json("coverage", "--package", "covok", "--python",
                                               "3.12")["cells"]] == ["3.12"]
    refused = farm.ctl("coverage", "--state", "bogus")
    assert refused.returncode == 2 and "unknown state" in refused.stderr, refused.stderr


def test_atom_feed_lists_validated_wheels_and_failed_builds_newest_first(setup):
    farm, _, builds, _ = setup
    status, content_type, body = get(farm, "/feeds/wheels.atom")
    assert status == 200 and content_type.startswith("application/atom+xml"), content_type
    root = ET.fromstring(body)
    assert root.tag == ATOM + "feed"
    assert root.find(ATOM + "id").text and root.find(ATOM + "updated").text
    entries = root.findall(ATOM + "entry")
    ids = [e.find(ATOM + "id").text for e in entries]
    bad_build = int(builds["covbad"]["id"])
    ok_job = int(builds["covok"]["jobs"][0]["id"])
    assert f"urn:farm:build_failed:{bad_build}" in ids, ids
    wheel_ids = [i for i in ids if i.startswith("urn:farm:wheel_validated:")]
    assert len(wheel_ids) == 1, ids
    # The wheel whose validation waits for a GPU is announced as built.
    built_ids = [i for i in ids if i.startswith("urn:farm:wheel_built:")]
    assert len(built_ids) == 1 and len(ids) == 3, ids
    updated = [e.find(ATOM + "updated").text for e in entries]
    assert updated == sorted(updated, reverse=True), updated
    links = {e.find(ATOM + "id").text: e.find(ATOM + "link").get("href") for e in entries}
    assert links[wheel_ids[0]] == f"/#/job/{ok_job}", links
    assert ET.fromstring(get(farm, "/feeds/wheels.atom")[2]).findall(ATOM + "entry")[0].find(
        ATOM + "id").text == ids[0]  # stable


def test_dashboard_serves_the_coverage_page(setup):
    farm, _, _, _ = setup
    _, _, index = get(farm, "/")
    assert b'href="#/coverage"' in index and b"/coverage.js" in index
    status, content_type, script = get(farm, "/coverage.js")
    assert status == 200 and b"function coveragePage" in script
    # The page as a browser renders it (its script, under the dashboard's headers).
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("no chromium to render the page")
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--virtual-time-budget=5000", "--dump-dom",
                        f"http://{farm.http_address}/#/coverage"],
                       capture_output=True, text=True, timeout=60)
    dom = r.stdout
    assert '<h2 class="cov-package">covok</h2>' in dom, (r.returncode, dom[-2000:], r.stderr[-2000:])
    assert 'data-state="missing"' in dom and 'data-state="pending_hardware"' in dom, dom
    assert "built and validated" in dom and "error:" not in dom, dom


def test_webhooks_deliver_each_event_once_across_a_kill_9(setup):
    farm, receiver, builds, flags = setup
    failed_key = f"build_failed:{int(builds['covbad']['id'])}"
    wheel = cell(coverage(farm)["cells"], "covok", "3.11")
    # The receiver refuses the failed build's event until farmd has been killed: the event
    # is stored and not delivered when farmd dies.
    wait_until(lambda: any(p["key"] == failed_key for p in receiver.snapshot()), 30,
               "the first (refused) delivery of the failed build")
    farm.farmd.send_signal(signal.SIGKILL)
    farm.farmd.wait(timeout=20)
    with receiver.lock:
        receiver.refusing = ""
    refused = [p["status"] for p in receiver.snapshot() if p["key"] == failed_key]
    assert refused and set(refused) == {500}, refused
    farm.start_farmd(*flags, http=True)

    def accepted():
        return [p["key"] for p in receiver.snapshot() if p["status"] == 200]
    wait_until(lambda: failed_key in accepted(), 30, "the delivery after the restart")
    time.sleep(1.0)  # later passes send nothing more
    posts = receiver.snapshot()
    keys = {p["key"] for p in posts}
    wheel_keys = [k for k in keys if k.startswith("wheel_validated:")]
    built_keys = [k for k in keys if k.startswith("wheel_built:")]  # validation pending hardware
    assert len(keys) == 3 and len(wheel_keys) == 1 and len(built_keys) == 1, posts
    assert sorted(accepted()) == sorted(keys), posts  # each event accepted exactly once
    assert [p["status"] for p in posts if p["key"] == failed_key] == refused + [200], posts
    assert {p["path"] for p in posts} == {SECRET_PATH}
    by_key = {p["key"]: p["body"] for p in posts if p["status"] == 200}
    failed = by_key[failed_key]
    bad_build = int(builds["covbad"]["id"])
    assert failed["event"] == "build_failed" and failed["build_id"] == bad_build, failed
    assert failed["text"].startswith(f"covbad 1.0: build {bad_build} failed"), failed
    # What the build named reaches Slack's text as text, never as markup (a <!channel>
    # mention, a link whose text hides its target); the raw value stays in "cause".
    assert "<!channel>" in failed["cause"], failed
    for markup in ("<!channel>", "<mailto:", "& "):
        assert markup not in failed["text"], failed
    assert "&lt;!channel&gt; &lt;mailto:ops@evil.example|docs&gt; &amp;" in failed["text"], failed
    validated = by_key[wheel_keys[0]]
    assert validated["wheel"] == wheel["wheel"] and validated["job_id"] == wheel["job_id"]
    assert validated["package"] == "covok" and validated["sha256"], validated
    assert validated["text"].startswith("covok 1.0: " + wheel["wheel"] + " validated"), validated
    # The URL is a secret: no log line holds it.
    for name in os.listdir(farm.root):
        if name.endswith(".log"):
            assert "very-secret-token" not in farm.log(name), name
