"""A git server on 127.0.0.1 for the integration tests: git's smart HTTP protocol, answered
by `git http-backend` as a real server runs it, over HTTPS, so farmd resolves refs and the
workers clone exactly as they would from a forge. Serves every repository under --root at
https://127.0.0.1:PORT/<path>; writes "https://127.0.0.1:PORT" to --ready-file once it
listens. Each request is one `git http-backend` run, bounded in time.

usage: git_server.py --root DIR --cert PEM --key PEM --ready-file FILE
"""
import argparse
import http.server
import os
import ssl
import subprocess
import sys
import urllib.parse

MAX_BODY = 64 << 20
BACKEND_TIMEOUT_S = 120


def read_chunked(rfile):
    body = b""
    for _ in range(1_000_000):
        size = int(rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            rfile.readline()
            return body
        body += rfile.read(size)
        rfile.readline()
        if len(body) > MAX_BODY:
            raise ValueError("request body too large")
    raise ValueError("too many chunks")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    root = "."

    def log_message(self, fmt, *args):
        sys.stderr.write("git-server: %s %s\n" % (self.address_string(), fmt % args))

    def do_GET(self):
        self.backend()

    def do_POST(self):
        self.backend()

    def backend(self):
        path, _, query = self.path.partition("?")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = read_chunked(self.rfile)
        else:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self.send_error(413)
                return
            body = self.rfile.read(length) if length else b""
        env = {
            "PATH": "/usr/bin:/bin", "HOME": self.root, "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_PROJECT_ROOT": self.root, "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": urllib.parse.unquote(path), "QUERY_STRING": query,
            "REQUEST_METHOD": self.command, "REMOTE_ADDR": self.client_address[0],
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        done = subprocess.run(["git", "-c", "safe.directory=*", "http-backend"], input=body,
                              env=env, capture_output=True, timeout=BACKEND_TIMEOUT_S)
        head, sep, payload = done.stdout.partition(b"\r\n\r\n")
        if not sep:
            head, sep, payload = done.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--root", "--cert", "--key", "--ready-file"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    Handler.root = os.path.abspath(args.root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    tmp = args.ready_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("https://127.0.0.1:%d\n" % server.server_address[1])
    os.replace(tmp, args.ready_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
