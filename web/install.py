#!/usr/bin/env python3
"""Installs a wheel built and proven by the GPU wheel farm for the GPU of this machine.

    curl -fsSL @FARM_URL@/install | python3 - PACKAGE [options]

It reads the GPU's compute capability and the driver's CUDA version (nvidia-smi, or the
CUDA driver library; on WSL2 both live in /usr/lib/wsl/lib), the torch already installed
in this Python (its version and CUDA, from its dist-info without importing it), the Python
version and the platform; picks the one index view of the farm that matches (with torch,
the torch view /cu<CUDA>/sm<cc>/torch<release>/simple/, which lists only wheels whose
torch requirement admits that torch; without torch, /cu<CUDA>/sm<cc>/simple/), says why,
and runs pip for the exact wheel of that view, with that view as pip's only index and the
installed torch as a constraint: pip never upgrades, downgrades or installs torch. When
the farm has no such wheel it says which one is missing, which torch releases the farm has
wheels for, and installs nothing. Standard library and pip only, plus Ed25519 from
Python's `cryptography` or the `openssl` command.

Before pip runs, the wheel is downloaded and checked against the farm's signed provenance
(docs/provenance.md): its sha256 must be the one a statement signed by the farm's key
names, under the same file name; pip then installs exactly those checked bytes. The keys
are the ones this script was served with (the farm that served it), or --keys.

Options:
  --farm URL      the farm (default @FARM_URL@)
  --with-pypi     also let pip fetch the wheel's dependencies from PyPI
                  (--extra-index-url https://pypi.org/simple/); without it they must be
                  installed already or be in the farm's view
  --dry-run       print the choice and the pip command it would run, install nothing
  --release-candidates  also take a wheel built against a torch release candidate (the
                  farm's /rc/ views): for a torch installed from PyTorch's test channel
  --cert FILE     CA bundle for a farm served over HTTPS with its own CA (passed to pip)
  --keys FILE|URL the farm's public key set to verify with (default: the one embedded
                  when the farm served this script, else FARM/api/v1/provenance/keys)
  --require-validated [SM]  also require a signed passed validation on a GPU of this
                  compute capability (default: this machine's GPU)
  --owner NAME    also require the build statement to name NAME (a farm principal) as the
                  owner of the project
  --no-verify     install without checking the provenance (says so loudly)
  --request       when the farm has no wheel for this setup, ask it for one: the farm
                  builds that one cell if a recipe of its can, or says why not. Without
                  --request the script asks at its prompt (when it has a terminal)
  --wait SECONDS  after filing (or finding) the request, wait up to SECONDS for the wheel,
                  showing progress, and install it once it is built
  --token-file FILE  the farm token requests are filed with (default $FARM_TOKEN); a farm
                  may take requests without one, each then waiting for an admin
Environment: FARM_INSTALL_GPU_CC=12.1 (and FARM_INSTALL_DRIVER_CUDA=12.9) stand in for the
GPU of another machine, e.g. to prepare an environment for it.
"""
import ctypes
import hashlib
import json
import os
import platform
import re
import shutil
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

DEFAULT_FARM = "@FARM_URL@"
# Base64 of the farm's public key set, filled in by the farm that serves this script.
FARM_KEYS = "@FARM_KEYS@"
IN_TOTO = "application/vnd.in-toto+json"
STATEMENT_V1 = "https://in-toto.io/Statement/v1"
SLSA_V1 = "https://slsa.dev/provenance/v1"
VALIDATION_V1 = "urn:gpu-wheel-farm:attestation:gpu-validation:v1"
WSL_LIB = "/usr/lib/wsl/lib"
PYPI_JSON = "application/vnd.pypi.simple.v1+json"


def say(msg):
    print("farm-install: " + msg, flush=True)


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def version_key(text):
    """Orders "13.0" after "12.9" and "2.10" after "2.9"."""
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.+]", text))


def major_minor(text):
    m = re.match(r"(\d+)\.(\d+)", text or "")
    return "%s.%s" % (m.group(1), m.group(2)) if m else ""


def nvidia_smi():
    found = shutil.which("nvidia-smi")
    if not found and os.path.exists(os.path.join(WSL_LIB, "nvidia-smi")):
        found = os.path.join(WSL_LIB, "nvidia-smi")
    return found


def gpu_from_smi(smi):
    """[(name, cc)] and the driver's CUDA version from nvidia-smi, or None."""
    try:
        out = subprocess.run([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        head = subprocess.run([smi], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        say("nvidia-smi failed: %s" % e)
        return None
    if out.returncode != 0:
        say("nvidia-smi failed: %s" % (out.stderr.strip() or out.stdout.strip()))
        return None
    gpus = []
    for line in out.stdout.splitlines():
        parts = [p.strip() for p in line.rsplit(",", 1)]
        if len(parts) == 2 and major_minor(parts[1]):
            gpus.append((parts[0], major_minor(parts[1])))
    m = re.search(r"CUDA Version:\s*(\d+\.\d+)", head.stdout)
    return gpus, (m.group(1) if m else "")


def gpu_from_driver():
    """[(name, cc)] and the driver's CUDA version from libcuda, or None."""
    lib = None
    for candidate in ("libcuda.so.1", os.path.join(WSL_LIB, "libcuda.so.1")):
        try:
            lib = ctypes.CDLL(candidate)
            break
        except OSError:
            continue
    if lib is None or lib.cuInit(0) != 0:
        return None
    count, version = ctypes.c_int(), ctypes.c_int()
    lib.cuDriverGetVersion(ctypes.byref(version))
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return None
    gpus = []
    for i in range(count.value):
        dev, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        name = ctypes.create_string_buffer(256)
        lib.cuDeviceGet(ctypes.byref(dev), i)
        lib.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)  # COMPUTE_CAPABILITY_MAJOR
        lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)  # COMPUTE_CAPABILITY_MINOR
        lib.cuDeviceGetName(name, 256, dev)
        gpus.append((name.value.decode(errors="replace"), "%d.%d" % (major.value, minor.value)))
    v = version.value
    return gpus, ("%d.%d" % (v // 1000, (v % 1000) // 10) if v else "")


def detect_gpu():
    """(name, cc, driver CUDA) of device 0, the one CUDA programs use by default."""
    if os.environ.get("FARM_INSTALL_GPU_CC"):
        cc = major_minor(os.environ["FARM_INSTALL_GPU_CC"])
        return "(given by FARM_INSTALL_GPU_CC)", cc, os.environ.get("FARM_INSTALL_DRIVER_CUDA", "")
    smi = nvidia_smi()
    found = gpu_from_smi(smi) if smi else None
    if not found or not found[0]:
        found = gpu_from_driver()
    if not found or not found[0]:
        hint = ""
        if os.path.isdir(WSL_LIB) or "microsoft" in platform.release().lower():
            hint = " (on WSL2 the driver lives in %s: add it to PATH and LD_LIBRARY_PATH)" % WSL_LIB
        raise SystemExit("farm-install: no NVIDIA GPU found: neither nvidia-smi nor the CUDA "
                         "driver library answered" + hint)
    gpus, driver_cuda = found
    if len({cc for _, cc in gpus}) > 1:
        say("GPUs of several capabilities: %s; choosing for device 0" %
            ", ".join("%s (cc %s)" % g for g in gpus))
    return gpus[0][0], gpus[0][1], driver_cuda


def detect_torch():
    """(version, CUDA "12.8" or "") of the torch installed in this Python, None without one.

    Read from its dist-info (importlib.metadata) and torch/version.py as text: importing
    torch would take seconds and initialise CUDA."""
    from importlib import metadata
    try:
        dist = metadata.distribution("torch")
    except metadata.PackageNotFoundError:
        return None
    version = dist.version or ""
    label = version.partition("+")[2]
    m = re.fullmatch(r"cu(\d+)(\d)", label)
    if m:
        return version, "%d.%s" % (int(m.group(1)), m.group(2))
    if label:  # +cpu, +rocm6.3, +xpu: no CUDA
        return version, ""
    try:  # PyPI's torch has no label; its version.py names the CUDA it was built for
        text = dist.locate_file("torch/version.py").read_text(errors="replace")
    except OSError:
        text = ""
    m = re.search(r"^cuda\b[^=\n]*=\s*['\"](\d+\.\d+)", text, re.M)
    return version, (m.group(1) if m else "")


def packaging():
    """pip's own PEP 440 versions and specifiers (every pip vendors them)."""
    try:
        from pip._vendor.packaging import specifiers, version
    except ImportError:
        raise SystemExit("farm-install: this Python has no pip: install it first "
                         "(python3 -m ensurepip, or Debian's python3-pip)")
    return specifiers, version


def admits(requirement, torch):
    """Whether a wheel's torch requirement ("torch==2.8.*", "" for none) admits `torch`."""
    if not requirement:
        return True
    specifiers, version = packaging()
    spec = requirement.strip()
    if not spec.lower().startswith("torch"):
        return False
    try:
        return specifiers.SpecifierSet(spec[5:]).contains(version.Version(torch), prereleases=True)
    except (specifiers.InvalidSpecifier, version.InvalidVersion):
        return False


def public_version(torch):
    """"2.8.0" of "2.8.0+cu128", written as PEP 440 normalizes it (the farm's URLs)."""
    return str(packaging()[1].Version(torch).public)


def torch_views_of(directory, project, cc):
    """"2.8 (cu128), 2.9 (cu128)": the torch releases the farm has wheels of `project` for on
    this GPU, from the directory's torch views."""
    seen = sorted({(v.get("torch", ""), v.get("cuda", "")) for v in directory.get("torch_views", [])
                   if project in v.get("projects", []) and v.get("compute_capability") == cc},
                  key=lambda t: (version_key(t[0]), version_key(t[1])))
    return ", ".join("%s (cu%s)" % (t, c.replace(".", "")) for t, c in seen) or "none"


def fetch_json(url, accept, cafile):
    ctx = ssl.create_default_context(cafile=cafile) if cafile else None
    req = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(req, timeout=60, context=ctx) as resp:
            body = resp.read(64 << 20)
        try:
            return json.loads(body)
        except ValueError:
            if not url.endswith("/"):
                raise
            # A static export of the index (farmctl export-index) answers a directory's
            # HTML whatever Accept asks for; its JSON lies beside it as index.json.
            return fetch_json(url + "index.json", accept, cafile)
    except urllib.error.HTTPError as e:
        body = e.read().decode(errors="replace")
        try:
            body = json.loads(body)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            pass
        return {"_error": "%s: HTTP %d: %s" % (url, e.code, body)}
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise SystemExit("farm-install: cannot read %s: %s" % (url, e))


def fetch_bytes(url, cafile, limit):
    ctx = ssl.create_default_context(cafile=cafile) if cafile else None
    try:
        with urllib.request.urlopen(url, timeout=120, context=ctx) as resp:
            data = resp.read(limit + 1)
    except (urllib.error.URLError, OSError) as e:
        raise SystemExit("farm-install: cannot read %s: %s" % (url, e))
    if len(data) > limit:
        raise SystemExit("farm-install: %s is larger than %d bytes" % (url, limit))
    return data


def ed25519_verify(public_raw, signature, message):
    """True when the signature holds: Python's cryptography, else the openssl command."""
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError:
        return openssl_verify(public_raw, signature, message)
    try:
        Ed25519PublicKey.from_public_bytes(public_raw).verify(signature, message)
        return True
    except (InvalidSignature, ValueError):
        return False


def openssl_verify(public_raw, signature, message):
    import tempfile
    openssl = shutil.which("openssl")
    if not openssl:
        raise SystemExit("farm-install: no Ed25519 verifier: install python3-cryptography or "
                         "openssl, or pass --no-verify to install unchecked")
    # SubjectPublicKeyInfo of an Ed25519 key: a fixed 12-byte prefix and the raw key.
    spki = bytes.fromhex("302a300506032b6570032100") + public_raw
    with tempfile.TemporaryDirectory(prefix="farm-install-") as d:
        paths = {n: os.path.join(d, n) for n in ("key.der", "sig", "msg")}
        for name, data in (("key.der", spki), ("sig", signature), ("msg", message)):
            with open(paths[name], "wb") as f:
                f.write(data)
        r = subprocess.run([openssl, "pkeyutl", "-verify", "-pubin", "-keyform", "DER",
                            "-inkey", paths["key.der"], "-rawin", "-in", paths["msg"],
                            "-sigfile", paths["sig"]], capture_output=True, timeout=60)
    return r.returncode == 0


def b64(text):
    import base64
    text = (text or "").replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def load_keys(text):
    doc = json.loads(text)
    expires = doc.get("expires") or ""
    if expires:
        import datetime
        when = datetime.datetime.strptime(expires[:19], "%Y-%m-%dT%H:%M:%S").replace(
            tzinfo=datetime.timezone.utc)
        if datetime.datetime.now(datetime.timezone.utc) >= when:
            raise SystemExit("farm-install: REFUSED: the key set expired on %s: fetch it again "
                             "from a source you trust" % expires)
    keys = {}
    for k in doc.get("keys", []):
        raw = b64(k.get("public_key"))
        if len(raw) == 32 and hashlib.sha256(raw).hexdigest() == k.get("keyid"):
            keys[k["keyid"]] = dict(k, raw=raw)
    if not keys:
        raise SystemExit("farm-install: the farm's key set holds no usable key")
    return keys


def attested(provenance, keys, filename, sha256):
    """(owners the build statements name, validation predicates) of a PEP 740 provenance
    object, each signed by a key of `keys` that is not revoked and naming exactly this
    wheel; exits naming the first problem otherwise."""
    builds, validations = [], []
    for bundle in provenance.get("attestation_bundles") or []:
        for a in bundle.get("attestations") or []:
            keyid = (a.get("verification_material") or {}).get("keyid", "")
            env = a.get("envelope") or {}
            payload, sig = b64(env.get("statement")), b64(env.get("signature"))
            key = keys.get(keyid)
            message = b"DSSEv1 %d %s %d %s" % (len(IN_TOTO), IN_TOTO.encode(), len(payload), payload)
            if key is None:
                raise SystemExit("farm-install: REFUSED: a statement is signed by key %s, which "
                                 "is not the farm's" % keyid[:16])
            if not ed25519_verify(key["raw"], sig, message):
                raise SystemExit("farm-install: REFUSED: a provenance signature does not verify")
            if key.get("state") == "revoked":
                raise SystemExit("farm-install: REFUSED: signed by key %s, revoked on %s (%s)" % (
                    keyid[:16], key.get("revoked"), key.get("reason")))
            st = json.loads(payload)
            if st.get("_type") != STATEMENT_V1:
                raise SystemExit("farm-install: REFUSED: not an in-toto statement")
            subjects = [(s.get("name"), (s.get("digest") or {}).get("sha256"))
                        for s in st.get("subject") or []]
            if (filename, sha256) not in subjects:
                raise SystemExit("farm-install: REFUSED: the farm signed %s with sha256 %s, but "
                                 "the wheel downloaded is %s with sha256 %s: a different wheel "
                                 "under this name" % (subjects[0][0] if subjects else "?",
                                                      subjects[0][1] if subjects else "?",
                                                      filename, sha256))
            if st.get("predicateType") == SLSA_V1:
                ext = ((st.get("predicate") or {}).get("buildDefinition") or {}).get(
                    "externalParameters") or {}
                builds.append((ext.get("project") or {}).get("owner") or "")
            elif st.get("predicateType") == VALIDATION_V1:
                validations.append(st.get("predicate") or {})
    if not builds:
        raise SystemExit("farm-install: REFUSED: no signed build provenance for " + filename)
    return builds, validations


def verify_wheel(wheel, page_url, data, keys, require_cc, cafile, owner=None):
    """Checks the downloaded bytes against the file's signed provenance; exits on refusal."""
    sha256 = hashlib.sha256(data).hexdigest()
    if wheel["hashes"].get("sha256") != sha256:
        raise SystemExit("farm-install: REFUSED: %s has sha256 %s, the index says %s" % (
            wheel["filename"], sha256, wheel["hashes"].get("sha256")))
    if not wheel.get("provenance"):
        raise SystemExit("farm-install: REFUSED: the index names no provenance for %s "
                         "(--no-verify installs it unchecked)" % wheel["filename"])
    url = urllib.parse.urljoin(page_url, wheel["provenance"])
    try:
        provenance = json.loads(fetch_bytes(url, cafile, 4 << 20))
    except ValueError as e:
        raise SystemExit("farm-install: REFUSED: unreadable provenance at %s: %s" % (url, e))
    builds, validations = attested(provenance, keys, wheel["filename"], sha256)
    say("verified: the farm's key signed the build of %s (sha256 %s)" % (wheel["filename"], sha256))
    if owner is not None:
        if any(named != owner for named in builds):
            raise SystemExit("farm-install: REFUSED: the build statement of %s names %s as the "
                             "project's owner, not %s" % (wheel["filename"],
                                                          builds[0] or "nobody", owner))
        say("the project's owner is %s, as required" % owner)
    for v in validations:
        gpu = v.get("gpu") or {}
        say("signed validation: %s on %s (compute capability %s)" % (
            v.get("verdict"), gpu.get("name"), gpu.get("computeCapability")))
    if require_cc:
        if not any(v.get("verdict") == "passed" and
                   major_minor((v.get("gpu") or {}).get("computeCapability")) == require_cc
                   for v in validations):
            raise SystemExit("farm-install: REFUSED: no signed passed validation of %s on a GPU "
                             "of compute capability %s" % (wheel["filename"], require_cc))
        say("a passed validation on compute capability %s is signed" % require_cc)


def choose_view(views, project, cc, driver_cuda):
    """The view for a machine without torch and the reason, or (None, why not)."""
    mine = [v for v in views if project in v["projects"]]
    if not mine:
        return None, "the farm has no wheel of %s at all" % project
    on_gpu = [v for v in mine if v["compute_capability"] == cc]
    if not on_gpu:
        gpus = sorted({v["gpu"] for v in mine}, key=lambda g: int(g[2:]))
        return None, "no wheel of %s runs on compute capability %s; the farm has it for %s" % (
            project, cc, ", ".join(gpus))
    plain = [v for v in on_gpu if not v["torch"]]
    if not plain:
        return None, ("no torch is installed in this Python, and every wheel of %s for compute "
                      "capability %s is built against torch: install torch first" % (project, cc))
    if driver_cuda:
        fits = [v for v in plain if version_key(v["cuda"]) <= version_key(driver_cuda)]
        if not fits:
            return None, "every wheel of %s needs a newer driver than CUDA %s" % (project, driver_cuda)
        plain = fits
    best = max(plain, key=lambda v: version_key(v["cuda"]))
    if not driver_cuda:
        return best, ("no torch installed; the newest CUDA the farm has (the driver's CUDA "
                      "version is unknown: FARM_INSTALL_DRIVER_CUDA gives it)")
    return best, "no torch installed; the newest CUDA the driver (CUDA %s) runs" % driver_cuda


def real_files(page):
    """The wheels of a project page, without a GPU view's no-wheel placeholder."""
    return [f for f in (page or {}).get("files", []) if "/files/no-wheel/" not in f.get("url", "")]


def torch_view(farm, directory, project, cc, torch, torch_cuda, cert, root=""):
    """(index URL, project page or None) of the torch view for this torch and GPU:
    /cu<CUDA>/sm<cc>/torch<release>/simple/, under `root` ("/rc" for the views that also
    list release candidates' wheels). farmd answers every release; a static export holds
    the views of the releases the farm knows ("torch2.8", from its directory) and no /rc/
    views, so there the view of this torch's minor is read and each wheel checked against
    the exact release."""
    cu, gpu = "cu" + torch_cuda.replace(".", ""), "sm" + cc.replace(".", "")
    exact = "%s%s/%s/%s/torch%s/simple/" % (farm, root, cu, gpu, public_version(torch))
    page = fetch_json(exact + project + "/", PYPI_JSON, cert)
    if "_error" not in page:
        return exact, page
    for v in directory.get("torch_views", []) if not root else []:
        if (v.get("cuda"), v.get("compute_capability"), v.get("torch")) == (
                torch_cuda, cc, major_minor(torch)):
            url = urllib.parse.urljoin(farm + "/", v["index_url"])
            page = fetch_json(url + project + "/", PYPI_JSON, cert)
            if "_error" not in page:
                return url, page
    return exact, None


def python_tags():
    v = sys.version_info
    machine = platform.machine().lower()
    plat = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return "cp%d%d" % (v.major, v.minor), plat


def python_fits(py, abi, py_tag):
    """Whether a wheel tagged `py`-`abi` installs on the CPython of `py_tag` ("cp311"): its
    own tag or py3, or a stable-ABI (abi3) wheel built for this minor or an older one (PEP
    425 and PEP 384: cp39-abi3 installs on 3.9 and every later 3.x)."""
    tags = py.split(".")
    if py_tag in tags or "py3" in tags:
        return True
    if "abi3" not in abi.split(".") or not py_tag.startswith("cp3") or not py_tag[3:].isdigit():
        return False
    return any(t.startswith("cp3") and t[3:].isdigit() and int(t[3:]) <= int(py_tag[3:])
               for t in tags)


def choose_file(files, py_tag, plat):
    ok = []
    for f in files:
        parts = f["filename"][:-4].split("-")
        if len(parts) < 5:
            continue
        py, abi, tag = parts[-3], parts[-2], parts[-1]
        if python_fits(py, abi, py_tag) and (plat in tag or tag == "any"):
            ok.append(f)
    return max(ok, key=lambda f: version_key(f["filename"].split("-")[1])) if ok else None


def family_of(filename, cc):
    """" (the wheel of SM family sm80-89, which holds cc 8.6)" when the wheel's local label
    names a family (a recipe with matrix.families: "+cu130.sm80to89") that holds `cc`;
    "" otherwise. The GPU view already listed only the wheel that runs on this GPU."""
    label = filename.split("-")[1].partition("+")[2] if filename.count("-") >= 4 else ""
    for part in label.split("."):
        m = re.fullmatch(r"sm(\d{2,3})(?:to(\d{2,3}))?", part)
        if not m:
            continue
        lo, hi = m.group(1), m.group(2) or m.group(1)
        key = lambda d: (int(d[:-1]), int(d[-1]))
        here = tuple(int(x) for x in cc.split("."))
        if key(lo) <= here <= key(hi) and m.group(2):
            return " (the wheel of SM family sm%s-%s, which holds cc %s)" % (lo, hi, cc)
    return ""


def cc_of(arch):
    """"12.0" for "12.0", "sm_120", "sm120a", "120"; "" otherwise."""
    m = re.fullmatch(r"(?:sm_?)?(\d{1,3})\.?(\d)[af]?", arch or "")
    return "%d.%s" % (int(m.group(1)), m.group(2)) if m else ""


MISSING = "missing"  # what install() answers when the farm has no wheel for this setup
REQUEST_PATH = "/api/v1/requests"


def request_token(token_file):
    if token_file:
        with open(token_file) as f:
            return f.read().strip()
    return os.environ.get("FARM_TOKEN", "").strip()


def call_farm(url, cafile, token, body=None):
    """(HTTP status, JSON answer) of a GET, or a POST of `body`, to the farm's API."""
    ctx = ssl.create_default_context(cafile=cafile) if cafile else None
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = "Bearer " + token
    req = urllib.request.Request(url, data=data, headers=headers,
                                 method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=60, context=ctx) as resp:
            return resp.status, json.loads(resp.read(1 << 20))
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read(1 << 20))
        except ValueError:
            return e.code, {}
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise SystemExit("farm-install: cannot reach %s: %s" % (url, e))


def describe_request(r):
    where = ""
    if r.get("build_id"):
        where = " (build %s, job %s)" % (r["build_id"], r.get("job_id"))
    why = (": " + r["reason"]) if r.get("reason") else ""
    wheel = (": " + r["wheel"]) if r.get("wheel") else ""
    return "request %s is %s%s%s%s" % (r.get("id"), r.get("state"), where, why, wheel)


def file_request(farm, cafile, token, setup):
    """Files the request for `setup`; its answer (exits when the farm refuses to take it)."""
    status, answer = call_farm(farm + REQUEST_PATH, cafile, token, setup)
    if status not in (200, 201):
        message = (answer.get("error") or {}).get("message", "") if isinstance(answer, dict) else ""
        raise SystemExit("farm-install: the farm did not take the request (HTTP %d): %s" % (
            status, message))
    say("filed: %s %s for Python %s, torch %s (CUDA %s), compute capability %s, %s%s" % (
        setup["package"], setup["version"] or "(newest)", setup["python"], setup["torch"] or "none",
        setup["cuda"] or "none", setup["compute_capability"], setup["platform"],
        ", merged with an identical request" if answer.get("merged") else ""))
    say(describe_request(answer))
    say("watch it at %s%s/%s (or farmctl requests)" % (farm, REQUEST_PATH, answer.get("id")))
    return answer


def wait_request(farm, cafile, token, request, seconds):
    """Polls the request until it is built, refused or failed, or `seconds` pass; the last
    answer."""
    import time
    deadline = time.monotonic() + seconds
    shown = describe_request(request)
    delay = 1.0
    while request.get("state") not in ("built", "refused", "failed"):
        if time.monotonic() >= deadline:
            say("still waiting after %d s: %s; run again later" % (seconds, shown))
            return request
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 1.5, 10.0)
        status, answer = call_farm("%s%s/%s" % (farm, REQUEST_PATH, request["id"]), cafile, token)
        if status == 200:
            request = answer
        text = describe_request(request)
        if text != shown:
            say(text)
            shown = text
    return request


def want_request(flags):
    if "--request" in flags:
        return True
    try:  # two streams: a terminal opened "r+" in text mode is refused (not seekable)
        asked, answer = open("/dev/tty", "w"), open("/dev/tty")
    except OSError:
        return False
    with asked, answer:
        asked.write("farm-install: ask the farm to build it? [y/N] ")
        asked.flush()
        return answer.readline().strip().lower() in ("y", "yes")


def parse_args(argv):
    """(options, positional arguments) of the command line; exits on a malformed --wait."""
    opts = {"flags": [a for a in argv if a.startswith("--")], "farm": DEFAULT_FARM,
            "cert": None, "keys": None, "require": None, "owner": None, "wait": None,
            "token_file": None}
    valued = {"--farm": "farm", "--cert": "cert", "--keys": "keys", "--owner": "owner",
              "--wait": "wait", "--token-file": "token_file"}
    args = [a for a in argv if not a.startswith("--")]
    for i, a in enumerate(argv):
        value = argv[i + 1] if i + 1 < len(argv) else None
        if a in valued and value is not None:
            opts[valued[a]] = value
            args = [x for x in args if x != value]
        if a == "--require-validated":
            opts["require"] = ""  # this machine's GPU, once it is known
            if value is not None and cc_of(value):
                opts["require"] = cc_of(value)
                args = [x for x in args if x != value]
    if "--wait" in argv:
        try:
            opts["wait"] = int(opts["wait"])
        except (TypeError, ValueError):
            raise SystemExit("farm-install: --wait takes a number of seconds")
        if not 0 < opts["wait"] <= 24 * 3600:
            raise SystemExit("farm-install: --wait takes 1 to 86400 seconds")
    return opts, args


def farm_keys(farm, keys_from, cert):
    """The key set to verify with: --keys (a file or URL), else the one this script was
    served with, else the farm's."""
    if keys_from:
        text = open(keys_from).read() if os.path.exists(keys_from) else \
            fetch_bytes(keys_from, cert, 1 << 20).decode()
    elif FARM_KEYS and not FARM_KEYS.startswith("@"):
        text = b64(FARM_KEYS).decode()
    else:
        text = fetch_bytes(farm + "/api/v1/provenance/keys", cert, 1 << 20).decode()
    return load_keys(text)


def main(argv):
    opts, args = parse_args(argv)
    if len(args) != 1:
        print(__doc__.replace("@FARM_URL@", DEFAULT_FARM))
        return 2
    project = normalize(args[0])
    farm, cert, flags = opts["farm"].rstrip("/"), opts["cert"], opts["flags"]
    if farm.startswith("@"):
        raise SystemExit("farm-install: this script comes from a static export of the index "
                         "made without --base-url: pass --farm URL, the URL it is served at")
    verify = "--no-verify" not in flags
    if opts["owner"] is not None and not verify:
        raise SystemExit("farm-install: --owner needs the provenance checked (not --no-verify)")
    keys = farm_keys(farm, opts["keys"], cert) if verify else None
    name, cc, driver_cuda = detect_gpu()
    require = cc if opts["require"] == "" else opts["require"]
    found = detect_torch()
    torch, torch_cuda = found or ("", "")
    py_tag, plat = python_tags()
    say("GPU %s (compute capability %s), driver CUDA %s; %s; Python %s, %s" % (
        name, cc, driver_cuda or "unknown",
        ("torch %s (CUDA %s)" % (torch, torch_cuda or "none")) if found else
        "no torch installed in this Python (%s)" % sys.executable, py_tag, plat))
    choice = (farm, cert, keys, require, opts["owner"], flags, project, cc, driver_cuda, found,
              py_tag, plat)
    rc = install(*choice)
    if rc != MISSING:
        return rc
    setup = {"package": project, "version": "", "python": "%d.%d" % sys.version_info[:2],
             "torch": major_minor(torch), "cuda": torch_cuda if found else (driver_cuda or ""),
             "compute_capability": cc, "platform": "linux_" + plat}
    return request_and_install(choice, opts, setup)


def request_and_install(choice, opts, setup):
    """Asks the farm for the missing wheel of `setup` (with --request, or yes at the prompt),
    waits for it with --wait, and installs it once built."""
    farm, cert = choice[0], choice[1]
    if not want_request(opts["flags"]):
        say("the farm can build it: run again with --request (and --wait SECONDS to install it "
            "once built)")
        return 1
    token = request_token(opts["token_file"])
    request = file_request(farm, cert, token, setup)
    if opts["wait"] is not None:
        request = wait_request(farm, cert, token, request, opts["wait"])
    if request.get("state") != "built":
        return 1
    say("the farm built %s; installing it" % (request.get("wheel") or "the wheel"))
    rc = install(*choice)
    if rc == MISSING:
        say("request %s is built, but its wheel is not in this machine's view yet (it may wait "
            "for validation on a GPU like this one); run again later" % request.get("id"))
        return 1
    return rc


def farm_directory(farm, cert):
    """The farm's directory of views: farmd's root, or a static export's index.json."""
    directory = fetch_json(farm + "/", "application/json", cert)
    if "_error" in directory:
        # A static export whose root has no page answers 404 there (an S3 website).
        static = fetch_json(farm + "/index.json", "application/json", cert)
        directory = directory if "_error" in static else static
    if "_error" in directory:
        raise SystemExit("farm-install: " + directory["_error"])
    return directory


def torch_wheel(farm, directory, project, cc, found, py_tag, plat, cert, root=""):
    """(index URL, wheel or None) of the torch view (under `root`) for the installed torch."""
    torch, torch_cuda = found
    url, page = torch_view(farm, directory, project, cc, torch, torch_cuda, cert, root)
    # The check pip would make, before pip runs: only a wheel that admits this exact torch,
    # so pip has no reason to touch it.
    files = [f for f in real_files(page) if admits(f.get("torch-requirement", ""), torch)]
    return url, choose_file(files, py_tag, plat)


def choose_with_torch(farm, cert, directory, project, cc, found, py_tag, plat, candidates):
    """(view, why, wheel) of the torch view for the installed torch, or MISSING (said).
    `candidates`: the /rc/ view, which also lists wheels built against a release candidate."""
    torch, torch_cuda = found
    view, why, wheel = None, "", None
    if not torch_cuda:
        why = "torch %s is not a CUDA build; the farm's wheels are built for CUDA" % torch
    else:
        root = "/rc" if candidates else ""
        url, wheel = torch_wheel(farm, directory, project, cc, found, py_tag, plat, cert, root)
        view = {"index_url": url, "variant": "torch %s, CUDA %s%s" % (
            public_version(torch), torch_cuda, ", release candidates too" if candidates else "")}
        why = "torch %s (CUDA %s) is installed" % (torch, torch_cuda)
    if wheel is None:
        say("missing: no wheel of %s installs next to the torch of this Python, torch %s "
            "(CUDA %s), on compute capability %s for %s %s" % (
                project, torch, torch_cuda or "none", cc, py_tag, plat))
        say("the farm has wheels of %s for torch: %s" % (
            project, torch_views_of(directory, project, cc)))
        if torch_cuda and not candidates and torch_wheel(
                farm, directory, project, cc, found, py_tag, plat, cert, "/rc")[1]:
            say("the farm has a wheel built against a release candidate of torch %s: "
                "--release-candidates installs it" % public_version(torch))
        say("nothing was installed; torch %s was left as it is" % torch)
        return MISSING
    return view, why, wheel


def choose_without_torch(farm, cert, directory, project, cc, driver_cuda, py_tag, plat):
    """(view, why, wheel) of the GPU view for a Python without torch, or MISSING (said)."""
    view, why = choose_view(directory.get("variants", []), project, cc, driver_cuda)
    if view is None:
        say("missing: " + why)
        if "install torch first" in why:
            say("the farm has wheels of %s for torch: %s" % (
                project, torch_views_of(directory, project, cc)))
            return MISSING
        arch = cc + ("a" if version_key(cc) >= (9, 0) else "")
        python = "%s.%s" % (sys.version_info.major, sys.version_info.minor)
        cuda = driver_cuda or "X.Y"
        say("ask the farm for it: farmctl submit RECIPE.yaml --python %s --cuda %s --arch-list %s "
            "(the recipe's matrix must list Python %s and CUDA %s and an arch list holding %s; "
            "farmctl says what it lists when it does not)" % (python, cuda, arch, python, cuda, arch))
        return MISSING
    # A static export's directory names its views relative to itself.
    view = dict(view, index_url=urllib.parse.urljoin(farm + "/", view["index_url"]))
    page = fetch_json(view["index_url"] + project + "/", PYPI_JSON, cert)
    files = [f for f in real_files(page if "_error" not in page else None)
             if not f.get("torch-requirement")]
    wheel = choose_file(files, py_tag, plat)
    if wheel is None:
        say("missing: %s has no wheel of %s for %s on %s that needs no torch" % (
            view["index_url"], project, py_tag, plat))
        return MISSING
    return view, why, wheel


def install(farm, cert, keys, require, owner, flags, project, cc, driver_cuda, found, py_tag, plat):
    """Chooses the wheel for this setup and installs it; MISSING when the farm has none."""
    directory = farm_directory(farm, cert)
    if found:
        chosen = choose_with_torch(farm, cert, directory, project, cc, found, py_tag, plat,
                                   "--release-candidates" in flags)
    else:
        chosen = choose_without_torch(farm, cert, directory, project, cc, driver_cuda, py_tag,
                                      plat)
    if chosen == MISSING:
        return MISSING
    view, why, wheel = chosen
    say("chose %s (%s) because the GPU is cc %s and %s" % (view["index_url"], view["variant"], cc, why))
    say("wheel %s (sha256 %s)%s" % (wheel["filename"], wheel["hashes"]["sha256"],
                                    family_of(wheel["filename"], cc)))
    import tempfile
    tmp = tempfile.mkdtemp(prefix="farm-install-")
    try:
        page_url = view["index_url"] + project + "/"
        target = "%s==%s" % (project, wheel["filename"].split("-")[1])
        if "--no-verify" in flags:
            say("WARNING: --no-verify: installing without checking the wheel's signed provenance")
        else:
            data = fetch_bytes(urllib.parse.urljoin(page_url, wheel["url"]), cert, 16 << 30)
            verify_wheel(wheel, page_url, data, keys, require, cert, owner)
            # pip installs the very bytes just checked, not a second download.
            target = os.path.join(tmp, os.path.basename(wheel["filename"]))
            with open(target, "wb") as f:
                f.write(data)
        return run_pip(view["index_url"], target, (found or ("", ""))[0], cert, flags, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_pip(index_url, target, torch, cert, flags, tmp):
    """Runs pip for `target` with `index_url` as its only index (pip never asks PyPI, which
    retries for seconds when the machine is offline, unless --with-pypi says so, for the
    wheel's dependencies); prints the command instead with --dry-run."""
    # pip must never change torch: the installed release is a constraint (with no torch,
    # "torch<0", which no release satisfies, so pip cannot bring one in either).
    constraints = os.path.join(tmp, "torch-constraint.txt")
    with open(constraints, "w") as f:
        f.write("torch==%s\n" % torch if torch else "torch<0\n")
    cmd = [sys.executable, "-m", "pip", "install", "--index-url", index_url,
           "--constraint", constraints, target]
    if "--with-pypi" in flags:
        cmd[8:8] = ["--extra-index-url", "https://pypi.org/simple/"]
    if cert:
        cmd[4:4] = ["--cert", cert]
    if "--dry-run" in flags:
        say("would run (--dry-run): " + " ".join(cmd))
        return 0
    say("running: " + " ".join(cmd))
    rc = subprocess.call(cmd)
    if rc != 0 and "--with-pypi" not in flags:
        say("pip failed; if it could not find a dependency, run again with --with-pypi to "
            "fetch dependencies from PyPI")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
