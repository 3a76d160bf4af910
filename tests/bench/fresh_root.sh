#!/usr/bin/env bash
# Proves README's two commands on a bare Debian 12 machine: makes a minimal Debian 12 root
# (debootstrap --variant=minbase: no compiler, no Python, nothing the farm installs), puts a
# clean clone of this repository in it, and runs inside it, as a new user would:
#   1. common/scripts/quickstart.sh   (to its wheel; the daemons it starts are then stopped)
#   2. common/scripts/test.sh         (the whole suite, exactly what .ci/run runs)
# and prints the time of each phase.
#
#   tests/bench/fresh_root.sh [--root DIR] [--keep] [--phases quickstart,test] [--ref REF]
#
#   --root DIR   where the root is made (default build-fresh-root/ in the checkout, which
#                git ignores); an existing one is removed first
#   --keep       keep the root afterwards (to look at build-*/Testing or the .farm logs)
#   --phases     which of quickstart,test to run (default both)
#   --ref REF    the commit to clone (default HEAD): only committed work is tested
#   --reuse      use the root an earlier --keep left (its clone and what was installed
#                stay): for finding what a phase lacks without starting from nothing;
#                figures from such a run are not a fresh machine's
#
# The toolkit in /usr/local/cuda is bound in read-only, as the README expects one there.
# Everything runs in a private mount namespace, so /proc, /sys, /dev and the toolkit are
# unmounted when the script ends, whatever way it ends. The root shares this machine's
# network (for apt and the loopback tests) and kernel. FARM_DEBIAN_MIRROR picks the mirror.
#
# Needs root, debootstrap, unshare (util-linux) and the Debian mirror; exits 77 with the
# reason when one is missing. Exit status: that of the first phase that failed, else 0.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
root=$repo/build-fresh-root
keep=0
phases=quickstart,test
ref=HEAD
reuse=0
while (($#)); do
  case "$1" in
    --root) root=$(realpath -m "$2"); shift 2 ;;
    --keep) keep=1; shift ;;
    --phases) phases=$2; shift 2 ;;
    --ref) ref=$2; shift 2 ;;
    --reuse) reuse=1; keep=1; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh_root: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
mirror=${FARM_DEBIAN_MIRROR:-http://deb.debian.org/debian}

skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "a fresh root needs root (debootstrap, chroot, mounts)"
command -v debootstrap >/dev/null || skip "debootstrap is not installed (apt-get install debootstrap)"
command -v unshare >/dev/null || skip "unshare is not installed (util-linux)"
[[ -x /usr/local/cuda/bin/nvcc ]] || skip "no CUDA toolkit in /usr/local/cuda to bind into the root"
case "$root" in
  /|/usr|/usr/*|/etc|/etc/*|/home|/root) echo "fresh_root: refusing --root $root" >&2; exit 2 ;;
esac

declare -a names=() times=() results=()
# phase NAME COMMAND...: runs and times one phase; records ok or the exit status.
phase() {
  local name=$1 start=$SECONDS rc=0
  shift
  echo "=== fresh_root: $name"
  "$@" || rc=$?
  names+=("$name")
  times+=("$((SECONDS - start))")
  results+=("$([[ $rc -eq 0 ]] && echo ok || echo "failed ($rc)")")
  return $rc
}

report() {
  echo
  echo "=== fresh_root: phases ($(date -u +%FT%TZ), $(nproc) cores)"
  local i
  for i in "${!names[@]}"; do
    printf '  %-34s %3dm%02ds  %s\n' "${names[$i]}" $((times[i] / 60)) $((times[i] % 60)) "${results[$i]}"
  done
}

# Refuses to remove a root something is still mounted under (a run killed before its
# namespace ended can leave /proc or a bind mount behind): rm -rf would walk into it.
remove_root() {
  if awk -v r="$root" '$5 == r || index($5, r "/") == 1 {found = 1} END {exit !found}' \
      /proc/self/mountinfo; then
    echo "fresh_root: something is mounted under $root; unmount it first:" >&2
    awk -v r="$root" '$5 == r || index($5, r "/") == 1 {print "  " $5}' /proc/self/mountinfo >&2
    return 1
  fi
  rm -rf "$root" "$@"
}

make_root() {
  remove_root || return 1
  mkdir -p "$root"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 \
    || { tail -20 "$root.debootstrap.log" >&2; return 1; }
  # A Debian 12 machine as installed: the release, its updates and security updates.
  local security=${mirror%/debian}/debian-security
  cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  echo "fresh-root" >"$root/etc/hostname"
  git clone --quiet --no-local --no-hardlinks "$repo" "$root/srv/farm"
  git -C "$root/srv/farm" checkout --quiet --detach "$(git -C "$repo" rev-parse "$ref")"
  echo "fresh_root: root at $root, clone of $(git -C "$root/srv/farm" log -1 --format='%h %s')"
}

# The commands below run in a private mount namespace (unshare -m): its mounts end with it.
inside() {
  unshare --mount --propagation private bash -euo pipefail -c '
    root=$1; shift
    # The root is a mount point of its own, as / is on a machine: bubblewrap and `ip netns`
    # make / a slave mount, which fails on a plain folder.
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
    mount -t tmpfs tmpfs "$root/run"
    mkdir -p "$root/usr/local/cuda"
    mount --bind /usr/local/cuda "$root/usr/local/cuda"
    mount -o remount,bind,ro "$root/usr/local/cuda"
    exec chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      bash -c "cd /srv/farm && $*"' fresh-root "$root" "$@"
}

quickstart() {
  local rc=0
  inside common/scripts/quickstart.sh || rc=$?
  # Stop the daemons the quick start left running (their pids are in its state folder).
  local pidfile pid
  for pidfile in "$root"/srv/farm/.farm/farmd.pid "$root"/srv/farm/.farm/worker.pid; do
    [[ -f $pidfile ]] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  return $rc
}

suite() {
  local rc=0
  inside common/scripts/test.sh 2>&1 | tee "$root.test.log" || rc=$?
  echo "fresh_root: tests left out or failed:"
  grep -E '\*\*\*(Skipped|Failed|Timeout)|Not Run' "$root.test.log" || echo "  none"
  grep -E 'tests passed|Total Test time' "$root.test.log" || true
  return $rc
}

status=0
if ((reuse)) && [[ -d $root/srv/farm ]]; then
  echo "fresh_root: reusing $root ($(git -C "$root/srv/farm" log -1 --format='%h %s'))"
else
  phase "bare root (debootstrap minbase)" make_root || { report; exit 1; }
fi
if [[ ,$phases, == *,quickstart,* ]]; then
  phase "quickstart.sh to its wheel" quickstart || status=$?
fi
if [[ ,$phases, == *,test,* ]] && ((status == 0)); then
  phase "test.sh (deps, build, suite)" suite || status=$?
fi
report
if ((keep == 0 && status == 0)); then
  remove_root "$root.debootstrap.log"
else
  echo "fresh_root: kept $root (logs: $root.*.log)"
fi
exit $status
