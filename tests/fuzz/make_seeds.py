#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target from the test suite's own inputs.

Usage: make_seeds.py REPO BUILD_DIR OUT_DIR

Seeds: the catalog's and the tests' recipes; the cron expressions and POSIX TZ strings of
the schedule tests; TZif files of the zones the tests use; small CUDA modules made with nvcc
(whole ELF files, their .nv_fatbin sections, and wheels holding them) and the .nv_fatbin
sections of the wheel tests' modules; the routes the HTTP tests request; the names of the
wheel-name tests; statements signed like the farm's provenance; the links and pages of the
static export's tests.
"""
import glob
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import zipfile
import base64
import io
import shutil


def write(out, target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def c_strings(path):
    """Double-quoted string literals of a C++ test file, unescaped (simple escapes only)."""
    text = open(path, encoding="utf-8").read()
    return [bytes(m, "utf-8").decode("unicode_escape").encode("latin-1", "replace").decode(
        "utf-8", "replace") for m in re.findall(r'"((?:[^"\\\n]|\\.)*)"', text)]


def recipes(repo, out):
    files = glob.glob(os.path.join(repo, "kernels", "**", "recipe*.yaml"), recursive=True)
    files += glob.glob(os.path.join(repo, "tests", "**", "*.yaml"), recursive=True)
    for i, f in enumerate(sorted(files)):
        write(out, "recipe", f"file{i}", open(f, "rb").read())
    for i, s in enumerate(c_strings(os.path.join(repo, "tests/unit/common/recipe/recipe_test.cc"))):
        if "name:" in s:
            write(out, "recipe", f"test{i}", s)


def cron(repo, out):
    exprs = {s for s in c_strings(os.path.join(repo, "tests/unit/daemon/cron/cron_test.cc"))
             if re.fullmatch(r"[\s@*A-Za-z0-9,/-]{1,60}", s) and (" " in s.strip() or s.strip().startswith("@"))}
    for i, e in enumerate(sorted(exprs)):
        for zone in range(4):
            write(out, "cron", f"e{i}z{zone}", struct.pack(">Q", 1_774_700_000) + bytes([zone]) + e.encode())


def time_zone(repo, out):
    strings = [s for s in c_strings(os.path.join(repo, "tests/unit/daemon/cron/time_zone_test.cc"))
               if re.search(r"[A-Z<]{3}.*[0-9]", s)]
    for i, s in enumerate(strings):
        write(out, "time_zone", f"posix{i}", b"\0" + s.encode())
    for zone in ("UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
                 "Asia/Kolkata", "America/Sao_Paulo", "Pacific/Chatham"):
        path = os.path.join("/usr/share/zoneinfo", zone)
        if os.path.exists(path):
            write(out, "time_zone", zone.replace("/", "_"), b"\1" + open(path, "rb").read())


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def wheel_bytes(files):
    """A wheel holding `files` (name -> bytes) plus a dist-info with a correct RECORD."""
    dist = "fuzz_pkg-1.0.dist-info"
    files = dict(files)
    files[f"{dist}/METADATA"] = b"Metadata-Version: 2.1\nName: fuzz-pkg\nVersion: 1.0\n"
    files[f"{dist}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: fuzz\nRoot-Is-Purelib: false\n"
                              b"Tag: cp311-cp311-linux_x86_64\n")
    record = "".join(record_line(n, d) for n, d in files.items()) + f"{dist}/RECORD,,\n"
    files[f"{dist}/RECORD"] = record.encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            z.writestr(n, d)
    return buf.getvalue()


TINY_KERNEL = "__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n"
TINY_FLAGS = {
    "sm90a_ptx": ["-gencode", "arch=compute_90a,code=sm_90a", "-gencode", "arch=compute_90,code=compute_90"],
    "sm120a_zstd": ["-gencode", "arch=compute_120a,code=sm_120a", "-Xfatbin", "-compress-all"],
    "sm121a_lz4": ["-gencode", "arch=compute_121a,code=sm_121a", "-Xfatbin", "-compress-all",
                   "--compress-mode=speed"],
}


def tiny_modules(build):
    """Small CUDA modules (one kernel of one line): seeds a few KiB long keep the ELF and
    wheel targets fast, where the wheel tests' modules make each run read hundreds of KiB."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc):
        return []
    d = os.path.join(build, "fuzz", "tiny")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "tiny.cu")
    with open(src, "w") as f:
        f.write(TINY_KERNEL)
    made = []
    for name, flags in TINY_FLAGS.items():
        so = os.path.join(d, f"tiny_{name}.so")
        if not os.path.exists(so):
            subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", *flags,
                            src, "-o", so],
                           capture_output=True)
        if os.path.exists(so):
            made.append(so)
    return made


def modules(build, out):
    sos = tiny_modules(build)
    sos += glob.glob(os.path.join(build, "tests/unit/common/wheel/libfarm_wheel_test_host_only.so"))
    for so in sos:
        base = os.path.basename(so)
        data = open(so, "rb").read()
        write(out, "elf_manifest", base, data)
        section = os.path.join(out, base + ".nv_fatbin")
        if subprocess.run(["objcopy", "--dump-section", f".nv_fatbin={section}", so, "/dev/null"],
                          capture_output=True).returncode == 0 and os.path.exists(section):
            write(out, "fatbin", base, open(section, "rb").read())
            os.remove(section)
        write(out, "wheel", base, wheel_bytes({"fuzz_pkg/__init__.py": b"", f"fuzz_pkg/{base}": data}))
    for so in sorted(glob.glob(os.path.join(build, "tests/unit/common/wheel/fatbins/*.so"))):
        section = os.path.join(out, "big.nv_fatbin")
        if subprocess.run(["objcopy", "--dump-section", f".nv_fatbin={section}", so, "/dev/null"],
                          capture_output=True).returncode == 0 and os.path.exists(section):
            write(out, "fatbin", "big_" + os.path.basename(so), open(section, "rb").read())
            os.remove(section)
    write(out, "wheel", "pure", wheel_bytes({"fuzz_pkg/__init__.py": b"print('hi')\n"}))
    if not sos:
        print("make_seeds: no nvcc modules in the build; ELF, fatbin and wheel seeds are thin",
              file=sys.stderr)


def router(repo, out):
    targets = set()
    for f in glob.glob(os.path.join(repo, "tests/unit/daemon/http/**/*.cc"), recursive=True):
        targets.update(s for s in c_strings(f) if s.startswith("/") and " " not in s)
    accepts = ["", "application/vnd.pypi.simple.v1+json", "text/html", "text/event-stream"]
    for i, t in enumerate(sorted(targets)):
        for j, accept in enumerate(accepts[:2] if "simple" in t else accepts[:1]):
            write(out, "router", f"t{i}a{j}", f"GET\n{t}\n{accept}\n\n")
    write(out, "router", "post", "POST\n/api/v1/builds/1/cancel\n\nBearer nope\n{}")
    write(out, "router", "sse", "GET\n/api/v1/jobs/1/log/stream\ntext/event-stream\n\n")


def names(repo, out):
    strings = c_strings(os.path.join(repo, "tests/unit/common/wheel/wheel_name_test.cc"))
    strings += ["9.0a;12.0a;12.1a", "8.0 8.6+PTX", "12.0f,10.0", "Flash_Attn", "a..b__c--d"]
    for i, s in enumerate(strings):
        write(out, "names", f"s{i}", s)


def export_links(repo, out):
    strings = c_strings(os.path.join(repo, "tests/unit/cli/export/index_links_test.cc"))
    for i, s in enumerate(strings):
        write(out, "export_links", f"s{i}", s)


# RFC 8032 TEST 1's secret key; provenance_fuzz.cc trusts its public half.
FUZZ_SIGNING_SECRET = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"


def provenance(repo, out):
    """Signed statements about the wheel provenance_fuzz.cc checks (sha256 of b"wheel"), as
    .intoto.jsonl lines, a PEP 740 object and a key set; first byte = the parser."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives import serialization
    key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(FUZZ_SIGNING_SECRET))
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    keyid = hashlib.sha256(raw).hexdigest()
    subject = [{"name": "fuzz_pkg-1.0-cp311-cp311-linux_x86_64.whl",
                "digest": {"sha256": hashlib.sha256(b"wheel").hexdigest()}}]
    build = {"_type": "https://in-toto.io/Statement/v1", "subject": subject,
             "predicateType": "https://slsa.dev/provenance/v1",
             "predicate": {"buildDefinition": {"externalParameters": {"recipe": {"name": "r"}}},
                           "runDetails": {"builder": {"id": "urn:gpu-wheel-farm:farm:fuzz"}}}}
    validation = {"_type": "https://in-toto.io/Statement/v1", "subject": subject,
                  "predicateType": "urn:gpu-wheel-farm:attestation:gpu-validation:v1",
                  "predicate": {"verdict": "passed", "gpu": {"computeCapability": "9.0"},
                                "cases": [{"name": "c", "passed": True}]}}
    ptype = "application/vnd.in-toto+json"
    envelopes, attestations = [], []
    for statement in (build, validation):
        payload = json.dumps(statement).encode()
        pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype.encode(), len(payload), payload)
        sig = base64.b64encode(key.sign(pae)).decode()
        envelopes.append(json.dumps({"payload": base64.b64encode(payload).decode(),
                                     "payloadType": ptype,
                                     "signatures": [{"keyid": keyid, "sig": sig}]}))
        attestations.append({"version": 1, "verification_material": {"keyid": keyid},
                             "envelope": {"statement": base64.b64encode(payload).decode(),
                                          "signature": sig}})
        write(out, "provenance", "statement%d" % len(envelopes), b"\3" + payload)
    write(out, "provenance", "jsonl", b"\0" + "\n".join(envelopes).encode() + b"\n")
    write(out, "provenance", "pep740", b"\1" + json.dumps(
        {"version": 1, "attestation_bundles": [{"attestations": attestations}]}).encode())
    write(out, "provenance", "keys", b"\2" + json.dumps(
        {"version": 1, "farm": "fuzz", "keys": [
            {"keyid": keyid, "algorithm": "ed25519", "state": "active",
             "public_key": base64.b64encode(raw).decode()}]}).encode())


def main():
    repo, build, out = sys.argv[1:4]
    for step in (recipes, cron, time_zone, router, names, provenance, export_links):
        step(repo, out)
    modules(build, out)
    for target in sorted(os.listdir(out)):
        print(f"make_seeds: {target}: {len(os.listdir(os.path.join(out, target)))} seeds")


if __name__ == "__main__":
    main()
