#!/usr/bin/env python3
"""Turns installed distributions back into real wheels, from their RECORD files, so a
machine's own Python environment can be served as an upstream index (fake_pyindex.py):
the bytes are those installed, each checked against its RECORD hash.

  python3 repack_installed.py --out DIR [--site DIR ...] [--prefix DIR]
                              [--closure NAME ...] [--deflate]

Run it with the interpreter whose distributions are repacked (importlib.metadata looks at
its paths, or at the --site directories: a Debian dist-packages folder, say).
  --closure NAME  repack NAME and, recursively, what its METADATA requires (with the
                  extras each requirement asks for, as `cuda-toolkit[cudart,...]`; rows
                  under other markers are followed where installed, reported where not);
                  without it, every distribution that has a RECORD.
  --prefix        the installation prefix (default sys.prefix): RECORD rows outside the
                  site directory must lie under it (scripts in bin/, data files).
  --deflate       compress (default: stored, as pip installs both alike and stored is
                  several times faster for a GiB of shared libraries).

Per distribution, from its .dist-info (the installed name and version are kept):
  - files under the site directory go to the wheel's root; files elsewhere under the
    prefix to <name>-<version>.data/scripts/ (bin/) or .../data/ (relative to the prefix);
    the console and GUI scripts an installer wrote from entry_points.txt are left out
    (the installer writes them again);
  - left out as installers write them, not wheels (PEP 376, 610, 627): RECORD (written
    anew), INSTALLER, REQUESTED, direct_url.json, and .pyc files RECORD lists unhashed;
  - refused (the distribution is not repacked, the reason is in the summary): a row
    outside the prefix or absolute, a row without a hash, a file missing or whose size or
    sha256 differs from its RECORD (modified after install), no WHEEL file (no tags).
The file mode is kept (shared libraries and scripts stay executable); timestamps are
fixed and entries sorted, dist-info last, so a repack is reproducible.

Prints a JSON summary: wheels (name, file, files, bytes, sha256), refused (name, reason),
missing (required but not installed), totals and seconds. Exit 1 when a distribution
named by --closure is missing or refused.
"""

import argparse
import base64
import csv
import hashlib
import io
import json
import os
import re
import sys
import time
import zipfile
from importlib import metadata

FIXED_TIME = (2026, 1, 1, 0, 0, 0)
INSTALLER_FILES = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


class Refused(Exception):
    pass


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def record_hash(digest):
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def read_checked(path, expected_hash, expected_size):
    """The file's bytes, refused unless they match RECORD's sha256 and size."""
    algo, _, want = expected_hash.partition("=")
    if algo != "sha256" or not want:
        raise Refused("%s: RECORD hash %r is not sha256" % (path, expected_hash))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Refused("%s: %s" % (path, e.strerror))
    if expected_size and str(len(data)) != expected_size:
        raise Refused("%s: %d bytes, RECORD says %s (modified after install)"
                      % (path, len(data), expected_size))
    if record_hash(hashlib.sha256(data).digest()) != expected_hash:
        raise Refused("%s: sha256 differs from RECORD (modified after install)" % path)
    return data


def generated_scripts(dist):
    """The names of the scripts an installer writes from entry_points.txt."""
    return {ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")}


def within(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def arcname_of(row_path, site, prefix, data_dir, scripts):
    """Where a RECORD row goes in the wheel; None to leave it out."""
    if os.path.isabs(row_path) or "\\" in row_path:
        raise Refused("RECORD names %r: not a relative path" % row_path)
    disk = os.path.normpath(os.path.join(site, row_path))
    if within(disk, site):
        return disk, os.path.relpath(disk, site).replace(os.sep, "/")
    if not within(disk, prefix):
        raise Refused("RECORD names %r, outside %s" % (row_path, prefix))
    rel = os.path.relpath(disk, prefix).replace(os.sep, "/")
    if rel.startswith("bin/") and rel.count("/") == 1:
        if rel[4:] in scripts:
            return disk, None
        return disk, "%s/scripts/%s" % (data_dir, rel[4:])
    return disk, "%s/data/%s" % (data_dir, rel)


def compressed_tag(wheel_text):
    tags = [line.split(":", 1)[1].strip() for line in wheel_text.splitlines()
            if line.lower().startswith("tag:")]
    if not tags:
        raise Refused("WHEEL names no Tag")
    parts = [[], [], []]
    for tag in tags:
        fields = tag.split("-")
        if len(fields) != 3:
            raise Refused("WHEEL Tag %r is not PY-ABI-PLATFORM" % tag)
        for seen, value in zip(parts, fields):
            if value not in seen:
                seen.append(value)
    return "-".join(".".join(p) for p in parts)


def repack(dist, out_dir, prefix, compression):
    info_dir = str(dist._path)  # a PathDistribution: the .dist-info folder on disk
    if not info_dir.endswith(".dist-info"):
        raise Refused("installed as %s, not a .dist-info" % os.path.basename(info_dir))
    site = os.path.dirname(os.path.abspath(info_dir))
    info_name = os.path.basename(info_dir)
    record, wheel_text = dist.read_text("RECORD"), dist.read_text("WHEEL")
    if record is None:
        raise Refused("no RECORD")
    if wheel_text is None:
        raise Refused("no WHEEL file (its tags are unknown)")
    data_dir = info_name[:-len(".dist-info")] + ".data"
    scripts = generated_scripts(dist)
    entries = {}
    for row in csv.reader(io.StringIO(record)):
        if not row:
            continue
        path, digest, size = (row + ["", ""])[:3]
        if path.startswith(info_name + "/") and path[len(info_name) + 1:] in INSTALLER_FILES:
            continue
        disk, arc = arcname_of(path, site, prefix, data_dir, scripts)
        if arc is None:
            continue
        if not digest:
            if path.endswith(".pyc"):
                continue
            raise Refused("RECORD lists %s without a hash" % path)
        if arc in entries:
            raise Refused("RECORD lists %s twice" % path)
        entries[arc] = (read_checked(disk, digest, size), os.stat(disk).st_mode)
    if info_name + "/METADATA" not in entries:
        raise Refused("RECORD does not list METADATA")
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    version = dist.version.replace("-", "_")
    filename = "%s-%s-%s.whl" % (name, version, compressed_tag(wheel_text))
    rows, order = [], sorted(entries, key=lambda a: (a.startswith(info_name + "/"), a))
    path = os.path.join(out_dir, filename)
    total = 0
    with zipfile.ZipFile(path + ".part", "w", compression) as z:
        for arc in order:
            data, mode = entries[arc]
            zi = zipfile.ZipInfo(arc, FIXED_TIME)
            zi.external_attr = (mode & 0o777 | 0o100000) << 16
            zi.compress_type = compression
            z.writestr(zi, data)
            rows.append([arc, record_hash(hashlib.sha256(data).digest()), str(len(data))])
            total += len(data)
        rows.append([info_name + "/RECORD", "", ""])
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        zi = zipfile.ZipInfo(info_name + "/RECORD", FIXED_TIME)
        zi.external_attr = 0o100644 << 16
        zi.compress_type = compression
        z.writestr(zi, text.getvalue())
    os.replace(path + ".part", path)
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    return {"name": dist.metadata["Name"], "version": dist.version, "file": filename,
            "files": len(entries) + 1, "bytes": total, "size": os.path.getsize(path),
            "sha256": sha}


def requirements(dist, extras):
    """(name, extras) of what `dist` requires with `extras` asked for: rows under an
    `extra == X` marker only for an X asked for; other markers are not evaluated (what is
    installed is followed, what is not is reported)."""
    out = []
    for req in dist.requires or []:
        spec, _, marker = req.partition(";")
        wanted = re.findall(r"\bextra\s*==\s*[\"']([^\"']+)[\"']", marker)
        if wanted and not {normalize(w) for w in wanted} & extras:
            continue
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", spec)
        if m:
            asked = {normalize(e) for e in (m.group(2) or "").split(",") if e.strip()}
            out.append((normalize(m.group(1)), frozenset(asked)))
    return out


def select(installed, closure):
    if not closure:
        return sorted(installed), []
    done, missing = {}, set()
    todo = [(normalize(n), frozenset()) for n in closure]
    while todo:
        name, extras = todo.pop()
        if name not in installed:
            missing.add(name)
            continue
        if name in done and extras <= done[name]:
            continue
        done[name] = done.get(name, frozenset()) | extras
        todo.extend(requirements(installed[name], done[name]))
    return sorted(done), sorted(missing)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--site", action="append", help="look only here (repeatable)")
    p.add_argument("--prefix", default=sys.prefix)
    p.add_argument("--closure", action="append")
    p.add_argument("--deflate", action="store_true")
    args = p.parse_args()
    start = time.monotonic()
    os.makedirs(args.out, exist_ok=True)
    installed = {}
    for dist in metadata.distributions(**({"path": args.site} if args.site else {})):
        name = dist.metadata["Name"]
        if name:
            installed.setdefault(normalize(name), dist)  # the first on the path wins, as import
    names, missing = select(installed, args.closure)
    compression = zipfile.ZIP_DEFLATED if args.deflate else zipfile.ZIP_STORED
    prefix = os.path.abspath(args.prefix)
    wheels, refused = [], []
    for name in names:
        try:
            wheels.append(repack(installed[name], args.out, prefix, compression))
        except Refused as e:
            refused.append({"name": name, "reason": str(e)})
    summary = {"wheels": wheels, "refused": refused, "missing": missing,
               "total_files": sum(w["files"] for w in wheels),
               "total_bytes": sum(w["bytes"] for w in wheels),
               "seconds": round(time.monotonic() - start, 2)}
    json.dump(summary, sys.stdout, indent=2)
    sys.stdout.write("\n")
    if args.closure and (refused or set(missing) & {normalize(n) for n in args.closure}):
        sys.exit(1)


if __name__ == "__main__":
    main()
