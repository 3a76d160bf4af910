#!/usr/bin/env python3
"""Checks the farm's Dockerfiles and compose file for reproducibility and leaked secrets.

hadolint is not packaged for Debian, so this covers the rules the farm relies on:
  pin      every FROM names a build stage, scratch, a digest (@sha256:...) or an exact tag:
           a tag holding a version with at least two parts (12.12-slim, 13.0.1-devel-...) or
           a date (bookworm-20250908). "latest", no tag, and floating tags (12, bookworm,
           12-slim) are refused. ARG defaults declared before the first FROM are substituted;
           a FROM variable without a default is refused.
  stages   the files named with --multi-stage (default farmd.Dockerfile and
           farm-worker.Dockerfile) have at least two stages and the last copies from another.
  secrets  no ENV or ARG is named like a credential (TOKEN, SECRET, PASSWORD, API_KEY, ...),
           since build arguments and ENV values stay in the image history; no line carries
           a literal that looks like a GitHub, Hugging Face, AWS or private key.
  compose  (with --compose FILE) every service builds from a Dockerfile that exists or uses a
           localhost/ or pinned image; services built from farm-worker.Dockerfile reserve a GPU.

Usage: check-dockerfiles.py [--multi-stage NAME ...] [--compose FILE] PATH...
PATH is a Dockerfile or a folder (its *Dockerfile files). Exit status 0 when clean, 1 with
one "file:line: rule: message" per problem, 2 on bad usage.
"""
import argparse
import os
import re
import sys

SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW(OR)?D|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY|CREDENTIAL|AUTH(?!OR))", re.I)
SECRET_VALUE = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|hf_[A-Za-z0-9]{30,}"
    r"|AKIA[0-9A-Z]{16}|glpat-[A-Za-z0-9_-]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----)")
EXACT_TAG = re.compile(r"(\d+\.\d+|(19|20)\d{6})")
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def logical_lines(text):
    """Yields (first line number, instruction text) with continuations joined."""
    buf, start = [], None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if buf and line.lstrip().startswith("#"):
            continue  # comment lines inside a continued instruction
        if start is None:
            start = number
        if line.endswith("\\"):
            buf.append(line[:-1])
            continue
        buf.append(line)
        yield start, " ".join(part.strip() for part in buf)
        buf, start = [], None
    if buf:
        yield start, " ".join(part.strip() for part in buf)


def parse_assignments(rest):
    """ENV/ARG bodies: 'K=V K2="v 2"', 'K V' (legacy ENV) or a bare 'K' (ARG)."""
    rest = rest.strip()
    if "=" not in rest.split(" ")[0]:
        name, _, value = rest.partition(" ")
        return [(name, value.strip() or None)]
    pairs = []
    for m in re.finditer(r'([A-Za-z_][A-Za-z0-9_]*)=("([^"\\]|\\.)*"|\'[^\']*\'|\S*)', rest):
        value = m.group(2)
        if value[:1] in "\"'":
            value = value[1:-1]
        pairs.append((m.group(1), value))
    return pairs


def substitute(text, env):
    missing = []

    def repl(m):
        name = m.group(1) or m.group(4)
        if name in env and env[name] is not None:
            return env[name]
        if m.group(3) is not None:
            return m.group(3)
        missing.append(name)
        return ""
    return VAR.sub(repl, text), missing


def check_image(ref, stages):
    """Returns a problem string, or None when ref is pinned or a stage."""
    if ref.lower() in stages or ref == "scratch":
        return None
    if DIGEST.search(ref):
        return None
    last = ref.rsplit("/", 1)[-1]
    if ":" not in last:
        return f"'{ref}' has no tag (means latest); pin an exact tag or a digest"
    tag = last.split(":", 1)[1]
    if tag == "latest":
        return f"'{ref}' uses the latest tag; pin an exact tag or a digest"
    if not EXACT_TAG.search(tag):
        return f"'{ref}' uses the floating tag '{tag}'; pin an exact version tag or a digest"
    return None


def check_dockerfile(path, multi_stage_names):
    problems = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    global_args, stages, froms, final_copies_from = {}, set(), 0, False
    for number, line in logical_lines(text):
        where = f"{path}:{number}"
        if SECRET_VALUE.search(line):
            problems.append(f"{where}: secrets: a literal that looks like a credential")
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "ARG" and froms == 0:
            for name, value in parse_assignments(rest):
                global_args[name] = value
        if word in ("ARG", "ENV"):
            for name, _ in parse_assignments(rest):
                if SECRET_NAME.search(name):
                    problems.append(f"{where}: secrets: {word} {name} would keep a credential in the "
                                    "image; mount it at run time or use a build secret")
        if word == "FROM":
            froms += 1
            final_copies_from = False
            tokens = [t for t in rest.split() if not t.startswith("--")]
            if not tokens:
                problems.append(f"{where}: pin: FROM without an image")
                continue
            ref, missing = substitute(tokens[0], global_args)
            if missing:
                problems.append(f"{where}: pin: FROM uses ${missing[0]}, which has no default")
            else:
                problem = check_image(ref, stages)
                if problem:
                    problems.append(f"{where}: pin: {problem}")
            if len(tokens) >= 3 and tokens[1].upper() == "AS":
                stages.add(tokens[2].lower())
        if word in ("COPY", "ADD") and "--from=" in rest:
            final_copies_from = True
    if froms == 0:
        problems.append(f"{path}:1: pin: no FROM instruction")
    if os.path.basename(path) in multi_stage_names:
        if froms < 2:
            problems.append(f"{path}:1: stages: must be multi-stage (a build stage and a runtime stage)")
        elif not final_copies_from:
            problems.append(f"{path}:1: stages: the last stage copies nothing from a build stage")
    return problems


def check_compose(path):
    try:
        import yaml
    except ImportError:
        return [f"{path}:1: compose: python3-yaml is needed to read compose files"]
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    problems = []
    base = os.path.dirname(os.path.abspath(path))
    for name, service in (doc.get("services") or {}).items():
        build = service.get("build")
        image = service.get("image", "")
        dockerfile = ""
        if build:
            context = build if isinstance(build, str) else build.get("context", ".")
            dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
            full = os.path.normpath(os.path.join(base, context, dockerfile))
            if not os.path.isfile(full):
                problems.append(f"{path}: compose: service {name} builds from missing {full}")
        elif image and not image.startswith("localhost/"):
            problem = check_image(image, set())
            if problem:
                problems.append(f"{path}: compose: service {name}: {problem}")
        elif not image:
            problems.append(f"{path}: compose: service {name} has neither build nor image")
        for key in (service.get("environment") or {}):
            if SECRET_NAME.search(str(key)):
                problems.append(f"{path}: secrets: service {name} sets {key} in its environment; "
                                "use a secrets file")
        if os.path.basename(dockerfile) == "farm-worker.Dockerfile":
            devices = (((service.get("deploy") or {}).get("resources") or {})
                       .get("reservations") or {}).get("devices") or []
            if not any("gpu" in (d.get("capabilities") or []) for d in devices):
                problems.append(f"{path}: compose: worker service {name} reserves no GPU")
    if SECRET_VALUE.search(open(path, encoding="utf-8").read()):
        problems.append(f"{path}: secrets: a literal that looks like a credential")
    return problems


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--multi-stage", action="append", dest="multi_stage",
                        help="file name that must be multi-stage (repeatable)")
    parser.add_argument("--compose", action="append", default=[])
    args = parser.parse_args(argv)
    multi = set(args.multi_stage or ["farmd.Dockerfile", "farm-worker.Dockerfile"])
    files = []
    for p in args.paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, n) for n in os.listdir(p)
                            if n.endswith("Dockerfile") or n.startswith("Dockerfile"))
        elif os.path.isfile(p):
            files.append(p)
        else:
            print(f"check-dockerfiles: no such file or folder: {p}", file=sys.stderr)
            return 2
    if not files:
        print("check-dockerfiles: no Dockerfiles found", file=sys.stderr)
        return 2
    problems = []
    for f in files:
        problems += check_dockerfile(f, multi)
    for c in args.compose:
        problems += check_compose(c)
    for p in problems:
        print(p)
    print(f"check-dockerfiles: {len(files)} Dockerfiles, {len(args.compose)} compose files, "
          f"{len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
