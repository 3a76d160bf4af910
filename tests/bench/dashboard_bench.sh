#!/usr/bin/env bash
# Measures the dashboard's JSON API with wrk against stores of 10,000 and 100,000 jobs.
#   tests/bench/dashboard_bench.sh PATH/TO/dashboard_fixture [SECONDS]
# Prints wrk's requests/s and latency for each endpoint. Everything binds 127.0.0.1.
# BENCH_WORKERS=N registers N workers (default 20; 0 for a fixture without --workers), so
# the builds pages explain their waiting jobs against a fleet. BENCH_PATHS="..." replaces
# the list of endpoints ({mid} and {job} stand for a middle build and job id).
# BENCH_SIZES="small large" picks the stores (10,000 and 100,000 jobs). BENCH_FINISH=N runs
# and ends the jobs of every Nth build (every fifth of them failed), so the histograms, the
# failure lists and the state counts have rows of every kind; default 0, all pending (the
# store the first figures in docs/dashboard.md were measured on). BENCH_WRK="-t1 -c1"
# replaces wrk's threads and connections (default -t2 -c16): one connection measures each
# answer's own time, without the queue of 16 connections on the server's 2 threads.
set -euo pipefail
fixture=${1:?usage: dashboard_bench.sh DASHBOARD_FIXTURE [SECONDS]}
seconds=${2:-5}
command -v wrk >/dev/null || { echo "wrk missing (apt-get install wrk)" >&2; exit 1; }
work=$(mktemp -d)
pid=""
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

run() {  # run LABEL BUILDS JOBS_PER_BUILD
  local label=$1 builds=$2 per=$3 dir=$work/$1
  local start=$SECONDS
  local workers=()
  [[ ${BENCH_WORKERS:-20} -gt 0 ]] && workers=(--workers "${BENCH_WORKERS:-20}")
  [[ ${BENCH_FINISH:-0} -gt 0 ]] && workers+=(--finish-every "$BENCH_FINISH")
  "$fixture" --data-dir "$dir" --ready-file "$dir.addr" --fill-builds "$builds" \
    --jobs-per-build "$per" "${workers[@]}" >"$dir.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 1200); do [[ -s $dir.addr ]] && break; sleep 0.5; done
  [[ -s $dir.addr ]] || { echo "fixture did not start" >&2; cat "$dir.log" >&2; exit 1; }
  local addr; addr=$(cat "$dir.addr")
  echo "== $label: $builds builds x $per jobs (filled in $((SECONDS - start)) s), $addr"
  local mid=$((builds / 2)) job=$((builds * per / 2))
  local paths=${BENCH_PATHS:-"/api/v1/builds?limit=50 /api/v1/builds?before={mid}&limit=50
    /api/v1/builds?state=queued&recipe=attn-example&limit=50 /api/v1/builds/{mid}
    /api/v1/jobs/{job} /api/v1/overview /api/v1/publications /metrics /api/v1/coverage
    /feeds/wheels.atom"}
  for path in $paths; do
    path=${path//\{mid\}/$mid}
    path=${path//\{job\}/$job}
    echo "-- GET $path"
    # shellcheck disable=SC2086 # BENCH_WRK is a list of options
    wrk ${BENCH_WRK:--t2 -c16} -d"${seconds}s" --latency "http://$addr$path" |
      grep -E "Requests/sec|Latency |50%|99%|Non-2xx" || true
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
}

for size in ${BENCH_SIZES:-small large}; do
  case $size in
    small) run small 1000 10 ;;
    large) run large 10000 10 ;;
    *) echo "unknown size $size (small, large)" >&2; exit 2 ;;
  esac
done
