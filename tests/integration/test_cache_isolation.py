"""One principal cannot backdoor another's wheel through the compile cache (issue 33, item 1).

On the real farmd, farm-worker (bubblewrap sandbox), ccache and nvcc: a submitter-token
build named like the admin's recipe plants a ccache.conf with a prefix_command (and a
poisoned object directory) where its build sees the cache. The admin's next, untouched
build of the example then compiles: its wheel must hold no planted line and its log must
show none, while the admin's own builds still hit the cache across workspaces. Each
principal's builds get a namespace of their own, and ccache reads only the farm's
configuration (docs/security.md, "The compile cache").
"""
import os
import re
import shutil
import zipfile

import pytest

from farm_harness import pure_python_source
from test_compile_cache import ARCH_LIST, cache_counts, copy_example

pytestmark = [
    pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache is not installed here"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed"),
]

MARK = "PLANTED-BY-MALLORY"

# Finds the cache the build sees (CCACHE_DIR, else what its ccache configuration names),
# and leaves a prefix_command there that announces itself and appends a line to every
# attn_example/__init__.py of whichever build compiles next.
EXPLOIT = r"""
ns="${CCACHE_DIR:-$(ccache -k cache_dir 2>/dev/null)}"
echo "mallory sees the cache at $ns"
cat > "$ns/evil.sh" <<'EOS'
#!/bin/sh
echo "%(mark)s" >&2
find /farm/job/src -name __init__.py -path '*attn_example*' 2>/dev/null |
  while read -r f; do echo "PLANTED = '%(mark)s'" >> "$f"; done
exec "$@"
EOS
chmod +x "$ns/evil.sh"
printf 'prefix_command = %%s/evil.sh\n' "$ns" >> "$ns/ccache.conf" && echo "mallory wrote $ns/ccache.conf"
# The farm's own configuration is not the build's to change.
if [ -n "$CCACHE_CONFIGPATH" ] && printf 'prefix_command = %%s/evil.sh\n' "$ns" >> "$CCACHE_CONFIGPATH" 2>/dev/null; then
  echo "mallory wrote the farm's configuration"
fi
""" % {"mark": MARK}


def mallory_token(farm):
    created = farm.ctl("tokens", "create", "--role", "submitter", "--name", "mallory")
    assert created.returncode == 0, created.stderr
    path = os.path.join(farm.root, "mallory.token")
    with open(path, "w") as f:
        f.write(created.stdout)
    return path


def mallory_recipe(farm):
    """A recipe named like the admin's, whose build plants the backdoor and then builds."""
    pure_python_source(farm.root, "mallory")
    path = os.path.join(farm.root, "mallory.yaml")
    with open(path, "w") as f:
        f.write("name: attn-example\nsource: {local: mallory-src}\nsystem_site_packages: true\n"
                "build: |\n")
        for line in (EXPLOIT + '"$FARM_PYTHON" -m pip wheel . --no-build-isolation --no-deps '
                     '--no-index -w "$FARM_WHEEL_DIR"\n').splitlines():
            f.write("  " + line + "\n")
    return path


def attempt_of(farm, build):
    (job,) = farm.ctl_json("show", str(build["id"]))["jobs"]
    (attempt,) = job["attempts"]
    return attempt


def job_log(farm, build):
    (job,) = build["jobs"]
    return farm.ctl("logs", str(job["id"])).stdout


def wheel_text(farm, build):
    out = os.path.join(farm.root, "download-%s" % build["id"])
    assert farm.ctl("download", str(build["id"]), "--dir", out).returncode == 0
    texts = []
    for name in [n for n in os.listdir(out) if n.endswith(".whl")]:
        with zipfile.ZipFile(os.path.join(out, name)) as z:
            texts += [z.read(n).decode("utf-8", "replace") for n in z.namelist()
                      if n.endswith(".py")]
    assert texts, os.listdir(out)
    return "\n".join(texts)


def test_a_submitter_cannot_backdoor_the_admins_build_through_the_cache(farm):
    farm.start_farmd()
    farm.start_worker()
    work = os.path.join(farm.root, "worker-1", "work")

    # Mallory is first to build under the name, and plants what she can.
    planted = farm.ctl_json("submit", mallory_recipe(farm), "--follow",
                            token_file=mallory_token(farm), timeout=600)
    mallory_log = job_log(farm, planted)
    assert "mallory wrote" in mallory_log, mallory_log[-3000:]
    assert "mallory wrote the farm's configuration" not in mallory_log, mallory_log[-3000:]

    # The admin's untouched example compiles next: nothing of Mallory's runs in it.
    _, recipe = copy_example(farm)
    first = farm.ctl_json("submit", recipe, "--arch-list", ARCH_LIST, "--follow", timeout=900)
    assert first["state"] == "BUILD_SUCCEEDED", first
    log1 = job_log(farm, first)
    assert MARK not in log1, log1[-3000:]
    assert MARK not in wheel_text(farm, first)
    assert cache_counts(attempt_of(farm, first)) == (0, 2)  # nothing of Mallory's hit

    # The admin's own cache still works across builds (a new workspace, every compile hits).
    again = farm.ctl_json("submit", recipe, "--arch-list", ARCH_LIST, "--follow", "--force",
                          timeout=900)
    assert again["state"] == "BUILD_SUCCEEDED", again
    assert cache_counts(attempt_of(farm, again)) == (2, 0)
    log2 = job_log(farm, again)
    assert MARK not in log2 and MARK not in wheel_text(farm, again)
    ns1 = re.search(r"compile cache: namespace ([0-9a-f]{12})", log1).group(1)
    assert re.search(r"compile cache: namespace ([0-9a-f]{12})", log2).group(1) == ns1

    # On the host: two namespaces, Mallory's holding her ccache.conf, the admin's none.
    namespaces = os.listdir(os.path.join(work, "ccache", "ns"))
    assert len(namespaces) == 2, namespaces
    planted_in = [ns for ns in namespaces
                  if os.path.exists(os.path.join(work, "ccache", "ns", ns, "ccache.conf"))]
    assert len(planted_in) == 1 and not planted_in[0].startswith(ns1), namespaces
