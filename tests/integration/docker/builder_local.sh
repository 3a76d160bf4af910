#!/usr/bin/env bash
# Makes the local builder image with docker/builder-local/make-image.sh (hostusr mode) and
# checks, inside a podman container, what the container executor relies on: Python makes a
# venv, nvcc compiles sm_120a/sm_121a code (when the host has a CUDA toolkit), the host's
# ccache runs at the same path (the worker's compile cache), /usr is read-only, there is
# no network but loopback, and the job runs as the builder user.
# Exits 77 when podman is missing or cannot run containers on this machine.
# FARM_PODMAN_GLOBAL_ARGS overrides the global podman flags (default: runc + cgroupfs when
# /usr/sbin/runc exists, which the development machine needs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)

command -v podman >/dev/null || { echo "SKIP: podman is not installed (apt-get install podman runc)"; exit 77; }
if [[ -n "${FARM_PODMAN_GLOBAL_ARGS+x}" ]]; then
  read -r -a global <<<"$FARM_PODMAN_GLOBAL_ARGS"
elif [[ -x /usr/sbin/runc ]]; then
  global=(--runtime /usr/sbin/runc --cgroup-manager cgroupfs)
else
  global=()
fi
if ! info=$(podman "${global[@]}" info 2>&1); then
  echo "SKIP: podman cannot run here: $(tail -n 1 <<<"$info")"
  exit 77
fi

tag="localhost/farm-builder-local-test:$$"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/farm-builder-test.XXXXXX")
cleanup() { podman rmi -f "$tag" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

SECONDS=0
out=$("$repo/docker/builder-local/make-image.sh" --tag "$tag" 2>"$tmp/make.err") || {
  cat "$tmp/make.err" >&2; fail "make-image.sh failed"; }
[[ "$(tail -n 1 <<<"$out")" == "$tag" ]] || fail "make-image.sh did not print the image name: $out"
echo "ok: image $tag made in ${SECONDS}s"
check_label=$(podman image inspect --format '{{ index .Config.Labels "farm.builder.mode" }}' "$tag")
[[ "$check_label" == hostusr ]] || fail "image label farm.builder.mode is '$check_label'"

run() {
  timeout 120 podman "${global[@]}" run --rm --network=none \
    --ulimit nproc=1000:1000 --ulimit nofile=1024:1024 \
    -v /usr:/usr:ro -v "$tmp:/job:rw" --user 1000:1000 "$tag" "$@"
}

run sh -c 'test "$(id -un)" = builder && test "$PWD" = /work' || fail "not running as builder in /work"
echo "ok: runs as builder in /work"
run sh -c 'python3 -m venv --system-site-packages /tmp/v && /tmp/v/bin/python -c "import sys; assert sys.prefix == \"/tmp/v\"; print(sys.version.split()[0])"' \
  > "$tmp/py.out" || fail "python3 -m venv failed in the container"
echo "ok: python $(cat "$tmp/py.out") makes a venv"
if run sh -c 'touch /usr/farm-write-test' 2>/dev/null; then fail "/usr is writable in the container"; fi
echo "ok: /usr is read-only"
ifaces=$(run sh -c "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' '")
[[ "$ifaces" == "lo " ]] || fail "expected only loopback, found: $ifaces"
echo "ok: network interfaces: $ifaces"

if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  chmod 0777 "$tmp"
  printf '__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n' > "$tmp/k.cu"
  run sh -c 'cd /job && nvcc -c k.cu -o k.o -gencode arch=compute_120a,code=sm_120a -gencode arch=compute_121a,code=sm_121a' \
    || fail "nvcc failed in the container"
  [[ -s "$tmp/k.o" ]] || fail "nvcc wrote no object"
  echo "ok: nvcc compiled sm_120a and sm_121a code ($(stat -c %s "$tmp/k.o") bytes)"
else
  echo "note: no CUDA toolkit at /usr/local/cuda; nvcc not checked"
fi
# The worker's compile cache runs in the container through the worker's own ccache path.
if ccache_path=$(command -v ccache); then
  run sh -c "test -x $ccache_path && CCACHE_DIR=/tmp/cc $ccache_path --version | head -n 1" \
    > "$tmp/ccache.out" || fail "$ccache_path does not run in the container"
  echo "ok: $(cat "$tmp/ccache.out") at $ccache_path"
else
  echo "note: no ccache on this host; the compile cache is not checked"
fi
echo "PASS: local builder image (${SECONDS}s)"
