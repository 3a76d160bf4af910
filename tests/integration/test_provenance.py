"""Signed provenance end to end (docs/provenance.md): real farmd, farm-worker, farmctl, nvcc
and pip; the GitHub and Hugging Face fakes. The worker reports a GPU through its test-only
--test-fake-gpu switch and the recipe's validation script stands in for a real GPU's
numbers (tests/integration/test_revalidation.py), so the wheel gets a build statement and
a passed validation statement.

The wheel is then checked from the farm's index, the GitHub release and the Hub folder,
with `farmctl verify` and with the independent Python verifier
(tests/support/verify_provenance.py); copies with one flipped byte in the wheel, the
statement or the signature are refused by both; a mirror serving another wheel under the
same name is refused by the install script; a key rotation keeps old signatures valid and
a revocation refuses the revoked key's signatures with its date and reason.
"""
import base64
import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

from farm_harness import REPO, wait_until
from test_publish import GH_REPO, GH_TOKEN, HF_REPO, HF_TOKEN, Fake, by_kind, publications, \
    start_farmd_with_fakes
from test_revalidation import example_with_passing_script

VERIFIER = os.path.join(REPO, "tests", "support", "verify_provenance.py")
KEYS_PATH = "/api/v1/provenance/keys"


def get(url, accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def recipe_with_publishing(root):
    recipe = example_with_passing_script(root)
    with open(recipe, "a") as f:
        f.write(f"""publish:
  github_repo: {GH_REPO}
  github_tag_template: "v{{version}}-build{{build_id}}"
  hf_repo: {HF_REPO}
  hf_path_template: "build/{{variant}}/{{wheel}}"
""")
    return recipe


def start(farm):
    gh = Fake(farm, "fake_github.py", GH_TOKEN, "fake_github")
    hf = Fake(farm, "fake_hf.py", HF_TOKEN, "fake_hf")
    start_farmd_with_fakes(farm, gh, hf)
    farm.start_worker("gpu-1", "--test-fake-gpu", "Fake H100:9.0")
    return gh, hf


def farmctl_verify(farm, target, *args):
    return farm.ctl("verify", target, *args, timeout=120)


def python_verify(target, *args):
    return subprocess.run(["/usr/bin/python3", VERIFIER, target, *args], capture_output=True,
                          text=True, timeout=120)


def assert_both_verify(farm, target, keys, *extra):
    mine = farmctl_verify(farm, target, "--keys", keys, *extra)
    assert mine.returncode == 0, mine.stdout + mine.stderr
    theirs = python_verify(target, "--keys", keys, *extra)
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    return mine.stdout, theirs.stdout


def assert_both_refuse(farm, target, keys, why, *extra):
    mine = farmctl_verify(farm, target, "--keys", keys, *extra)
    assert mine.returncode == 1, mine.stdout + mine.stderr
    assert why in mine.stdout, (why, mine.stdout)
    theirs = python_verify(target, "--keys", keys, *extra)
    assert theirs.returncode == 1, theirs.stdout + theirs.stderr
    assert why in theirs.stdout, (why, theirs.stdout)


def flip(data, at):
    b = bytearray(data)
    b[at] ^= 0x01
    return bytes(b)


def altered_lines(lines, part):
    """The .intoto.jsonl with one byte flipped in the first envelope's statement or
    signature (decoded, flipped, encoded again, so only that byte differs)."""
    envelopes = [json.loads(l) for l in lines.decode().splitlines() if l.strip()]
    e = envelopes[0]
    if part == "statement":
        payload = base64.b64decode(e["payload"])
        at = payload.index(b'"sha256"') - 3  # inside the subject's name
        e["payload"] = base64.b64encode(flip(payload, at)).decode()
    else:
        e["signatures"][0]["sig"] = base64.b64encode(
            flip(base64.b64decode(e["signatures"][0]["sig"]), 10)).decode()
    return "".join(json.dumps(x) + "\n" for x in envelopes).encode()


def check_sums(root, sums_url, sig_url, keys, wheels):
    """SHA256SUMS lists `wheels` ({name: sha256}) and its signature holds under the
    farm's active key, checked with the openssl command as a user would by hand."""
    sums = get(sums_url)
    lines = dict(reversed(l.split("  ", 1)) for l in sums.decode().splitlines())
    for name, sha in wheels.items():
        assert lines.get(name) == sha, (name, sums)
    active = [k for k in keys["keys"] if k["state"] == "active"][0]
    pem = write(os.path.join(root, "farm-key.pem"), active["public_key_pem"].encode())
    sums_file = write(os.path.join(root, "SHA256SUMS"), sums)
    sig_file = write(os.path.join(root, "SHA256SUMS.sig"), get(sig_url))
    r = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pem, "-rawin",
                        "-in", sums_file, "-sigfile", sig_file], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "Signature Verified Successfully" in r.stdout, r.stdout + r.stderr
    write(sums_file, flip(sums, 5))
    r = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pem, "-rawin",
                        "-in", sums_file, "-sigfile", sig_file], capture_output=True, timeout=60)
    assert r.returncode != 0


class Mirror:
    """A mirror of the farm's index that serves another wheel under the same file name: it
    passes the farm's pages and provenance through, but rewrites the file's sha256 and URL
    to its own copy."""

    def __init__(self, farm_url, evil):
        self.farm_url, self.evil = farm_url, evil
        self.evil_sha = hashlib.sha256(evil).hexdigest()
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                status, body, ctype = mirror.answer(self.path, self.headers.get("Accept"))
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, path, accept):
        if path.startswith("/evil/"):
            return 200, self.evil, "application/octet-stream"
        try:
            body = get(self.farm_url + path, accept)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), "application/json"
        if path.endswith("/attn-example/") and accept and "json" in accept:
            page = json.loads(body)
            for f in page["files"]:
                f["hashes"]["sha256"] = self.evil_sha
                f["url"] = "/evil/" + f["filename"]
                f["provenance"] = self.farm_url + f["provenance"]
            body = json.dumps(page).encode()
        body = body.replace(self.farm_url.encode(), self.url.encode()) \
            if path == "/" else body
        return 200, body, "application/json"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def run_install(python, script, *args):
    """The install script for a GPU of compute capability 9.0, in the venv `python`."""
    env = dict(os.environ, FARM_INSTALL_GPU_CC="9.0", FARM_INSTALL_DRIVER_CUDA="13.0")
    return subprocess.run([python, "-", "attn-example", *args], input=script, env=env,
                          capture_output=True, text=True, timeout=300)


def test_wheel_verifies_everywhere_and_altered_copies_mirrors_and_revoked_keys_are_refused(farm):
    gh, hf = start(farm)
    build = farm.ctl_json("submit", recipe_with_publishing(farm.root), "--follow", timeout=900)
    assert build["state"] == "BUILD_SUCCEEDED", build
    (artifact,) = build["jobs"][0]["artifacts"]
    assert artifact["validation"]["state"] == "VALIDATION_PASSED", artifact
    s = Signed(farm, build, artifact["filename"], artifact["sha256"])
    s.check_index()
    s.check_release_and_hub(gh, hf)
    s.check_altered_copies_are_refused()
    s.check_install_script()
    s.check_owner_and_expiry()
    s.check_rotation()
    s.check_revocation()


class Signed:
    """One published, validated wheel and the checks of its provenance, in the order of the
    story: each check leaves what the next one reads (the pinned key sets, the local copy)."""

    def __init__(self, farm, build, name, sha):
        self.farm, self.build, self.name, self.sha = farm, build, name, sha

        def published():
            rows = publications(farm, build["id"])
            return rows if len(rows) == 3 and {r["state"] for r in rows} == {"published"} else None
        self.rows = by_kind(wait_until(published, 180, "the wheel published", interval=0.5))
        self.base = "http://" + farm.http_address
        self.keys_json = json.loads(get(self.base + KEYS_PATH))
        assert [k["state"] for k in self.keys_json["keys"]] == ["active"], self.keys_json
        self.first_key = self.keys_json["keys"][0]["keyid"]
        self.keys_file = write(os.path.join(farm.root, "keys.json"),
                               json.dumps(self.keys_json).encode())

    def check_index(self):
        """The index: PEP 691 names the PEP 740 provenance; both forms verify."""
        farm, base, sha, keys_json = self.farm, self.base, self.sha, self.keys_json
        page = json.loads(get(base + "/simple/attn-example/", "application/vnd.pypi.simple.v1+json"))
        assert page["meta"]["api-version"] == "1.3", page
        (entry,) = page["files"]
        assert entry["provenance"] == entry["url"] + ".provenance", entry
        pep740 = json.loads(get(base + entry["provenance"]))
        bundle = pep740["attestation_bundles"][0]
        assert bundle["publisher"]["kind"] == "gpu-wheel-farm" and len(bundle["attestations"]) == 2
        html = get(base + "/simple/attn-example/").decode()
        assert 'data-provenance="%s.provenance"' % entry["url"] in html, html
        index_wheel = self.index_wheel = base + entry["url"]
        mine = farmctl_verify(farm, index_wheel, "--require-validated-arch", "sm_90")
        assert mine.returncode == 0, mine.stdout + mine.stderr
        for text in ("built by    urn:gpu-wheel-farm:farm:" + keys_json["farm"], "worker      gpu-1",
                     "Fake H100 (9.0)", "validation  passed on Fake H100 (compute capability 9.0), "
                     "1/1 cases", "recipe      attn-example 0.1.0", "sha256      " + sha,
                     "the same server as the wheel: pin a copy with --keys"):
            assert text in mine.stdout, (text, mine.stdout)
        theirs = python_verify(index_wheel, "--keys", base + KEYS_PATH,
                               "--provenance", base + entry["provenance"],
                               "--require-validated-arch", "9.0")
        assert theirs.returncode == 0, theirs.stdout + theirs.stderr
        assert "validation passed on Fake H100" in theirs.stdout, theirs.stdout
        refused = farmctl_verify(farm, index_wheel, "--require-validated-arch", "sm_120")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "no signed passed validation on a GPU of compute capability 12.0" in refused.stdout
        assert python_verify(index_wheel, "--keys", self.keys_file,
                             "--require-validated-arch", "sm_120").returncode == 1

    def check_release_and_hub(self, gh, hf):
        """The GitHub release and the Hub folder: the wheel, its .intoto.jsonl and a signed
        SHA256SUMS."""
        farm, name, sha = self.farm, self.name, self.sha
        keys_json, keys_file, rows = self.keys_json, self.keys_file, self.rows
        state = gh.control("state")
        (release,) = [r for r in state["releases"].values() if r["repo"] == GH_REPO]
        assets = {a["name"] for a in state["assets"].values() if a["release_id"] == release["id"]}
        assert assets == {name, name + ".intoto.jsonl", "SHA256SUMS", "SHA256SUMS.sig"}, assets
        release_wheel = self.release_wheel = rows[("github", "asset")]["remote_url"]  # its browser_download_url
        release_dir = release_wheel.rsplit("/", 1)[0]
        assert release_wheel == "%s/%s" % (release_dir, urllib.parse.quote(name)), release_wheel
        out, _ = assert_both_verify(farm, release_wheel, keys_file, "--require-validated-arch", "9.0")
        assert "validation  passed on Fake H100" in out, out
        check_sums(farm.root, release_dir + "/SHA256SUMS", release_dir + "/SHA256SUMS.sig",
                   keys_json, {name: sha})

        # The Hub folder: the same three files beside the wheel.
        hub_path = rows[("hf", "file")]["path"]
        hub_dir = hub_path.rsplit("/", 1)[0]
        hub_wheel = "%s/%s/resolve/main/%s" % (hf.url, HF_REPO, hub_path)
        assert_both_verify(farm, hub_wheel, keys_file, "--require-validated-arch", "sm90")
        check_sums(farm.root, "%s/%s/resolve/main/%s/SHA256SUMS" % (hf.url, HF_REPO, hub_dir),
                   "%s/%s/resolve/main/%s/SHA256SUMS.sig" % (hf.url, HF_REPO, hub_dir), keys_json,
                   {name: sha})

    def check_altered_copies_are_refused(self):
        """One flipped byte in the wheel, the statement or the signature: refused by both."""
        farm, name, keys_file = self.farm, self.name, self.keys_file
        wheel = self.wheel = get(self.release_wheel)
        lines = get(self.release_wheel + ".intoto.jsonl")
        local = self.local = write(os.path.join(farm.root, name), wheel)
        write(local + ".intoto.jsonl", lines)
        assert_both_verify(farm, local, keys_file)
        # `farmctl download` saves the statements beside the wheel, and verify takes the keys
        # of the farm farmctl is connected to when none are given, saying so.
        fetched = os.path.join(farm.root, "fetched")
        r = farm.ctl("download", str(self.build["id"]), "--dir", fetched)
        assert r.returncode == 0 and "provenance: " in r.stdout, r.stdout + r.stderr
        assert open(os.path.join(fetched, name + ".intoto.jsonl")).read() == lines.decode()
        r = farmctl_verify(farm, os.path.join(fetched, name))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "the key set of farmd at %s, the farm farmctl is connected to" % farm.address \
            in r.stdout, r.stdout
        bad_dir = os.path.join(farm.root, "altered")
        os.makedirs(bad_dir)
        bad = write(os.path.join(bad_dir, name), flip(wheel, len(wheel) // 2))
        write(bad + ".intoto.jsonl", lines)
        assert_both_refuse(farm, bad, keys_file, "the wheel was changed or replaced")
        for part in ("statement", "signature"):
            altered = write(os.path.join(bad_dir, part + ".intoto.jsonl"), altered_lines(lines, part))
            assert_both_refuse(farm, local, keys_file, "does not verify", "--provenance", altered)

    def check_install_script(self):
        """The install script (from the farm, keys inside) verifies before pip, installs the
        checked bytes, and refuses a mirror serving another wheel under the same name."""
        farm, base, name = self.farm, self.base, self.name
        script = self.script = get(base + "/install").decode()
        assert "@FARM_KEYS@" not in script
        venv = os.path.join(farm.root, "venv")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
        python = self.python = os.path.join(venv, "bin", "python")
        r = run_install(python, script, "--require-validated")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "verified: the farm's key signed the build of " + name in r.stdout, r.stdout
        assert "a passed validation on compute capability 9.0 is signed" in r.stdout, r.stdout
        shown = subprocess.run([python, "-m", "pip", "show", "attn-example"], capture_output=True,
                               text=True, timeout=60).stdout
        assert "Version: " + name.split("-")[1] in shown, shown
        mirror = Mirror(base, flip(self.wheel, 100))
        try:
            r = run_install(python, script, "--farm", mirror.url, "--dry-run")
            assert r.returncode != 0, r.stdout + r.stderr
            assert "REFUSED" in r.stderr and "a different wheel under this name" in r.stderr, \
                r.stdout + r.stderr
            assert "running:" not in r.stdout, r.stdout  # pip never ran
            r = run_install(python, script, "--farm", mirror.url, "--dry-run", "--no-verify")
            assert r.returncode == 0 and "WARNING: --no-verify" in r.stdout, r.stdout + r.stderr
        finally:
            mirror.close()

    def check_owner_and_expiry(self):
        """The statement names the project's owner (the admin built it); --owner requires it.
        A pinned key set past its expiry is refused by the install script and both verifiers."""
        farm, script, python = self.farm, self.script, self.python
        local, keys_file = self.local, self.keys_file
        r = run_install(python, script, "--owner", "bootstrap-admin", "--dry-run")
        assert r.returncode == 0 and "the project's owner is bootstrap-admin" in r.stdout, \
            r.stdout + r.stderr
        r = run_install(python, script, "--owner", "mallory", "--dry-run")
        assert r.returncode != 0 and "names bootstrap-admin as the project's owner, not mallory" in \
            r.stderr, r.stdout + r.stderr
        assert_both_refuse(farm, local, keys_file, "not mallory", "--owner", "mallory")
        with open(keys_file) as f:
            expired = dict(json.load(f), expires="2020-01-01T00:00:00.000Z")
        expired_file = write(os.path.join(farm.root, "expired.json"), json.dumps(expired).encode())
        r = run_install(python, script, "--keys", expired_file, "--dry-run")
        assert r.returncode != 0 and "the key set expired on 2020-01-01" in r.stderr, \
            r.stdout + r.stderr
        assert_both_refuse(farm, local, expired_file, "the key set expired on 2020-01-01")

    def check_rotation(self):
        """Rotation: the old key is retired, its signatures stay valid."""
        farm, local, first_key = self.farm, self.local, self.first_key
        rotated = farm.ctl_json("keys", "rotate")
        states = {k["keyid"]: k["state"] for k in rotated["keys"]}
        assert states[first_key] == "retired" and list(states.values()).count("active") == 1, states
        rotated_file = write(os.path.join(farm.root, "rotated.json"), json.dumps(rotated).encode())
        assert_both_verify(farm, local, rotated_file)
        viewer = os.path.join(farm.root, "viewer.token")
        token = farm.ctl_json("tokens", "create", "--role", "viewer", "--name", "v")["token"]
        write(viewer, token.encode())
        denied = farm.ctl("keys", "rotate", token_file=viewer)
        assert denied.returncode == 4, denied.stderr
        assert farm.ctl("keys", token_file=viewer).returncode == 0

    def check_revocation(self):
        """Revocation: the copy signed by the revoked key is refused, naming date and reason;
        farmd signed its statements again, so the index's provenance verifies."""
        farm, local, first_key, release_wheel = self.farm, self.local, self.first_key, \
            self.release_wheel
        r = farm.ctl("keys", "revoke", first_key[:12], "--reason", "test: key copied off the host")
        assert r.returncode == 0, r.stderr
        assert "revoked key " + first_key in r.stdout and "revoked" in r.stdout, r.stdout
        revoked = json.loads(get(self.base + KEYS_PATH))
        revoked_key = [k for k in revoked["keys"] if k["keyid"] == first_key][0]
        assert revoked_key["state"] == "revoked" and revoked_key["revoked"], revoked_key
        revoked_file = write(os.path.join(farm.root, "revoked.json"), json.dumps(revoked).encode())
        assert_both_refuse(farm, local, revoked_file, "which was revoked on " + revoked_key["revoked"])
        assert_both_refuse(farm, local, revoked_file, "test: key copied off the host")
        # The copy pinned before the revocation (issue 46, finding 8): farmctl learns the
        # revocation from the farm it is connected to.
        stale = farmctl_verify(farm, local, "--keys", self.keys_file)
        assert stale.returncode == 1, stale.stdout + stale.stderr
        assert "was revoked by the farm after this key set was pinned" in stale.stdout, stale.stdout
        out, _ = assert_both_verify(farm, self.index_wheel, revoked_file, "--require-validated-arch", "9.0")
        assert "(active)" in out, out
        # What farmd now serves was signed again by the active key; the release's old copy is
        # refused until it is published again.
        farm.ctl("publish", str(self.build["id"]), "--to", "all")
        wait_until(lambda: farmctl_verify(farm, release_wheel, "--keys", revoked_file).returncode == 0,
                   120, "the release's provenance re-published with the active key", interval=1)
        assert python_verify(release_wheel, "--keys", revoked_file).returncode == 0
