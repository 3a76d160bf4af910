#!/usr/bin/env bash
# Runs docker/check-dockerfiles.py on docker/ and docker/compose.yml (must be clean), then on
# generated bad Dockerfiles, each of which must be refused for its own reason, so the checker
# cannot pass by accepting everything. Bad inputs are generated here, never committed, so no
# credential-shaped string sits in the repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
checker="$repo/docker/check-dockerfiles.py"
py=/usr/bin/python3
"$py" -c 'import yaml' 2>/dev/null || { echo "SKIP: python3-yaml is not installed"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/farm-dockerfiles.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$py" "$checker" --compose "$repo/docker/compose.yml" "$repo/docker" || fail "the farm's Dockerfiles have problems"
echo "ok: docker/ and compose.yml are clean"

expect_refused() {  # expect_refused NAME EXPECTED_TEXT  (file content on stdin)
  local name=$1 expected=$2 out rc=0
  mkdir -p "$tmp/$name"
  cat > "$tmp/$name/${3:-Dockerfile}"
  out=$("$py" "$checker" "$tmp/$name" 2>/dev/null) || rc=$?
  [[ $rc -eq 1 ]] || fail "$name: expected exit 1, got $rc ($out)"
  grep -qF -- "$expected" <<<"$out" || fail "$name: expected '$expected' in: $out"
  echo "ok: $name refused ($expected)"
}

printf 'FROM debian:latest\n' | expect_refused latest "uses the latest tag"
printf 'FROM debian\n' | expect_refused untagged "has no tag"
printf 'FROM debian:12-slim\n' | expect_refused floating "floating tag '12-slim'"
printf 'FROM nvidia/cuda:bookworm\n' | expect_refused floating-name "floating tag 'bookworm'"
printf 'ARG BASE\nFROM ${BASE}\n' | expect_refused unresolved-arg 'FROM uses $BASE, which has no default'
printf 'ARG BASE=debian:stable\nFROM ${BASE}\n' | expect_refused arg-floating "floating tag 'stable'"
printf 'FROM debian:12.12-slim\nENV HF_TOKEN=abc\n' | expect_refused env-secret "ENV HF_TOKEN"
printf 'FROM debian:12.12-slim\nARG GITHUB_TOKEN\n' | expect_refused arg-secret "ARG GITHUB_TOKEN"
printf 'FROM debian:12.12-slim\nENV A=1 \\\n    DB_PASSWORD=x\n' | expect_refused env-continued "ENV DB_PASSWORD"
printf 'FROM debian:12.12-slim\nRUN curl -H "Authorization: token ghp_%s" x\n' "$(printf 'a%.0s' {1..36})" \
  | expect_refused literal-token "looks like a credential"
printf 'FROM debian:12.12-slim\nRUN true\n' | expect_refused single-stage "must be multi-stage" farmd.Dockerfile
printf 'FROM debian:12.12-slim AS build\nRUN true\nFROM debian:12.12-slim\nRUN true\n' \
  | expect_refused no-copy-from "copies nothing from a build stage" farm-worker.Dockerfile

# What must pass: a digest, a stage reference, an ARG default, a dated tag, scratch.
mkdir -p "$tmp/good"
cat > "$tmp/good/farmd.Dockerfile" <<EOF2
ARG BASE=debian:bookworm-20250908-slim
FROM debian@sha256:$(printf '0%.0s' {1..64}) AS build
RUN true
FROM \${BASE} AS runtime
COPY --from=build /etc/hostname /x
FROM runtime
COPY --from=build /etc/hostname /y
EOF2
"$py" "$checker" "$tmp/good" || fail "a pinned multi-stage Dockerfile was refused"
echo "ok: pinned multi-stage Dockerfile accepted"

# compose: a worker without a GPU reservation is refused.
sed '/deploy:/,/capabilities/d' "$repo/docker/compose.yml" > "$tmp/compose.yml"
cp "$repo/docker/"*.Dockerfile "$tmp/"
sed -i 's|context: \.\.|context: .|; s|dockerfile: docker/|dockerfile: |' "$tmp/compose.yml"
out=$("$py" "$checker" --compose "$tmp/compose.yml" "$tmp/good" 2>/dev/null) && fail "compose without GPU reservation accepted"
grep -q "worker service worker-1 reserves no GPU" <<<"$out" || fail "unexpected compose result: $out"
echo "ok: compose worker without a GPU reservation refused"
echo "PASS: Dockerfile checks"
