#!/usr/bin/env python3
"""A fake of NVIDIA's redistributable tree (the ".../compute/cuda/redist/" folder), for
tests. Serves a folder laid out as NVIDIA's (make one with upstream_data.py redist):

  GET /                                   an autoindex-style HTML listing of the top
                                          level (redistrib_<version>.json manifests and
                                          one folder per component), as the real tree has
  GET /redistrib_<version>.json           a manifest: per component its name, license,
                                          version and, per platform ("linux-x86_64",
                                          "linux-sbsa", ...), relative_path, sha256, md5
                                          and size (a string, as NVIDIA writes it)
  GET /<component>/<platform>/<archive>   an archive (tar.xz, one top folder
                                          "<component>-<platform>-<version>-archive")
  GET /<folder>/                          the listing of that folder
Paths that leave the folder ('..', absolute, backslashes, NUL) and anything missing get
404; methods other than GET and HEAD get 405. The same server serves any folder of
archives as a static tree, e.g. a python-build-standalone release folder
(cpython-<version>+<release>-<triple>-install_only.tar.gz beside its SHA256SUMS).

Control endpoints: fake_common.py and fake_files.py (corrupt, throttle, hide); a file is
named by its path relative to the root ("cuda_nvcc/linux-x86_64/....tar.xz"). Counters:
"file:<relative path>" per file.
"""

import html
import os
from urllib.parse import quote, unquote

from fake_common import parse_args, serve
from fake_files import FileHandler, FileServer, safe_child


class RedistServer(FileServer):
    def __init__(self, handler_class, args):
        super().__init__(handler_class, args)
        self.root = os.path.abspath(args.root)


class Handler(FileHandler):
    def route(self, path, query):
        if self.command not in ("GET", "HEAD"):
            return self.send(405, "Method Not Allowed", "text/plain", {"Allow": "GET, HEAD"})
        relative = unquote(path).lstrip("/")
        root = self.server.root
        if relative == "":
            return self.listing(root, "/")
        folder = relative.endswith("/")
        target = safe_child(root, relative.rstrip("/"))
        if target is None:
            return self.send(404, "Not Found", "text/plain")
        if folder and os.path.isdir(target):
            return self.listing(target, "/" + relative)
        if not folder and os.path.isfile(target):
            ctype = "application/json" if target.endswith(".json") else "application/x-xz"
            return self.send_file(target, relative, ctype)
        return self.send(404, "Not Found", "text/plain")

    def listing(self, folder, url_path):
        rows = ['<!DOCTYPE html>\n<html><head><title>Index of %s</title></head><body>\n'
                "<h1>Index of %s</h1><pre>\n" % (html.escape(url_path), html.escape(url_path))]
        if url_path != "/":
            rows.append('<a href="../">../</a>\n')
        for name in sorted(os.listdir(folder)):
            shown = name + ("/" if os.path.isdir(os.path.join(folder, name)) else "")
            rows.append('<a href="%s">%s</a>\n' % (quote(shown), html.escape(shown)))
        rows.append("</pre></body></html>\n")
        self.send(200, "".join(rows), "text/html")


def main():
    def extra(parser):
        parser.add_argument("--root", required=True, help="the redist folder to serve")
    args = parse_args("fake NVIDIA redist tree", extra)
    serve(RedistServer(Handler, args))


if __name__ == "__main__":
    main()
