#!/usr/bin/env bash
# On nvidia-h200-x2: gpu suite on 2 GPUs; halo / gather on 2 GPUs (threads, and mpirun when MPI was found)
# against single-GPU losses on Cora and RMAT scale 20; epoch time 1 vs 2 GPUs per strategy on RMAT scale 21;
# fit vs --memory-limit. Everything under $OUT_DIR, tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
o=${OUT_DIR:-/tmp/o}; mkdir -p "$o"
nvidia-smi topo -m > "$o/topo.txt" 2>&1; nvidia-smi --query-gpu=name,memory.total --format=csv >> "$o/topo.txt"
cmake --preset gpu > "$o/configure.log" 2>&1 || { tail -20 "$o/configure.log"; exit 1; }
grep -i "mpi" "$o/configure.log" | head -3
cmake --build --preset gpu -j 32 > "$o/build.log" 2>&1 || { grep error "$o/build.log" | head -30; exit 1; }
timeout 120 ctest --preset gpu --output-on-failure > "$o/ctest_gpu.log" 2>&1; grep -E "tests passed|Failed|\*\*\*" "$o/ctest_gpu.log"
g=build/gpu/tools/gcnpart
d=${GCNPART_DATA}
run() { local name=$1; shift; timeout 150 "$@" > "$o/$name.log" 2>&1; echo "$name: exit $?"; }
mpi=0; grep -q "GCNPART_HAVE_MPI" build/gpu/CMakeCache.txt && ldd $g | grep -q libmpi && mpi=1
# Cora and RMAT-20: exactness on 2 GPUs.
$g -q generate rmat --scale 20 --edge-factor 16 --features 128 --classes 40 -o /tmp/r20.gcsr > /dev/null
for ds in "$d/cora" /tmp/r20.gcsr; do
  n=$(basename $ds .gcsr)
  run single-$n $g -q train $ds --device cuda --epochs 20 --json "$o/single-$n.json"
  for s in halo gather; do
    run $s-$n-threads $g -q train $ds --device cuda --gpus 2 --strategy $s --epochs 20 --json "$o/$s-$n-threads.json"
    [ $mpi = 1 ] && run $s-$n-mpi mpirun --allow-run-as-root -np 2 $g -q train $ds --device cuda --strategy $s \
      --epochs 20 --json "$o/$s-$n-mpi.json"
  done
done
# RMAT-21: epoch time 1 vs 2 GPUs.
$g -q generate rmat --scale 21 --edge-factor 30 --features 100 --classes 47 -o /tmp/r21.gcsr > /dev/null
run r21-single $g -q train /tmp/r21.gcsr --device cuda --hidden 256 --epochs 10 --json "$o/r21-single.json"
for s in drop halo gather pipeline; do
  run r21-$s $g -q train /tmp/r21.gcsr --device cuda --gpus 2 --strategy $s --hidden 256 --epochs 10 \
    --json "$o/r21-$s.json"
  grep -E "epoch time|device" "$o/r21-$s.log"
done
# fit vs the RTX 3080 cap on one GPU.
cap=$((10 * 1024 * 1024 * 1024 - 600 * 1024 * 1024))
for hidden in 256 320; do
  $g -q fit /tmp/r21.gcsr --card rtx3080 --layers 2 --hidden $hidden --json "$o/fit-h$hidden.json" > "$o/fit-h$hidden.log" 2>&1
  grep -E "^memory" "$o/fit-h$hidden.log"
  run cap-h$hidden $g -q train /tmp/r21.gcsr --device cuda --hidden $hidden --epochs 3 --memory-limit $cap \
    --json "$o/cap-h$hidden.json"
  grep -E "peak memory|error" "$o/cap-h$hidden.log" | cut -c1-300
done
