#!/usr/bin/env bash
# Runs the farm_coordinator, cuda_toolkit, python_envs, container_runtime and farm_worker roles
# against localhost (-c local) into throwaway prefixes, twice, and checks:
#   - the first run succeeds and the second reports changed=0 (idempotence);
#   - secrets and the enrollment token never appear in Ansible's output (-v --diff);
#   - modes of the secrets and token files, the unit files, the CUDA links, the venvs;
#   - the backup script really backs up a live SQLite database and keeps N copies;
#   - the WSL2 start script starts, restarts after a crash, and stops the worker.
# Three hosts: "coord" (farmd), "linux" (systemd host) and "wsl" (WSL2 without systemd).
# Binaries are small shell scripts: the roles only copy them. Exits 77 without ansible-core.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)

for tool in ansible-playbook sqlite3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool is not installed (apt-get install ansible-core sqlite3)"
    exit 77
  fi
done

root=$(mktemp -d "${TMPDIR:-/tmp}/farm-roles.XXXXXX")
started_pid=""
cleanup() {
  local rc=$?
  if [[ -n "$started_pid" ]] && kill -0 "$started_pid" 2>/dev/null; then kill -TERM "$started_pid" || true; fi
  if [[ $rc -eq 0 && -z "${KEEP_TMP:-}" ]]; then rm -rf "$root"; else echo "kept $root"; fi
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
check() { local what=$1; shift; if "$@"; then echo "ok: $what"; else fail "$what"; fi; }
mode_of() { stat -c %a "$1"; }

secret="ghp_TESTONLY$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
hf_secret="hf_TESTONLY$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
enroll="enroll-TESTONLY-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
user=$(id -un)
group=$(id -gn)
python=$(command -v python3.11 || true)
[[ -n "$python" ]] || python=/usr/bin/python3
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# --- fake binaries and a fake host tree ---------------------------------------------------
mkdir -p "$root/bin"
cat > "$root/bin/farm-worker" <<'SH'
#!/bin/sh
# Fake farm-worker: records its arguments and environment, crashes once on request.
state=""
prev=""
for a in "$@"; do [ "$prev" = "--state-dir" ] && state=$a; prev=$a; done
printf '%s\n' "$@" > "$state/fake-args"
env > "$state/fake-env"
echo run >> "$state/fake-runs"
if [ -f "$state/crash-once" ]; then rm -f "$state/crash-once"; exit 3; fi
trap 'exit 0' TERM
i=0
while [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
SH
printf '#!/bin/sh\necho fake farmd "$@"\n' > "$root/bin/farmd"
printf '#!/bin/sh\necho fake farmctl "$@"\n' > "$root/bin/farmctl"
chmod +x "$root/bin/"*

for host in linux wsl; do
  for v in 13.0 12.9; do
    mkdir -p "$root/$host/usr/local/cuda-$v/bin" "$root/$host/usr/local/cuda-$v/lib64"
    printf '#!/bin/sh\necho fake nvcc %s\n' "$v" > "$root/$host/usr/local/cuda-$v/bin/nvcc"
    printf '#!/bin/sh\necho fake ptxas %s\n' "$v" > "$root/$host/usr/local/cuda-$v/bin/ptxas"
    chmod +x "$root/$host/usr/local/cuda-$v/bin/"*
  done
done
mkdir -p "$root/wsl/usr/lib/wsl/lib"
: > "$root/wsl/usr/lib/wsl/lib/libcuda.so.1"
ln -s libcuda.so.1 "$root/wsl/usr/lib/wsl/lib/libcuda.so"

cat > "$root/hosts.yml" <<YML
all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: /usr/bin/python3
    farm_manage_services: false
    farm_manage_packages: false
    farm_manage_users: false
    farm_skip_gpu_steps: true
  children:
    coordinator:
      hosts:
        coord:
          farm_prefix: "$root/coord"
          farm_coordinator_binary_src: "$root/bin/farmd"
          farm_coordinator_farmctl_src: "$root/bin/farmctl"
          farm_coordinator_user: "$user"
          farm_coordinator_group: "$group"
          farm_coordinator_listen: "127.0.0.1:7070"
          farm_coordinator_http_listen: "127.0.0.1:8080"
          farm_coordinator_config: {lease_ms: 30000}
          farm_coordinator_secrets: {GITHUB_TOKEN: "$secret", HF_TOKEN: "$hf_secret", EMPTY: ""}
          farm_coordinator_backup_keep: 2
    workers:
      vars:
        farm_worker_binary_src: "$root/bin/farm-worker"
        farm_worker_server: "127.0.0.1:7070"
        farm_worker_enroll_token: "$enroll"
        farm_worker_user: "$user"
        farm_worker_group: "$group"
        farm_worker_labels: {gpu: test, sm: sm_120}
        farm_worker_gb_per_compile_job: 2
        cuda_toolkit_versions: ["13.0", "12.9"]
        python_envs_versions: ["$pyver"]
        python_envs_interpreters: {"$pyver": "$python"}
        python_envs_system_site_packages: true
        python_envs_build_packages: [pip]
        python_envs_pip_extra_args: "--no-index"
        container_runtime_oci_runtime: /usr/sbin/runc
        container_runtime_cgroup_manager: cgroupfs
        container_runtime_default_ulimits: ["nproc=1000:1000", "nofile=1024:1024"]
      hosts:
        linux:
          farm_prefix: "$root/linux"
          farm_worker_service_manager: systemd
          farm_worker_wsl2: false
        wsl:
          farm_prefix: "$root/wsl"
          farm_worker_service_manager: auto
          farm_worker_wsl2: true
          farm_worker_wsl2_min_memory_mb: 512
YML

export ANSIBLE_ROLES_PATH="$repo/playbooks/roles"
export ANSIBLE_RETRY_FILES_ENABLED=false
export ANSIBLE_NOCOLOR=1
export ANSIBLE_LOCAL_TEMP="$root/ansible-tmp"
export ANSIBLE_REMOTE_TEMP="$root/ansible-tmp"

converge() {
  local log=$1
  if ! ansible-playbook -v --diff -i "$root/hosts.yml" "$here/converge.yml" > "$log" 2>&1; then
    tail -n 60 "$log" >&2
    fail "ansible-playbook failed (log: $log)"
  fi
}
recap_sum() {  # recap_sum LOG FIELD -> sum of FIELD=N over all hosts
  sed -n '/PLAY RECAP/,$p' "$1" | grep -o "$2=[0-9]*" | cut -d= -f2 | awk '{s+=$1} END {print s+0}'
}

SECONDS=0
converge "$root/run1.log"
first_changed=$(recap_sum "$root/run1.log" changed)
echo "first run: changed=$first_changed failed=$(recap_sum "$root/run1.log" failed) (${SECONDS}s)"
check "the first run changed something" test "$first_changed" -gt 10
SECONDS=0
converge "$root/run2.log"
second_changed=$(recap_sum "$root/run2.log" changed)
echo "second run: changed=$second_changed (${SECONDS}s)"
if [[ "$second_changed" != 0 ]]; then
  grep -E '^(changed|TASK)' "$root/run2.log" | grep -B1 '^changed' >&2 || true
  fail "second run reported changed=$second_changed, expected 0"
fi
check "every host reported in the recap" test "$(sed -n '/PLAY RECAP/,$p' "$root/run2.log" | grep -c 'ok=')" -eq 3

# --- secrets -----------------------------------------------------------------------------
for s in "$secret" "$hf_secret" "$enroll"; do
  if grep -qF "$s" "$root/run1.log" "$root/run2.log"; then fail "a secret appeared in Ansible's output"; fi
done
echo "ok: no secret in Ansible's output"
c="$root/coord"
check "secrets file is 0600" test "$(mode_of "$c/etc/farm/farmd.secrets")" = 600
check "secrets file holds GITHUB_TOKEN" grep -qx "GITHUB_TOKEN=$secret" "$c/etc/farm/farmd.secrets"
check "empty secrets are left out" bash -c "! grep -q '^EMPTY=' '$c/etc/farm/farmd.secrets'"
check "data dir is 0700" test "$(mode_of "$c/var/lib/farmd")" = 700
for h in linux wsl; do
  check "$h: enroll token is 0600" test "$(mode_of "$root/$h/etc/farm/enroll.token")" = 600
  check "$h: enroll token content" grep -qx "$enroll" "$root/$h/etc/farm/enroll.token"
done

# --- coordinator unit and config ----------------------------------------------------------
unit="$c/etc/systemd/system/farmd.service"
check "farmd unit restarts on failure" grep -qx 'Restart=on-failure' "$unit"
check "farmd unit waits for the ready file" grep -q '^ExecStartPost=/bin/sh -c .*/run/farmd/ready' "$unit"
check "farmd unit passes --secrets-file" grep -q -- '"--secrets-file" "'"$c"'/etc/farm/farmd.secrets"' "$unit"
check "farmd unit passes --config and --http-listen" grep -q -- '"--config" .* "--http-listen"\|"--http-listen" .* "--config"' "$unit"
check "farmd config rendered" grep -qx 'lease_ms: 30000' "$c/etc/farm/farmd.yaml"
check "farmctl installed" test -x "$c/usr/local/bin/farmctl"
check "backup timer" grep -qx 'OnCalendar=\*-\*-\* 03:15:00' "$c/etc/systemd/system/farmd-backup.timer"

# --- backups: a live WAL database, three backups, two kept --------------------------------
db="$c/var/lib/farmd/farm.db"
sqlite3 "$db" "PRAGMA journal_mode=WAL; CREATE TABLE jobs(id INTEGER PRIMARY KEY, name TEXT);
  WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 500)
  INSERT INTO jobs(name) SELECT 'job-' || i FROM n;" > /dev/null
for i in 1 2 3; do
  "$c/usr/local/sbin/farmd-backup" > "$root/backup$i.log" || fail "backup run $i failed: $(cat "$root/backup$i.log")"
done
mapfile -t backups < <(ls -1 "$c/var/backups/farmd" | grep -E '^farm-.*\.db$' | sort)
check "retention keeps 2 backups of 3" test "${#backups[@]}" -eq 2
check "the newest backup is kept" grep -q "${backups[1]}" "$root/backup3.log"
check "backup is 0600" test "$(mode_of "$c/var/backups/farmd/${backups[1]}")" = 600
check "backup holds all 500 rows" test "$(sqlite3 "$c/var/backups/farmd/${backups[1]}" 'SELECT count(*) FROM jobs')" = 500
check "backup refuses a missing database" bash -c "! '$c/usr/local/sbin/farmd-backup' '$c/nope.db' '$root/nope' 2 2>/dev/null"
check "no partial file left" bash -c "! ls -A '$c/var/backups/farmd' | grep -q partial"

# --- CUDA toolkits and Python environments ------------------------------------------------
for h in linux wsl; do
  check "$h: /usr/local/cuda -> cuda-13.0" test "$(readlink "$root/$h/usr/local/cuda")" = cuda-13.0
  check "$h: TRITON_PTXAS_PATH" grep -qx "TRITON_PTXAS_PATH=\"$root/$h/usr/local/cuda-13.0/bin/ptxas\"" "$root/$h/etc/farm/cuda.env"
  check "$h: profile.d exports CUDA_HOME" bash -c "CUDA_HOME= PATH=/usr/bin:/bin; . '$root/$h/etc/profile.d/farm-cuda.sh'; test \"\$CUDA_HOME\" = '$root/$h/usr/local/cuda-13.0' && command -v nvcc | grep -q cuda-13.0"
  venv="$root/$h/opt/farm/python/cp${pyver/./}/bin/python"
  check "$h: venv for Python $pyver works" "$venv" -c 'import sys; assert sys.prefix != sys.base_prefix'
  check "$h: podman settings" grep -qx 'runtime = "/usr/sbin/runc"' "$root/$h/etc/containers/containers.conf.d/50-farm.conf"
done
check "linux: nvidia-uvm loaded at boot" grep -qx nvidia-uvm "$root/linux/etc/modules-load.d/nvidia-uvm.conf"
check "wsl: no nvidia-uvm modules-load file" test ! -e "$root/wsl/etc/modules-load.d/nvidia-uvm.conf"

# --- worker: systemd host ------------------------------------------------------------------
wunit="$root/linux/etc/systemd/system/farm-worker.service"
check "linux: worker unit restarts on failure" grep -qx 'Restart=on-failure' "$wunit"
check "linux: worker unit keeps GPU devices" bash -c "! grep -Eq '^(PrivateDevices|DevicePolicy|MemoryDenyWriteExecute)=' '$wunit'"
check "linux: worker unit passes labels" grep -q '"--label" "gpu=test" "--label" "sm=sm_120"' "$wunit"
check "linux: worker unit passes the venv python" grep -q "\"--python\" \"$root/linux/opt/farm/python/cp${pyver/./}/bin/python\"" "$wunit"
check "linux: no start script on a systemd host" test ! -e "$root/linux/usr/local/sbin/farm-worker-ctl"
check "linux: MAX_JOBS derived" grep -Eq '^MAX_JOBS="[1-9][0-9]*"$' "$root/linux/etc/farm/farm-worker.env"
if command -v systemd-analyze >/dev/null 2>&1; then
  # Units under a prefix name prefixed binaries, so verify sees real paths to check.
  if ! out=$(systemd-analyze verify "$unit" "$wunit" 2>&1); then
    echo "$out" | grep -v 'Failed to resolve \(user\|group\)' >&2 || true
  fi
  if echo "$out" | grep -Ei 'unknown|invalid|failed to parse|bad|not executable' | grep -v "resolve"; then
    fail "systemd-analyze verify found problems in the units"
  fi
  echo "ok: systemd-analyze verify found no syntax problems"
fi

# --- worker: WSL2 without systemd ----------------------------------------------------------
w="$root/wsl"
check "wsl: libcuda.so linked into cuda-13.0" test "$(readlink "$w/usr/local/cuda-13.0/lib64/libcuda.so")" = "$w/usr/lib/wsl/lib/libcuda.so"
check "wsl: libcuda.so linked into cuda-12.9" test -L "$w/usr/local/cuda-12.9/lib64/libcuda.so"
check "wsl: LD_LIBRARY_PATH names the WSL driver" grep -qx "LD_LIBRARY_PATH=\"$w/usr/lib/wsl/lib\"" "$w/etc/farm/farm-worker.env"
check "wsl: no systemd unit" test ! -e "$w/etc/systemd/system/farm-worker.service"
ctl="$w/usr/local/sbin/farm-worker-ctl"
state="$w/var/lib/farm-worker"
: > "$state/crash-once"
"$ctl" start | tee "$root/ctl-start.log"
started_pid=$(cat "$state/farm-worker-ctl.pid")
check "wsl: start script reports started" grep -q 'started' "$root/ctl-start.log"
deadline=$((SECONDS + 20))
while [[ $(wc -l < "$state/fake-runs" 2>/dev/null || echo 0) -lt 2 && $SECONDS -lt $deadline ]]; do sleep 0.2; done
check "wsl: the worker was restarted after crashing" test "$(wc -l < "$state/fake-runs")" -ge 2
check "wsl: restart logged" grep -q 'exited with status 3; restarting' "$w/var/log/farm-worker.log"
check "wsl: second start is a no-op" bash -c "'$ctl' start | grep -q 'already running'"
check "wsl: status running" "$ctl" status
check "wsl: worker got --server" grep -qx -- '--server' "$state/fake-args"
check "wsl: worker got the token file" grep -qx "$w/etc/farm/enroll.token" "$state/fake-args"
check "wsl: worker saw MAX_JOBS" grep -Eq '^MAX_JOBS=[1-9]' "$state/fake-env"
check "wsl: worker saw CUDA_HOME" grep -qx "CUDA_HOME=$w/usr/local/cuda-13.0" "$state/fake-env"
"$ctl" stop
check "wsl: supervisor gone after stop" bash -c "! kill -0 $started_pid 2>/dev/null"
check "wsl: status reports stopped" bash -c "! '$ctl' status >/dev/null"
started_pid=""
echo "PASS: roles converge idempotently (first run changed=$first_changed, second changed=0)"
