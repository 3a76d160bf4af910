#!/usr/bin/env bash
# Measures farmd's scheduler with simulated workers (docs/benchmarks.md). Builds nothing.
#   tests/bench/sched_bench.sh BUILD_DIR [JOBS] [WORKER_COUNTS...]
# For each worker count (default: 100 1000) and each mode, backlog (all jobs queued, then
# leased) and live (workers polling while builds arrive), it starts a fresh farmd on
# 127.0.0.1:0 with a temporary data directory, creates a submitter token with farmctl,
# runs sched_bench, reads farmd's peak RSS (VmHWM), its CPU time and the SQLite size (farm.db + WAL),
# stops farmd by its pid and prints a table (times in ms). FARMD, FARMCTL and SCHED_BENCH
# override the binaries; CELLS sets the jobs per build (default 100), MODES the modes
# (default "backlog live"), SUBMIT_INTERVAL_MS a pause between builds. With FARMD_BEFORE (a
# farmd built from another commit) every run is made twice, that farmd first, then this
# one, so before and after are measured side by side under the same load.
set -euo pipefail
build=${1:?usage: sched_bench.sh BUILD_DIR [JOBS] [WORKER_COUNTS...]}
jobs=${2:-5000}
shift $(($# >= 2 ? 2 : 1))
counts=("$@")
((${#counts[@]})) || counts=(100 1000)
farmd=${FARMD:-$build/daemon/farmd}
cells=${CELLS:-100}
farmctl=${FARMCTL:-$build/cli/farmctl}
bench=${SCHED_BENCH:-$build/tests/bench/sched_bench}
for b in "$farmd" "$farmctl" "$bench" ${FARMD_BEFORE:+"$FARMD_BEFORE"}; do
  [[ -x $b ]] || { echo "missing $b (build farmd, farmctl and sched_bench)" >&2; exit 1; }
done
# 1000 workers hold 1000 connections on each side.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
work=$(mktemp -d)
pid=""
cleanup() {
  if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  [[ -n ${KEEP_BENCH_DIR:-} ]] || rm -rf "$work"
}
trap cleanup EXIT

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

run_one() {  # run_one WORKERS MODE FARMD LABEL: a fresh farmd for one run
  local n=$1 mode=$2 daemon=$3 label=$4 dir=$work/$4
  mkdir -p "$dir"
  "$daemon" --data-dir "$dir/data" --listen 127.0.0.1:0 --ready-file "$dir/addr" \
    >"$dir/farmd.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do [[ -s $dir/addr ]] && break; sleep 0.1; done
  [[ -s $dir/addr ]] || { echo "farmd did not start" >&2; tail -20 "$dir/farmd.log" >&2; exit 1; }
  local addr line hwm db cpu
  addr=$(cat "$dir/addr")
  "$farmctl" --server "$addr" --token-file "$dir/data/admin.token" tokens create \
    --role submitter --name sched-bench | tail -1 | tr -d '\r\n' >"$dir/submit.token"
  # The bench submits far more than a submitter's default quotas allow (docs/limits.md);
  # a farmd from before quotas has no such command, and no quotas.
  "$farmctl" --server "$addr" --token-file "$dir/data/admin.token" quota set sched-bench \
    --submissions unlimited --queued-jobs unlimited --stored-bytes unlimited >/dev/null 2>&1 || true
  line=$("$bench" --server "$addr" --enroll-token-file "$dir/data/enroll.token" \
    --submit-token-file "$dir/submit.token" --workers "$n" --jobs "$jobs" --mode "$mode" \
    --cells-per-build "$cells" --label "$label" --time-limit-s 600 \
    ${SUBMIT_INTERVAL_MS:+--submit-interval-ms "$SUBMIT_INTERVAL_MS"} 2>&1 | tee "$dir/bench.out" | grep '^RESULT' || true)
  if [[ -z $line ]]; then
    echo "sched_bench failed ($mode, $n workers):" >&2
    tail -5 "$dir/bench.out" >&2
    line="RESULT label=$label mode=$mode workers=$n jobs=failed"
  fi
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
  # farmd's CPU time over its whole life (user + system; fields 14 and 15 of stat, in ticks).
  cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$pid/stat")
  db=$(du -k -c "$dir/data"/farm.db* | awk 'END {print $1}')
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  # The machine may be shared: the 1-minute load average after the run puts figures in context.
  line+=" load1=$(cut -d' ' -f1 /proc/loadavg)"
  line+=" farmd_cpu_s=$cpu rss_mib=$((hwm / 1024)) db_mib=$(awk "BEGIN {printf \"%.1f\", $db / 1024}")"
  echo "$line" >&2  # as it comes, so a later failure loses nothing
  results+=("$line")
}

results=()
# A paced run says so in its label: its submit-to-lease figures are not a queue's.
pace=${SUBMIT_INTERVAL_MS:+-every${SUBMIT_INTERVAL_MS}ms}
for n in "${counts[@]}"; do
  for mode in ${MODES:-backlog live}; do
    if [[ -n ${FARMD_BEFORE:-} ]]; then
      run_one "$n" "$mode" "$FARMD_BEFORE" "before-$mode-$n$pace"
      run_one "$n" "$mode" "$farmd" "after-$mode-$n$pace"
    else
      run_one "$n" "$mode" "$farmd" "$mode-$n$pace"
    fi
  done
done

echo
printf '%-28s %7s %5s %8s %8s %9s %9s %8s %10s %8s %7s %5s  %s\n' run workers jobs lease/s \
  done/s 'lat p50' 'lat p99' 'hb p99' 'submit p50' 'RSS MiB' 'DB MiB' load 'jobs ended'
for line in "${results[@]}"; do
  lat50=$(field lat_p50_ms "$line") lat99=$(field lat_p99_ms "$line")
  # In backlog mode every job waits for the whole queue: its latency says nothing.
  [[ $(field mode "$line") == backlog ]] && lat50=- lat99=-
  printf '%-28s %7s %5s %8s %8s %9s %9s %8s %10s %8s %7s %5s  %s\n' "$(field label "$line")" \
    "$(field workers "$line")" "$(field jobs "$line")" "$(field lease_per_s "$line")" \
    "$(field complete_per_s "$line")" "$lat50" "$lat99" "$(field hb_p99_ms "$line")" \
    "$(field submit_call_p50_ms "$line")" "$(field rss_mib "$line")" "$(field db_mib "$line")" \
    "$(field load1 "$line")" "$(field states "$line")"
done
echo
printf '%s\n' "${results[@]}"
