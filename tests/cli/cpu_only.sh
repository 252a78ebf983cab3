#!/usr/bin/env bash
# The CPU-only build (configured without nvcc, or with -DGCNPART_CUDA=OFF): it says so, trains on CPU devices, and
# refuses CUDA with a typed error (exit 3) that says the build has no CUDA.
# Usage: cpu_only.sh GCNPART_BINARY
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/log" 2>/dev/null; exit 1; }

"$bin" --version > "$tmp/log" 2>&1 || fail "--version"
grep -q "CPU only: built without CUDA" "$tmp/log" || fail "--version does not say the build has no CUDA"

"$bin" -q --threads 2 train demo --epochs 5 > "$tmp/log" 2>&1 || fail "train demo on the CPU"
grep -q "^accuracy" "$tmp/log" || fail "train printed no accuracy"
"$bin" -q --threads 2 train demo --epochs 3 --strategy halo --parts 2 > "$tmp/log" 2>&1 ||
  fail "train demo on 2 virtual CPU devices"

expect_no_cuda() {  # expect_no_cuda WHAT ARGS...
  local what=$1; shift
  "$bin" -q "$@" > "$tmp/log" 2>&1
  local rc=$?
  [ $rc -eq 3 ] || fail "$what: exit $rc, expected 3"
  grep -q "this build has no CUDA" "$tmp/log" || fail "$what: the message does not say the build has no CUDA"
}
expect_no_cuda "train --device cuda" train demo --device cuda --epochs 1
expect_no_cuda "train --gpus 2" train demo --device cuda --gpus 2 --strategy halo --epochs 1
expect_no_cuda "bench epoch" bench epoch demo
echo "cpu-only build: trains on the CPU, refuses CUDA with 'this build has no CUDA'"
