#!/bin/sh
# Copies a binary and every shared library it loads (except the C and C++ runtime, which any
# newer distribution provides) into DEST/bin and DEST/lib, and points the binary's RPATH at
# DEST/lib. The result runs on a newer glibc distribution (e.g. the Ubuntu-based CUDA images)
# without touching that system's libraries or LD_LIBRARY_PATH.
#   bundle-libs.sh DEST BINARY...
set -eu
[ $# -ge 2 ] || { echo "usage: $0 DEST BINARY..." >&2; exit 2; }
dest=$1; shift
command -v patchelf >/dev/null || { echo "bundle-libs: patchelf is required" >&2; exit 1; }
mkdir -p "$dest/bin" "$dest/lib"
for bin in "$@"; do
  if ldd "$bin" | grep -q 'not found'; then ldd "$bin" | grep 'not found' >&2; exit 1; fi
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libstdc++.so.*|libgcc_s.so.*) ;;
      *) cp -L "$lib" "$dest/lib/" ;;
    esac
  done
  install -m 0755 "$bin" "$dest/bin/"
  # DT_RPATH (not RUNPATH) also serves the bundled libraries' own dependencies.
  patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$dest/bin/$(basename "$bin")"
done
echo "bundle-libs: $(ls "$dest/lib" | wc -l) libraries in $dest/lib"
