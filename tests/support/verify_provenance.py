#!/usr/bin/env python3
"""Checks a wheel built by the GPU wheel farm against the farm's signed provenance.

    verify_provenance.py --keys KEYS WHEEL [--provenance FILE] [--require-validated-arch SM]
                         [--owner PRINCIPAL]

KEYS is the farm's public key set (a file, or the farm's /api/v1/provenance/keys URL).
WHEEL is a file or a URL; its provenance is read from --provenance, else from the wheel's
path or URL + ".intoto.jsonl" (DSSE envelopes, one per line) or a PEP 740 provenance
object. Exit status: 0 verified, 1 refused (a provenance file that is missing or does not
parse included), 2 bad usage or an unreadable wheel or key set, 3 a URL could not be
fetched.

This verifier is independent of the farm's own code: it implements DSSE's
pre-authentication encoding itself and checks Ed25519 signatures with Debian's
python3-cryptography. It refuses the wheel when its sha256 or file name is not the one a
statement attests, when a signature does not verify, when the signing key is unknown or
revoked, when the key set has expired, when no signed build provenance names the wheel,
or when --owner names another owner than the build statement's.
"""
import argparse
import datetime
import base64
import binascii
import hashlib
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

IN_TOTO = "application/vnd.in-toto+json"
STATEMENT_V1 = "https://in-toto.io/Statement/v1"
SLSA_V1 = "https://slsa.dev/provenance/v1"
VALIDATION_V1 = "urn:gpu-wheel-farm:attestation:gpu-validation:v1"
MAX_DOCUMENT = 4 << 20
MAX_WHEEL = 8 << 30


class Unreadable(Exception):
    """Input that cannot be read or parsed (exit 2)."""


class Unreachable(Exception):
    """A URL that cannot be fetched (exit 3); `missing` when the server said 404."""

    def __init__(self, message, missing=False):
        super().__init__(message)
        self.missing = missing


def pae(payload_type, payload):
    """DSSE v1 pre-authentication encoding of a str type and a bytes payload."""
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def b64decode(text):
    """Standard or URL-safe Base64, padded or not, as DSSE lets readers accept."""
    if not isinstance(text, str) or not re.fullmatch(r"[A-Za-z0-9+/_-]*={0,2}", text):
        raise Unreadable("bad Base64")
    if re.search(r"[-_]", text) and re.search(r"[+/]", text):
        raise Unreadable("bad Base64: standard and URL-safe alphabets mixed")
    if "-" in text or "_" in text:
        text = text.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error as e:
        raise Unreadable("bad Base64: %s" % e)


def is_url(s):
    return s.startswith("http://") or s.startswith("https://")


def chunks(source, limit, cafile=None):
    """The bytes of a file or URL in blocks of 1 MiB; Unreadable past `limit` bytes."""
    if is_url(source):
        import ssl
        ctx = ssl.create_default_context(cafile=cafile) if cafile else None
        try:
            stream = urllib.request.urlopen(source, timeout=60, context=ctx)
        except urllib.error.HTTPError as e:
            raise Unreachable("%s: HTTP %d" % (source, e.code), missing=e.code == 404)
        except (urllib.error.URLError, OSError) as e:
            raise Unreachable("%s: %s" % (source, e))
    else:
        try:
            stream = open(source, "rb")
        except OSError as e:
            raise Unreadable("cannot read %s: %s" % (source, e))
    total = 0
    with stream:
        while True:
            try:
                block = stream.read(1 << 20)
            except OSError as e:
                raise (Unreachable if is_url(source) else Unreadable)("%s: %s" % (source, e))
            if not block:
                return
            total += len(block)
            if total > limit:
                raise Unreadable("%s is larger than %d bytes" % (source, limit))
            yield block


def read(source, limit, cafile=None):
    return b"".join(chunks(source, limit, cafile))


def sha256_of(source, cafile=None):
    h = hashlib.sha256()
    for block in chunks(source, MAX_WHEEL, cafile):
        h.update(block)
    return h.hexdigest()


def load_keys(data):
    """{keyid: key dict} of a key set document, each key checked against its id."""
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise Unreadable("key set: %s" % e)
    if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("keys"), list):
        raise Unreadable("key set: not a version 1 key set")
    keys = {}
    for k in doc["keys"]:
        if not isinstance(k, dict) or k.get("algorithm") != "ed25519":
            raise Unreadable("key set: a key is not an ed25519 key")
        raw = b64decode(k.get("public_key"))
        if len(raw) != 32 or hashlib.sha256(raw).hexdigest() != k.get("keyid"):
            raise Unreadable("key set: key %s does not match its id" % k.get("keyid"))
        if k.get("state") not in ("active", "retired", "revoked"):
            raise Unreadable("key set: key %s has an unknown state" % k["keyid"])
        keys[k["keyid"]] = dict(k, raw=raw)
    return keys


def key_set_expired(data):
    """The refusal for a key set past its "expires" (RFC 3339 UTC), else None."""
    expires = json.loads(data).get("expires") or ""
    if not expires:
        return None
    when = datetime.datetime.strptime(expires[:19], "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc)
    if datetime.datetime.now(datetime.timezone.utc) < when:
        return None
    return "the key set expired on %s: fetch it again from a source you trust" % expires


def load_envelopes(data):
    """[(payloadType, payload bytes, [(keyid, sig bytes)])] of a .intoto.jsonl file or a
    PEP 740 provenance object."""
    text = data.decode("utf-8", errors="strict")
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and "attestation_bundles" in whole:
        return pep740_envelopes(whole)
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            e = json.loads(line)
        except ValueError as ex:
            raise Unreadable("provenance line %d: %s" % (n, ex))
        if not isinstance(e, dict) or not isinstance(e.get("payloadType"), str) or \
                not isinstance(e.get("signatures"), list) or not e["signatures"]:
            raise Unreadable("provenance line %d: not a DSSE envelope" % n)
        sigs = []
        for s in e["signatures"]:
            if not isinstance(s, dict):
                raise Unreadable("provenance line %d: a signature is not an object" % n)
            sigs.append((s.get("keyid", ""), b64decode(s.get("sig"))))
        out.append((e["payloadType"], b64decode(e.get("payload")), sigs))
    return out


def pep740_envelopes(doc):
    out = []
    for bundle in doc.get("attestation_bundles") or []:
        for a in (bundle or {}).get("attestations") or []:
            env = (a or {}).get("envelope") or {}
            keyid = ((a or {}).get("verification_material") or {}).get("keyid", "")
            out.append((IN_TOTO, b64decode(env.get("statement")),
                        [(keyid, b64decode(env.get("signature")))]))
    return out


def ed25519_ok(public_raw, sig, message):
    try:
        Ed25519PublicKey.from_public_bytes(public_raw).verify(sig, message)
        return True
    except InvalidSignature:
        return False


def check_envelope(payload_type, payload, sigs, keys):
    """(statement dict, keyid) or raises ValueError with the reason."""
    if payload_type != IN_TOTO:
        raise ValueError("payload type %s is not %s" % (payload_type[:80], IN_TOTO))
    message = pae(payload_type, payload)
    reason = "no signature verifies under the farm's keys"
    for keyid, sig in sigs:
        # DSSE's keyid is optional: without one, the key it verifies under names it.
        key = keys.get(keyid) if keyid else next(
            (k for k in keys.values() if ed25519_ok(k["raw"], sig, message)), None)
        if key is None:
            reason = "signed by key %s, which is not in the farm's key set" % keyid[:16]
            continue
        keyid = key["keyid"]
        if not ed25519_ok(key["raw"], sig, message):
            reason = "the signature by key %s does not verify" % keyid[:16]
            continue
        if key["state"] == "revoked":
            reason = "signed by key %s, which was revoked on %s%s: its signatures are refused" % (
                keyid[:16], key.get("revoked", "?"),
                " (%s)" % key["reason"] if key.get("reason") else "")
            continue
        try:
            statement = json.loads(payload)
        except ValueError as e:
            raise ValueError("signed, but the statement is not JSON: %s" % e)
        if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_V1:
            raise ValueError("signed, but not an in-toto Statement v1")
        if not isinstance(statement.get("subject"), list) or not statement["subject"] or \
                not isinstance(statement.get("predicate"), dict):
            raise ValueError("signed, but the statement has no subject or predicate")
        return statement, keyid
    raise ValueError(reason)


def about_wheel(statement, name, sha256):
    """None when a subject names exactly these bytes and this name, else the reason."""
    subjects = [s for s in statement["subject"] if isinstance(s, dict)]
    for s in subjects:
        if (s.get("digest") or {}).get("sha256") == sha256:
            if s.get("name") == name:
                return None
            return "the statement attests these bytes as %s, not %s" % (s.get("name"), name)
    first = subjects[0] if subjects else {}
    digest = (first.get("digest") or {}).get("sha256")
    return "the statement is about %s with sha256 %s, but this wheel's sha256 is %s%s" % (
        first.get("name"), digest, sha256,
        ": the wheel was changed or replaced" if first.get("name") == name else "")


def normalize_cc(arch):
    m = re.fullmatch(r"(?:sm_?)?(\d{1,3})\.?(\d)[af]?", arch or "")
    return "%d.%s" % (int(m.group(1)), m.group(2)) if m else ""


def verify(name, sha256, envelopes, keys, require_arch="", owner=""):
    """{"ok", "problems", "build", "validations"} for a wheel's name and sha256."""
    problems, build, validations = [], None, []
    for i, (ptype, payload, sigs) in enumerate(envelopes, 1):
        try:
            statement, keyid = check_envelope(ptype, payload, sigs, keys)
        except ValueError as e:
            problems.append("statement %d: %s" % (i, e))
            continue
        wrong = about_wheel(statement, name, sha256)
        if wrong:
            problems.append("statement %d: %s" % (i, wrong))
            continue
        if statement.get("predicateType") == SLSA_V1 and build is None:
            build = (statement["predicate"], keyid)
        elif statement.get("predicateType") == VALIDATION_V1:
            validations.append((statement["predicate"], keyid))
    if build is None and not problems:
        problems.append("no signed build provenance for this wheel" if envelopes
                        else "no provenance statement at all")
    if require_arch:
        want = normalize_cc(require_arch)
        passed = [v for v, _ in validations if v.get("verdict") == "passed" and
                  normalize_cc((v.get("gpu") or {}).get("computeCapability")) == want]
        if not want:
            problems.append("%s is not a compute capability" % require_arch)
        elif not passed:
            problems.append("no signed passed validation on a GPU of compute capability " + want)
    named = ((((build or ({}, ""))[0].get("buildDefinition") or {}).get("externalParameters")
              or {}).get("project") or {}).get("owner") or ""
    if owner and build is not None and named != owner:
        problems.append("the build statement names %s as the project's owner, not %s" % (
            named or "nobody", owner))
    return {"ok": not problems, "problems": problems, "build": build, "validations": validations}


def describe(result):
    lines = []
    if result["build"]:
        p, keyid = result["build"]
        run = p.get("runDetails") or {}
        builder = run.get("builder") or {}
        worker = ((builder.get("builderDependencies") or [{}])[0].get("annotations") or {})
        ext = (p.get("buildDefinition") or {}).get("externalParameters") or {}
        recipe = ext.get("recipe") or {}
        gpus = ", ".join("%s (%s)" % (g.get("name"), g.get("computeCapability"))
                         for g in worker.get("gpus") or [])
        lines += ["built by   %s, signed by key %s" % (builder.get("id"), keyid[:16]),
                  "worker     %s, GPUs: %s, driver %s" % (worker.get("workerName"), gpus or "none",
                                                       worker.get("driverVersion")),
                  "recipe     %s %s" % (recipe.get("name"), recipe.get("version"))]
    for v, keyid in result["validations"]:
        gpu = v.get("gpu") or {}
        lines.append("validation %s on %s (compute capability %s), key %s" % (
            v.get("verdict"), gpu.get("name"), gpu.get("computeCapability"), keyid[:16]))
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel")
    ap.add_argument("--keys", required=True)
    ap.add_argument("--provenance")
    ap.add_argument("--require-validated-arch", default="")
    ap.add_argument("--owner", default="")
    ap.add_argument("--cafile")
    args = ap.parse_args(argv)
    try:
        key_set = read(args.keys, MAX_DOCUMENT, args.cafile)
        keys = load_keys(key_set)
        sha256 = sha256_of(args.wheel, args.cafile)
        name = urllib.parse.unquote(os.path.basename(urllib.parse.urlparse(args.wheel).path)) \
            if is_url(args.wheel) else os.path.basename(args.wheel)
    except Unreachable as e:
        print("verify_provenance: " + str(e), file=sys.stderr)
        return 3
    except (Unreadable, UnicodeDecodeError) as e:
        print("verify_provenance: " + str(e), file=sys.stderr)
        return 2
    source = args.provenance or args.wheel + ".intoto.jsonl"
    try:
        envelopes = load_envelopes(read(source, MAX_DOCUMENT, args.cafile))
    except Unreachable as e:
        if not e.missing:
            print("verify_provenance: " + str(e), file=sys.stderr)
            return 3
        print("REFUSED: no provenance at " + source)
        return 1
    except (Unreadable, UnicodeDecodeError) as e:  # a provenance file altered past parsing
        print("REFUSED: %s: %s" % (source, e))
        return 1
    result = verify(name, sha256, envelopes, keys, args.require_validated_arch, args.owner)
    expired = key_set_expired(key_set)
    if expired:
        result["problems"].insert(0, expired)
        result["ok"] = False
    print("wheel      %s sha256 %s" % (name, sha256))
    for line in describe(result):
        print(line)
    if not result["ok"]:
        for p in result["problems"]:
            print("REFUSED: " + p)
        return 1
    print("verified")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
