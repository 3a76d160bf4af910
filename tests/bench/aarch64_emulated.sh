#!/usr/bin/env bash
# The aarch64 worker under emulation, end to end (docs/aarch64.md): makes (or reuses) the
# arm64 Debian root, cross-builds farm-worker and farmctl for aarch64, runs
# tests/integration/test_aarch64_emulated.py against the native farmd, then the gb10 role's
# check in the same root (tests/integration/playbooks/gb10_role_emulated.sh):
#
#   tests/bench/aarch64_emulated.sh [NATIVE_BUILD_DIR]
#
# NATIVE_BUILD_DIR (default build/) holds the x86_64 farmd. The root lives outside the
# checkout ($FARM_AARCH64_ROOT, default ${XDG_CACHE_HOME:-$HOME/.cache}/farm/aarch64-root);
# the cross build in $FARM_AARCH64_BUILD_DIR (default build-aarch64/). Exits 77, saying why,
# when binfmt, root or the tools are missing; never reports a skip as a pass.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
native=${1:-$repo/build}
cross=${FARM_AARCH64_BUILD_DIR:-$repo/build-aarch64}

SECONDS=0
"$here/binfmt_check.sh"
set +e
root=$("$here/make_aarch64_root.sh" | tail -n 1)
rc=${PIPESTATUS[0]}
set -e
if [[ $rc -ne 0 ]]; then echo "SKIP or FAIL: the arm64 root could not be made ($rc): $root"; exit "$rc"; fi
echo "arm64 root: $root (${SECONDS} s)"
command -v aarch64-linux-gnu-g++ >/dev/null || {
  echo "SKIP: no aarch64 cross compiler (common/scripts/cross-build-aarch64.sh --install-deps)"
  exit 77
}
FARM_AARCH64_BUILD_DIR=$cross "$repo/common/scripts/cross-build-aarch64.sh" farm-worker farmctl
echo "cross build ready (${SECONDS} s)"
[[ -x $native/daemon/farmd ]] || { echo "no native farmd in $native (build it first)"; exit 1; }

start=$SECONDS
set +e
FARMD=$native/daemon/farmd FARM_WORKER=$native/worker/farm-worker \
  FARMCTL=$native/cli/farmctl FARM_AARCH64_ROOT=$root \
  FARM_AARCH64_WORKER=$cross/worker/farm-worker FARM_AARCH64_FARMCTL=$cross/cli/farmctl \
  /usr/bin/python3 -m pytest -q -s -p no:cacheprovider -rs "$repo/tests/integration/test_aarch64_emulated.py"
rc=$?
set -e
echo "emulated worker test: exit $rc after $((SECONDS - start)) s"
start=$SECONDS
set +e
"$repo/tests/integration/playbooks/gb10_role_emulated.sh" "$root"
role_rc=$?
set -e
echo "gb10 role under emulation: exit $role_rc after $((SECONDS - start)) s (whole script ${SECONDS} s)"
# A failure wins over a skip, a skip (77) over a pass.
for code in $rc $role_rc; do [[ $code -ne 0 && $code -ne 77 ]] && exit "$code"; done
[[ $rc -eq 77 || $role_rc -eq 77 ]] && exit 77
exit 0
