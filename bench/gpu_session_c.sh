#!/usr/bin/env bash
# One device call on one H200 (from the repository root after `. .deps/env.sh`): build everything, the gpu test
# suite, compute-sanitizer over the gpu tests (tools/sanitize), then Nsight Compute on the reddit-sized graph, fp32
# and bf16 epochs and SpMMs (bench/profile_ncu.sh). Logs under $OUT_DIR (default /tmp/c), tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
o=${OUT_DIR:-/tmp/c}
mkdir -p "$o"
SECONDS=0
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
cmake --preset gpu > "$o/configure.log" 2>&1 || { tail -20 "$o/configure.log"; exit 1; }
cmake --build --preset gpu -j "$(nproc)" > "$o/build.log" 2>&1 || { grep -E "error" "$o/build.log" | head -30; exit 1; }
echo "build: ${SECONDS}s"
timeout 120 ctest --preset gpu --output-on-failure > "$o/ctest_gpu.log" 2>&1
echo "ctest gpu: exit $? at ${SECONDS}s"; grep -E "tests passed|Failed|\*\*\*|ERROR" "$o/ctest_gpu.log" | head -20
OUT_DIR="$o/sanitize" SANITIZE_BUDGET=${SANITIZE_BUDGET:-210} timeout 240 tools/sanitize > "$o/sanitize.log" 2>&1
echo "sanitize: exit $? at ${SECONDS}s"; tail -25 "$o/sanitize.log"
rm -rf "$o/sanitize"/*.core 2>/dev/null
OUT_DIR="$o/ncu-fp32" NCU_BUDGET=${NCU_BUDGET:-100} timeout 130 bench/profile_ncu.sh reddit > "$o/ncu-fp32.log" 2>&1
echo "ncu fp32: exit $? at ${SECONDS}s"
OUT_DIR="$o/ncu-bf16" NCU_BUDGET=${NCU_BUDGET:-100} \
  NCU_EPOCH_ARGS="--layers 2 --hidden 256 --spmm own --precision bf16 --warmup 1 --repeats 2" \
  NCU_SPMM_ARGS="--widths 256 --precision bf16 --spmm own --warmup 0 --repeats 10 --no-flush-l2" \
  timeout $((585 - SECONDS)) bench/profile_ncu.sh reddit > "$o/ncu-bf16.log" 2>&1
echo "ncu bf16: exit $? at ${SECONDS}s"
for f in "$o"/ncu-*/summary.md; do echo "== $f"; head -60 "$f"; done
find "$o" -name "*.ncu-rep" -size +20M -delete
[ -n "${OUT:-}" ] && tar czf "$OUT/c.tgz" -C "$(dirname "$o")" "$(basename "$o")"
echo "done at ${SECONDS}s"
