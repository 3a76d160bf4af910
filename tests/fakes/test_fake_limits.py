"""The GitHub and Hub fakes enforce the services' documented size limits the way the
services answer: GitHub's upload answers 422 with its size error (before the body is sent
when the client asks "Expect: 100-continue"), exactly one byte over answers 500 as users
report for a file of exactly 2 GiB, and nothing is stored; the Hub's LFS batch answers a
per-object 422 error with no upload action, and a commit naming such a file is refused."""

import hashlib
import http.client
import json
import os
import sys
import tempfile
import urllib.parse

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_process import RunningFake  # noqa: E402

TOKEN = "ghp_limitsTestToken"
LIMIT = 1000


@pytest.fixture(scope="module")
def fakes():
    work = tempfile.mkdtemp(prefix="fake-limits-")
    gh = RunningFake("fake_github.py", ["--token", TOKEN, "--max-asset-bytes", str(LIMIT)], work,
                     "github")
    hf = RunningFake("fake_hf.py", ["--token", TOKEN, "--max-file-bytes", str(LIMIT)], work, "hf")
    yield gh, hf
    gh.stop()
    hf.stop()


def request(url, method, path, body=b"", headers=None, send_body=True):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    h = {"Authorization": "Bearer " + TOKEN, "Content-Length": str(len(body)), **(headers or {})}
    conn.putrequest(method, path)
    for k, v in h.items():
        conn.putheader(k, v)
    conn.endheaders()
    if send_body:
        conn.send(body)
    resp = conn.getresponse()
    out = resp.status, resp.read()
    conn.close()
    return out


def draft(gh):
    status, body = request(gh.url, "POST", "/repos/o/r/releases",
                           json.dumps({"tag_name": "v1", "draft": True}).encode(),
                           {"Content-Type": "application/json"})
    assert status == 201, body
    return json.loads(body)["id"]


def test_github_refuses_an_asset_over_its_limit_and_stores_nothing(fakes):
    gh, _ = fakes
    rid = draft(gh)
    path = "/api/uploads/repos/o/r/releases/%d/assets?name=" % rid
    status, body = request(gh.url, "POST", path + "big.whl", b"x" * (LIMIT + 2),
                           {"Content-Type": "application/zip"})
    assert status == 422, body
    error = json.loads(body)["errors"][0]
    assert error == {"resource": "ReleaseAsset", "code": "custom", "field": "size",
                     "message": "size must be less than or equal to %d" % (LIMIT + 1)}
    status, _ = request(gh.url, "POST", path + "edge.whl", b"x" * (LIMIT + 1),
                        {"Content-Type": "application/zip"})
    assert status == 500
    # Asked first, refused before a byte of the body is sent.
    status, body = request(gh.url, "POST", path + "asked.whl", b"x" * (LIMIT + 2),
                           {"Content-Type": "application/zip", "Expect": "100-continue"},
                           send_body=False)
    assert status == 422, body
    status, body = request(gh.url, "POST", path + "fits.whl", b"x" * LIMIT,
                           {"Content-Type": "application/zip"})
    assert status == 201, body
    state = gh.control("state")
    assert sorted(a["name"] for a in state["assets"].values()) == ["fits.whl"]
    counters = gh.counters()
    assert counters["oversize_refusals"] == 3
    assert "uploads_stored:big.whl" not in counters


def test_the_hub_refuses_a_file_over_its_limit_in_the_lfs_batch(fakes):
    _, hf = fakes
    status, body = request(hf.url, "POST", "/api/repos/create",
                           json.dumps({"name": "k", "organization": "o"}).encode(),
                           {"Content-Type": "application/json"})
    assert status in (200, 409), body
    oid = hashlib.sha256(b"big").hexdigest()
    batch = {"operation": "upload", "transfers": ["basic"], "hash_algo": "sha256",
             "objects": [{"oid": oid, "size": LIMIT + 1}], "ref": {"name": "main"}}
    status, body = request(hf.url, "POST", "/o/k.git/info/lfs/objects/batch",
                           json.dumps(batch).encode(),
                           {"Content-Type": "application/vnd.git-lfs+json"})
    assert status == 200, body
    (obj,) = json.loads(body)["objects"]
    assert "actions" not in obj
    assert obj["error"] == {"code": 422, "message": "Maximum individual file size is 0.0GB"}
    status, body = request(hf.url, "GET", "/api/models/o/k/revision/main")
    head = json.loads(body)["sha"]
    lines = [{"key": "header", "value": {"summary": "s", "parentCommit": head}},
             {"key": "lfsFile", "value": {"path": "big.whl", "algo": "sha256", "oid": oid,
                                          "size": LIMIT + 1}}]
    status, body = request(hf.url, "POST", "/api/models/o/k/commit/main",
                           "\n".join(json.dumps(x) for x in lines).encode(),
                           {"Content-Type": "application/x-ndjson"})
    assert status == 422 and b"Maximum individual file size" in body, body
    assert hf.counters()["oversize_refusals"] == 2
