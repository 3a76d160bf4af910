#!/usr/bin/env bash
# Makes (once) an arm64 Debian 12 root for running the farm's aarch64 binaries under
# qemu-user: debootstrap's first stage natively, its second stage inside the root under
# emulation. The root holds real aarch64 Pythons (with venv, pip, setuptools, wheel and the
# headers a C extension needs), gcc, and the shared libraries farmd, farm-worker and
# farmctl load, plus ansible-core for the gb10 role's check.
#
#   tests/bench/make_aarch64_root.sh [ROOT]
#
# ROOT defaults to $FARM_AARCH64_ROOT, else ${XDG_CACHE_HOME:-$HOME/.cache}/farm/aarch64-root:
# outside the checkout, so a rerun (and every test using it) starts in a second. A root is
# complete when ROOT/.farm-root-complete exists; an interrupted one is made again from
# scratch. Prints the root's path on the last line.
#
# Needs root, debootstrap, qemu-user-static with binfmt_misc (registered with the F flag,
# which Debian's qemu-user-static does) and the Debian mirror. Exits 77 with the reason
# when one of them is missing.
set -euo pipefail

root=${1:-${FARM_AARCH64_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/farm/aarch64-root}}
mirror=${FARM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
# Kept in step with the runtime libraries of the cross build (readelf -d shows them).
packages=(
  python3 python3-venv python3-pip python3-setuptools python3-wheel python3-dev gcc libc6-dev
  libgrpc++1.51 libprotobuf32 libboost-json1.81.0 libboost-url1.81.0 libcurl4 libsqlite3-0
  libspdlog1.10 libyaml-cpp0.7 libarchive13 libzstd1 liblz4-1 libssl3 ansible-core git
  python3-cffi-backend  # provides the virtual package python3-cryptography needs; debootstrap
                        # does not resolve virtual packages by itself
)
marker="$root/.farm-root-complete"

skip() { echo "SKIP: $*"; exit 77; }

if [[ -f "$marker" ]]; then
  echo "$root"
  exit 0
fi
[[ $(id -u) -eq 0 ]] || skip "making an arm64 root needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || skip "debootstrap is not installed (apt-get install debootstrap)"
"$(dirname "$0")/binfmt_check.sh" >/dev/null || skip "$("$(dirname "$0")/binfmt_check.sh" 2>&1 | tail -1)"

SECONDS=0
rm -rf "$root"
mkdir -p "$root"
include=$(IFS=,; echo "${packages[*]}")
echo "debootstrap first stage: $suite arm64 into $root"
debootstrap --arch=arm64 --foreign --variant=minbase --include="$include" "$suite" "$root" "$mirror"
echo "debootstrap second stage under qemu-aarch64 ($SECONDS s so far)"
chroot "$root" /debootstrap/debootstrap --second-stage
chroot "$root" /usr/bin/python3 -c 'import venv, ensurepip, setuptools, wheel' \
  || { echo "the root's Python lacks venv/pip/setuptools/wheel" >&2; exit 1; }
date -u +%FT%TZ > "$marker"
echo "arm64 root ready in $SECONDS s"
echo "$root"
