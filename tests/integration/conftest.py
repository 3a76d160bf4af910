"""pytest wiring: per-test farms, failure reports, and skips that never count as passes."""
import os

import pytest

import farm_harness

SKIP_EXIT_CODE = 77


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture(scope="session")
def postgres_server():
    """One throwaway PostgreSQL server for the pytest run (pg_server.py); skips without one."""
    import pg_server
    reason = pg_server.unavailable_reason()
    if reason:
        pytest.skip(reason)
    server = pg_server.PostgresServer()
    yield server
    server.stop()


@pytest.fixture
def farm(request):
    farm = farm_harness.make_farm(request)
    # FARM_TEST_STORE=postgres runs a test file's farms on PostgreSQL, a database each.
    if os.environ.get("FARM_TEST_STORE") == "postgres":
        farm.store = request.getfixturevalue("postgres_server").create_database()
    return farm


def pytest_sessionfinish(session, exitstatus):
    # A run whose tests were skipped (missing GPU, tool...) is reported to ctest as skipped
    # (SKIP_RETURN_CODE), never as passed.
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if exitstatus == 0 and skipped:
        session.exitstatus = SKIP_EXIT_CODE
