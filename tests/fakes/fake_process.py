"""Starting a fake upstream as a real server process, for the tests of the fakes and the
provisioner's integration tests: the fake binds 127.0.0.1:0 and writes its URL to a ready
file; start() waits for it (bounded) and stop() ends that process only."""

import json
import os
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


class RunningFake:
    def __init__(self, script, args, workdir, name):
        self.ready = os.path.join(workdir, name + ".url")
        self.log_path = os.path.join(workdir, name + ".log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, script), "--ready-file", self.ready] + args,
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while not os.path.exists(self.ready):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("%s did not start: %s" % (script, open(self.log_path).read()))
            time.sleep(0.05)
        with open(self.ready) as f:
            self.url = f.read().strip()

    def control(self, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + "/_control/" + path, data=data,
                                     method="POST" if data is not None else "GET")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def counters(self):
        return self.control("counters")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log.close()


def get(url, accept=None, timeout=30):
    """(status, headers, body) of a GET, without following redirects."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with opener.open(req, timeout=timeout) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()
