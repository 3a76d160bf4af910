#!/usr/bin/env python3
"""A protocol-faithful fake of a Python package index (the "simple" repository API), for
tests. Serves the wheels and sdists of folders, each folder one index under a URL prefix,
as PyPI serves /simple/ and download.pytorch.org serves its per-CUDA indexes (/whl/cu128/,
/whl/cu130/) and their test channels, where release candidates are published weeks before
a release, often under the final version numbers (/whl/test/cu130/):

  --index /whl/cu128=DIR   (repeatable; DIR holds the files of that index)
  --index /whl/test/cu130=DIR

A request goes to the index with the longest prefix it falls under, so nested prefixes
(/whl/ and /whl/test/cu130/) are each their own index, as on download.pytorch.org.

Implements, as the packaging specifications (PEP 503, 691, 658, 700, 714) describe them:
  GET PREFIX/                 the project list
  GET PREFIX/<project>/       the project page: one entry per file whose normalized project
                              name is <project>; a name that is not normalized, or a URL
                              without its trailing '/', answers 301 to the canonical URL
  GET PREFIX/<file>           the file (URL-decoded: '+' of a local version travels as %2B)
  GET PREFIX/<file>.metadata  a wheel's METADATA, verbatim (PEP 658)
Pages are negotiated by Accept (q-values honoured; a ?format= query overrides it as PyPI
allows): application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html,
text/html, and the .latest+json / .latest+html aliases; no Accept or */* gets text/html;
nothing acceptable gets 406. Every page says Vary: Accept.
  - HTML: <meta name="pypi:repository-version">; per file an anchor whose href is the
    file's absolute path with #sha256=<hex>, data-requires-python (escaped), for wheels
    data-core-metadata and data-dist-info-metadata ("sha256=<hex>", PEP 714 keeps both in
    HTML), and data-yanked[="reason"].
  - JSON: meta.api-version 1.1, name, versions (PEP 700), files[] with filename, url
    (relative to the page: "../<file>"), hashes.sha256, requires-python, size, upload-time,
    yanked (false, true or the reason), core-metadata {"sha256": ...} for wheels (only the
    PEP 714 key: pip >= 22.3 failed on the old one in JSON).
  - Unknown project or file: 404.
  - Every page carries a strong ETag; If-None-Match with it answers 304 without a body
    (counted as "not-modified:<prefix>/<project>/").
A file is yanked by a sidecar "<file>.yanked" holding the reason (empty: no reason), or
with POST /_control/yank {"file": NAME, "reason": "..."}.

A private index: with --basic-auth USER:PASSWORD every request but the control
endpoints needs those HTTP Basic credentials (what pip sends from an index URL's
userinfo), else 401 with WWW-Authenticate. An index that offers no PEP 658 metadata:
--no-metadata (pages list none, .metadata answers 404). A hostile index:
POST /_control/link {"file": NAME, "url": URL} lists NAME (its true sha256 and size) at URL
instead of its own; {"file": NAME} alone lifts it. Redirects: fail-next with a 3xx status
and a Location header.

Control endpoints: fake_common.py and fake_files.py (corrupt, throttle, hide). Counters:
"file:<name>" per file or metadata fetched, "page:<prefix>/<project>/" per project page.
"""

import base64
import hashlib
import html
import json
import os
import re
import zipfile
from datetime import datetime, timezone
from urllib.parse import parse_qs, quote, unquote

from fake_common import parse_args, serve
from fake_files import FileHandler, FileServer

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPE = "application/vnd.pypi.simple.v1+html"
ALIASES = {
    JSON_TYPE: JSON_TYPE,
    "application/vnd.pypi.simple.latest+json": JSON_TYPE,
    HTML_TYPE: HTML_TYPE,
    "application/vnd.pypi.simple.latest+html": HTML_TYPE,
    "text/html": "text/html",
}
API_VERSION = "1.1"


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def project_of(filename):
    """The normalized project name of a wheel or sdist file name, or None."""
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        return normalize(parts[0]) if len(parts) in (5, 6) else None
    for ext in (".tar.gz", ".zip"):
        if filename.endswith(ext):
            stem = filename[: -len(ext)]
            return normalize(stem.rsplit("-", 1)[0]) if "-" in stem else None
    return None


def version_of(filename):
    if filename.endswith(".whl"):
        return filename.split("-")[1]
    stem = re.sub(r"\.(tar\.gz|zip)$", "", filename)
    return stem.rsplit("-", 1)[1]


def wheel_metadata(path):
    """The METADATA bytes of the wheel at `path`, or None."""
    try:
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                parts = name.split("/")
                if len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] == "METADATA":
                    return z.read(name)
    except (OSError, zipfile.BadZipFile):
        return None
    return None


def requires_python(metadata):
    for line in (metadata or b"").decode("utf-8", "replace").splitlines():
        if not line.strip():
            break
        if line.lower().startswith("requires-python:"):
            return line.split(":", 1)[1].strip()
    return None


def negotiate(accept, format_param):
    """The content type to answer with, or None for 406."""
    if format_param:
        return ALIASES.get(format_param)
    if not accept or not accept.strip():
        return "text/html"
    offers = []
    for pos, item in enumerate(accept.split(",")):
        fields = [f.strip() for f in item.split(";")]
        media, q = fields[0].lower(), 1.0
        for param in fields[1:]:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        if q > 0:
            offers.append((-q, pos, media))
    for _, _, media in sorted(offers):
        if media in ALIASES:
            return ALIASES[media]
        if media in ("*/*", "text/*"):
            return "text/html"
        if media == "application/*":
            return JSON_TYPE
    return None


class IndexServer(FileServer):
    def __init__(self, handler_class, args):
        super().__init__(handler_class, args)
        self.indexes = {}
        for spec in args.index:
            prefix, _, folder = spec.partition("=")
            self.indexes["/" + prefix.strip("/")] = os.path.abspath(folder)
        self.yanked = {}
        self.info_cache = {}
        self.links = {}  # file name -> the URL pages list it at

    def files(self, folder):
        names = []
        for name in sorted(os.listdir(folder)):
            if project_of(name) and os.path.isfile(os.path.join(folder, name)):
                names.append(name)
        return names

    def file_info(self, folder, name):
        """sha256, size, mtime, METADATA (wheels) of a file; cached by (path, mtime)."""
        path = os.path.join(folder, name)
        stat = os.stat(path)
        key = (path, stat.st_mtime_ns, stat.st_size)
        with self.lock:
            if key in self.info_cache:
                return self.info_cache[key]
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        metadata = wheel_metadata(path) if name.endswith(".whl") else None
        info = {"sha256": digest.hexdigest(), "size": stat.st_size, "mtime": stat.st_mtime,
                "metadata": metadata}
        with self.lock:
            self.info_cache[key] = info
        return info

    def yank_reason(self, folder, name):
        with self.lock:
            if name in self.yanked:
                return self.yanked[name]
        sidecar = os.path.join(folder, name + ".yanked")
        if os.path.exists(sidecar):
            with open(sidecar) as f:
                return f.read().strip()
        return None


class Handler(FileHandler):
    def handle_any(self):
        path = self.split()[0]
        want = self.server.args.basic_auth
        if want and not path.startswith("/_control/"):
            got = self.headers.get("Authorization", "")
            if got != "Basic " + base64.b64encode(want.encode()).decode():
                self.read_body()
                return self.send(401, "Unauthorized", "text/plain",
                                 {"WWW-Authenticate": 'Basic realm="fake index"'})
        return super().handle_any()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_any

    def control(self, path):
        if path == "/_control/link" and self.command == "POST":
            spec = (self.json_body() if self.body else None) or {}
            with self.server.lock:
                if spec.get("url"):
                    self.server.links[spec.get("file", "")] = spec["url"]
                else:
                    self.server.links.pop(spec.get("file", ""), None)
            return self.send(200, {"ok": True})
        if path == "/_control/yank" and self.command == "POST":
            spec = (self.json_body() if self.body else None) or {}
            with self.server.lock:
                if spec.get("on", True):
                    self.server.yanked[spec.get("file", "")] = spec.get("reason", "")
                else:
                    self.server.yanked.pop(spec.get("file", ""), None)
            return self.send(200, {"ok": True})
        return super().control(path)

    def route(self, path, query):
        if self.command not in ("GET", "HEAD"):
            return self.send(405, "Method Not Allowed", "text/plain", {"Allow": "GET, HEAD"})
        for prefix, folder in sorted(self.server.indexes.items(), key=lambda i: -len(i[0])):
            if path == prefix:
                return self.redirect(prefix + "/")
            if path.startswith(prefix + "/"):
                return self.in_index(prefix, folder, path[len(prefix) + 1:], query)
        return self.send(404, "Not Found", "text/plain")

    def redirect(self, location):
        self.send(301, "", "text/plain", {"Location": location})

    def in_index(self, prefix, folder, rest, query):
        if rest == "":
            return self.page(prefix, None, folder, query)
        name = unquote(rest)
        if "/" not in name:
            if name.endswith(".metadata"):
                return self.metadata(folder, name)
            if name in self.server.files(folder):
                return self.send_file(os.path.join(folder, name), name)
            looks_like_file = re.search(r"\.(whl|tar\.gz|zip)$", name)
            if not looks_like_file and re.fullmatch(r"[A-Za-z0-9._-]+", name):
                return self.redirect(prefix + "/" + rest + "/")  # a project without its '/'
            return self.send(404, "Not Found", "text/plain")
        project = name[:-1] if name.endswith("/") and name.count("/") == 1 else None
        if not project or not re.fullmatch(r"[A-Za-z0-9._-]+", project):
            return self.send(404, "Not Found", "text/plain")
        if project != normalize(project):
            return self.redirect(prefix + "/" + normalize(project) + "/")
        return self.page(prefix, project, folder, query)

    def metadata(self, folder, name):
        wheel = name[: -len(".metadata")]
        if (self.server.args.no_metadata or not wheel.endswith(".whl")
                or wheel not in self.server.files(folder)):
            return self.send(404, "Not Found", "text/plain")
        self.server.count_file(name)
        with self.server.lock:
            corrupt = name in self.server.corrupt
            hidden = name in self.server.hidden
        data = self.server.file_info(folder, wheel)["metadata"]
        if data is None or hidden:
            return self.send(404, "Not Found", "text/plain")
        if corrupt:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        return self.send(200, data, "application/octet-stream")

    def page(self, prefix, project, folder, query):
        ctype = negotiate(self.headers.get("Accept"), (query.get("format") or [None])[0])
        if ctype is None:
            return self.send(406, "Not Acceptable: this index serves " + JSON_TYPE + ", "
                             + HTML_TYPE + " and text/html", "text/plain", {"Vary": "Accept"})
        names = self.server.files(folder)
        if project is not None:
            names = [n for n in names if project_of(n) == project]
            if not names:
                return self.send(404, "Not Found", "text/plain", {"Vary": "Accept"})
            self.server.count("page:%s/%s/" % (prefix, project))
        else:
            self.server.count("page:%s/" % prefix)
        render = self.render_json if ctype == JSON_TYPE else self.render_html
        body = render(prefix, project, folder, names)
        data = json.dumps(body).encode() if isinstance(body, dict) else body.encode()
        # A strong validator of this representation, as PyPI's CDN gives one: a client that
        # sends it back in If-None-Match gets 304 while the page is unchanged (RFC 9110).
        etag = '"%s"' % hashlib.sha256(ctype.encode() + b"\0" + data).hexdigest()[:32]
        headers = {"Vary": "Accept", "ETag": etag}
        if etag in [t.strip() for t in (self.headers.get("If-None-Match") or "").split(",")]:
            self.server.count("not-modified:%s/%s/" % (prefix, project or ""))
            return self.send(304, b"", ctype, headers)
        return self.send(200, data, ctype, headers)

    def entries(self, folder, names):
        for name in names:
            info = self.server.file_info(folder, name)
            meta = None if self.server.args.no_metadata else info["metadata"]
            yield name, info, meta, self.server.yank_reason(folder, name)

    def link_of(self, name, own):
        with self.server.lock:
            return self.server.links.get(name, own)

    def render_json(self, prefix, project, folder, names):
        meta = {"api-version": API_VERSION}
        if project is None:
            projects = sorted({project_of(n) for n in names})
            return {"meta": meta, "projects": [{"name": p} for p in projects]}
        files = []
        for name, info, metadata, yanked in self.entries(folder, names):
            entry = {
                "filename": name,
                "url": self.link_of(name, "../" + quote(name)),
                "hashes": {"sha256": info["sha256"]},
                "size": info["size"],
                "upload-time": datetime.fromtimestamp(info["mtime"], timezone.utc)
                .strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "yanked": (yanked or True) if yanked is not None else False,
            }
            rp = requires_python(metadata)
            if rp:
                entry["requires-python"] = rp
            if metadata is not None:
                entry["core-metadata"] = {"sha256": hashlib.sha256(metadata).hexdigest()}
            files.append(entry)
        versions = sorted({version_of(n) for n in names})
        return {"meta": meta, "name": project, "versions": versions, "files": files}

    def render_html(self, prefix, project, folder, names):
        head = ('<!DOCTYPE html>\n<html><head><meta name="pypi:repository-version" content="%s">'
                "<title>%s</title></head><body>\n" % (API_VERSION, html.escape(
                    "Links for " + project if project else "Simple index")))
        lines = [head]
        if project is None:
            for p in sorted({project_of(n) for n in names}):
                lines.append('<a href="%s/%s/">%s</a><br/>\n' % (prefix, p, html.escape(p)))
        else:
            lines.append("<h1>Links for %s</h1>\n" % html.escape(project))
            for name, info, metadata, yanked in self.entries(folder, names):
                href = self.link_of(name, "%s/%s" % (prefix, quote(name)))
                attrs = ' href="%s#sha256=%s"' % (html.escape(href, quote=True), info["sha256"])
                rp = requires_python(metadata)
                if rp:
                    attrs += ' data-requires-python="%s"' % html.escape(rp, quote=True)
                if metadata is not None:
                    digest = "sha256=" + hashlib.sha256(metadata).hexdigest()
                    attrs += ' data-dist-info-metadata="%s" data-core-metadata="%s"' % (digest,
                                                                                      digest)
                if yanked is not None:
                    attrs += ' data-yanked="%s"' % html.escape(yanked, quote=True) if yanked \
                        else " data-yanked"
                lines.append("<a%s>%s</a><br/>\n" % (attrs, html.escape(name)))
        lines.append("</body></html>\n")
        return "".join(lines)


def main():
    def extra(parser):
        parser.add_argument("--index", action="append", required=True,
                            help="PREFIX=DIR: serve the files of DIR as the index at PREFIX/")
        parser.add_argument("--basic-auth", metavar="USER:PASSWORD",
                            help="require these HTTP Basic credentials (a private index)")
        parser.add_argument("--no-metadata", action="store_true",
                            help="offer no PEP 658 metadata files")
    args = parse_args("fake PEP 503/691 package index", extra)
    serve(IndexServer(Handler, args))


if __name__ == "__main__":
    main()
