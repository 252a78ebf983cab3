#!/usr/bin/env bash
# On the GPU machine: build the gpu preset, run the gpu tests, then the single-device training benchmarks of
# issue 3 (Cora, CiteSeer, RMAT scale 18). Results (JSON and logs) go to ${OUT:-bench/out}.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version --format=csv | tee "$out/gpu.txt"
cmake --preset gpu > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build --preset gpu -j 16 > "$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -40; exit 1; }
ctest --preset gpu --output-on-failure 2>&1 | tee "$out/ctest_gpu.log" | tail -40
g=build/gpu/tools/gcnpart
data=${GCNPART_DATA:-../shared/datasets}
for ds in cora citeseer; do
  $g -q train "$data/$ds" --device cuda --runs 10 --json "$out/train-$ds.json" 2>&1 | tail -7
done
$g -q train "$data/cora" --device cuda --gpus 1 --strategy gather --epochs 50 --json "$out/train-cora-gather-nccl1.json" 2>&1 | tail -5
$g -q generate rmat --scale 18 --edge-factor 16 --features 128 --classes 40 -o /tmp/rmat18.gcsr
for spmm in own cusparse auto; do
  $g -q train /tmp/rmat18.gcsr --device cuda --hidden 256 --layers 3 --epochs 100 --spmm $spmm \
     --json "$out/train-rmat18-$spmm.json" 2>&1 | tail -6
done
