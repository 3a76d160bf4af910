"""The package-index fake keeps the protocol: negotiation, hashes, PEP 658/714 metadata,
yanking, redirects, 404s, a test channel nested under the release indexes' prefix; real pip downloads and installs the torch stand-ins from it; the
fault switches (corrupt, hide, stall) and a private or hostile index's (Basic credentials,
links elsewhere, no metadata) behave as documented; every file fetch is counted."""

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import urllib.request
import zipfile
from urllib.parse import quote, urljoin

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_process import RunningFake, get  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
JSON = "application/vnd.pypi.simple.v1+json"
HTML = "application/vnd.pypi.simple.v1+html"
TORCH_128 = "torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl"


def make(out, *args):
    subprocess.run([sys.executable, os.path.join(HERE, "upstream_data.py"), *args, "--out", out],
                   check=True, stdout=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def index():
    work = tempfile.mkdtemp(prefix="fake-pyindex-")
    for label, version in (("cu128", "2.8.0+cu128"), ("cu130", "2.9.0+cu130")):
        make(os.path.join(work, label), "torch-wheels", "--version", version,
             "--python-tag", "cp311", "--python-tag", "cp312")
    make(os.path.join(work, "cu128"), "host-wheels")
    with open(os.path.join(work, "cu130", "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64"
                           ".whl.yanked"), "w") as f:
        f.write("broken <build>")
    # The test channel of cu130: the coming release under its final numbers.
    make(os.path.join(work, "test-cu130"), "torch-wheels", "--version", "2.10.0+cu130",
         "--python-tag", "cp311")
    fake = RunningFake("fake_pyindex.py", ["--index", "/whl=" + os.path.join(work, "cu128"),
                                           "--index", "/whl/cu128=" + os.path.join(work, "cu128"),
                                           "--index", "/whl/cu130=" + os.path.join(work, "cu130"),
                                           "--index", "/whl/test/cu130="
                                           + os.path.join(work, "test-cu130")],
                       work, "pyindex")
    fake.work = work
    yield fake
    fake.stop()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def test_negotiates_by_accept_with_q_values(index):
    page = index.url + "/whl/cu128/torch/"
    cases = [
        (None, "text/html"),
        ("*/*", "text/html"),
        (JSON, JSON),
        ("application/vnd.pypi.simple.latest+json", JSON),
        ("application/vnd.pypi.simple.latest+html", HTML),
        ("%s;q=0.2, %s;q=0.9" % (JSON, HTML), HTML),
        ("%s, %s;q=0.01, text/html;q=0.5" % (JSON, HTML), JSON),
        ("text/plain;q=1, %s;q=0.1" % JSON, JSON),
    ]
    for accept, want in cases:
        status, headers, _ = get(page, accept)
        assert status == 200, accept
        assert headers["Content-Type"] == want, accept
        assert headers["Vary"] == "Accept"
    status, headers, _ = get(page, "application/xml, %s;q=0" % JSON)
    assert status == 406
    status, headers, _ = get(page + "?format=" + quote(JSON, safe=""), "text/html")
    assert status == 200 and headers["Content-Type"] == JSON


def test_json_page_lists_files_with_true_hashes_and_metadata(index):
    status, _, body = get(index.url + "/whl/cu128/torch/", JSON)
    page = json.loads(body)
    assert page["meta"]["api-version"] == "1.1"
    assert page["name"] == "torch" and page["versions"] == ["2.8.0+cu128"]
    names = sorted(f["filename"] for f in page["files"])
    assert names == [TORCH_128, TORCH_128.replace("cp311", "cp312")]
    entry = next(f for f in page["files"] if f["filename"] == TORCH_128)
    assert "%2B" in entry["url"]  # '+' travels percent-encoded, as PyTorch's index does
    url = urljoin(index.url + "/whl/cu128/torch/", entry["url"])
    status, _, wheel = get(url)
    assert status == 200 and sha256(wheel) == entry["hashes"]["sha256"]
    assert entry["size"] == len(wheel)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", entry["upload-time"])
    assert entry["requires-python"] == ">=3.9" and entry["yanked"] is False
    assert "dist-info-metadata" not in entry  # PEP 714: only the new key in JSON
    status, _, metadata = get(url + ".metadata")
    assert status == 200 and sha256(metadata) == entry["core-metadata"]["sha256"]
    with zipfile.ZipFile(os.path.join(index.work, "cu128", TORCH_128)) as z:
        assert metadata == z.read("torch-2.8.0+cu128.dist-info/METADATA")


def test_html_page_has_fragments_metadata_attributes_and_yanked(index):
    status, _, body = get(index.url + "/whl/cu130/torch/")
    text = body.decode()
    assert '<meta name="pypi:repository-version" content="1.1">' in text
    anchors = re.findall(r"<a ([^>]*)>([^<]*)</a>", text)
    assert len(anchors) == 2
    for attrs, name in anchors:
        href = re.search(r'href="([^"]*)"', attrs).group(1)
        assert href.startswith("/whl/cu130/torch-2.9.0%2Bcu130-")
        url, frag = href.split("#")
        status, _, wheel = get(index.url + url)
        assert frag == "sha256=" + sha256(wheel)
        core = re.search(r'data-core-metadata="sha256=([0-9a-f]+)"', attrs).group(1)
        legacy = re.search(r'data-dist-info-metadata="sha256=([0-9a-f]+)"', attrs).group(1)
        assert core == legacy == sha256(get(index.url + url + ".metadata")[2])
        assert 'data-requires-python="&gt;=3.9"' in attrs
        yanked = "cp312" in name
        assert ('data-yanked="broken &lt;build&gt;"' in attrs) == yanked
    page = json.loads(get(index.url + "/whl/cu130/torch/", JSON)[2])
    reasons = {f["filename"]: f["yanked"] for f in page["files"]}
    assert sorted(reasons.values(), key=str) == [False, "broken <build>"]


def test_project_list_redirects_and_not_found(index):
    status, _, body = get(index.url + "/whl/cu128/", JSON)
    assert [p["name"] for p in json.loads(body)["projects"]] == ["pip", "setuptools", "torch"]
    assert get(index.url + "/whl/cu128")[0] == 301
    status, headers, _ = get(index.url + "/whl/cu128/Torch/")
    assert status == 301 and headers["Location"] == "/whl/cu128/torch/"
    status, headers, _ = get(index.url + "/whl/cu128/torch")
    assert status == 301 and headers["Location"] == "/whl/cu128/torch/"
    assert get(index.url + "/whl/cu128/no-such-project/")[0] == 404
    assert get(index.url + "/whl/cu128/no-such-file-1.0-py3-none-any.whl")[0] == 404
    assert get(index.url + "/whl/cu128/pip-23.0.1.tar.gz.metadata")[0] == 404
    assert get(index.url + "/whl/cu999/torch/")[0] == 404
    assert get(index.url + "/whl/cu128/..%2F..%2Fetc%2Fpasswd")[0] == 404


def test_corrupt_serves_changed_bytes_under_the_true_hash(index):
    name = TORCH_128.replace("cp311", "cp312")
    entry = next(f for f in json.loads(get(index.url + "/whl/cu128/torch/", JSON)[2])["files"]
                 if f["filename"] == name)
    index.control("corrupt", {"file": name})
    try:
        _, _, bad = get(index.url + "/whl/cu128/" + name.replace("+", "%2B"))
        listed = json.loads(get(index.url + "/whl/cu128/torch/", JSON)[2])
        assert len(bad) == entry["size"] and sha256(bad) != entry["hashes"]["sha256"]
        assert entry in listed["files"]
    finally:
        index.control("corrupt", {"file": name, "on": False})
    _, _, good = get(index.url + "/whl/cu128/" + name.replace("+", "%2B"))
    assert sha256(good) == entry["hashes"]["sha256"]
    index.control("hide", {"file": name})
    assert get(index.url + "/whl/cu128/" + name.replace("+", "%2B"))[0] == 404
    index.control("hide", {"file": name, "on": False})


def test_counts_each_file_fetch(index):
    index.control("reset", {})
    url = index.url + "/whl/cu128/" + TORCH_128.replace("+", "%2B")
    get(url)
    get(url)
    get(url + ".metadata")
    counters = index.counters()
    assert counters["file:" + TORCH_128] == 2
    assert counters["file:" + TORCH_128 + ".metadata"] == 1


def test_real_pip_downloads_installs_and_imports_the_stand_ins(index):
    index.control("reset", {})
    work = tempfile.mkdtemp(prefix="pip-", dir=index.work)
    venv = os.path.join(work, "venv")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", venv], check=True)
    for label, version in (("cu128", "2.8.0+cu128"), ("cu130", "2.9.0+cu130")):
        pip = ["/usr/bin/python3", "-m", "pip", "--python", os.path.join(venv, "bin", "python"),
               "--disable-pip-version-check", "--no-cache-dir"]
        subprocess.run(pip + ["install", "--index-url", index.url + "/whl/" + label + "/",
                              "torch==" + version], check=True, timeout=300)
        out = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                              "import torch; print(torch.__version__, torch.version.cuda)"],
                             check=True, capture_output=True, text=True).stdout.split()
        assert out == [version, version[-3:-1] and "%s.%s" % (version[-3:-1], version[-1])]
    counters = index.counters()
    # pip fetched each wheel once: the index URL went through its negotiation, not a mirror.
    assert counters["file:" + TORCH_128] == 1
    assert counters["file:torch-2.9.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl"] == 1


def test_private_index_hostile_links_no_metadata_and_stalls(index, tmp_path):
    """The switches the pull-through tests use: HTTP Basic on every route (what pip sends
    from an index URL's userinfo), a file listed at another URL, no PEP 658 files, and
    requests held until released (counted)."""
    private = RunningFake("fake_pyindex.py",
                          ["--index", "/idx=" + os.path.join(index.work, "cu128"),
                           "--basic-auth", "user:pw0123", "--no-metadata"],
                          str(tmp_path), "private")
    try:
        page = private.url + "/idx/torch/"
        status, headers, _ = get(page)
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic"), status
        auth = {"Authorization": "Basic " + base64.b64encode(b"user:pw0123").decode(),
                "Accept": JSON}
        with urllib.request.urlopen(urllib.request.Request(page, headers=auth)) as resp:
            files = json.loads(resp.read())["files"]
        assert files and all("core-metadata" not in f for f in files), files
        private.control("link", {"file": TORCH_128, "url": "http://127.0.0.2:9/x.whl"})
        with urllib.request.urlopen(urllib.request.Request(page, headers=auth)) as resp:
            urls = {f["filename"]: f["url"] for f in json.loads(resp.read())["files"]}
        assert urls[TORCH_128] == "http://127.0.0.2:9/x.whl", urls
        private.control("stall", {"path": "^/idx/torch/$"})
        held = threading.Thread(target=lambda: urllib.request.urlopen(
            urllib.request.Request(page, headers=auth), timeout=30).read(), daemon=True)
        held.start()
        for _ in range(200):
            if private.control("stalled")["waiting"] == 1:
                break
            held.join(0.05)
        assert private.control("stalled") == {"waiting": 1, "peak": 1}
        private.control("stall", {"path": "^/idx/torch/$", "on": False})
        held.join(timeout=30)
        assert not held.is_alive() and private.control("stalled")["waiting"] == 0
    finally:
        private.stop()


def test_a_test_channel_is_an_index_of_its_own_under_whl_test(index):
    """download.pytorch.org's layout: /whl/test/cu130/ is the test channel of /whl/cu130/,
    an index of its own (its pages, files and metadata under its prefix), never mixed with
    the release index nor with an index at a shorter prefix (/whl/)."""
    rc = "torch-2.10.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl"
    status, headers, body = get(index.url + "/whl/test/cu130/torch/", JSON)
    assert status == 200 and headers["Content-Type"] == JSON, (status, headers)
    page = json.loads(body)
    assert [f["filename"] for f in page["files"]] == [rc], page
    assert page["versions"] == ["2.10.0+cu130"], page
    with open(os.path.join(index.work, "test-cu130", rc), "rb") as f:
        data = f.read()
    assert page["files"][0]["hashes"]["sha256"] == sha256(data)
    # The JSON URL is relative to the page, the HTML href absolute: both name the channel.
    assert urljoin(index.url + "/whl/test/cu130/torch/", page["files"][0]["url"]) == \
        index.url + "/whl/test/cu130/" + quote(rc)
    status, _, html_page = get(index.url + "/whl/test/cu130/torch/", HTML)
    assert status == 200
    assert 'href="/whl/test/cu130/%s#sha256=%s"' % (quote(rc), sha256(data)) in html_page.decode()
    status, _, got = get(index.url + "/whl/test/cu130/" + quote(rc))
    assert status == 200 and got == data
    status, _, _ = get(index.url + "/whl/test/cu130/" + quote(rc) + ".metadata")
    assert status == 200
    # The release index has not got it, and the index at /whl/ does not answer for it.
    status, _, body = get(index.url + "/whl/cu130/torch/", JSON)
    assert rc not in body.decode()
    assert get(index.url + "/whl/cu130/" + quote(rc))[0] == 404
    assert get(index.url + "/whl/test/cu128/torch/")[0] == 404
    assert get(index.url + "/whl/test/cu130")[0] == 301
