"""A checker of PEP 825 ("Wheel Variants: Package Format") written from the PEP's text, for
the farm's variants path: a project page's variant wheels, their variant.json, and the
{name}-{version}-variants.json the page links. check_project() returns the problems found
(an empty list when everything agrees); each names the rule of the PEP it breaks."""

import base64
import csv
import hashlib
import io
import json
import re
import urllib.error
import urllib.parse
import urllib.request
import zipfile

# "The variant label MUST consist only of 0-9, a-z, _ and . ASCII characters, and be 1-16
# characters long"
LABEL = re.compile(r"^[0-9a-z_.]{1,16}$")
# "The namespace and feature name components MUST be non-empty and consist only of 0-9,
# a-z and _ ... The feature value MUST be non-empty and consist only of 0-9, a-z, _ and ."
NAME = re.compile(r"^[a-z0-9_]+$")
VALUE = re.compile(r"^[a-z0-9_.]+$")
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"


def normalize_name(name):
    """The wheel file name's distribution: runs of -_. become _, lower case."""
    return re.sub(r"[-_.]+", "_", name).lower()


def parse_variant_filename(filename):
    """{distribution}-{version}(-{build tag})?-{python tag}-{abi tag}-{platform tag}-{label}.whl:
    (dist, version, build, python, abi, platform, label) or an error string."""
    if not filename.endswith(".whl"):
        return "not a wheel file name"
    parts = filename[:-4].split("-")
    if len(parts) == 7:
        dist, version, build, py, abi, plat, label = parts
        if not build[:1].isdigit():
            return "the build tag %r must start with a digit" % build
    elif len(parts) == 6:
        dist, version, py, abi, plat, label = parts
        build = ""
    else:
        return "%d dash-separated components; a variant wheel has 6 or 7" % len(parts)
    if py[:1].isdigit():
        return "the python tag %r starts with a digit" % py
    if not LABEL.match(label):
        return "variant label %r is not ^[0-9a-z_.]{1,16}$" % label
    return dist, version, build, py, abi, plat, label


def check_metadata(doc, where, labels=None):
    """The variant metadata structure ($schema, default-priorities, variants)."""
    problems = []
    if not isinstance(doc, dict):
        return ["%s: not a JSON object" % where]
    schema = doc.get("$schema", "")
    if not isinstance(schema, str) or not re.search(r"v\d+\.\d+\.\d+", schema):
        problems.append("%s: $schema %r is not a URL with a format version" % (where, schema))
    prio = doc.get("default-priorities")
    if not isinstance(prio, dict) or not isinstance(prio.get("namespace"), list):
        problems.append("%s: default-priorities.namespace (REQUIRED) is missing" % where)
        prio = {"namespace": []}
    variants = doc.get("variants")
    if not isinstance(variants, dict):
        return problems + ["%s: variants is not an object" % where]
    if labels is not None and sorted(variants) != sorted(labels):
        problems.append("%s: variants holds %s, expected %s" % (where, sorted(variants),
                                                                sorted(labels)))
    for label, props in variants.items():
        if not LABEL.match(label):
            problems.append("%s: label %r is not a variant label" % (where, label))
        if not isinstance(props, dict):
            problems.append("%s: %s: properties are not an object" % (where, label))
            continue
        if (label == "null") != (not props):
            problems.append("%s: the label null is exactly the variant with zero properties"
                            % where)
        for ns, features in props.items():
            if not NAME.match(ns):
                problems.append("%s: %s: namespace %r" % (where, label, ns))
            if ns not in prio["namespace"]:
                problems.append("%s: namespace %r is not in default-priorities.namespace"
                                % (where, ns))
            for feature, values in (features or {}).items():
                if not NAME.match(feature):
                    problems.append("%s: %s: feature %r" % (where, label, feature))
                if not isinstance(values, list) or not values:
                    problems.append("%s: %s: %s :: %s has no value list" % (where, label, ns,
                                                                           feature))
                    continue
                for v in values:
                    if not isinstance(v, str) or not VALUE.match(v):
                        problems.append("%s: %s :: %s :: %r is not a feature value"
                                        % (where, ns, feature, v))
    return problems


def wheel_variant_json(data, filename, label, version):
    """(variant.json, problems) of a downloaded variant wheel: one *.dist-info holding
    variant.json, listed in RECORD with its hash, METADATA's version that of the name."""
    problems = []
    z = zipfile.ZipFile(io.BytesIO(data))
    names = z.namelist()
    dist_infos = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
    if len(dist_infos) != 1:
        return None, ["%s: %d .dist-info directories" % (filename, len(dist_infos))]
    dist_info = dist_infos.pop()
    path = dist_info + "/variant.json"
    if path not in names:
        return None, ["%s: no %s (a variant wheel MUST include it)" % (filename, path)]
    raw = z.read(path)
    rows = {r[0]: r for r in csv.reader(io.StringIO(z.read(dist_info + "/RECORD").decode()))
            if r}
    digest = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(raw).digest()).rstrip(
        b"=").decode()
    if rows.get(path, [None, None])[1] != digest:
        problems.append("%s: RECORD does not list %s with its hash" % (filename, path))
    metadata = z.read(dist_info + "/METADATA").decode()
    m = re.search(r"^Version: (.+)$", metadata, re.M)
    if not m or m.group(1).strip() != version:
        problems.append("%s: METADATA Version %r is not the name's %r" % (
            filename, m and m.group(1), version))
    doc = json.loads(raw)
    problems += check_metadata(doc, filename + " variant.json", [label])
    return doc, problems


def fetch(url, accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.read()
    except urllib.error.HTTPError as e:
        raise AssertionError("%s: HTTP %d: %s" % (url, e.code, e.read()[:2000])) from None


def check_project(page_url):
    """Every rule above over one project page of a variants index; returns (problems,
    {label: wheel file names})."""
    page = json.loads(fetch(page_url, JSON_ACCEPT))
    problems, by_version, variants_files, labels = [], {}, {}, {}
    for f in page["files"]:
        url = urllib.parse.urljoin(page_url, f["url"])
        data = fetch(url)
        if hashlib.sha256(data).hexdigest() != f["hashes"].get("sha256"):
            problems.append("%s: bytes do not match the page's sha256" % f["filename"])
        if f["filename"].endswith("-variants.json"):
            variants_files[f["filename"]] = json.loads(data)
            continue
        parsed = parse_variant_filename(f["filename"])
        if isinstance(parsed, str):
            problems.append("%s: %s" % (f["filename"], parsed))
            continue
        dist, version, _, _, _, _, label = parsed
        doc, found = wheel_variant_json(data, f["filename"], label, version)
        problems += found
        by_version.setdefault((dist, version), []).append((label, doc, f["filename"]))
        labels.setdefault(label, []).append(f["filename"])
    for (dist, version), wheels in by_version.items():
        # "{name}-{version}-variants.json ... normalized according to the same rules as
        # wheel files"; "The link to this file MUST be present on all index pages where the
        # variant wheels are linked".
        name = "%s-%s-variants.json" % (normalize_name(dist), version)
        doc = variants_files.get(name)
        if doc is None:
            problems.append("the page links no %s" % name)
            continue
        problems += check_metadata(doc, name, sorted({w[0] for w in wheels}))
        for label, wheel_doc, filename in wheels:
            if wheel_doc is None:
                continue
            # "The tools MUST ensure that the variant metadata across multiple variant wheels
            # of the same package version and the index-level metadata file is consistent."
            if wheel_doc["variants"].get(label) != doc.get("variants", {}).get(label):
                problems.append("%s: variant.json's %s differs from %s" % (filename, label, name))
            if wheel_doc.get("default-priorities") != doc.get("default-priorities"):
                problems.append("%s: default-priorities differ from %s" % (filename, name))
        # "Every variant label MUST uniquely correspond to a specific set of variant
        # properties" within a version: one property set per label is what the dict holds,
        # and no two labels may name the same set.
        sets = [json.dumps(p, sort_keys=True) for p in doc.get("variants", {}).values()]
        if len(sets) != len(set(sets)):
            problems.append("%s: two labels name the same properties" % name)
    return problems, labels
