#!/usr/bin/env bash
# Cross-builds farmd, farm-worker and farmctl for aarch64 Linux on an x86_64 Debian 12
# machine (docs/aarch64.md):
#
#   common/scripts/cross-build-aarch64.sh [--install-deps] [TARGET...]
#
# --install-deps  adds the arm64 architecture to dpkg and installs the cross compiler and
#                 the arm64 -dev packages (root or sudo; run it once).
# TARGET...       CMake targets to build (default: farmd farm-worker farmctl).
#
# The build goes to $FARM_AARCH64_BUILD_DIR (default build-aarch64/ in the checkout), with
# tests off: the unit tests are the native build's. protoc and grpc_cpp_plugin run natively;
# every object and library is aarch64 (check with `file build-aarch64/worker/farm-worker`).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${FARM_AARCH64_BUILD_DIR:-$repo/build-aarch64}
triple=aarch64-linux-gnu

# Multi-Arch: same in Debian 12, so they install next to the amd64 ones.
ARM64_DEV=(
  libgrpc++-dev libprotobuf-dev libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libcurl4-openssl-dev libsqlite3-dev libspdlog-dev libssl-dev libarchive-dev libzstd-dev
  liblz4-dev libyaml-cpp0.7
)
# libyaml-cpp-dev is not Multi-Arch: same in Debian 12: installing its arm64 build would
# remove the amd64 one. Its .deb is unpacked into the build directory instead.
YAML_DEV=libyaml-cpp-dev

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

install_deps() {
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
  fi
  local pkgs=(crossbuild-essential-arm64 protobuf-compiler protobuf-compiler-grpc)
  for p in "${ARM64_DEV[@]}"; do pkgs+=("$p:arm64"); done
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if (( ${#missing[@]} )); then
    echo "cross-build: installing ${missing[*]}"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

# Unpacks libyaml-cpp-dev:arm64 (headers, CMake package) into $build/multiarch and points
# its library links at the installed libyaml-cpp0.7:arm64. Prints the CMake package dir.
unpack_yaml_cpp() {
  local dest=$build/multiarch
  local cmake_dir=$dest/usr/lib/$triple/cmake/yaml-cpp
  if [[ ! -f $cmake_dir/yaml-cpp-config.cmake ]]; then
    local tmp
    tmp=$(mktemp -d)
    # apt's download sandbox user must be able to write the folder.
    chmod 0755 "$tmp"
    (cd "$tmp" && apt-get download -q "$YAML_DEV:arm64" >&2)
    rm -rf "$dest"
    mkdir -p "$dest"
    dpkg-deb -x "$tmp"/${YAML_DEV}_*_arm64.deb "$dest"
    rm -rf "$tmp"
  fi
  local lib
  for lib in /usr/lib/$triple/libyaml-cpp.so.*; do
    ln -sfn "$lib" "$dest/usr/lib/$triple/$(basename "$lib")"
  done
  ln -sfn "$(ls /usr/lib/$triple/libyaml-cpp.so.0.* | head -n1)" "$dest/usr/lib/$triple/libyaml-cpp.so"
  echo "$cmake_dir"
}

check_deps() {
  local missing=()
  command -v $triple-g++ >/dev/null || missing+=(crossbuild-essential-arm64)
  for p in "${ARM64_DEV[@]}"; do
    dpkg-query -W -f='${Status}' "$p:arm64" 2>/dev/null | grep -q "install ok installed" || missing+=("$p:arm64")
  done
  if (( ${#missing[@]} )); then
    echo "cross-build: missing ${missing[*]}; run $0 --install-deps" >&2
    exit 1
  fi
}

targets=()
for arg in "$@"; do
  case "$arg" in
    --install-deps) install_deps ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) targets+=("$arg") ;;
  esac
done
(( ${#targets[@]} )) || targets=(farmd farm-worker farmctl)
check_deps
yaml_dir=$(unpack_yaml_cpp)

cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE="$repo/common/cmake/toolchain-aarch64-linux-gnu.cmake" \
  -DFARM_BUILD_TESTS=OFF -Dyaml-cpp_DIR="$yaml_dir" ${FARM_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
for t in "$build/daemon/farmd" "$build/worker/farm-worker" "$build/cli/farmctl"; do
  [[ -f $t ]] && file -b "$t" | sed "s|^|$(basename "$t"): |" | cut -c1-110
done
