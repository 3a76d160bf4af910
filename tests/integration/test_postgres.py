"""farmd on PostgreSQL under faults (real processes, a real PostgreSQL server, SIGKILL).

Two farmds on one database: one active, one standby that takes over when the active one
is killed, with its workers and their running build, losing and repeating nothing. And
the kill -9 storm of test_faults.py with the state in PostgreSQL.

Workers find farmd through --server-file, which they read again whenever they reconnect;
the standby writes its own address there (its --ready-file) once it holds the lock and
serves, as a DNS record or a load balancer would be pointed at the new farmd.
"""
import os

import test_faults as faults
from farm_harness import kill9_tree, wait_until



def test_standby_farmd_takes_over_a_running_build_without_losing_or_repeating_it(
        farm, postgres_server):
    farm.store = postgres_server.create_database()
    farm.start_farmd(lease_ms=4000)
    first_address = farm.address
    ready = os.path.join(farm.root, "farmd.addr")
    standby = farm._spawn(farm.farmd_argv(ready, 4000, 500), "farmd-standby.log")
    wait_until(lambda: "standby" in farm.log("farmd-standby.log"), 30, "the standby to wait")
    assert standby.poll() is None

    farm.start_worker("worker-1")
    recipe = faults.slow_tiny_package(farm.root, 6)
    submitted = farm.ctl_json("submit", recipe, "--force")
    faults.wait_running(farm, submitted["id"], min_lines=3)

    kill9_tree(farm.farmd)
    farm.address = wait_until(
        lambda: (lambda a: a if a and a != first_address else None)(
            (open(ready).read().strip() if os.path.exists(ready) else "")),
        60, "the standby to serve")
    farm.farmd = standby
    assert "active" in farm.log("farmd-standby.log")

    build = faults.wait_terminal(farm, submitted["id"], 180)
    assert build["state"] == "BUILD_SUCCEEDED", build
    (job,) = build["jobs"]
    assert [a.get("cause") for a in job["attempts"]] == ["CAUSE_COMPLETED"], job["attempts"]
    assert len(job["artifacts"]) == 1, job
    seqs = [int(e["seq"]) for e in faults.log_seqs(farm, job["id"])]
    assert seqs and seqs == list(range(1, len(seqs) + 1))
    ticks = [e["text"] for e in faults.log_seqs(farm, job["id"]) if e["text"].startswith("tick ")]
    assert ticks == [f"tick {i}" for i in range(1, 7)], ticks
    # An active farmd whose lock session ends (the database restarted, the network dropped;
    # here its administrator ends it) stops rather than serve beside a new active farmd.
    ended = postgres_server.psql(farm.store, "SELECT count(pg_terminate_backend(pid)) "
                                 "FROM pg_locks WHERE locktype = 'advisory' AND granted")
    assert ended == "1", ended
    wait_until(lambda: standby.poll() is not None, 20, "farmd to stop without its lock")
    assert standby.returncode == 1
    assert "lost the farmd lock" in farm.log("farmd-standby.log")


def test_farmd_connects_again_when_the_database_ends_its_store_session(farm, postgres_server):
    # An administrator, a connection pooler or an idle timeout ends farmd's store session
    # (not the lock's): farmd stays active, connects again on its next statement, and the
    # next build runs as usual.
    farm.store = postgres_server.create_database()
    farm.start_farmd()
    farm.start_worker("worker-1")
    ended = postgres_server.psql(
        farm.store, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid NOT IN "
        "(SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)")
    assert ended is not None and int(ended) >= 1, ended
    # The worker's polls and heartbeats reach the store within a heartbeat or two.
    wait_until(lambda: "connected again" in farm.log("farmd.log"), 30,
               "farmd to connect to the database again")
    assert farm.farmd.poll() is None
    submitted = farm.ctl_json("submit", faults.slow_tiny_package(farm.root, 1), "--force")
    build = faults.wait_terminal(farm, submitted["id"], 180)
    assert build["state"] == "BUILD_SUCCEEDED", build
    (job,) = build["jobs"]
    assert [a.get("cause") for a in job["attempts"]] == ["CAUSE_COMPLETED"], job["attempts"]
    assert farm.farmd.poll() is None


def test_random_kills_on_postgres_leave_every_job_in_one_terminal_state_with_one_artifact(
        farm, postgres_server):
    # Each killed farmd's session, and its lock, ends with it; the restarted farmd takes
    # the lock and goes on with the same database.
    farm.store = postgres_server.create_database()
    faults.random_kill_storm(farm)
