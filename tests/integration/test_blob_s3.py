"""Blobs on S3 with real components: farmd keeps its blobs in tests/fakes/fake_s3.py
(which checks every SigV4 signature), a real farm-worker builds a wheel with the real
`pip wheel` from a source archive that travels through the bucket, farmctl downloads the
wheel through farmd, and the real `pip install` from farmd's index follows the redirect
to a presigned URL and fetches the wheel from the fake, not from farmd. The credentials
appear in no log and no file of the farm."""
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import urllib.error
import urllib.parse
import urllib.request

from farm_harness import FARMD, REPO, read_file, wait_until

FAKES = os.path.join(REPO, "tests", "fakes")
ACCESS_KEY = "AKIAFARMINTEGRATION01"
SECRET_KEY = "integrationSecret/KeyOfTheS3BlobTest0123"
BUCKET = "farm-wheels"
WHEEL = '"$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps --no-index -w "$FARM_WHEEL_DIR"'


def _control(url, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + "/_control/" + path, data=data,
                                 method="POST" if data is not None else "GET")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read().decode() or "null")


def _recipe(root):
    src = os.path.join(root, "s3demo", "src")
    os.makedirs(os.path.join(src, "s3demo"))
    with open(os.path.join(src, "setup.py"), "w") as f:
        f.write("from setuptools import setup\n"
                "setup(name='s3demo', version='1.0', packages=['s3demo'])\n")
    with open(os.path.join(src, "s3demo", "__init__.py"), "w") as f:
        f.write("GREETING = 'served from the bucket'\n")
    with open(os.path.join(src, "validate.py"), "w") as f:  # needs a GPU: waits for one
        f.write("import s3demo\n")
    path = os.path.join(root, "s3demo", "recipe.yaml")
    with open(path, "w") as f:
        f.write(textwrap.dedent("""\
            name: s3demo
            version: "1.0"
            source: {local: src}
            system_site_packages: true
            validation: {script: validate.py, import: [s3demo]}
            build: |
            """) + "  " + WHEEL + "\n")
    return path


def _files(root):
    out = []
    for d, _, names in os.walk(root):
        out += [os.path.join(d, n) for n in names]
    return out


def test_wheels_live_in_the_bucket_and_pip_follows_the_presigned_redirect(farm):
    ready = os.path.join(farm.root, "fake_s3.url")
    farm._spawn([sys.executable, os.path.join(FAKES, "fake_s3.py"), "--ready-file", ready,
                 "--bucket", BUCKET, "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY,
                 "--region", "eu-west-1"], "fake_s3.log")
    s3 = wait_until(lambda: read_file(ready), 30, "the S3 fake").strip()
    os.environ.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    try:
        farm.start_farmd("--blob-store", f"s3://{BUCKET}/farm", "--s3-endpoint", s3,
                         "--s3-region", "eu-west-1", "--index-redirect",
                         "--index-include-pending", http=True)
    finally:
        del os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
    farm.start_worker()
    build = farm.ctl_json("submit", _recipe(farm.root), "--follow", timeout=600)
    assert build["state"] == "BUILD_SUCCEEDED", build
    (artifact,) = build["jobs"][0]["artifacts"]
    sha = artifact["sha256"]

    # The wheel and the source archive are objects in the bucket, not files under data/.
    objects = _control(s3, "state")["objects"]
    assert objects[f"{BUCKET}/farm/{sha[:2]}/{sha}"]["sha256"] == sha
    assert len(objects) == 2, objects
    assert not os.path.exists(os.path.join(farm.data, "blobs", sha[:2], sha))
    assert _control(s3, "state")["uploads"] == {}

    # farmctl download streams it through farmd.
    out = os.path.join(farm.root, "download")
    r = farm.ctl("download", str(build["id"]), "--dir", out)
    assert r.returncode == 0, r.stderr
    (got,) = [n for n in os.listdir(out) if n.endswith(".whl")]
    with open(os.path.join(out, got), "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == sha

    # The index answers the file with a redirect to a presigned URL of the bucket.
    index = f"http://{farm.http_address}/simple/"
    root = urllib.request.urlopen(index, timeout=10).read().decode()
    page = urllib.request.urlopen(index + "s3demo/", timeout=10).read().decode()
    (href,) = [h.split('"')[0] for h in page.split('href="')[1:] if ".whl" in h.split('"')[0]]
    file_url = urllib.parse.urljoin(index + "s3demo/", href.split("#")[0])

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args):
            return None
    try:
        got = urllib.request.build_opener(NoRedirect).open(file_url, timeout=10)
        raise AssertionError(f"the index served {file_url} itself: {got.status}")
    except urllib.error.HTTPError as e:
        assert e.code == 302, e.code
        location = e.headers["Location"]
    assert location.startswith(s3 + f"/{BUCKET}/farm/{sha[:2]}/{sha}?"), location
    assert "X-Amz-Signature=" in location and SECRET_KEY not in location

    # The real pip follows it; the bytes come from the fake, checked against the sha256.
    before = _control(s3, "counters").get("presigned_get", 0)
    venv = os.path.join(farm.root, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-cache-dir",
                        "--index-url", index, "s3demo"], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _control(s3, "counters").get("presigned_get", 0) == before + 1
    shown = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                            "import s3demo; print(s3demo.GREETING)"],
                           capture_output=True, text=True, timeout=60)
    assert shown.stdout.strip() == "served from the bucket", shown.stderr

    # The secret is in no log and no file of the farm.
    for path in _files(farm.root):
        if path.startswith(venv):
            continue
        with open(path, "rb") as f:
            assert SECRET_KEY.encode() not in f.read(), path


def test_farmd_refuses_a_redirect_without_presigned_urls_and_bad_bucket_urls(farm):
    base = [FARMD, "--data-dir", farm.data, "--listen", "127.0.0.1:0"]
    r = subprocess.run(base + ["--index-redirect"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "--index-redirect needs a blob store" in r.stdout + r.stderr, r
    r = subprocess.run(base + ["--blob-store", "s3://Not_A_Bucket/x"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "is not an S3 bucket name" in r.stderr, r
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    r = subprocess.run(base + ["--blob-store", "s3://bucket/x", "--s3-endpoint",
                               "http://127.0.0.1:1"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 1 and "AWS_SECRET_ACCESS_KEY" in r.stdout + r.stderr, r
