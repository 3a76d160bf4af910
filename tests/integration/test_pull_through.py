"""farmd's pull-through cache as an attacker and a resolver use it (issue 46: findings 4 to 7
and the low ones of the cache), with the real farmd, farmctl and pip against the
protocol-faithful index fakes of tests/fakes:

- a private upstream's credentials (an index URL with user:token) reach no answer, log
  line or metric, while its pages and files are served with them;
- a file is served only for the index that listed it, under its name: not a submitter's
  source archive by its digest (printed in public logs), and one index listing another's
  digest at a dead URL does not block that other's file;
- pages of an upstream that hangs never hold the dashboard's threads: /healthz and the
  overview answer while the hanging requests are still in flight, at most
  --upstream-max-fetches-per-host of them reach that upstream at once, and another
  upstream is answered meanwhile;
- a file nobody provisioned is not downloaded for an anonymous client; what is downloaded
  stays under --upstream-cache-max-gib (least recently used evicted first), and a preloaded
  file is never evicted;
- a hostile index cannot make farmd fetch an internal address (a file URL on another host,
  a redirect to another 127.0.0.x host, a file: URL);
- pip 23.0.1 resolving through farmd reads each stored wheel's METADATA from the page
  (PEP 658 under both names in HTML): a second resolution downloads no wheel it only
  needed to read (the one it backtracks from);
- kill -9 of farmd in the middle of a download leaves no file in its staging folder once
  it is back, and what it stored before is still served.

One farmd, its fakes and their data serve the whole module; the kill -9 test comes last.
"""

import base64
import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request

import pytest

from farm_harness import PYTHON, local_recipe, make_farm, pure_python_source, wait_until
from test_provision import FAKES, RunningFake

sys.path.insert(0, FAKES)
from upstream_data import write_wheel  # noqa: E402

SECRET = "S3CR3TTOKEN"
MIB = 1 << 20
CACHE_GIB = "0.0025"  # 2.5 MiB: two of the 1 MiB files fit, a third evicts one
PER_HOST = 2


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def make_data(root):
    """The fakes' folders: returns {name: bytes} of the files tests name."""
    pub, priv, evil, inside = (os.path.join(root, d) for d in ("pub", "priv", "evil", "inside"))
    for d in (pub, priv, evil, inside):
        os.makedirs(d)
    files = {}
    for name, version, requires in (("alpha", "2.0", ["gamma"]), ("alpha", "1.0", ["beta"]),
                                    ("beta", "1.0", [])):
        path = write_wheel(pub, name, version, "py3-none-any",
                           {"%s/__init__.py" % name: b"V = %r\n" % version}, purelib=True,
                           requires_dist=requires)
        files[os.path.basename(path)] = open(path, "rb").read()
    for name in ("fill1", "fill2", "fill3", "fill4", "late"):  # 1 MiB each, incompressible
        files[name + "-1.0.tar.gz"] = os.urandom(MIB)
        write(os.path.join(pub, name + "-1.0.tar.gz"), files[name + "-1.0.tar.gz"])
    files["secretpkg-1.0.tar.gz"] = gzip.compress(b"private")
    write(os.path.join(priv, "secretpkg-1.0.tar.gz"), files["secretpkg-1.0.tar.gz"])
    # The hostile index: alpha 1.0's very bytes (to be listed at a dead URL), a bait and a
    # hop (to be listed at, or redirected to, the internal host).
    shutil.copy(os.path.join(pub, "alpha-1.0-py3-none-any.whl"), evil)
    for name in ("bait-1.0.tar.gz", "hop-1.0.tar.gz"):
        files[name] = b"the internal secret\n"
        write(os.path.join(evil, name), files[name])
    write(os.path.join(inside, "secret.txt"), b"the internal secret\n")
    return pub, priv, evil, inside, files


def request(farm, path, token=None, basic=None, timeout=30, agent=None, fresh=False):
    """(status, body) of a GET of farmd's dashboard; `token` as a bearer token, `basic`
    a (user, password) pair, `fresh` asking for a page revalidated upstream."""
    req = urllib.request.Request("http://%s%s" % (farm.http_address, path))
    if fresh:
        req.add_header("Cache-Control", "max-age=0")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if basic:
        req.add_header("Authorization",
                       "Basic " + base64.b64encode(("%s:%s" % basic).encode()).decode())
    if agent:
        req.add_header("User-Agent", agent)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def metrics(farm):
    status, body = request(farm, "/metrics")
    assert status == 200, body
    out = {}
    for line in body.decode().splitlines():
        m = re.match(r"^(farm_upstream_[a-z_]+)(\{[^}]*\})? (\d+)$", line)
        if m:
            out[m.group(1) + (m.group(2) or "")] = int(m.group(3))
    return out


def listed(farm, index, project, name, fresh=False):
    """The URL farmd's page of `project` on `index` lists `name` at, as a worker takes it
    (path only)."""
    req = urllib.request.Request("http://%s/upstream/pypi/%s/simple/%s/" % (
        farm.http_address, index, project),
        headers={"Accept": "application/vnd.pypi.simple.v1+json",
                 **({"Cache-Control": "max-age=0"} if fresh else {})})
    with urllib.request.urlopen(req, timeout=30) as resp:
        page = json.loads(resp.read())
    urls = [f["url"] for f in page["files"] if f["filename"] == name]
    assert len(urls) == 1, page
    return urls[0]


@pytest.fixture(scope="module")
def setup(request):
    work = tempfile.mkdtemp(prefix="pull-through-")
    request.addfinalizer(lambda: shutil.rmtree(work, ignore_errors=True))
    pub, priv, evil, inside, files = make_data(os.path.join(work, "data"))
    fakes = {
        "pub": RunningFake("fake_pyindex.py", ["--index", "/simple=" + pub, "--no-metadata"],
                           work, "pub"),
        "priv": RunningFake("fake_pyindex.py", ["--index", "/idx=" + priv, "--basic-auth",
                                                "produser:" + SECRET], work, "priv"),
        "evil": RunningFake("fake_pyindex.py", ["--index", "/idx=" + evil], work, "evil"),
        # A host of its own inside the network, as a metadata service or an admin port is.
        "inside": RunningFake("fake_redist.py", ["--root", inside, "--host", "127.0.0.2"],
                              work, "inside"),
    }
    for fake in fakes.values():
        request.addfinalizer(fake.stop)
    farm = make_farm(request)
    private = fakes["priv"].url.replace("http://", "http://produser:%s@" % SECRET)
    flags = ("--upstream-index", "pub=%s/simple/" % fakes["pub"].url,
             "--upstream-index", "priv=%s/idx/" % private,
             "--upstream-index", "evil=%s/idx/" % fakes["evil"].url,
             "--upstream-cache-max-gib", CACHE_GIB,
             "--upstream-max-fetches-per-host", str(PER_HOST))
    farm.start_farmd(*flags, http=True)
    admin = open(os.path.join(farm.data, "admin.token")).read().strip()
    return {"farm": farm, "fakes": fakes, "files": files, "admin": admin, "flags": flags,
            "work": work}


def test_a_private_upstreams_credentials_reach_no_answer_log_or_metric(setup):
    farm, admin, files = setup["farm"], setup["admin"], setup["files"]
    status, body = request(farm, "/upstream/pypi/priv/simple/nonexist/")
    assert status == 404, body
    assert SECRET.encode() not in body and b"produser" not in body, body
    assert b"[REDACTED]@127.0.0.1" in body, body
    # The credentials are used where they belong: the private index answers farmd.
    status, body = request(farm, "/upstream/pypi/priv/simple/secretpkg/")
    assert status == 200 and b"secretpkg-1.0.tar.gz" in body, body
    status, body = request(farm, listed(farm, "priv", "secretpkg", "secretpkg-1.0.tar.gz"),
                           token=admin)
    assert status == 200 and body == files["secretpkg-1.0.tar.gz"]
    assert SECRET not in str(metrics(farm))
    status, body = request(farm, "/metrics")
    assert SECRET.encode() not in body
    assert SECRET not in farm.log("farmd.log")


def test_files_are_served_only_for_the_index_that_listed_them(setup):
    farm, admin, files, fakes = setup["farm"], setup["admin"], setup["files"], setup["fakes"]
    # A submitter's source archive: its digest is public (job logs, farmctl's output).
    token = farm.ctl_json("tokens", "create", "--role", "submitter", "--name", "sub")["token"]
    token_file = os.path.join(farm.root, "sub.token")
    write(token_file, (token + "\n").encode())
    pure_python_source(farm.root, "privsrc", {"secret.py": "KEY = 'do not serve'\n"})
    r = farm.ctl("submit", local_recipe(farm.root, "privsrc"), token_file=token_file)
    assert r.returncode == 0, r.stderr
    digest = re.search(r"\(sha256 ([0-9a-f]{64})\)", r.stdout + r.stderr).group(1)
    assert os.path.exists(os.path.join(farm.data, "blobs", digest[:2], digest))
    for path in ("/upstream/files/%s/privsrc-1.0.tar.gz" % digest,
                 "/upstream/files/pub/%s/privsrc-1.0.tar.gz" % digest):
        for who in (None, admin):
            status, body = request(farm, path, token=who)
            assert status == 404 and b"do not serve" not in body, (path, status, body[:200])
    # One index listing another's digest at a dead URL blocks nothing of the other's.
    alpha = "alpha-1.0-py3-none-any.whl"
    fakes["evil"].control("link", {"file": alpha, "url": "/idx/gone.whl"})
    bait = listed(farm, "evil", "alpha", alpha)
    status, body = request(farm, listed(farm, "pub", "alpha", alpha), token=admin)
    assert status == 200 and body == files[alpha], (status, body[:200])
    assert request(farm, bait.rsplit("/", 1)[0] + "/other.whl", token=admin)[0] == 404


def test_a_hanging_upstream_holds_no_http_thread(setup):
    farm, fakes = setup["farm"], setup["fakes"]
    pub = fakes["pub"]
    pub.control("stall", {"path": "^/simple/slow"})
    answers = {}

    def get(i):
        answers[i] = request(farm, "/upstream/pypi/pub/simple/slow%d/" % i, timeout=120)[0]
    threads = [threading.Thread(target=get, args=(i,), daemon=True) for i in range(6)]
    try:
        for t in threads:
            t.start()
        wait_until(lambda: pub.control("stalled")["waiting"] == PER_HOST, 30,
                   "the first requests to reach the hanging upstream")
        # Six requests wait on the upstream, more than farmd's two HTTP threads: the
        # dashboard, the API and another upstream still answer, while they wait.
        assert request(farm, "/healthz", timeout=10) == (200, b"ok\n")
        assert request(farm, "/api/v1/overview", timeout=10)[0] == 200
        assert request(farm, "/upstream/pypi/priv/simple/secretpkg/", timeout=10)[0] == 200
        held = pub.control("stalled")
        assert held["waiting"] == PER_HOST and held["peak"] == PER_HOST, held
        assert all(t.is_alive() for t in threads), answers
        # The six clients were started together, but the last ones may reach farmd after
        # the first two reached the upstream: wait for all of them to be queued.
        wait_until(lambda: metrics(farm)['farm_upstream_fetches{state="queued"}']
                   == 6 - PER_HOST, 30, "the other requests to queue behind the two")
        assert pub.control("stalled")["peak"] == PER_HOST
    finally:
        pub.control("stall", {"path": "^/simple/slow", "on": False})
    for t in threads:
        t.join(timeout=60)
    assert answers == {i: 404 for i in range(6)}, answers  # no such projects, answered
    assert pub.control("stalled")["peak"] <= PER_HOST


def test_strangers_pull_nothing_and_the_cache_stays_under_its_bound(setup):
    farm, admin, files, fakes = setup["farm"], setup["admin"], setup["files"], setup["fakes"]
    pub = fakes["pub"]
    fill = {i: ("fill%d-1.0.tar.gz" % i) for i in (1, 2, 3, 4)}
    url = {i: listed(farm, "pub", "fill%d" % i, fill[i]) for i in (1, 2, 3, 4)}
    status, body = request(farm, url[1])
    assert status == 403 and b"workers and admins" in body, body
    assert pub.counters().get("file:" + fill[1], 0) == 0
    for i in (1, 2, 3):
        status, body = request(farm, url[i], token=admin)
        assert status == 200 and body == files[fill[i]]
    m = metrics(farm)
    assert m["farm_upstream_evicted_total"] >= 1, m
    assert m["farm_upstream_cache_bytes"] <= 2.5 * MIB, m
    assert m["farm_upstream_pulls_refused_total"] >= 1, m
    oldest = sha256(files[fill[1]])
    assert not os.path.exists(os.path.join(farm.data, "blobs", oldest[:2], oldest))
    # What is stored is anyone's to read.
    assert request(farm, url[3])[0] == 200
    # A preloaded file is not counted and never evicted.
    preload = write(os.path.join(farm.root, "preload-1.0.tar.gz"),
                    gzip.compress(os.urandom(2 * MIB), compresslevel=1))
    r = farm.ctl("cache", "add", preload, "--index", "pub")
    assert r.returncode == 0, r.stderr
    assert request(farm, url[4], token=admin)[0] == 200
    kept = sha256(open(preload, "rb").read())
    assert os.path.exists(os.path.join(farm.data, "blobs", kept[:2], kept))
    assert metrics(farm)["farm_upstream_cache_bytes"] <= 2.5 * MIB


def test_a_hostile_index_cannot_make_farmd_fetch_internal_addresses(setup):
    farm, admin, files, fakes = setup["farm"], setup["admin"], setup["files"], setup["fakes"]
    evil, inside = fakes["evil"], fakes["inside"]
    evil.control("link", {"file": "bait-1.0.tar.gz", "url": inside.url + "/secret.txt"})
    evil.control("fail-next", {"path": "^/idx/hop-1.0.tar.gz$", "status": 302,
                               "headers": {"Location": inside.url + "/secret.txt"}})
    for project, name in (("bait", "bait-1.0.tar.gz"), ("hop", "hop-1.0.tar.gz")):
        status, body = request(farm, listed(farm, "evil", project, name), token=admin)
        assert status == 403 and b"127.0.0.2" in body, (name, status, body)
        assert b"the internal secret" not in body
    assert evil.counters().get("file:hop-1.0.tar.gz", 0) == 0  # the redirect answered it
    # A file: link fails the page; nothing is read.
    evil.control("link", {"file": "bait-1.0.tar.gz", "url": "file:///etc/passwd"})
    status, body = request(farm, "/upstream/pypi/evil/simple/bait/", token=admin, fresh=True)
    assert status == 404 and b"root:" not in body, (status, body)
    assert inside.counters() == {}, inside.counters()


def pip_resolve(farm, admin, report):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    index = "http://admin:%s@%s/upstream/pypi/pub/simple/" % (admin, farm.http_address)
    r = subprocess.run([PYTHON, "-m", "pip", "install", "--dry-run", "--report", report,
                        "--no-cache-dir", "--disable-pip-version-check", "--index-url", index,
                        "alpha"], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(report) as f:
        chosen = sorted("%s %s" % (i["metadata"]["name"], i["metadata"]["version"])
                        for i in json.load(f)["install"])
    # What pip fetched from farmd, as it says: wheels, and metadata files.
    fetched = re.findall(r"Downloading http://\S+/([^/\s]+\.whl(?:\.metadata)?) ", r.stdout)
    return chosen, fetched


def test_pip_resolves_a_second_time_without_the_wheels_it_only_read(setup):
    farm, admin = setup["farm"], setup["admin"]
    before = metrics(farm)
    # Cold: the upstream offers no metadata; pip downloads alpha 2.0 to read that it needs
    # gamma (which no index has), backtracks to alpha 1.0, and downloads what it keeps.
    chosen, fetched = pip_resolve(farm, admin, os.path.join(farm.root, "cold.json"))
    assert chosen == ["alpha 1.0", "beta 1.0"]
    assert "alpha-2.0-py3-none-any.whl" in fetched, fetched
    cold = metrics(farm)
    served = cold["farm_upstream_files_served_total"] - before["farm_upstream_files_served_total"]
    assert served == sum(1 for f in fetched if f.endswith(".whl")), (served, fetched)
    # The pages now carry each stored wheel's METADATA digest under both names...
    status, page = request(farm, "/upstream/pypi/pub/simple/alpha/", agent="pip/23.0.1 {}")
    assert status == 200 and page.count(b"data-dist-info-metadata=\"sha256=") == 2, page
    assert page.count(b"data-core-metadata=\"sha256=") == 2, page
    # ...so the second resolution reads the metadata files and never downloads alpha 2.0.
    # pip 23.0.1's --dry-run still downloads the wheels it keeps, at its end (twice), so
    # those are served: from farmd's blob store, with no upstream request.
    chosen, fetched = pip_resolve(farm, admin, os.path.join(farm.root, "warm.json"))
    assert chosen == ["alpha 1.0", "beta 1.0"]
    assert sorted(f for f in fetched if f.endswith(".metadata")) == [
        "alpha-1.0-py3-none-any.whl.metadata", "alpha-2.0-py3-none-any.whl.metadata",
        "beta-1.0-py3-none-any.whl.metadata"], fetched
    wheels = [f for f in fetched if f.endswith(".whl")]
    assert set(wheels) == {"alpha-1.0-py3-none-any.whl", "beta-1.0-py3-none-any.whl"}, fetched
    warm = metrics(farm)
    assert warm["farm_upstream_files_served_total"] - cold[
        "farm_upstream_files_served_total"] == len(wheels)
    assert warm["farm_upstream_metadata_served_total"] - cold[
        "farm_upstream_metadata_served_total"] == 3
    assert warm["farm_upstream_downloads_total"] == cold["farm_upstream_downloads_total"]


def test_kill_9_mid_download_leaves_no_staging_file_once_farmd_is_back(setup):
    farm, admin, files, fakes, flags = (setup["farm"], setup["admin"], setup["files"],
                                        setup["fakes"], setup["flags"])
    staging = os.path.join(farm.data, "upstream-staging")
    name = "late-1.0.tar.gz"  # never asked for before: downloaded, slowly
    fakes["pub"].control("throttle", {"file": name, "bytes_per_second": 64 * 1024})
    url = listed(farm, "pub", "late", name)

    def get():
        try:
            request(farm, url, token=admin, timeout=120)
        except OSError:
            pass  # farmd was killed under it
    getter = threading.Thread(target=get, daemon=True)
    getter.start()

    def partial():
        found = [n for n in os.listdir(staging) if n.startswith("mirror-")]
        return found and os.path.getsize(os.path.join(staging, found[0])) > 0 and found
    left = wait_until(partial, 30, "a download in farmd's staging folder")
    farm.farmd.send_signal(signal.SIGKILL)
    farm.farmd.wait(timeout=20)
    assert os.path.exists(os.path.join(staging, left[0]))
    fakes["pub"].control("throttle", {"file": name, "bytes_per_second": 0})
    farm.start_farmd(*flags, http=True)
    assert [n for n in os.listdir(staging) if n.startswith("mirror-")] == []
    assert "removed 1 unfinished download(s)" in farm.log("farmd.log")
    # What it stored before is served as before, to anyone.
    stored = "fill4-1.0.tar.gz"
    status, body = request(farm, listed(farm, "pub", "fill4", stored))
    assert status == 200 and body == files[stored]
    getter.join(timeout=30)
