#!/usr/bin/env bash
# One device call for issue 6 (and issue 3's open RMAT-18 figure), on GPU 0 of the GPU machine, from the repository
# root after `. .deps/env.sh`: fp32 / tf32 / bf16 epochs against PyG's CSR path on the three issue graphs (same run),
# Cora and CiteSeer accuracy fp32 vs bf16 over 10 seeds, RMAT scale 18 epoch with each SpMM. Everything under
# $OUT_DIR; the tables come last. Builds the gpu preset if needed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
o=${OUT_DIR:-/tmp/issue6}
mkdir -p "$o"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
[ -f build/gpu/build.ninja ] || cmake --preset gpu > "$o/configure.log" 2>&1 || { tail -20 "$o/configure.log"; exit 1; }
cmake --build --preset gpu -j "$(nproc)" > "$o/build.log" 2>&1 || { grep -E "error" "$o/build.log" | head -30; exit 1; }
g=build/gpu/tools/gcnpart
d=${GCNPART_DATA}

# Accuracy, 10 seeds, fp32 vs bf16 (issue: bf16 within 0.5 points of fp32).
for ds in cora citeseer; do
  for p in fp32 bf16; do
    timeout 120 $g -q train "$d/$ds" --device cuda --precision $p --epochs 200 --runs 10 \
      --json "$o/acc-$ds-$p.json" > "$o/acc-$ds-$p.log" 2>&1
    echo "$ds $p: $(grep -E '^accuracy' "$o/acc-$ds-$p.log")"
  done
done

# RMAT scale 18 (issue 3's table), 3 layers hidden 256: the own kernel after the SpMM rewrite, cuSPARSE, auto.
$g -q generate rmat --scale 18 --edge-factor 16 --features 128 --classes 40 -o /tmp/r18.gcsr > /dev/null 2>&1
timeout 120 $g -q bench epoch /tmp/r18.gcsr --layers 3 --hidden 256 --spmm all --json "$o/epoch-rmat18.json" \
  > "$o/epoch-rmat18.log" 2>&1
timeout 120 $g -q bench epoch /tmp/r18.gcsr --layers 3 --hidden 256 --spmm own --precision bf16 \
  --json "$o/epoch-rmat18-bf16.json" >> "$o/epoch-rmat18.log" 2>&1
cat "$o/epoch-rmat18.log"

# Epochs by precision against PyG csr, same run.
OUT="$o/peer" STEPS=${STEPS:-"epoch epoch-tf32 epoch-bf16 pyg-csr"} STEP_TIMEOUT=${STEP_TIMEOUT:-150} \
  bench/peer/run.sh > "$o/peer.log" 2>&1
sed -n '/^Training epoch fp32/,$p' "$o/peer.log"
