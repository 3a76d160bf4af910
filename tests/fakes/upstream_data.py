#!/usr/bin/env python3
"""Makes the content the upstream fakes serve, from what this machine really has:

  torch-wheels --out DIR --version 2.8.0+cu128 [--version ...] [--python-tag cp311 ...]
          [--requires 'nvidia-cublas-cu12==12.8.4.1; platform_system == "Linux"' ...]
      Small REAL wheels named torch, with real local versions, that install with pip and
      import. The package is an honest stand-in, not torch: torch.__version__ and
      torch.version.cuda (from the local label: +cu128 -> "12.8") and nothing else; a
      build that needs more says so by failing. Its METADATA declares the --requires given
      (as a real torch declares its nvidia-* wheels and triton). Tagged <py>-<py>-manylinux_2_28_x86_64
      like PyTorch's own wheels (Root-Is-Purelib: false).
  bulk-wheel --out DIR --name NAME --files N --bytes B
      A real wheel of N small files (B bytes each, distinct contents) for benchmarks: the
      file count of a large distribution (torch 2.11 installs about 11,800 files) without
      its bytes.
  host-wheels --out DIR
      The real wheels Debian ships for pip and setuptools (/usr/share/python-wheels).
  installed-wheel --out DIR --module wheel [--name wheel] [--python /usr/bin/python3]
      A pure-Python package the interpreter has installed from Debian (python3-wheel, which
      ships no wheel of itself), packed as a wheel of its true version (its .py files, no
      caches, its entry points), as `pip download NAME==VERSION` would fetch it on a
      machine with internet.
  redist --cuda /usr/local/cuda --out DIR [--components cuda_nvcc,cuda_cudart,...]
      NVIDIA-shaped redist archives and a redistrib_<label>.json manifest, made from this
      machine's toolkit. The files of each component are those its pip distribution's
      RECORD lists (the toolkit here is laid out from NVIDIA's nvidia-* wheels, whose
      dist-info sits in <cuda>/dist-info); versions are the distributions' own. The
      release label is the nvcc component's version unless --label gives the real one.
  cpython --out DIR [--python /usr/bin/python3.11]
      A relocatable CPython archive in python-build-standalone's install_only layout
      (python/bin/python3.X, python/lib/python3.X/..., python/include/python3.X), made from
      this machine's interpreter and named with its true version; a SHA256SUMS beside it.
      The test suite, caches, Debian's EXTERNALLY-MANAGED marker and links out of the tree
      (Debian's sitecustomize.py) are left out.
Each command prints a JSON summary (files, sha256, sizes) on stdout.
"""

import argparse
import ast
import base64
import csv
import glob
import hashlib
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile

PLATFORM = "linux-x86_64"
# redist component -> the pip distribution whose RECORD lists its files.
COMPONENT_DISTS = {
    "cuda_nvcc": "nvidia_cuda_nvcc",
    "cuda_crt": "nvidia_cuda_crt",
    "libnvvm": "nvidia_nvvm",
    "cuda_cudart": "nvidia_cuda_runtime",
    "cuda_cccl": "nvidia_cuda_cccl",
    "libcublas": "nvidia_cublas",
}
COMPONENT_NAMES = {
    "cuda_nvcc": "CUDA NVCC",
    "cuda_crt": "CUDA CRT",
    "libnvvm": "CUDA NVVM",
    "cuda_cudart": "CUDA Runtime (cudart)",
    "cuda_cccl": "CXX Core Compute Libraries",
    "libcublas": "CUDA cuBLAS",
}
DEFAULT_COMPONENTS = "cuda_nvcc,cuda_crt,libnvvm,cuda_cudart,cuda_cccl"
FIXED_TIME = (2026, 1, 1, 0, 0, 0)


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(out_dir, name, version, tag, files, requires_python=">=3.9", purelib=False,
                requires_dist=()):
    """Writes a wheel holding `files` ({path: bytes}) whose METADATA declares
    `requires_dist`, and returns its path."""
    dist = re.sub(r"[-_.]+", "_", name)
    info = "%s-%s.dist-info" % (dist, version)
    metadata = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: test stand-in\n"
                "Requires-Python: %s\n%s\n" % (name, version, requires_python, "".join(
                    "Requires-Dist: %s\n" % r for r in requires_dist))).encode()
    wheel = ("Wheel-Version: 1.0\nGenerator: upstream_data.py\nRoot-Is-Purelib: %s\nTag: %s\n"
             % ("true" if purelib else "false", tag)).encode()
    entries = dict(files)
    entries[info + "/METADATA"] = metadata
    entries[info + "/WHEEL"] = wheel
    rows = [[path, record_hash(data), str(len(data))] for path, data in entries.items()]
    rows.append([info + "/RECORD", "", ""])
    record = io.StringIO()
    csv.writer(record, lineterminator="\n").writerows(rows)
    entries[info + "/RECORD"] = record.getvalue().encode()
    path = os.path.join(out_dir, "%s-%s-%s.whl" % (dist, version, tag))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for member, data in entries.items():
            z.writestr(zipfile.ZipInfo(member, FIXED_TIME), data)
    return path


def cuda_of_local(version):
    m = re.search(r"\+cu(\d+)(\d)$", version)
    return "%s.%s" % (m.group(1), m.group(2)) if m else None


def torch_wheels(args):
    os.makedirs(args.out, exist_ok=True)
    made = []
    for version in args.version:
        cuda = cuda_of_local(version)
        init = ('"""A stand-in for torch in the farm\'s tests: its version and CUDA variant, '
                'nothing else."""\nfrom torch import version as version\n\n'
                "__version__ = version.__version__\n")
        ver = "__version__ = %r\ncuda = %r\nhip = None\n" % (version, cuda)
        for py in args.python_tag:
            tag = "%s-%s-manylinux_2_28_%s" % (py, py, args.arch)
            path = write_wheel(args.out, "torch", version, tag,
                               {"torch/__init__.py": init.encode(), "torch/version.py": ver.encode()},
                               requires_dist=args.requires or ())
            made.append(path)
    return summary(made)


def any_wheel(args):
    """A stand-in distribution: one module that says its name and version."""
    os.makedirs(args.out, exist_ok=True)
    package = re.sub(r"[-.]", "_", args.name).lower()
    files = {"%s/__init__.py" % package:
             ("NAME = %r\nVERSION = %r\n" % (args.name, args.version)).encode()}
    for item in args.file or ():
        dest, src = item.split("=", 1)
        with open(src, "rb") as f:
            files[dest] = f.read()
    return summary([write_wheel(args.out, args.name, args.version, args.tag, files,
                                requires_python=args.requires_python,
                                purelib=args.tag.endswith("-none-any"),
                                requires_dist=args.requires or ())])


def bulk_wheel(args):
    os.makedirs(args.out, exist_ok=True)
    package = re.sub(r"[-.]", "_", args.name)
    files = {"%s/__init__.py" % package: b"FILES = %d\n" % args.files}
    for i in range(args.files):
        body = (b"# %d\n" % i) + b"x" * max(0, args.bytes - 8)
        files["%s/part%03d/m%05d.py" % (package, i // 500, i)] = body
    return summary([write_wheel(args.out, args.name, "1.0", "py3-none-any", files, purelib=True)])


def host_wheels(args):
    os.makedirs(args.out, exist_ok=True)
    made = []
    for src in sorted(glob.glob("/usr/share/python-wheels/*.whl")):
        if os.path.basename(src).split("-")[0] in ("pip", "setuptools", "wheel"):
            dst = os.path.join(args.out, os.path.basename(src))
            shutil.copyfile(src, dst)
            made.append(dst)
    if not made:
        sys.exit("no wheels in /usr/share/python-wheels (Debian's python3-pip-whl)")
    return summary(made)


def installed_wheel(args):
    os.makedirs(args.out, exist_ok=True)
    where = subprocess.run(
        [args.python, "-c", "import importlib, importlib.metadata as m, os, sys; "
         "mod = importlib.import_module(sys.argv[1]); "
         "print(os.path.dirname(mod.__file__)); print(m.version(sys.argv[2])); "
         "print(repr(m.distribution(sys.argv[2]).read_text('entry_points.txt') or ''))",
         args.module, args.name or args.module],
        capture_output=True, text=True, check=True).stdout.split("\n")
    package_dir, version = where[0], where[1]
    files = {}
    entry_points = ast.literal_eval(where[2])
    if entry_points:  # how setuptools finds wheel's bdist_wheel command
        dist = re.sub(r"[-_.]+", "_", args.name or args.module)
        files["%s-%s.dist-info/entry_points.txt" % (dist, version)] = entry_points.encode()
    for root, dirs, names in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                disk = os.path.join(root, name)
                rel = os.path.relpath(disk, os.path.dirname(package_dir))
                with open(disk, "rb") as f:
                    files[rel] = f.read()
    if not files:
        sys.exit("%s has no .py files" % package_dir)
    return summary([write_wheel(args.out, args.name or args.module, version, "py3-none-any",
                                files, purelib=True)])


def summary(paths):
    return {"files": [{"path": p, "sha256": sha256_file(p), "size": os.path.getsize(p)}
                      for p in paths]}


def dist_info(cuda, dist):
    found = glob.glob(os.path.join(cuda, "dist-info", dist + "-*.dist-info"))
    if len(found) != 1:
        sys.exit("%s: no single %s dist-info (found %d): the toolkit is not laid out from "
                 "NVIDIA's wheels" % (cuda, dist, len(found)))
    version = os.path.basename(found[0])[len(dist) + 1:-len(".dist-info")]
    return found[0], version


def component_files(cuda, info):
    """(path in the toolkit, path on disk) for each file the distribution's RECORD lists."""
    files = []
    with open(os.path.join(info, "RECORD"), newline="") as f:
        for row in csv.reader(f):
            path = row[0]
            m = re.match(r"^nvidia/cu\d+/(.+)$", path)
            if not m or m.group(1).startswith(".metadata/"):
                continue
            disk = os.path.join(cuda, m.group(1))
            if not os.path.isfile(disk):
                sys.exit("%s lists %s, missing at %s" % (info, path, disk))
            files.append((m.group(1), disk))
    return files


def add_file(tar, arcname, disk):
    info = tar.gettarinfo(disk, arcname)
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = time.mktime(FIXED_TIME + (0, 0, -1))
    with open(disk, "rb") as f:
        tar.addfile(info, f)


def redist(args):
    os.makedirs(args.out, exist_ok=True)
    manifest = {"release_date": "2026-01-01", "release_product": "cuda"}
    versions = {}
    for component in args.components.split(","):
        if component not in COMPONENT_DISTS:
            sys.exit("unknown component %s (known: %s)" % (component, ", ".join(COMPONENT_DISTS)))
        info, version = dist_info(args.cuda, COMPONENT_DISTS[component])
        versions[component] = version
        top = "%s-%s-%s-archive" % (component, PLATFORM, version)
        rel = "%s/%s/%s.tar.xz" % (component, PLATFORM, top)
        path = os.path.join(args.out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with lzma.open(path, "wb", preset=args.xz_preset) as xz, \
                tarfile.open(fileobj=xz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for arcname, disk in sorted(component_files(args.cuda, info)):
                add_file(tar, top + "/" + arcname, disk)
            licenses = glob.glob(os.path.join(info, "licenses", "*")) or \
                glob.glob(os.path.join(info, "License.txt"))
            if licenses:
                add_file(tar, top + "/LICENSE", licenses[0])
        md5 = hashlib.md5(open(path, "rb").read()).hexdigest()
        manifest[component] = {
            "name": COMPONENT_NAMES[component],
            "license": "CUDA Toolkit",
            "license_path": "%s/LICENSE.txt" % component,
            "version": version,
            PLATFORM: {"relative_path": rel, "sha256": sha256_file(path), "md5": md5,
                       "size": str(os.path.getsize(path))},
        }
    label = args.label or versions.get("cuda_nvcc") or next(iter(versions.values()))
    manifest = {"release_date": manifest.pop("release_date"), "release_label": label,
                **manifest}
    name = os.path.join(args.out, "redistrib_%s.json" % label)
    with open(name, "w") as f:
        json.dump(manifest, f, indent=2)
    return {"manifest": name, "label": label, "components": {
        c: manifest[c][PLATFORM] for c in versions}}


def cpython(args):
    python = os.path.realpath(args.python)
    probe = subprocess.run(
        [python, "-c", "import sys, sysconfig, json; print(json.dumps({'version': "
         "'%d.%d.%d' % sys.version_info[:3], 'stdlib': sysconfig.get_paths()['stdlib'], "
         "'include': sysconfig.get_paths()['include'], 'pyconfig': "
         "sysconfig.get_config_h_filename()}))"],
        check=True, capture_output=True, text=True)
    facts = json.loads(probe.stdout)
    version = facts["version"]
    short = ".".join(version.split(".")[:2])
    name = "cpython-%s+%s-x86_64-unknown-linux-gnu-install_only.tar.gz" % (version, args.release)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, name)

    def skip(info):
        parts = info.name.split("/")
        if "__pycache__" in parts or parts[-1] == "EXTERNALLY-MANAGED":
            return None
        if info.issym() and os.path.isabs(info.linkname):
            return None  # Debian's sitecustomize.py points into /etc: not relocatable
        if len(parts) > 3 and parts[1] == "lib" and parts[3] in ("test", "idlelib", "tkinter",
                                                                   "turtledemo"):
            return None
        if len(parts) > 3 and parts[3] in ("site-packages", "dist-packages"):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(path, "w:gz", compresslevel=6) as tar:
        tar.add(python, "python/bin/python" + short, filter=skip)
        for link in ("python3", "python"):
            info = tarfile.TarInfo("python/bin/" + link)
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, "python" + short, 0o777
            tar.addfile(info)
        tar.add(facts["stdlib"], "python/lib/python" + short, filter=skip)
        include = "python/include/python" + short
        tar.add(facts["include"], include,
                filter=lambda i: None if i.name == include + "/pyconfig.h" else skip(i))
        # Debian's pyconfig.h only includes the multiarch one: carry the real file instead.
        tar.add(facts["pyconfig"], include + "/pyconfig.h", filter=skip)
    sums = os.path.join(args.out, "SHA256SUMS")
    digest = sha256_file(path)
    with open(sums, "a") as f:
        f.write("%s  %s\n" % (digest, name))
    return {"archive": path, "name": name, "version": version, "sha256": digest,
            "size": os.path.getsize(path)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("torch-wheels")
    p.add_argument("--out", required=True)
    p.add_argument("--version", action="append", required=True)
    p.add_argument("--python-tag", action="append")
    p.add_argument("--requires", action="append", help="a Requires-Dist of the stand-in")
    p.add_argument("--arch", default="x86_64", help="the manylinux_2_28 architecture")
    p = sub.add_parser("wheel")
    p.add_argument("--out", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--tag", default="py3-none-any")
    p.add_argument("--requires", action="append", help="a Requires-Dist")
    p.add_argument("--requires-python", default=">=3.9")
    p.add_argument("--file", action="append", help="DEST=SRC: a file of the wheel, from SRC")
    p = sub.add_parser("bulk-wheel")
    p.add_argument("--out", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--files", type=int, default=12000)
    p.add_argument("--bytes", type=int, default=4096)
    p = sub.add_parser("host-wheels")
    p.add_argument("--out", required=True)
    p = sub.add_parser("installed-wheel")
    p.add_argument("--out", required=True)
    p.add_argument("--module", required=True)
    p.add_argument("--name")
    p.add_argument("--python", default="/usr/bin/python3")
    p = sub.add_parser("redist")
    p.add_argument("--cuda", default="/usr/local/cuda")
    p.add_argument("--out", required=True)
    p.add_argument("--components", default=DEFAULT_COMPONENTS)
    p.add_argument("--label")
    p.add_argument("--xz-preset", type=int, default=0)
    p = sub.add_parser("cpython")
    p.add_argument("--out", required=True)
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--release", default="local")
    args = parser.parse_args()
    if args.command == "torch-wheels" and not args.python_tag:
        args.python_tag = ["cp%d%d" % sys.version_info[:2]]
    result = {"torch-wheels": torch_wheels, "wheel": any_wheel, "bulk-wheel": bulk_wheel,
              "host-wheels": host_wheels, "installed-wheel": installed_wheel, "redist": redist,
              "cpython": cpython}[args.command](args)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
