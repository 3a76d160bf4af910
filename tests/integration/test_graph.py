"""Builds that depend on builds: a recipe's `requires:` submitted as one graph to the real
farmd and farm-worker (docs/recipes.md#requires), and answered from the store when nothing
a build depends on changed (an edit of a comment or a retry policy included)."""
import os
import textwrap
import time

from farm_harness import kill9_tree, wait_until

TERMINAL = {"BUILD_SUCCEEDED", "BUILD_FAILED", "BUILD_CANCELLED"}

# The dependency ships a Python module and a C extension; the dependent's setup.py imports
# it at build time (and records what it computed), and its module calls it on import, so
# the clean validation venv proves the dependency's wheel was installed there too.
DEP_SETUP = """\
from setuptools import Extension, setup
setup(name="graphdep", version="1.0", packages=["graphdep"],
      ext_modules=[Extension("graphdep._fast", ["graphdep/_fast.c"])])
"""
DEP_INIT = """\
from graphdep._fast import add
FLAVOUR = {flavour!r}
"""
DEP_C = """\
#include <Python.h>
static PyObject* add(PyObject* self, PyObject* args) {
  long a, b;
  if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
  return PyLong_FromLong(a + b);
}
static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "a + b"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods};
PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&module); }
"""
APP_SETUP = """\
import graphdep  # the build needs the dependency's wheel in its venv
from setuptools import setup
with open("graphapp/_built.py", "w") as f:
    f.write("BUILT_WITH = %r\\n" % ((graphdep.add(2, 3), graphdep.FLAVOUR),))
setup(name="graphapp", version="1.0", packages=["graphapp"])
"""
APP_INIT = """\
import graphdep
from graphapp._built import BUILT_WITH
assert graphdep.add(20, 22) == 42
"""
WHEEL = '"$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps --no-index -w "$FARM_WHEEL_DIR"'


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_graph(root, flavour="plain", dep_build_prefix="", app_sleep=0):
    """root/graphdep (found by catalog name, a sibling) and root/graphapp requiring it."""
    dep = os.path.join(root, "graphdep")
    write(os.path.join(dep, "src", "setup.py"), DEP_SETUP)
    write(os.path.join(dep, "src", "graphdep", "__init__.py"), DEP_INIT.format(flavour=flavour))
    write(os.path.join(dep, "src", "graphdep", "_fast.c"), DEP_C)
    write(os.path.join(dep, "recipe.yaml"), textwrap.dedent("""\
        name: graphdep
        version: "1.0"
        source: {local: src}
        system_site_packages: true
        retry: {max_attempts: 2, backoff_seconds: 0}
        validation: {import: [graphdep]}
        build: |
        """) + textwrap.indent(dep_build_prefix + WHEEL + "\n", "  "))
    app = os.path.join(root, "graphapp")
    write(os.path.join(app, "src", "setup.py"), APP_SETUP)
    write(os.path.join(app, "src", "graphapp", "__init__.py"), APP_INIT)
    write(os.path.join(app, "recipe.yaml"), textwrap.dedent(f"""\
        name: graphapp
        source: {{local: src}}
        system_site_packages: true
        requires:
          - recipe: graphdep
            version: "1.0"
            for: both
        validation: {{import: [graphapp]}}
        build: |
          sleep {app_sleep}
          {WHEEL}
        """))
    return os.path.join(app, "recipe.yaml")


def show(farm, build_id):
    return farm.ctl_json("show", str(build_id))


def wait_terminal(farm, build_id, timeout=180):
    return wait_until(lambda: (lambda b: b if b["state"] in TERMINAL else None)(
        show(farm, build_id)), timeout, f"build {build_id} to end")


def the_input(job):
    assert len(job.get("inputs", [])) == 1, job
    return job["inputs"][0]


def test_one_submission_builds_both_in_order_and_keys_follow_the_wheel(farm):
    farm.start_farmd()
    farm.start_worker("worker-1")
    recipe = make_graph(farm.root)
    submitted = farm.ctl_json("submit", recipe)
    held = submitted["jobs"][0]
    assert held["state"] == "JOB_PENDING" and not held.get("build_key"), held
    assert "graphdep" in held["waiting_reason"], held
    dep_build_id = the_input(held)["build_id"]
    app = wait_terminal(farm, submitted["id"])
    dep = show(farm, dep_build_id)
    assert (app["state"], dep["state"]) == ("BUILD_SUCCEEDED", "BUILD_SUCCEEDED"), (app, dep)
    app_job, dep_job = app["jobs"][0], dep["jobs"][0]
    assert dep_job["finished_at"] <= app_job["started_at"]
    consumed = the_input(app_job)
    assert consumed["job_id"] == dep_job["id"] and consumed["for_build"] and consumed["for_validation"]
    assert [a["sha256"] for a in consumed["artifacts"]] == [a["sha256"] for a in dep_job["artifacts"]]
    assert [c["job_id"] for c in dep_job["consumers"]] == [app_job["id"]]
    log = farm.ctl("logs", str(app_job["id"])).stdout
    assert "installing 1 required wheel(s) into the build venv" in log, log
    assert "farm: imported graphapp" in log, log

    # Unchanged: the whole graph is answered from the store, at once.
    again = farm.ctl_json("submit", recipe)
    assert again["state"] == "BUILD_SUCCEEDED", again
    assert again["jobs"][0]["build_key"] == app_job["build_key"]
    assert not again["jobs"][0].get("attempts"), again["jobs"][0]
    assert again["jobs"][0]["reused_from"] == app_job["id"], again["jobs"][0]

    # Edits that change no build (a comment, a retry policy) are answered from the store
    # as well: a key holds what a cell's build depends on, not the recipe's text.
    for path in (recipe, os.path.join(farm.root, "graphdep", "recipe.yaml")):
        with open(path) as f:
            text = f.read()
        write(path, "# edited: no build changes\n" + text.replace("max_attempts: 2", "max_attempts: 3"))
    edited = farm.ctl_json("submit", recipe)
    assert edited["state"] == "BUILD_SUCCEEDED", edited
    assert edited["jobs"][0]["build_key"] == app_job["build_key"], edited["jobs"][0]
    assert edited["jobs"][0]["reused_from"] > 0, edited["jobs"][0]
    assert not edited["jobs"][0].get("attempts"), edited["jobs"][0]
    dep_again = show(farm, the_input(edited["jobs"][0])["build_id"])["jobs"][0]
    assert dep_again["build_key"] == dep_job["build_key"] and dep_again["reused_from"] > 0, dep_again

    # A new dependency wheel gives the dependent a new key: both build again.
    make_graph(farm.root, flavour="changed")
    third = wait_terminal(farm, farm.ctl_json("submit", recipe)["id"])
    assert third["state"] == "BUILD_SUCCEEDED", third
    job = third["jobs"][0]
    assert job["build_key"] != app_job["build_key"]
    assert len(job["attempts"]) == 1
    new_sha = the_input(job)["artifacts"][0]["sha256"]
    assert new_sha != consumed["artifacts"][0]["sha256"]


def test_failed_dependency_then_retry_through_a_killed_worker_and_farmd_builds_each_once(farm):
    farm.start_farmd(lease_ms=3000)
    first = farm.start_worker("worker-1")
    # The first attempt fails (the sandbox sees no test file, so the attempt number
    # decides); the retried attempt builds slowly enough to be killed.
    recipe = make_graph(farm.root, dep_build_prefix=(
        'if [ "$FARM_ATTEMPT" = 1 ]; then echo "failing on purpose"; exit 3; fi\n'
        'echo "dependency building"; sleep 2\n'))
    submitted = farm.ctl_json("submit", recipe)
    app = wait_terminal(farm, submitted["id"])
    assert app["state"] == "BUILD_FAILED", app
    job = app["jobs"][0]
    dep_job_id, dep_build_id = the_input(job)["job_id"], the_input(job)["build_id"]
    assert f"required job {dep_job_id} (graphdep, build {dep_build_id}) failed" in job["error"], job
    assert not job.get("attempts"), "the dependent never ran"
    shown = farm.ctl("show", str(submitted["id"])).stdout
    assert f"requires graphdep job {dep_job_id}" in shown, shown

    r = farm.ctl("retry", str(dep_job_id))
    assert r.returncode == 0, r.stderr
    assert show(farm, submitted["id"])["jobs"][0]["state"] == "JOB_PENDING"
    wait_until(lambda: show(farm, dep_build_id)["jobs"][0]["state"] == "JOB_RUNNING", 60,
               "the retried dependency to build")
    kill9_tree(first)
    farm.start_worker("worker-2")
    wait_until(lambda: show(farm, dep_build_id)["state"] == "BUILD_SUCCEEDED", 120,
               "the dependency to succeed on the second worker", interval=0.05)
    kill9_tree(farm.farmd)  # between the two builds
    time.sleep(0.5)
    farm.start_farmd(lease_ms=3000)
    app = wait_terminal(farm, submitted["id"])
    dep = show(farm, dep_build_id)
    assert (app["state"], dep["state"]) == ("BUILD_SUCCEEDED", "BUILD_SUCCEEDED"), (app, dep)
    dep_job, app_job = dep["jobs"][0], app["jobs"][0]
    assert [a["cause"] for a in dep_job["attempts"]] == [
        "CAUSE_BUILD_FAILED", "CAUSE_LOST_WORKER", "CAUSE_COMPLETED"], dep_job["attempts"]
    assert len(dep_job["artifacts"]) == 1 and len(app_job["artifacts"]) == 1
    completed = [a for a in app_job["attempts"] if a.get("cause") == "CAUSE_COMPLETED"]
    assert len(completed) == 1, app_job["attempts"]
    assert the_input(app_job)["artifacts"][0]["sha256"] == dep_job["artifacts"][0]["sha256"]
