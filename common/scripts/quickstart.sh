#!/usr/bin/env bash
# Quick start: installs the dependencies, builds the farm, starts farmd and one local
# farm-worker (state under .farm/) with the dashboard and package index, builds the example kernel package through the farm and
# prints where the wheel is. Running it again reuses the running daemons and the build.
#
#   quickstart.sh [--prebuilt DIR] [--no-deps] [RECIPE.yaml]
#     --prebuilt DIR  use the farmd, farm-worker and farmctl in DIR (a folder holding the
#                     three, or a build folder): no packages installed, nothing compiled
#     --no-deps       build, but install no Debian packages (they are there already)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
home=${FARM_HOME:-$repo/.farm}
bin=${FARM_BUILD_DIR:-$repo/build}
prebuilt=""
deps=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --prebuilt) prebuilt=${2:?--prebuilt needs a folder}; shift 2 ;;
    --no-deps) deps=0; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "quickstart: unknown flag $1 (--prebuilt DIR, --no-deps)" >&2; exit 2 ;;
    *) break ;;
  esac
done
recipe=${1:-$repo/kernels/examples/attn_example/recipe.yaml}

# Where the time goes, printed at the end (a fresh machine spends it on apt and the compile).
declare -a phases=()
mark() { phases+=("$1 $((SECONDS - ${last:-0})) s"); last=$SECONDS; }

# The binary NAME: DIR/NAME (a folder of binaries) or DIR/SUB/NAME (a build folder).
binary() {
  local dir=$1 sub=$2 name=$3
  if [[ -x "$dir/$name" ]]; then echo "$dir/$name"; else echo "$dir/$sub/$name"; fi
}

if [[ -n "$prebuilt" ]]; then
  for b in "$(binary "$prebuilt" daemon farmd)" "$(binary "$prebuilt" worker farm-worker)" \
      "$(binary "$prebuilt" cli farmctl)"; do
    [[ -x "$b" ]] || { echo "quickstart: --prebuilt $prebuilt has no $(basename "$b")" >&2; exit 2; }
  done
  bin=$prebuilt
else
  if [[ $deps == 1 ]]; then
    "$repo/common/scripts/install-deps.sh"
    mark "dependencies"
  fi
  # Only the three binaries, without the tests (whose packages install-deps.sh
  # --with-test-tools adds): common/scripts/test.sh turns the tests on again in the same
  # build folder.
  FARM_CMAKE_ARGS="-DFARM_BUILD_TESTS=OFF -DFARM_FAST_BUILD=ON ${FARM_CMAKE_ARGS:-}" \
    "$repo/common/scripts/build.sh" --target farmd farm-worker farmctl
  mark "build"
fi
farmd=$(binary "$bin" daemon farmd)
worker=$(binary "$bin" worker farm-worker)
farmctl=$(binary "$bin" cli farmctl)
mkdir -p "$home/data" "$home/worker" "$home/wheels"
chmod 700 "$home"

alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Waits up to 30 s for a file to appear.
wait_for() {
  for _ in $(seq 1 300); do [[ -s "$1" ]] && return 0; sleep 0.1; done
  echo "quickstart: $1 did not appear; see $2" >&2
  return 1
}

if alive "$home/farmd.pid"; then
  echo "quickstart: farmd already running (pid $(cat "$home/farmd.pid"))"
else
  rm -f "$home/farmd.addr" "$home/http.addr"
  # Wheels built here cannot be validated without a GPU, so the local index admits
  # wheels that are still waiting for hardware validation.
  setsid "$farmd" --data-dir "$home/data" --listen 127.0.0.1:0 \
    --ready-file "$home/farmd.addr" --http-listen 127.0.0.1:0 --http-ready-file "$home/http.addr" \
    --index-include-pending >>"$home/farmd.log" 2>&1 < /dev/null &
  echo $! >"$home/farmd.pid"
  wait_for "$home/farmd.addr" "$home/farmd.log"
  wait_for "$home/http.addr" "$home/farmd.log"
fi

if alive "$home/worker.pid"; then
  echo "quickstart: farm-worker already running (pid $(cat "$home/worker.pid"))"
else
  setsid "$worker" --server-file "$home/farmd.addr" \
    --enroll-token-file "$home/data/enroll.token" --state-dir "$home/worker" \
    --work-dir "$home/worker/work" --name "$(hostname)-local" \
    >>"$home/worker.log" 2>&1 < /dev/null &
  echo $! >"$home/worker.pid"
fi

mark "farm start"
addr=$(cat "$home/farmd.addr")
ctl=("$farmctl" --server "$addr" --token-file "$home/data/admin.token")
"${ctl[@]}" submit "$recipe" --follow --download "$home/wheels"
mark "example wheel"

echo
echo "quickstart: farmd API (gRPC) at $addr; logs in $home/farmd.log and $home/worker.log"
http=$(cat "$home/http.addr")
echo "quickstart: dashboard at http://$http/  (package index: http://$http/simple/)"
echo "quickstart: wheels in $home/wheels"
echo "quickstart: try: ${ctl[*]} list"
echo "quickstart: stop with: kill \$(cat $home/farmd.pid) \$(cat $home/worker.pid)"
echo "quickstart: done in $SECONDS s: $(IFS=,; echo "${phases[*]}" | sed 's/,/, /g')"
