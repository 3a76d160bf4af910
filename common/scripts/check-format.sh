#!/usr/bin/env bash
# Checks that C++ files are formatted as the repository's .clang-format says, with
# Debian's clang-format 14 (another version formats differently, so it is refused rather
# than trusted):
#
#   common/scripts/check-format.sh              every .h and .cc file git tracks
#   common/scripts/check-format.sh FILE...      those files
#
# Prints each difference (file:line:column) and exits 1 when a file differs, 2 when
# clang-format 14 is missing (CLANG_FORMAT names another binary), 0 when every file is
# formatted. Changes nothing: `clang-format -i FILE` formats a file.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

clang_format=${CLANG_FORMAT:-}
if [[ -z $clang_format ]]; then
  for candidate in clang-format-14 clang-format; do
    if command -v "$candidate" >/dev/null; then clang_format=$candidate; break; fi
  done
fi
if [[ -z $clang_format ]] || ! command -v "$clang_format" >/dev/null; then
  echo "check-format: clang-format 14 is not installed (apt-get install clang-format-14)" >&2
  exit 2
fi
version=$("$clang_format" --version 2>/dev/null || true)
if [[ $version != *"version 14."* ]]; then
  echo "check-format: $clang_format is not clang-format 14 ($version)" >&2
  exit 2
fi

files=()
if (($# > 0)); then
  files=("$@")
else
  mapfile -t files < <(git -C "$repo" ls-files -- '*.h' '*.cc' | sed "s|^|$repo/|")
fi
((${#files[@]} > 0)) || { echo "check-format: no files"; exit 0; }

# --dry-run --Werror: every difference is an error naming the file, line and column.
rc=0
printf '%s\0' "${files[@]}" |
  xargs -0 -n 64 "$clang_format" --style="file:$repo/.clang-format" --dry-run --Werror \
    --ferror-limit=3 || rc=$?
if ((rc != 0)); then
  echo "check-format: files differ from .clang-format (clang-format -i FILE formats one)" >&2
  exit 1
fi
echo "check-format: ${#files[@]} file(s) formatted"
