#!/usr/bin/env python3
"""A protocol-faithful fake of the Hugging Face Hub upload endpoints, for tests.

Implements (as huggingface_hub calls them without Xet; docs/publishing.md has sources):
  POST /api/repos/create                         {name, organization, type?, private?}
                                                 200 {url}; 409 when it exists
  GET  /api/{type}s/{ns}/{name}/revision/{rev}   {"id", "sha"}; 404 + X-Error-Code
  POST /api/{type}s/{ns}/{name}/preupload/{rev}  {"files":[{path,size,sample}]}
       -> {"files":[{path, uploadMode: lfs|regular, shouldIgnore, oid?}]}
  POST /api/{type}s/{ns}/{name}/paths-info/{rev} JSON {"paths":[...]} or form paths=...
       -> [{"type":"file","path","size","oid","lfs":{"oid","size","pointerSize"}?}]
  POST /api/{type}s/{ns}/{name}/commit/{rev}     application/x-ndjson: header (summary,
       description, parentCommit), file (base64), lfsFile (path, algo, oid, size),
       deletedFile; 412 when parentCommit is not the head; -> {commitUrl, commitOid}
  POST /{prefix}{ns}/{name}.git/info/lfs/objects/batch   Git LFS batch API:
       basic below --multipart-threshold bytes, else multipart with header.chunk_size
       and numbered part URLs; no actions when the object is stored; a verify action.
  PUT  /_storage/...                             presigned upload / part URLs; they
       refuse an Authorization header (as S3 does) and answer an ETag per part
  POST /{prefix}{ns}/{name}.git/info/lfs/complete/{upload_id}  {"oid","parts":[...]}
  POST /{prefix}{ns}/{name}.git/info/lfs/verify   {"oid","size"}
  GET  /{prefix}{ns}/{name}/resolve/{rev}/{path}  a file's bytes (hf_hub_download): 200 for
       a regular file, 302 to a presigned /_storage/download/{oid} for an LFS file; with
       X-Repo-Commit and ETag (X-Linked-Etag/Size for LFS); 404 EntryNotFound.
Hub endpoints need "Authorization: Bearer <token>" (401 otherwise); downloads from a public
repository need none.

Size: an object over --max-file-bytes (default 50000000000: "Per file: 50GB max") gets a
per-object error in the LFS batch answer, {"code": 422, "message": "Maximum individual
file size is 50.0GB"} (the Hub's words; the code is the git-lfs spec's validation error),
and no upload action; a commit naming such an lfsFile answers 422 with the same message.
Counter: "oversize_refusals".

Fault keys for /_control/fail-next besides status/headers/body/retry_after/drop_response:
  "ratelimit": "\\"api\\";r=0;t=55"   sent as the RateLimit header (and a RateLimit-Policy)
Counters: "commits", "commit_posts", "lfs_batches", "basic_puts", "part_puts",
"completions", "verifies", "preuploads", "paths_info", "revisions", "creates", "downloads".
"""

import hashlib
import json
import re
import secrets
from urllib.parse import parse_qs, unquote

from fake_common import FakeHandler, FakeServer, b64, parse_args, serve, unb64

TYPES = {"models": "model", "datasets": "dataset", "spaces": "space", "kernels": "kernel"}
GIT_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/", "kernel": "kernels/"}
USER = "fake-user"


def git_blob_oid(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def pointer(oid, size):
    return ("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n"
            % (oid, size)).encode()


class HfServer(FakeServer):
    def initial_state(self):
        return {"repos": {}, "lfs": {}, "multipart": {}}

    def sign(self, path):
        return "%s%s?X-Amz-Signature=%s" % (self.base_url, path, self.signature)


class Handler(FakeHandler):
    def hub_error(self, status, message, code=None):
        headers = {"X-Error-Code": code} if code else {}
        self.send(status, {"error": message}, headers=headers)

    def check_auth(self):
        if self.bearer_token() != self.server.args.token:
            self.hub_error(401, "Invalid credentials in Authorization header")
            return False
        return True

    def apply_fault(self, fault, path, query):
        headers = self.fault_headers(fault)
        if fault.get("ratelimit"):
            headers["RateLimit"] = fault["ratelimit"]
            headers["RateLimit-Policy"] = '"fixed window";"api";q=500;w=300'
        if "/commit/" in path:
            self.server.count("commit_posts")
        self.server.count("fault")
        self.send(int(fault.get("status", 500)), fault.get("body", {"error": "scripted"}),
                  headers=headers)

    # ---- routing ---------------------------------------------------------------------
    def route(self, path, query):
        s = self.server
        if path.startswith("/_storage/"):
            with s.lock:
                return self.storage(path, query)
        download = re.match(r"^/(datasets/|spaces/|kernels/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)$",
                            path)
        if download and self.command in ("GET", "HEAD"):
            with s.lock:
                return self.download(download)
        lfs = re.match(r"^/(datasets/|spaces/|kernels/)?([^/]+/[^/]+)\.git/info/lfs/"
                       r"(objects/batch|complete/[0-9a-f]+|verify)$", path)
        # The completion URL is presigned like the part URLs: no token is sent to it.
        presigned = lfs is not None and lfs.group(3).startswith("complete/")
        if presigned and query.get("X-Amz-Signature", [""])[0] != s.signature:
            return self.lfs_send(403, {"message": "bad signature"})
        if not presigned and not self.check_auth():
            return
        m = re.match(r"^/api/(models|datasets|spaces|kernels)/([^/]+/[^/]+)/"
                     r"(revision|preupload|paths-info|commit)/(.+)$", path)
        with s.lock:
            if path == "/api/repos/create" and self.command == "POST":
                return self.create_repo()
            if m:
                repo = self.find_repo(TYPES[m.group(1)], m.group(2))
                if repo is None:
                    return self.hub_error(404, "Repository not found", "RepoNotFound")
                handler = {"revision": ("GET", self.revision),
                           "preupload": ("POST", self.preupload),
                           "paths-info": ("POST", self.paths_info),
                           "commit": ("POST", self.commit)}[m.group(3)]
                if handler[0] == self.command:
                    return handler[1](repo, unquote(m.group(4)), query)
            if lfs and self.command == "POST":
                kind = TYPES[lfs.group(1).rstrip("/")] if lfs.group(1) else "model"
                repo = self.find_repo(kind, lfs.group(2))
                if repo is None:
                    return self.hub_error(404, "Repository not found", "RepoNotFound")
                op = lfs.group(3)
                if op == "objects/batch":
                    return self.lfs_batch(repo)
                if op == "verify":
                    return self.lfs_verify()
                return self.lfs_complete(op.split("/")[1])
        self.hub_error(404, "Not Found")

    def find_repo(self, kind, repo_id):
        return self.server.state["repos"].get("%s:%s" % (kind, repo_id))

    # ---- repos and revisions ---------------------------------------------------------
    def create_repo(self):
        s = self.server
        req = self.json_body() or {}
        s.count("creates")
        kind = req.get("type") or "model"
        repo_id = "%s/%s" % (req.get("organization") or USER, req.get("name", ""))
        url = "%s/%s%s" % (s.base_url, GIT_PREFIX.get(kind, ""), repo_id)
        if not req.get("name") or kind not in GIT_PREFIX:
            return self.hub_error(400, "Invalid repo name or type")
        if self.find_repo(kind, repo_id):
            return self.send(409, {"error": "You already created this %s repo" % kind,
                                   "url": url})
        files = {".gitattributes": self.regular_entry(b"*.whl filter=lfs diff=lfs merge=lfs -text\n")}
        sha = hashlib.sha1(("init:" + repo_id).encode()).hexdigest()
        s.state["repos"]["%s:%s" % (kind, repo_id)] = {
            "id": repo_id, "type": kind, "private": bool(req.get("private", False)),
            "branches": {"main": sha},
            "commits": {sha: {"parent": None, "summary": "initial commit", "files": files}}}
        s.save_state()
        self.send(200, {"url": url, "name": repo_id})

    def regular_entry(self, data):
        return {"size": len(data), "oid": git_blob_oid(data), "lfs": None, "content": b64(data)}

    def resolve(self, repo, rev):
        if rev in repo["branches"]:
            return repo["branches"][rev]
        return rev if rev in repo["commits"] else None

    def revision(self, repo, rev, query):
        self.server.count("revisions")
        sha = self.resolve(repo, rev)
        if sha is None:
            return self.hub_error(404, "Invalid rev id: %s" % rev, "RevisionNotFound")
        files = repo["commits"][sha]["files"]
        self.send(200, {"id": repo["id"], "sha": sha, "private": repo["private"],
                        "siblings": [{"rfilename": p} for p in sorted(files)]})

    def preupload(self, repo, rev, query):
        self.server.count("preuploads")
        sha = self.resolve(repo, rev)
        req = self.json_body() or {}
        files = repo["commits"][sha]["files"] if sha else {}
        out = []
        for f in req.get("files", []):
            sample = unb64(f.get("sample", ""))
            try:
                text = b"\0" not in sample and sample.decode("utf-8") is not None
            except UnicodeDecodeError:
                text = False
            mode = "regular" if text and int(f.get("size", 0)) < 10 * 1024 * 1024 else "lfs"
            entry = {"path": f["path"], "uploadMode": mode, "shouldIgnore": False}
            if f["path"] in files:
                entry["oid"] = files[f["path"]]["oid"]
            out.append(entry)
        self.send(200, {"files": out, "commitOid": sha})

    def requested_paths(self):
        content_type = self.headers.get("Content-Type", "")
        if content_type.startswith("application/json"):
            return list((self.json_body() or {}).get("paths", []))
        return parse_qs(self.body.decode() if self.body else "").get("paths", [])

    def paths_info(self, repo, rev, query):
        self.server.count("paths_info")
        sha = self.resolve(repo, rev)
        if sha is None:
            return self.hub_error(404, "Invalid rev id: %s" % rev, "RevisionNotFound")
        files = repo["commits"][sha]["files"]
        out = []
        for p in self.requested_paths():
            f = files.get(p)
            if f:
                entry = {"type": "file", "path": p, "size": f["size"], "oid": f["oid"]}
                if f["lfs"]:
                    entry["lfs"] = f["lfs"]
                out.append(entry)
            elif any(k.startswith(p.rstrip("/") + "/") for k in files):
                out.append({"type": "directory", "path": p, "size": 0,
                            "oid": hashlib.sha1(p.encode()).hexdigest()})
        self.send(200, out)

    def commit(self, repo, rev, query):
        s = self.server
        s.count("commit_posts")
        if not self.headers.get("Content-Type", "").startswith("application/x-ndjson"):
            return self.hub_error(400, "Expected application/x-ndjson")
        if rev not in repo["branches"]:
            return self.hub_error(404, "Invalid rev id: %s" % rev, "RevisionNotFound")
        try:
            lines = [json.loads(l) for l in self.body.decode().splitlines() if l.strip()]
        except ValueError:
            return self.hub_error(400, "Malformed NDJSON")
        if not lines or lines[0].get("key") != "header":
            return self.hub_error(400, "The first line must be the commit header")
        header = lines[0]["value"]
        head = repo["branches"][rev]
        parent = header.get("parentCommit")
        if parent and parent != head:
            return self.hub_error(412, "A commit has happened since. Please refresh and try "
                                       "again.")
        files = dict(repo["commits"][head]["files"])
        for line in lines[1:]:
            key, value = line.get("key"), line.get("value", {})
            if key == "file":
                files[value["path"]] = self.regular_entry(unb64(value["content"]))
            elif key == "lfsFile":
                if int(value.get("size", 0)) > s.args.max_file_bytes:
                    s.count("oversize_refusals")
                    return self.hub_error(422, self.size_message())
                stored = s.state["lfs"].get(value.get("oid"))
                if value.get("algo") != "sha256" or not stored or \
                        len(unb64(stored)) != int(value.get("size", -1)):
                    return self.hub_error(422, "Your push was rejected because an LFS pointer "
                                               "pointed to a file that does not exist")
                ptr = pointer(value["oid"], int(value["size"]))
                files[value["path"]] = {"size": int(value["size"]), "oid": git_blob_oid(ptr),
                                        "lfs": {"oid": value["oid"], "size": int(value["size"]),
                                                "pointerSize": len(ptr)}, "content": None}
            elif key == "deletedFile":
                files.pop(value.get("path"), None)
            else:
                return self.hub_error(400, "Unknown line key %r" % key)
        sha = hashlib.sha1((head + secrets.token_hex(8)).encode()).hexdigest()
        repo["commits"][sha] = {"parent": head, "summary": header.get("summary", ""),
                                "files": files}
        repo["branches"][rev] = sha
        s.count("commits")
        s.save_state()
        self.send(200, {"commitUrl": "%s/%s/commit/%s" % (s.base_url, repo["id"], sha),
                        "commitOid": sha, "pullRequestUrl": None})

    # ---- Git LFS ---------------------------------------------------------------------
    def lfs_send(self, status, body):
        self.send(status, body, content_type="application/vnd.git-lfs+json")

    def size_message(self):
        return "Maximum individual file size is %.1fGB" % (self.server.args.max_file_bytes / 1e9)

    def lfs_batch(self, repo):
        s = self.server
        s.count("lfs_batches")
        req = self.json_body() or {}
        if req.get("operation") != "upload":
            return self.lfs_send(422, {"message": "only upload is implemented"})
        transfers = req.get("transfers", ["basic"])
        repo_url = "/%s%s.git/info/lfs" % (GIT_PREFIX[repo["type"]], repo["id"])
        out, chosen = [], "basic"
        for obj in req.get("objects", []):
            oid, size = obj.get("oid", ""), int(obj.get("size", 0))
            entry = {"oid": oid, "size": size, "authenticated": True}
            if not re.match(r"^[0-9a-f]{64}$", oid):
                entry["error"] = {"code": 422, "message": "invalid oid"}
            elif size > s.args.max_file_bytes:
                s.count("oversize_refusals")
                entry["error"] = {"code": 422, "message": self.size_message()}
            elif oid not in s.state["lfs"]:
                verify = {"href": s.base_url + repo_url + "/verify", "header": {}}
                if size > s.args.multipart_threshold and "multipart" in transfers:
                    chosen = "multipart"
                    entry["actions"] = {"upload": self.multipart_action(oid, size, repo_url),
                                        "verify": verify}
                else:
                    entry["actions"] = {"upload": {"href": s.sign("/_storage/basic/" + oid),
                                                   "header": {}}, "verify": verify}
            out.append(entry)
        self.lfs_send(200, {"transfer": chosen, "objects": out, "hash_algo": "sha256"})

    def multipart_action(self, oid, size, repo_url):
        s = self.server
        chunk = s.args.chunk_size
        upload_id = secrets.token_hex(8)
        parts = (size + chunk - 1) // chunk
        s.state["multipart"][upload_id] = {"oid": oid, "size": size, "chunk": chunk,
                                           "parts": {}}
        header = {"chunk_size": str(chunk)}
        for n in range(1, parts + 1):
            header[str(n)] = s.sign("/_storage/part/%s/%d" % (upload_id, n))
        return {"href": s.sign("%s/complete/%s" % (repo_url, upload_id)), "header": header}

    def download(self, m):
        s = self.server
        kind = {prefix: k for k, prefix in GIT_PREFIX.items()}[m.group(1) or ""]
        repo = self.find_repo(kind, m.group(2))
        if repo is None:
            return self.hub_error(404, "Repository not found", "RepoNotFound")
        if repo["private"] and not self.check_auth():
            return
        sha = self.resolve(repo, unquote(m.group(3)))
        if sha is None:
            return self.hub_error(404, "Invalid rev id: %s" % m.group(3), "RevisionNotFound")
        f = repo["commits"][sha]["files"].get(unquote(m.group(4)))
        if f is None:
            return self.hub_error(404, "Entry not found", "EntryNotFound")
        s.count("downloads")
        headers = {"X-Repo-Commit": sha, "ETag": '"%s"' % f["oid"]}
        if f["lfs"]:
            headers.update({"X-Linked-Etag": '"%s"' % f["lfs"]["oid"],
                            "X-Linked-Size": f["lfs"]["size"],
                            "Location": s.sign("/_storage/download/" + f["lfs"]["oid"])})
            return self.send(302, b"", headers=headers)
        self.send(200, unb64(f["content"]), content_type="application/octet-stream",
                  headers=headers)

    def storage(self, path, query):
        s = self.server
        if query.get("X-Amz-Signature", [""])[0] != s.signature:
            return self.send(403, "<Error><Code>SignatureDoesNotMatch</Code></Error>",
                             content_type="application/xml")
        stored = re.match(r"^/_storage/download/([0-9a-f]{64})$", path)
        if stored and self.command in ("GET", "HEAD"):
            if stored.group(1) not in s.state["lfs"]:
                return self.send(404, "<Error><Code>NoSuchKey</Code></Error>",
                                 content_type="application/xml")
            return self.send(200, unb64(s.state["lfs"][stored.group(1)]),
                             content_type="application/octet-stream")
        if self.headers.get("Authorization"):
            return self.send(400, "<Error><Code>InvalidArgument</Code><Message>Only one auth "
                                  "mechanism allowed</Message></Error>",
                             content_type="application/xml")
        if self.command != "PUT" or self.body is None:
            return self.send(400, "<Error><Code>BadRequest</Code></Error>",
                             content_type="application/xml")
        etag = '"%s"' % hashlib.md5(self.body).hexdigest()
        m = re.match(r"^/_storage/basic/([0-9a-f]{64})$", path)
        if m:
            s.count("basic_puts")
            if hashlib.sha256(self.body).hexdigest() != m.group(1):
                return self.send(400, "<Error><Code>BadDigest</Code></Error>",
                                 content_type="application/xml")
            s.state["lfs"][m.group(1)] = b64(self.body)
            s.save_state()
            return self.send(200, b"", headers={"ETag": etag})
        m = re.match(r"^/_storage/part/([0-9a-f]+)/(\d+)$", path)
        upload = s.state["multipart"].get(m.group(1)) if m else None
        if not upload:
            return self.send(404, "<Error><Code>NoSuchUpload</Code></Error>",
                             content_type="application/xml")
        s.count("part_puts")
        upload["parts"][m.group(2)] = {"data": b64(self.body), "etag": etag}
        s.save_state()
        self.send(200, b"", headers={"ETag": etag})

    def lfs_complete(self, upload_id):
        s = self.server
        upload = s.state["multipart"].get(upload_id)
        if not upload:
            return self.lfs_send(404, {"message": "unknown upload"})
        req = self.json_body() or {}
        s.count("completions")
        parts = sorted(req.get("parts", []), key=lambda p: p.get("partNumber", 0))
        expected = (upload["size"] + upload["chunk"] - 1) // upload["chunk"]
        if req.get("oid") != upload["oid"] or len(parts) != expected:
            return self.lfs_send(400, {"message": "wrong oid or part count"})
        data = b""
        for n, part in enumerate(parts, start=1):
            stored = upload["parts"].get(str(n))
            if part.get("partNumber") != n or not stored or stored["etag"] != part.get("etag"):
                return self.lfs_send(400, {"message": "part %d missing or ETag mismatch" % n})
            data += unb64(stored["data"])
        if len(data) != upload["size"] or hashlib.sha256(data).hexdigest() != upload["oid"]:
            return self.lfs_send(400, {"message": "assembled object does not match its oid"})
        s.state["lfs"][upload["oid"]] = b64(data)
        del s.state["multipart"][upload_id]
        s.save_state()
        self.lfs_send(200, {"message": "ok"})

    def lfs_verify(self):
        s = self.server
        s.count("verifies")
        req = self.json_body() or {}
        stored = s.state["lfs"].get(req.get("oid"))
        if not stored or len(unb64(stored)) != int(req.get("size", -1)):
            return self.lfs_send(404, {"message": "object not found"})
        self.lfs_send(200, {"message": "ok"})


def main():
    def extra(parser):
        parser.add_argument("--multipart-threshold", type=int, default=5 * 1024 * 1024,
                            help="objects larger than this use the multipart transfer")
        parser.add_argument("--chunk-size", type=int, default=5 * 1024 * 1024)
        parser.add_argument("--max-file-bytes", type=int, default=50 * 10**9,
                            help="largest file accepted (the Hub: 50 GB)")

    args = parse_args("Fake Hugging Face Hub upload API", extra)
    server = HfServer(Handler, args)
    server.signature = secrets.token_hex(16)
    serve(server)


if __name__ == "__main__":
    main()
