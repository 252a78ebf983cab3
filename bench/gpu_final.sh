#!/usr/bin/env bash
# Final H200 checks: the gpu test suite, and `gcnpart fit`'s predictions against `train --memory-limit` on the
# products-sized RMAT graph for an RTX 3080 10 GB (tracked cap = 10 GiB - 600 MiB per-GPU overhead).
set -uo pipefail
cd "$(dirname "$0")/.."
o=${OUT_DIR:-/tmp/o}; mkdir -p "$o"
cmake --preset gpu > "$o/configure.log" 2>&1 || { tail -20 "$o/configure.log"; exit 1; }
cmake --build --preset gpu -j 16 > "$o/build.log" 2>&1 || { grep error "$o/build.log" | head -30; exit 1; }
ctest --preset gpu --output-on-failure > "$o/ctest_gpu.log" 2>&1; grep -E "tests passed|Failed|Passed" "$o/ctest_gpu.log"
g=build/gpu/tools/gcnpart
f=/tmp/products.gcsr
$g -q generate rmat --scale 21 --edge-factor 30 --features 100 --classes 47 -o $f > /dev/null
cap=$((10 * 1024 * 1024 * 1024 - 600 * 1024 * 1024))
for hidden in 256 320; do
  $g -q fit $f --card rtx3080 --layers 2 --hidden $hidden --json "$o/fit-h$hidden.json" > "$o/fit-h$hidden.log" 2>&1
  grep -E "^memory" "$o/fit-h$hidden.log"
  $g -q train $f --device cuda --layers 2 --hidden $hidden --epochs 3 --memory-limit $cap \
     --json "$o/train-cap-h$hidden.json" > "$o/train-cap-h$hidden.log" 2>&1
  echo "train hidden $hidden under the 3080 cap: exit $?"; grep -E "peak memory|error" "$o/train-cap-h$hidden.log"
done
