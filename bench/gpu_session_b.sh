#!/usr/bin/env bash
# One device call on nvidia-h200-x2 (from the repository root after `. .deps/env.sh`): build everything, the gpu
# test suite on 2 GPUs, the gather overlap on/off and pipeline (threads) on RMAT-21, then bench/gpu_issue6.sh on
# GPU 0. Logs under $OUT_DIR (default /tmp/b), tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
o=${OUT_DIR:-/tmp/b}
mkdir -p "$o"
SECONDS=0
cmake --preset gpu > "$o/configure.log" 2>&1 || { tail -20 "$o/configure.log"; exit 1; }
cmake --build --preset gpu -j "$(nproc)" > "$o/build.log" 2>&1 || { grep -E "error" "$o/build.log" | head -30; exit 1; }
echo "build: ${SECONDS}s"
timeout 170 ctest --preset gpu --output-on-failure > "$o/ctest_gpu.log" 2>&1
echo "ctest gpu: exit $? at ${SECONDS}s"; grep -E "tests passed|Failed|\*\*\*|ERROR|FAILED" "$o/ctest_gpu.log" | head -20
g=build/gpu/tools/gcnpart
$g -q generate rmat --scale 21 --edge-factor 30 --features 100 --classes 47 -o /tmp/r21.gcsr > /dev/null 2>&1
r21=(--device cuda --layers 2 --hidden 256 --epochs 10)
for c in 1 2 4; do
  for p in fp32 bf16; do
    timeout 60 $g -q train /tmp/r21.gcsr "${r21[@]}" --gpus 2 --strategy gather --precision $p --gather-chunks $c \
      --link-bench off --json "$o/r21-gather-c$c-$p.json" > "$o/r21-gather-c$c-$p.log" 2>&1
    echo "gather chunks $c $p: exit $? $(grep -E '^epoch time' "$o/r21-gather-c$c-$p.log")"
    grep -E "^device" "$o/r21-gather-c$c-$p.log"
  done
done
NCCL_DEBUG=WARN timeout 60 $g -q train /tmp/r21.gcsr "${r21[@]}" --gpus 2 --strategy pipeline \
  --json "$o/r21-pipeline-threads.json" > "$o/r21-pipeline-threads.log" 2>&1
echo "pipeline threads: exit $? $(grep -E '^epoch time' "$o/r21-pipeline-threads.log")"
echo "at ${SECONDS}s"
OUT_DIR="$o/issue6" STEP_TIMEOUT=100 timeout $((590 - SECONDS - 15)) bench/gpu_issue6.sh
echo "done at ${SECONDS}s"
[ -n "${OUT:-}" ] && tar czf "$OUT/b.tgz" -C "$(dirname "$o")" "$(basename "$o")"
