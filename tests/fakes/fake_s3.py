#!/usr/bin/env python3
"""A protocol-faithful fake of the S3 object API (path-style addressing), for tests.

Implements, as the Amazon S3 API Reference documents them:
  PUT    /{bucket}/{key}                          PutObject; ETag = "md5"
  GET    /{bucket}/{key}                          GetObject; Range: bytes=a-b -> 206 with
                                                  Content-Range; response-content-disposition
                                                  and response-content-type overrides
  HEAD   /{bucket}/{key}                          HeadObject
  DELETE /{bucket}/{key}                          DeleteObject; 204 also when absent
  POST   /{bucket}/{key}?uploads                  CreateMultipartUpload -> <UploadId>
  PUT    /{bucket}/{key}?partNumber=N&uploadId=U  UploadPart (1..10000); ETag per part
  POST   /{bucket}/{key}?uploadId=U               CompleteMultipartUpload: parts ascending,
                                                  ETags matching, every part but the last
                                                  >= 5 MiB (EntityTooSmall); ETag "md5-N"
  DELETE /{bucket}/{key}?uploadId=U               AbortMultipartUpload
  GET    /{bucket}?list-type=2&prefix=P           ListObjectsV2: keys in order, --list-page-size
         [&continuation-token=T]                  a page (max-keys lowers it), IsTruncated and
                                                  NextContinuationToken
  GET    /{bucket}?uploads&prefix=P               ListMultipartUploads: Key, UploadId, Initiated
         [&key-marker=K&upload-id-marker=U]       --list-page-size a page, NextKeyMarker and
                                                  NextUploadIdMarker
Every request must be signed with AWS Signature Version 4 for --access-key/--secret-key
and --region, either in the Authorization header (the payload hash in
x-amz-content-sha256 is checked against the body unless UNSIGNED-PAYLOAD; x-amz-date
within 15 minutes of the fake's clock) or as a presigned URL (X-Amz-* query parameters;
expired after X-Amz-Expires seconds, at most 604800). Errors are S3's XML documents:
AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch, XAmzContentSHA256Mismatch,
RequestTimeTooSkewed, AuthorizationQueryParametersError, NoSuchBucket, NoSuchKey,
NoSuchUpload, InvalidPart, InvalidPartOrder, EntityTooSmall, InvalidRange, SlowDown (503,
when more than --max-requests-per-second arrive within one second, or scripted).

Control endpoints (fake_common.py) plus:
  POST /_control/advance {"seconds": N}   moves the fake's clock (expiry, skew tests)
  GET  /_control/state   {"objects": {bucket/key: {size, sha256, etag}}, "uploads": {...}}
Fault keys for /_control/fail-next: "status" and "code" (an S3 error code, e.g. SlowDown),
or "drop_response". Counters: "put", "get", "head", "delete", "initiate", "part",
"complete", "abort", "list", "list_uploads", "presigned_get", "slowdown", "auth_failures".
"""

import calendar
import hashlib
import hmac
import re
import secrets
import threading
import time
from email.utils import formatdate
from urllib.parse import quote, unquote

from fake_common import FakeHandler, FakeServer, parse_args, serve

MIN_PART = 5 * 1024 * 1024
MAX_SKEW_S = 15 * 60
MAX_PRESIGN_S = 604800
EMPTY_SHA = hashlib.sha256(b"").hexdigest()


def uri_encode(text, keep_slash):
    return quote(text, safe="-_.~" + ("/" if keep_slash else ""))


def hmac_sha256(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def signature(secret, date, region, string_to_sign):
    key = hmac_sha256(("AWS4" + secret).encode(), date[:8])
    for part in (region, "s3", "aws4_request"):
        key = hmac_sha256(key, part)
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


def parse_query(raw):
    """Decoded (name, value) pairs, blanks kept ("uploads" has no value)."""
    pairs = []
    for item in raw.split("&") if raw else []:
        name, _, value = item.partition("=")
        pairs.append((unquote(name), unquote(value.replace("+", "%20"))))
    return pairs


def amz_time(text):
    return calendar.timegm(time.strptime(text, "%Y%m%dT%H%M%SZ"))


class S3Error(Exception):
    def __init__(self, status, code, message, **extra):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


class S3Server(FakeServer):
    def initial_state(self):
        self.objects = {}   # "bucket/key" -> {"data", "etag"}
        self.uploads = {}   # upload id -> {"key", "parts": {n: (data, etag)}}
        self.clock_offset = 0.0
        self.window = [0, 0]  # [second, requests in it]
        return {}

    def now(self):
        return time.time() + self.clock_offset

    def rate_limited(self):
        limit = self.args.max_requests_per_second
        if not limit:
            return False
        with self.lock:
            second = int(time.monotonic())
            if self.window[0] != second:
                self.window = [second, 0]
            self.window[1] += 1
            return self.window[1] > limit


class Handler(FakeHandler):
    server_version = "AmazonS3"

    # ---- responses -----------------------------------------------------------------
    def xml(self, status, body, headers=None):
        self.send(status, '<?xml version="1.0" encoding="UTF-8"?>\n' + body,
                  content_type="application/xml", headers=headers)

    def error(self, err):
        extra = "".join("<%s>%s</%s>" % (k, v, k) for k, v in err.extra.items())
        self.xml(err.status, "<Error><Code>%s</Code><Message>%s</Message>%s<RequestId>%s"
                 "</RequestId></Error>" % (err.code, err.message, extra, secrets.token_hex(8)),
                 headers={"Retry-After": "1"} if err.status == 503 else None)

    def apply_fault(self, fault, path, query):
        code = fault.get("code", "InternalError")
        if code == "SlowDown":
            self.server.count("slowdown")
        self.error(S3Error(int(fault.get("status", 500)), code, "scripted failure"))

    def control(self, path):
        server = self.server
        if path == "/_control/advance" and self.command == "POST":
            with server.lock:
                server.clock_offset += float((self.json_body() or {}).get("seconds", 0))
            return self.send(200, {"ok": True})
        if path == "/_control/state":
            with server.lock:
                objects = {k: {"size": len(o["data"]), "etag": o["etag"],
                               "sha256": hashlib.sha256(o["data"]).hexdigest()}
                           for k, o in server.objects.items()}
                uploads = {u: {"key": v["key"], "parts": sorted(v["parts"])}
                           for u, v in server.uploads.items()}
            return self.send(200, {"objects": objects, "uploads": uploads})
        return super().control(path)

    # ---- authentication ------------------------------------------------------------
    def canonical_request(self, path, query, signed, payload_hash):
        headers = ""
        for name in signed:
            value = self.headers.get(name)
            if value is None:
                raise S3Error(403, "AccessDenied", "signed header %s is missing" % name)
            headers += "%s:%s\n" % (name, " ".join(value.split()))
        encoded = sorted((uri_encode(k, False), uri_encode(v, False)) for k, v in query)
        canonical_query = "&".join("%s=%s" % kv for kv in encoded)
        return "\n".join([self.command, uri_encode(unquote(path), True), canonical_query,
                          headers, ";".join(signed), payload_hash])

    def check_signature(self, credential, date, signed, given, path, query, payload_hash):
        args = self.server.args
        parts = credential.split("/")
        if len(parts) != 5 or parts[4] != "aws4_request" or parts[3] != "s3":
            raise S3Error(400, "AuthorizationHeaderMalformed", "bad credential scope")
        if parts[0] != args.access_key:
            raise S3Error(403, "InvalidAccessKeyId",
                          "The AWS Access Key Id you provided does not exist in our records.")
        if parts[2] != args.region:
            raise S3Error(400, "AuthorizationHeaderMalformed",
                          "the region '%s' is wrong; expecting '%s'" % (parts[2], args.region),
                          Region=args.region)
        if parts[1] != date[:8]:
            raise S3Error(403, "SignatureDoesNotMatch", "credential date is not the request's")
        canonical = self.canonical_request(path, query, signed, payload_hash)
        scope = "/".join(parts[1:])
        to_sign = "AWS4-HMAC-SHA256\n%s\n%s\n%s" % (
            date, scope, hashlib.sha256(canonical.encode()).hexdigest())
        if not hmac.compare_digest(signature(args.secret_key, date, args.region, to_sign), given):
            raise S3Error(403, "SignatureDoesNotMatch",
                          "The request signature we calculated does not match the signature "
                          "you provided. Check your key and signing method.")

    def authenticate(self, path, query):
        names = {k for k, _ in query}
        if "X-Amz-Signature" in names:
            return self.authenticate_presigned(path, query)
        auth = self.headers.get("Authorization", "")
        m = re.match(r"AWS4-HMAC-SHA256 Credential=([^,]+), ?SignedHeaders=([^,]+), ?"
                     r"Signature=([0-9a-f]{64})$", auth)
        if not m:
            raise S3Error(403, "AccessDenied", "Access Denied")
        date = self.headers.get("x-amz-date", "")
        try:
            skew = abs(amz_time(date) - self.server.now())
        except ValueError:
            raise S3Error(403, "AccessDenied", "x-amz-date is missing or malformed")
        if skew > MAX_SKEW_S:
            raise S3Error(403, "RequestTimeTooSkewed", "The difference between the request "
                          "time and the current time is too large.")
        payload_hash = self.headers.get("x-amz-content-sha256", "")
        if payload_hash != "UNSIGNED-PAYLOAD":
            actual = hashlib.sha256(self.body or b"").hexdigest()
            if payload_hash != actual:
                raise S3Error(400, "XAmzContentSHA256Mismatch", "The provided "
                              "'x-amz-content-sha256' header does not match what was computed.")
        signed = m.group(2).split(";")
        if "host" not in signed or signed != sorted(signed):
            raise S3Error(403, "SignatureDoesNotMatch", "host must be signed, names sorted")
        self.check_signature(m.group(1), date, signed, m.group(3), path, query, payload_hash)

    def authenticate_presigned(self, path, query):
        params = dict(query)
        if params.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256":
            raise S3Error(400, "AuthorizationQueryParametersError", "X-Amz-Algorithm")
        try:
            expires = int(params.get("X-Amz-Expires", ""))
            signed_at = amz_time(params.get("X-Amz-Date", ""))
        except ValueError:
            raise S3Error(400, "AuthorizationQueryParametersError",
                          "X-Amz-Date and X-Amz-Expires are required")
        if expires < 1 or expires > MAX_PRESIGN_S:
            raise S3Error(400, "AuthorizationQueryParametersError",
                          "X-Amz-Expires must be between 1 and 604800 seconds")
        if self.server.now() > signed_at + expires:
            raise S3Error(403, "AccessDenied", "Request has expired",
                          X_Amz_Expires=expires)
        rest = [(k, v) for k, v in query if k != "X-Amz-Signature"]
        signed = params.get("X-Amz-SignedHeaders", "").split(";")
        self.check_signature(params.get("X-Amz-Credential", ""), params["X-Amz-Date"], signed,
                             params["X-Amz-Signature"], path, rest, "UNSIGNED-PAYLOAD")
        self.server.count("presigned_get")

    # ---- dispatch ------------------------------------------------------------------
    def route(self, path, _query):
        query = parse_query(self.path.partition("?")[2])
        try:
            if self.server.rate_limited():
                self.server.count("slowdown")
                raise S3Error(503, "SlowDown", "Please reduce your request rate.")
            try:
                self.authenticate(path, query)
            except S3Error:
                self.server.count("auth_failures")
                raise
            bucket, _, key = unquote(path).lstrip("/").partition("/")
            if bucket not in self.server.args.bucket:
                raise S3Error(404, "NoSuchBucket", "The specified bucket does not exist",
                              BucketName=bucket)
            if not key:
                if self.command == "GET" and dict(query).get("list-type") == "2":
                    return self.list_objects(bucket, dict(query))
                if self.command == "GET" and "uploads" in dict(query):
                    return self.list_uploads(bucket, dict(query))
                raise S3Error(400, "InvalidRequest", "this fake lists buckets only with "
                              "ListObjectsV2")
            self.dispatch(bucket + "/" + key, dict(query))
        except S3Error as err:
            self.error(err)

    def dispatch(self, name, params):
        method = self.command
        if method == "POST" and "uploads" in params:
            return self.initiate(name)
        if "uploadId" in params:
            upload = self.upload(params["uploadId"], name)
            if method == "PUT" and "partNumber" in params:
                return self.upload_part(upload, params["partNumber"])
            if method == "POST":
                return self.complete(name, params["uploadId"], upload)
            if method == "DELETE":
                with self.server.lock:
                    self.server.uploads.pop(params["uploadId"], None)
                self.server.count("abort")
                return self.send(204)
        if method == "PUT":
            return self.put(name)
        if method in ("GET", "HEAD"):
            return self.get(name, params)
        if method == "DELETE":
            with self.server.lock:
                self.server.objects.pop(name, None)
            self.server.count("delete")
            return self.send(204)
        raise S3Error(405, "MethodNotAllowed", "The specified method is not allowed")

    def upload(self, upload_id, name):
        with self.server.lock:
            upload = self.server.uploads.get(upload_id)
        if upload is None or upload["key"] != name:
            raise S3Error(404, "NoSuchUpload", "The specified upload does not exist.",
                          UploadId=upload_id)
        return upload

    # ---- objects -------------------------------------------------------------------
    def put(self, name):
        if self.body is None:
            raise S3Error(411, "MissingContentLength", "You must provide the Content-Length")
        etag = '"%s"' % hashlib.md5(self.body).hexdigest()
        with self.server.lock:
            self.server.objects[name] = {"data": self.body, "etag": etag}
        self.server.count("put")
        self.send(200, headers={"ETag": etag})

    def get(self, name, params):
        with self.server.lock:
            obj = self.server.objects.get(name)
        self.server.count("head" if self.command == "HEAD" else "get")
        if obj is None:
            if self.command == "HEAD":
                return self.send(404, content_type="application/xml")
            raise S3Error(404, "NoSuchKey", "The specified key does not exist.",
                          Key=name.partition("/")[2])
        data, status = obj["data"], 200
        headers = {"ETag": obj["etag"], "Accept-Ranges": "bytes",
                   "Last-Modified": formatdate(usegmt=True)}
        for param, header in (("response-content-disposition", "Content-Disposition"),
                              ("response-content-type", "Content-Type")):
            if param in params:
                headers[header] = params[param]
        rng = self.headers.get("Range")
        if rng:
            m = re.match(r"bytes=(\d+)-(\d*)$", rng)
            if not m or int(m.group(1)) >= len(data):
                raise S3Error(416, "InvalidRange", "The requested range is not satisfiable",
                              ActualObjectSize=len(data))
            first = int(m.group(1))
            last = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
            headers["Content-Range"] = "bytes %d-%d/%d" % (first, last, len(data))
            data, status = data[first:last + 1], 206
        self.send_response(status)
        content_type = headers.pop("Content-Type", "application/octet-stream")
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def list_objects(self, bucket, params):
        prefix = params.get("prefix", "")
        try:
            page = min(int(params.get("max-keys", 1000)), self.server.args.list_page_size)
        except ValueError:
            raise S3Error(400, "InvalidArgument", "max-keys must be a number")
        after = params.get("continuation-token", "")
        if after:
            try:
                after = bytes.fromhex(after).decode()
            except ValueError:
                raise S3Error(400, "InvalidArgument", "The continuation token provided is "
                              "incorrect")
        with self.server.lock:
            keys = sorted(k.partition("/")[2] for k in self.server.objects
                          if k.startswith(bucket + "/"))
            sizes = {k: (len(o["data"]), o["etag"]) for k, o in self.server.objects.items()}
        keys = [k for k in keys if k.startswith(prefix) and k > after]
        shown, truncated = keys[:page], len(keys) > page
        self.server.count("list")
        contents = "".join(
            "<Contents><Key>%s</Key><Size>%d</Size><ETag>%s</ETag><StorageClass>STANDARD"
            "</StorageClass></Contents>" % (k, sizes[bucket + "/" + k][0],
                                            sizes[bucket + "/" + k][1].replace('"', "&quot;"))
            for k in shown)
        token = ("<NextContinuationToken>%s</NextContinuationToken>" % shown[-1].encode().hex()
                 if truncated else "")
        self.xml(200, "<ListBucketResult><Name>%s</Name><Prefix>%s</Prefix><KeyCount>%d"
                 "</KeyCount><MaxKeys>%d</MaxKeys><IsTruncated>%s</IsTruncated>%s%s"
                 "</ListBucketResult>" % (bucket, prefix, len(shown), page,
                                          "true" if truncated else "false", token, contents))

    def list_uploads(self, bucket, params):
        prefix = params.get("prefix", "")
        after = (params.get("key-marker", ""), params.get("upload-id-marker", ""))
        with self.server.lock:
            pending = sorted((u["key"].partition("/")[2], uid, u["initiated"])
                             for uid, u in self.server.uploads.items()
                             if u["key"].startswith(bucket + "/"))
        pending = [p for p in pending if p[0].startswith(prefix) and (p[0], p[1]) > after]
        page = self.server.args.list_page_size
        shown, truncated = pending[:page], len(pending) > page
        self.server.count("list_uploads")
        items = "".join(
            "<Upload><Key>%s</Key><UploadId>%s</UploadId><Initiated>%s</Initiated>"
            "<StorageClass>STANDARD</StorageClass></Upload>"
            % (k, uid, time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t)))
            for k, uid, t in shown)
        markers = ("<NextKeyMarker>%s</NextKeyMarker><NextUploadIdMarker>%s"
                   "</NextUploadIdMarker>" % shown[-1][:2]) if truncated else ""
        self.xml(200, "<ListMultipartUploadsResult><Bucket>%s</Bucket><Prefix>%s</Prefix>"
                 "<MaxUploads>%d</MaxUploads><IsTruncated>%s</IsTruncated>%s%s"
                 "</ListMultipartUploadsResult>" % (bucket, prefix, page,
                                                    "true" if truncated else "false",
                                                    markers, items))

    # ---- multipart -----------------------------------------------------------------
    def initiate(self, name):
        upload_id = secrets.token_urlsafe(24)
        with self.server.lock:
            self.server.uploads[upload_id] = {"key": name, "parts": {},
                                              "initiated": self.server.now()}
        self.server.count("initiate")
        bucket, _, key = name.partition("/")
        self.xml(200, "<InitiateMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key>"
                 "<UploadId>%s</UploadId></InitiateMultipartUploadResult>"
                 % (bucket, key, upload_id))

    def upload_part(self, upload, number):
        if not number.isdigit() or not 1 <= int(number) <= 10000:
            raise S3Error(400, "InvalidArgument",
                          "Part number must be an integer between 1 and 10000, inclusive")
        if self.body is None:
            raise S3Error(411, "MissingContentLength", "You must provide the Content-Length")
        etag = '"%s"' % hashlib.md5(self.body).hexdigest()
        with self.server.lock:
            upload["parts"][int(number)] = (self.body, etag)
        self.server.count("part")
        self.send(200, headers={"ETag": etag})

    def complete(self, name, upload_id, upload):
        listed = re.findall(r"<Part>\s*<PartNumber>(\d+)</PartNumber>\s*<ETag>([^<]*)</ETag>"
                            r"\s*</Part>", (self.body or b"").decode(errors="replace"))
        if not listed:
            raise S3Error(400, "MalformedXML", "The XML you provided was not well-formed")
        numbers = [int(n) for n, _ in listed]
        if numbers != sorted(set(numbers)):
            raise S3Error(400, "InvalidPartOrder", "The list of parts was not in ascending order.")
        chunks = []
        for i, (n, etag) in enumerate(listed):
            part = upload["parts"].get(int(n))
            if part is None or part[1] != etag.replace("&quot;", '"'):
                raise S3Error(400, "InvalidPart", "One or more of the specified parts could not "
                              "be found.", PartNumber=n)
            if i < len(listed) - 1 and len(part[0]) < MIN_PART:
                raise S3Error(400, "EntityTooSmall", "Your proposed upload is smaller than the "
                              "minimum allowed object size.", PartNumber=n,
                              ProposedSize=len(part[0]), MinSizeAllowed=MIN_PART)
            chunks.append(part[0])
        digest = hashlib.md5(b"".join(hashlib.md5(c).digest() for c in chunks)).hexdigest()
        etag = '"%s-%d"' % (digest, len(chunks))
        with self.server.lock:
            self.server.objects[name] = {"data": b"".join(chunks), "etag": etag}
            self.server.uploads.pop(upload_id, None)
        self.server.count("complete")
        bucket, _, key = name.partition("/")
        self.xml(200, "<CompleteMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key>"
                 "<ETag>%s</ETag></CompleteMultipartUploadResult>" % (bucket, key, etag))


def main():
    def extra(parser):
        parser.add_argument("--bucket", action="append", default=[],
                            help="a bucket that exists (repeatable)")
        parser.add_argument("--access-key", default="AKIAFAKEFARM0EXAMPLE")
        parser.add_argument("--secret-key", default="fakeSecretKey/0123456789abcdefEXAMPLE")
        parser.add_argument("--region", default="us-east-1")
        parser.add_argument("--list-page-size", type=int, default=1000,
                            help="keys per ListObjectsV2 page")
        parser.add_argument("--max-requests-per-second", type=int, default=0,
                            help="answer SlowDown beyond this many requests a second (0: off)")

    args = parse_args("Fake S3 object API", extra)
    server = S3Server(Handler, args)
    serve(server)


if __name__ == "__main__":
    main()
