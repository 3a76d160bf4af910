#!/usr/bin/env bash
# Makes a builder image for podman on this machine, without any registry.
#
#   make-image.sh [--mode hostusr|debootstrap] [--tag IMAGE] [--suite bookworm] [--mirror URL]
#
# hostusr (default, about a second): a tiny root file system (merged-/usr links, /etc with
#   passwd, group, alternatives and the loader cache) imported with `podman import`. The
#   host's /usr, with its compilers, Python and the CUDA toolkit under /usr/local, is mounted
#   read-only at run time, so the image is only as good as the host:
#     podman run --rm --network=none -v /usr:/usr:ro IMAGE python3 --version
# debootstrap (minutes, needs the Debian mirror): a self-contained Debian minbase with
#   python3, venv, gcc and git; nothing is mounted from the host.
#     podman run --rm --network=none IMAGE python3 --version
# On hosts where crun cannot manage cgroups, add --runtime /usr/sbin/runc --cgroup-manager
# cgroupfs before `run`, and --ulimit nproc=1000:1000 --ulimit nofile=1024:1024 after it.
# Prints the image name on the last line of its output.
set -euo pipefail

mode=hostusr
tag=""
suite=bookworm
mirror=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --mode) mode=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "make-image: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$tag" ]] || tag="localhost/farm-builder-local:$mode"
command -v podman >/dev/null || { echo "make-image: podman is not installed (apt-get install podman runc)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/farm-builder-local.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"

make_hostusr() {
  mkdir -p "$rootfs"/{usr,etc,tmp,var/tmp,root,home/builder,work,proc,sys,dev,run}
  chmod 1777 "$rootfs/tmp" "$rootfs/var/tmp"
  for d in bin sbin lib lib32 lib64 libx32; do
    if [[ -L "/$d" ]]; then ln -s "$(readlink "/$d")" "$rootfs/$d"; fi
  done
  [[ -L "$rootfs/bin" && -L "$rootfs/lib" ]] || {
    echo "make-image: hostusr needs a merged-/usr host (/bin and /lib linking into /usr)" >&2; exit 1; }
  cat > "$rootfs/etc/passwd" <<'PW'
root:x:0:0:root:/root:/bin/sh
builder:x:1000:1000:builder:/home/builder:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
PW
  printf 'root:x:0:\nbuilder:x:1000:\nnogroup:x:65534:\n' > "$rootfs/etc/group"
  printf '127.0.0.1 localhost\n::1 localhost\n' > "$rootfs/etc/hosts"
  printf 'passwd: files\ngroup: files\nhosts: files\n' > "$rootfs/etc/nsswitch.conf"
  # Many /usr/bin commands (cc, c++, awk) are links through /etc/alternatives; the loader
  # cache names the library folders from /etc/ld.so.conf.d (the CUDA toolkit's among them).
  cp -a /etc/alternatives "$rootfs/etc/"
  cp -a /etc/ld.so.cache /etc/ld.so.conf "$rootfs/etc/" 2>/dev/null || true
  [[ -d /etc/ld.so.conf.d ]] && cp -a /etc/ld.so.conf.d "$rootfs/etc/"
  [[ -f /etc/os-release ]] && cp /etc/os-release "$rootfs/etc/os-release"
  chown -R 1000:1000 "$rootfs/home/builder" "$rootfs/work" 2>/dev/null || true
}

make_debootstrap() {
  command -v debootstrap >/dev/null || { echo "make-image: apt-get install debootstrap" >&2; exit 1; }
  [[ $(id -u) -eq 0 ]] || { echo "make-image: debootstrap needs root" >&2; exit 1; }
  debootstrap --variant=minbase \
    --include=python3,python3-venv,python3-pip,python3-wheel,python3-setuptools,gcc,g++,make,git,ca-certificates \
    "$suite" "$rootfs" ${mirror:+"$mirror"}
  rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"*
  mkdir -p "$rootfs/work"
}

case "$mode" in
  hostusr) make_hostusr ;;
  debootstrap) make_debootstrap ;;
  *) echo "make-image: --mode must be hostusr or debootstrap" >&2; exit 2 ;;
esac

tar --numeric-owner -C "$rootfs" -cf "$work/rootfs.tar" .
podman import \
  --change 'CMD ["/bin/sh"]' \
  --change 'WORKDIR /work' \
  --change 'ENV PATH=/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV CUDA_HOME=/usr/local/cuda' \
  --change "LABEL farm.builder.mode=$mode" \
  --message "farm builder image ($mode)" \
  "$work/rootfs.tar" "$tag" >/dev/null
echo "$tag"
