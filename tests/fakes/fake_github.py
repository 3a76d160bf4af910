#!/usr/bin/env python3
"""A protocol-faithful fake of the GitHub Releases REST API, for tests.

Implements (docs/publishing.md lists the sources):
  GET    /repos/{o}/{r}/releases[?per_page&page]     drafts included, Link pagination
  POST   /repos/{o}/{r}/releases                      201 + Location; 422 already_exists
  GET    /repos/{o}/{r}/releases/tags/{tag}           published releases only
  GET|PATCH|DELETE /repos/{o}/{r}/releases/{id}       PATCH draft=false publishes
  GET    /repos/{o}/{r}/releases/{id}/assets
  GET|PATCH|DELETE /repos/{o}/{r}/releases/assets/{id}
  POST   /api/uploads/repos/{o}/{r}/releases/{id}/assets?name=&label=
         raw body, Content-Type and Content-Length required; names sanitized as GitHub
         does; 422 already_exists for a taken name; "digest": "sha256:<hex>"
  GET    /download/{o}/{r}/{tag}/{name}               browser_download_url target
  GET    /rate_limit
Every authenticated answer carries x-ratelimit-limit/remaining/used/reset/resource; a
spent quota answers 403 with remaining 0 until the reset. A bad token answers 401.
The upload host is the same server under /api/uploads (as on GitHub Enterprise Server);
clients must take it from the release's upload_url.

Fault keys for /_control/fail-next besides status/headers/body/retry_after/drop_response:
  "starter": true      on an upload: leave an empty asset in state "starter" (a 502)
  "secondary": true    a secondary-limit body ("You have exceeded a secondary rate limit")
  "exhaust": N         answer as a spent primary quota, reset N seconds from now
Counters: "upload_posts" (faulted ones included), "upload_posts_published:<release id>"
(upload POSTs that reached a release already published), "uploads_stored:<name>",
"release_creates", "asset_deletes", "asset_patches", "release_patches", "fault", "requests".

Size: an upload whose Content-Length is over --max-asset-bytes (default 2147483647: "each
file included in a release must be under 2 GiB") answers 422 with GitHub's body
({"resource":"ReleaseAsset","code":"custom","field":"size","message":"size must be less
than or equal to 2147483648"}); exactly one byte over answers 500, as users report for a
file of exactly 2 GiB. Nothing is stored; with "Expect: 100-continue" the refusal comes
before the body is sent. Counters: "upload_posts:<name>" per requested name, and
"oversize_refusals".

With --immutable, published releases report "immutable": true and refuse asset uploads
(422 "Cannot upload assets to an immutable release."), changes and deletes; drafts do not.
--immutable-unflagged refuses the same way but leaves the field out (older API answers).
"""

import hashlib
import json
import re
import time
from urllib.parse import quote, unquote

from fake_common import FakeHandler, FakeServer, b64, parse_args, serve, unb64

SUPPORTED_VERSIONS = ("2022-11-28", "2026-03-10")
DOCS = "https://docs.github.com/rest/releases"


def sanitize(name):
    out = re.sub(r"[^A-Za-z0-9\-_+@]+", ".", name)
    out = re.sub(r"\.{2,}", ".", out).strip(".")
    return ("default." + out) if name.startswith(".") else out


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def validation_failed(resource, field, code="already_exists"):
    return {"message": "Validation Failed", "documentation_url": DOCS,
            "errors": [{"resource": resource, "code": code, "field": field}]}


class GitHubServer(FakeServer):
    def initial_state(self):
        return {"next_id": 1000, "releases": {}, "assets": {}}

    def new_id(self):
        self.state["next_id"] += 1
        return self.state["next_id"]

    def reset_quota_if_due(self):
        now = time.time()
        if now >= self.quota_reset:
            self.quota_used = 0
            self.quota_reset = int(now) + self.args.rate_window

    def setup_quota(self):
        self.quota_used = 0
        self.quota_reset = int(time.time()) + self.args.rate_window


class Handler(FakeHandler):
    # ---- representation --------------------------------------------------------------
    def release_json(self, rel):
        base = self.server.base_url
        repo = rel["repo"]
        assets = [self.asset_json(a) for a in self.server.state["assets"].values()
                  if a["release_id"] == rel["id"]]
        body = {
            "id": rel["id"], "tag_name": rel["tag_name"], "name": rel["name"],
            "body": rel["body"], "draft": rel["draft"], "prerelease": rel["prerelease"],
            "target_commitish": rel["target_commitish"], "created_at": rel["created_at"],
            "published_at": rel["published_at"], "assets": assets,
            "url": "%s/repos/%s/releases/%d" % (base, repo, rel["id"]),
            "html_url": "%s/%s/releases/tag/%s" % (base, repo, quote(rel["tag_name"])),
            "assets_url": "%s/repos/%s/releases/%d/assets" % (base, repo, rel["id"]),
            "upload_url": "%s/api/uploads/repos/%s/releases/%d/assets{?name,label}"
                          % (base, repo, rel["id"]),
        }
        if not self.server.args.immutable_unflagged:
            # GitHub sets it on releases published while the immutable setting is on.
            body["immutable"] = bool(self.server.args.immutable and not rel["draft"])
        return body

    def asset_json(self, asset):
        base = self.server.base_url
        rel = self.server.state["releases"][str(asset["release_id"])]
        return {
            "id": asset["id"], "name": asset["name"], "label": asset["label"],
            "state": asset["state"], "content_type": asset["content_type"],
            "size": asset["size"], "digest": asset["digest"], "download_count": 0,
            "created_at": asset["created_at"], "updated_at": asset["updated_at"],
            "uploader": {"login": "fake-user"},
            "url": "%s/repos/%s/releases/assets/%d" % (base, rel["repo"], asset["id"]),
            "browser_download_url": "%s/download/%s/%s/%s"
                                    % (base, rel["repo"], quote(rel["tag_name"]),
                                       quote(asset["name"])),
        }

    # ---- auth and quota --------------------------------------------------------------
    def quota_headers(self):
        s = self.server
        return {"x-ratelimit-limit": s.args.rate_limit,
                "x-ratelimit-remaining": max(0, s.args.rate_limit - s.quota_used),
                "x-ratelimit-used": s.quota_used, "x-ratelimit-reset": s.quota_reset,
                "x-ratelimit-resource": "core"}

    def reply(self, status, body=b"", headers=None, content_type="application/json"):
        merged = self.quota_headers()
        merged.update(headers or {})
        self.send(status, body, content_type=content_type, headers=merged)

    def check_auth(self):
        if self.bearer_token() != self.server.args.token:
            self.send(401, {"message": "Bad credentials", "documentation_url": DOCS,
                            "status": "401"})
            return False
        version = self.headers.get("X-GitHub-Api-Version")
        if version is not None and version not in SUPPORTED_VERSIONS:
            self.send(400, {"message": "API version '%s' is not supported." % version})
            return False
        s = self.server
        s.reset_quota_if_due()
        if s.quota_used >= s.args.rate_limit:
            self.reply(403, {"message": "API rate limit exceeded for user ID 1.",
                             "documentation_url": DOCS})
            return False
        s.quota_used += 1
        return True

    def apply_fault(self, fault, path, query):
        s = self.server
        headers = self.fault_headers(fault)
        if fault.get("exhaust") is not None:
            headers.update({"x-ratelimit-remaining": 0, "x-ratelimit-used": s.args.rate_limit,
                            "x-ratelimit-limit": s.args.rate_limit,
                            "x-ratelimit-reset": int(time.time()) + int(fault["exhaust"])})
            body = {"message": "API rate limit exceeded for user ID 1."}
        elif fault.get("secondary"):
            body = {"message": "You have exceeded a secondary rate limit. Please wait a few "
                               "minutes before you try again.", "documentation_url": DOCS}
        else:
            body = fault.get("body", {"message": "Bad Gateway"})
        m = re.match(r"^/api/uploads/repos/([^/]+/[^/]+)/releases/(\d+)/assets$", path)
        if m:
            s.count("upload_posts")
            self.count_published_upload(m.group(2))
        if fault.get("starter"):
            if m and m.group(2) in s.state["releases"]:
                with s.lock:
                    self.store_asset(int(m.group(2)), sanitize(query.get("name", [""])[0]),
                                     "", "starter", b"", None)
        s.count("fault")
        # Secondary-limit answers do not always carry the quota headers.
        self.send(int(fault.get("status", 502)), body, headers=headers)

    # ---- routes ----------------------------------------------------------------------
    def route(self, path, query):
        if path.startswith("/download/"):
            return self.download(path)
        if not self.check_auth():
            return
        routes = [
            ("GET", r"^/rate_limit$", self.rate_limit),
            ("GET", r"^/repos/([^/]+/[^/]+)/releases$", self.list_releases),
            ("POST", r"^/repos/([^/]+/[^/]+)/releases$", self.create_release),
            ("GET", r"^/repos/([^/]+/[^/]+)/releases/tags/(.+)$", self.release_by_tag),
            ("GET", r"^/repos/([^/]+/[^/]+)/releases/assets/(\d+)$", self.get_asset),
            ("PATCH", r"^/repos/([^/]+/[^/]+)/releases/assets/(\d+)$", self.patch_asset),
            ("DELETE", r"^/repos/([^/]+/[^/]+)/releases/assets/(\d+)$", self.delete_asset),
            ("GET", r"^/repos/([^/]+/[^/]+)/releases/(\d+)$", self.get_release),
            ("PATCH", r"^/repos/([^/]+/[^/]+)/releases/(\d+)$", self.patch_release),
            ("DELETE", r"^/repos/([^/]+/[^/]+)/releases/(\d+)$", self.delete_release),
            ("GET", r"^/repos/([^/]+/[^/]+)/releases/(\d+)/assets$", self.list_assets),
            ("POST", r"^/api/uploads/repos/([^/]+/[^/]+)/releases/(\d+)/assets$", self.upload),
        ]
        for method, pattern, fn in routes:
            m = re.match(pattern, path)
            if m and method == self.command:
                with self.server.lock:
                    return fn(query, *[unquote(g) for g in m.groups()])
        self.reply(404, {"message": "Not Found", "documentation_url": DOCS})

    def rate_limit(self, query):
        self.reply(200, {"resources": {"core": self.quota_headers()}})

    def paginate(self, items, query, path):
        per_page = min(100, int(query.get("per_page", ["30"])[0]))
        page = int(query.get("page", ["1"])[0])
        chunk = items[(page - 1) * per_page: page * per_page]
        headers = {}
        if page * per_page < len(items):
            headers["Link"] = '<%s%s?per_page=%d&page=%d>; rel="next"' % (
                self.server.base_url, path, per_page, page + 1)
        self.reply(200, chunk, headers=headers)

    def releases_of(self, repo):
        rels = [r for r in self.server.state["releases"].values() if r["repo"] == repo]
        return sorted(rels, key=lambda r: -r["id"])  # newest first, as GitHub lists

    def list_releases(self, query, repo):
        self.server.count("release_lists")
        items = [self.release_json(r) for r in self.releases_of(repo)]
        self.paginate(items, query, "/repos/%s/releases" % repo)

    def create_release(self, query, repo):
        s = self.server
        req = self.json_body() or {}
        tag = req.get("tag_name")
        if not tag:
            return self.reply(422, validation_failed("Release", "tag_name", "missing_field"))
        if any(r["tag_name"] == tag for r in self.releases_of(repo)):
            return self.reply(422, validation_failed("Release", "tag_name"))
        s.count("release_creates")
        rel = {"id": s.new_id(), "repo": repo, "tag_name": tag, "name": req.get("name") or tag,
               "body": req.get("body") or "", "draft": bool(req.get("draft", False)),
               "prerelease": bool(req.get("prerelease", False)),
               "target_commitish": req.get("target_commitish") or "main",
               "created_at": now_iso(), "published_at": None}
        if not rel["draft"]:
            rel["published_at"] = now_iso()
        s.state["releases"][str(rel["id"])] = rel
        s.save_state()
        body = self.release_json(rel)
        self.reply(201, body, headers={"Location": body["url"]})

    def find_release(self, repo, release_id):
        rel = self.server.state["releases"].get(str(release_id))
        return rel if rel and rel["repo"] == repo else None

    def release_by_tag(self, query, repo, tag):
        for rel in self.releases_of(repo):
            if rel["tag_name"] == tag and not rel["draft"]:
                return self.reply(200, self.release_json(rel))
        self.reply(404, {"message": "Not Found", "documentation_url": DOCS})

    def get_release(self, query, repo, release_id):
        rel = self.find_release(repo, release_id)
        if not rel:
            return self.reply(404, {"message": "Not Found"})
        self.reply(200, self.release_json(rel))

    def patch_release(self, query, repo, release_id):
        s = self.server
        rel = self.find_release(repo, release_id)
        if not rel:
            return self.reply(404, {"message": "Not Found"})
        req = self.json_body() or {}
        s.count("release_patches")
        for key in ("name", "body", "target_commitish"):
            if key in req:
                rel[key] = req[key]
        if "tag_name" in req and req["tag_name"] != rel["tag_name"]:
            if any(r["tag_name"] == req["tag_name"] for r in self.releases_of(repo)):
                return self.reply(422, validation_failed("Release", "tag_name"))
            rel["tag_name"] = req["tag_name"]
        if "prerelease" in req:
            rel["prerelease"] = bool(req["prerelease"])
        if "draft" in req:
            if rel["draft"] and not req["draft"]:
                rel["published_at"] = now_iso()
            rel["draft"] = bool(req["draft"])
        s.save_state()
        self.reply(200, self.release_json(rel))

    def delete_release(self, query, repo, release_id):
        s = self.server
        if not self.find_release(repo, release_id):
            return self.reply(404, {"message": "Not Found"})
        del s.state["releases"][str(release_id)]
        for aid in [k for k, a in s.state["assets"].items() if a["release_id"] == int(release_id)]:
            del s.state["assets"][aid]
        s.save_state()
        self.reply(204)

    def list_assets(self, query, repo, release_id):
        rel = self.find_release(repo, release_id)
        if not rel:
            return self.reply(404, {"message": "Not Found"})
        self.server.count("asset_lists")
        items = sorted((a for a in self.server.state["assets"].values()
                        if a["release_id"] == rel["id"]), key=lambda a: a["id"])
        self.paginate([self.asset_json(a) for a in items], query,
                      "/repos/%s/releases/%s/assets" % (repo, release_id))

    def find_asset(self, repo, asset_id):
        asset = self.server.state["assets"].get(str(asset_id))
        if not asset:
            return None
        rel = self.server.state["releases"].get(str(asset["release_id"]))
        return asset if rel and rel["repo"] == repo else None

    def immutable_published(self, release_id):
        rel = self.server.state["releases"][str(release_id)]
        return self.server.args.immutable and not rel["draft"]

    def get_asset(self, query, repo, asset_id):
        asset = self.find_asset(repo, asset_id)
        if not asset:
            return self.reply(404, {"message": "Not Found"})
        if "application/octet-stream" in self.headers.get("Accept", ""):
            rel = self.server.state["releases"][str(asset["release_id"])]
            return self.reply(302, headers={"Location": "%s/download/%s/%s/%s" % (
                self.server.base_url, repo, quote(rel["tag_name"]), quote(asset["name"]))})
        self.reply(200, self.asset_json(asset))

    def patch_asset(self, query, repo, asset_id):
        s = self.server
        asset = self.find_asset(repo, asset_id)
        if not asset:
            return self.reply(404, {"message": "Not Found"})
        if self.immutable_published(asset["release_id"]):
            return self.reply(422, {"message": "Cannot modify assets of an immutable release."})
        req = self.json_body() or {}
        s.count("asset_patches")
        if "name" in req:
            name = sanitize(req["name"])
            if any(a["name"] == name and a["id"] != asset["id"]
                   for a in s.state["assets"].values()
                   if a["release_id"] == asset["release_id"]):
                return self.reply(422, validation_failed("ReleaseAsset", "name"))
            asset["name"] = name
        if "label" in req:
            asset["label"] = req["label"]
        asset["updated_at"] = now_iso()
        s.save_state()
        self.reply(200, self.asset_json(asset))

    def delete_asset(self, query, repo, asset_id):
        s = self.server
        asset = self.find_asset(repo, asset_id)
        if not asset:
            return self.reply(404, {"message": "Not Found"})
        if self.immutable_published(asset["release_id"]):
            return self.reply(422, {"message": "Cannot delete assets of an immutable release."})
        s.count("asset_deletes")
        del s.state["assets"][str(asset_id)]
        s.save_state()
        self.reply(204)

    def store_asset(self, release_id, name, label, state, data, content_type):
        s = self.server
        asset = {"id": s.new_id(), "release_id": release_id, "name": name, "label": label,
                 "state": state, "content_type": content_type or "application/octet-stream",
                 "size": len(data), "created_at": now_iso(), "updated_at": now_iso(),
                 "digest": ("sha256:" + hashlib.sha256(data).hexdigest()) if state == "uploaded"
                 else None, "data": b64(data)}
        s.state["assets"][str(asset["id"])] = asset
        s.save_state()
        return asset

    def count_published_upload(self, release_id):
        rel = self.server.state["releases"].get(str(release_id))
        if rel and not rel["draft"]:
            self.server.count("upload_posts_published:%s" % release_id)

    def too_large(self):
        limit = self.server.args.max_asset_bytes
        length = self.headers.get("Content-Length", "")
        if self.command != "POST" or "/api/uploads/" not in self.path or not length.isdigit() \
                or int(length) <= limit:
            return None
        if int(length) == limit + 1:
            return 500, {"message": "Server Error"}
        return 422, {"message": "Validation Failed", "documentation_url": DOCS,
                     "errors": [{"resource": "ReleaseAsset", "code": "custom", "field": "size",
                                 "message": "size must be less than or equal to %d"
                                            % (limit + 1)}]}

    def upload(self, query, repo, release_id):
        s = self.server
        s.count("upload_posts")
        s.count("upload_posts:%s" % sanitize(query.get("name", [""])[0]))
        refusal = self.too_large()
        if refusal is not None:
            s.count("oversize_refusals")
            return self.reply(*refusal)
        self.count_published_upload(release_id)
        rel = self.find_release(repo, release_id)
        if not rel:
            return self.reply(404, {"message": "Not Found"})
        if self.body is None:
            return self.reply(411, {"message": "Length Required"})
        content_type = self.headers.get("Content-Type")
        if not content_type:
            return self.reply(422, {"message": "Content-Type header is required"})
        name = sanitize(query.get("name", [""])[0])
        if not name:
            return self.reply(422, validation_failed("ReleaseAsset", "name", "missing_field"))
        if self.immutable_published(rel["id"]):
            return self.reply(422, {"message": "Cannot upload assets to an immutable release."})
        if any(a["name"] == name for a in s.state["assets"].values()
               if a["release_id"] == rel["id"]):
            return self.reply(422, validation_failed("ReleaseAsset", "name"))
        s.count("uploads_stored:%s" % name)
        asset = self.store_asset(rel["id"], name, query.get("label", [""])[0], "uploaded",
                                 self.body, content_type)
        self.reply(201, self.asset_json(asset))

    def download(self, path):
        m = re.match(r"^/download/([^/]+/[^/]+)/([^/]+)/([^/]+)$", path)
        with self.server.lock:
            for asset in self.server.state["assets"].values():
                rel = self.server.state["releases"][str(asset["release_id"])]
                if m and rel["repo"] == m.group(1) and rel["tag_name"] == unquote(m.group(2)) \
                        and asset["name"] == unquote(m.group(3)):
                    return self.send(200, unb64(asset["data"]),
                                     content_type="application/octet-stream")
        self.send(404, {"message": "Not Found"})


def main():
    def extra(parser):
        parser.add_argument("--rate-limit", type=int, default=5000, help="requests per window")
        parser.add_argument("--rate-window", type=int, default=3600, help="window in seconds")
        parser.add_argument("--immutable", action="store_true",
                            help="published releases refuse asset changes")
        parser.add_argument("--max-asset-bytes", type=int, default=(2 << 30) - 1,
                            help="largest asset accepted (GitHub: under 2 GiB)")
        parser.add_argument("--immutable-unflagged", action="store_true",
                            help="with --immutable: do not report the release's immutable field")

    args = parse_args("Fake GitHub Releases API", extra)
    server = GitHubServer(Handler, args)
    server.setup_quota()
    serve(server)


if __name__ == "__main__":
    main()
