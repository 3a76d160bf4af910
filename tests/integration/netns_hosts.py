"""Separate "hosts" on one machine: a network namespace per host, joined by veth pairs to a
private bridge that lives in a namespace of its own, and a mount namespace per process that
hides every other host's directory. Nothing is added to the machine's own namespace.

Names and addresses are unique per run (pid and random bits), every step is bounded in
time, and `close()` removes every namespace (and with them the links) even after a failure.
"""
import os
import random
import shutil
import subprocess
import time

REQUIRED_TOOLS = ("ip", "unshare", "mount")


def missing_requirements():
    """Why these tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "network and mount namespaces need root"
    missing = [t for t in REQUIRED_TOOLS if shutil.which(t) is None]
    if missing:
        return "missing tools: " + ", ".join(missing) + " (Debian packages iproute2, util-linux, mount)"
    probe = f"farm-probe-{os.getpid()}-{random.randrange(1 << 16):04x}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        return "cannot create a network namespace: " + r.stderr.strip()
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=20)
    return None


def _ip(*args):
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")


class Network:
    """Hosts named by the caller, each with one address on a private /24."""

    def __init__(self, root, hosts):
        self.root = root
        self.tag = f"{os.getpid() % 100000}-{random.randrange(1 << 24):06x}"
        self.switch = f"farm-{self.tag}-switch"
        self.netns = {}
        self.address = {}
        self.port = {}
        self.dirs = {}
        subnet = f"10.{random.randrange(64, 250)}.{random.randrange(0, 256)}"
        try:
            _ip("netns", "add", self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for i, host in enumerate(hosts):
                self._add_host(host, i, f"{subnet}.{i + 1}")
        except Exception:
            self.close()
            raise

    def _add_host(self, host, index, address):
        ns = f"farm-{self.tag}-{host}"
        _ip("netns", "add", ns)
        self.netns[host] = ns
        port = f"port{index}"
        _ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port,
            "netns", self.switch)
        _ip("-n", self.switch, "link", "set", port, "master", "br0")
        _ip("-n", self.switch, "link", "set", port, "up")
        _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        self.address[host] = address
        self.port[host] = port
        self.dirs[host] = os.path.join(self.root, host)
        os.makedirs(self.dirs[host], exist_ok=True)

    def argv(self, host, argv):
        """`argv` run as on `host`: its network, every other host's directory hidden."""
        hidden = " ".join(f"'{d}'" for h, d in self.dirs.items() if h != host)
        script = (f"for d in {hidden}; do mount -t tmpfs -o size=64k,mode=0 hidden \"$d\" "
                  "|| exit 97; done; exec \"$@\"")
        return ["ip", "netns", "exec", self.netns[host], "unshare", "--mount",
                "--propagation", "private", "sh", "-c", script, "sh", *argv]

    def run(self, host, argv, timeout=120, **kw):
        return subprocess.run(self.argv(host, argv), capture_output=True, text=True,
                              timeout=timeout, **kw)

    def cut(self, host):
        """Takes `host`'s bridge port down: its cable is pulled, its own stack unchanged."""
        _ip("-n", self.switch, "link", "set", self.port[host], "down")

    def restore(self, host):
        _ip("-n", self.switch, "link", "set", self.port[host], "up")

    def close(self):
        for ns in [*self.netns.values(), self.switch]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                                    timeout=20).stdout
            if self.tag not in listed:
                return
            time.sleep(0.1)
