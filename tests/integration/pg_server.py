"""A throwaway PostgreSQL server for integration tests, from Debian's postgresql package.

initdb into a temporary directory and postgres listening only on a unix socket there (no
TCP port to collide with). PostgreSQL refuses to run as root and the suite runs as root
on CI: then both run as the user nobody through util-linux's setpriv, which also gives
the server a parent-death signal so that it does not outlive a killed test process.
"""
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile

from farm_harness import wait_until

SUPERUSER = "farm"


def find_bindir():
    """The directory holding initdb and postgres, or None: $FARM_TEST_POSTGRES_BINDIR when
    set (another server version), else pg_config --bindir, else /usr/lib/postgresql/*/bin."""
    chosen = os.environ.get("FARM_TEST_POSTGRES_BINDIR")
    if chosen is not None:
        ok = all(os.access(os.path.join(chosen, b), os.X_OK) for b in ("initdb", "postgres"))
        return chosen if ok else None
    dirs = []
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10)
        dirs.append(out.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    dirs += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for d in dirs:
        if d and all(os.access(os.path.join(d, b), os.X_OK) for b in ("initdb", "postgres")):
            return d
    return None


def unavailable_reason():
    """Why no server can be started here, or None."""
    if not find_bindir():
        return ("PostgreSQL server binaries (initdb, postgres) not found: install the "
                "postgresql package")
    if os.geteuid() == 0 and not (shutil.which("setpriv") and _has_user("nobody")):
        return "running as root without setpriv and the user nobody to run PostgreSQL as"
    return None


def _has_user(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _unprivileged(argv):
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
            "--pdeathsig=TERM", *argv]


class PostgresServer:
    def __init__(self):
        bindir = find_bindir()
        self.dir = tempfile.mkdtemp(prefix="farm-pg-")
        if os.geteuid() == 0:
            user = pwd.getpwnam("nobody")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
        self.log_path = os.path.join(self.dir, "server.log")
        data = os.path.join(self.dir, "data")
        self.proc = None
        self._next = 0
        with open(self.log_path, "ab") as log:
            subprocess.run(_unprivileged([os.path.join(bindir, "initdb"), "-D", data, "-U",
                                          SUPERUSER, "--auth=trust", "-E", "UTF8", "--locale=C",
                                          "--no-sync"]),
                           stdout=log, stderr=subprocess.STDOUT, check=True, timeout=180)
            # Durability off: the database is thrown away, and fsync costs seconds here.
            self.proc = subprocess.Popen(
                _unprivileged([os.path.join(bindir, "postgres"), "-D", data, "-k", self.dir,
                               "-c", "listen_addresses=", "-c", "fsync=off",
                               "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._psql_bin = os.path.join(bindir, "psql")
        wait_until(lambda: self.proc.poll() is None and self.psql("postgres", "SELECT 1") == "1",
                   60, "postgres to accept connections")

    def url(self, database):
        return f"postgresql:///{database}?host={self.dir}&user={SUPERUSER}"

    def psql(self, database, sql):
        """Runs `sql` in `database` (a name or a URL); its output, or None on an error."""
        url = database if "://" in database else self.url(database)
        r = subprocess.run([self._psql_bin, "-At", "-d", url, "-c", sql],
                           capture_output=True, text=True, timeout=60)
        return r.stdout.strip() if r.returncode == 0 else None

    def create_database(self):
        self._next += 1
        name = f"farm_it_{self._next}"
        assert self.psql("postgres", f"CREATE DATABASE {name}") is not None, name
        return self.url(name)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            # Immediate shutdown: no checkpoint, since the data directory is removed next.
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)
