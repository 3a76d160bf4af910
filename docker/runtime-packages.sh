#!/bin/sh
# Prints the Debian packages that provide the shared libraries the given binaries load, one
# per line. The runtime stage of an image installs exactly these.
#   runtime-packages.sh BINARY...
set -eu
[ $# -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
owner() {
  # dpkg records a file under the path its package ships it at: /lib or /usr/lib.
  for p in "$1" "$(readlink -f "$1")" "/usr$1" "${1#/usr}"; do
    if pkg=$(dpkg -S "$p" 2>/dev/null); then echo "${pkg%%:*}"; return 0; fi
  done
  echo "runtime-packages: no package owns $1" >&2
  return 1
}
for bin in "$@"; do
  if ldd "$bin" | grep -q 'not found'; then
    ldd "$bin" | grep 'not found' >&2
    exit 1
  fi
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do owner "$lib"; done
done | sed 's/:.*//' | sort -u
