#!/usr/bin/env bash
# common/scripts/check-format.sh on files made here: a formatted file passes, a file that
# differs fails naming it (and is left as it was), a mixed list fails, and a clang-format
# that is missing or of another version is refused rather than trusted. Skips (77) without
# clang-format 14.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
check="$repo/common/scripts/check-format.sh"
command -v clang-format-14 >/dev/null || { echo "SKIP: clang-format-14 is not installed"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/farm-check-format.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

printf 'int F(int a) { return a + 1; }\n' > "$tmp/good.cc"
printf 'int  F( int a ){return a+1;}\n' > "$tmp/bad.cc"
cp "$tmp/bad.cc" "$tmp/bad.orig"

out=$("$check" "$tmp/good.cc" 2>&1) || fail "a formatted file was refused: $out"
echo "ok: a formatted file passes"

rc=0; out=$("$check" "$tmp/bad.cc" 2>&1) || rc=$?
[[ $rc -eq 1 ]] || fail "a file that differs: expected exit 1, got $rc ($out)"
grep -qF "$tmp/bad.cc:1:" <<<"$out" || fail "the difference is not named: $out"
cmp -s "$tmp/bad.cc" "$tmp/bad.orig" || fail "the check changed the file"
echo "ok: a file that differs fails, named, unchanged"

rc=0; out=$("$check" "$tmp/good.cc" "$tmp/bad.cc" 2>&1) || rc=$?
[[ $rc -eq 1 ]] || fail "a list with one bad file: expected exit 1, got $rc"
echo "ok: one bad file among good ones fails"

rc=0; out=$(CLANG_FORMAT="$tmp/none" "$check" "$tmp/good.cc" 2>&1) || rc=$?
[[ $rc -eq 2 ]] || fail "a missing clang-format: expected exit 2, got $rc ($out)"
printf '#!/bin/sh\necho "Debian clang-format version 16.0.6"\n' > "$tmp/clang-format-16"
chmod +x "$tmp/clang-format-16"
rc=0; out=$(CLANG_FORMAT="$tmp/clang-format-16" "$check" "$tmp/good.cc" 2>&1) || rc=$?
[[ $rc -eq 2 ]] || fail "another version: expected exit 2, got $rc ($out)"
grep -qF "not clang-format 14" <<<"$out" || fail "the version is not named: $out"
echo "ok: a missing clang-format or another version is refused"

# Without arguments: every .h and .cc file git tracks, in a repository made here.
mini="$tmp/repo"
mkdir -p "$mini/common/scripts" "$mini/src"
cp "$check" "$mini/common/scripts/"
cp "$repo/.clang-format" "$mini/"
cp "$tmp/good.cc" "$mini/src/good.cc"
printf 'int  ignored( ){}\n' > "$mini/src/untracked.cc"
git -C "$mini" init -q
git -C "$mini" add .clang-format common src/good.cc
out=$("$mini/common/scripts/check-format.sh" 2>&1) || fail "a formatted repository was refused: $out"
grep -qF "1 file(s) formatted" <<<"$out" || fail "not only the tracked file was read: $out"
cp "$tmp/bad.orig" "$mini/src/bad.h"
git -C "$mini" add src/bad.h
rc=0; out=$("$mini/common/scripts/check-format.sh" 2>&1) || rc=$?
[[ $rc -eq 1 ]] || fail "a tracked file that differs: expected exit 1, got $rc ($out)"
grep -qF "src/bad.h:1:" <<<"$out" || fail "the tracked file is not named: $out"
echo "ok: the tracked files are checked, the untracked ones are not"
