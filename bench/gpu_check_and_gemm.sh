#!/usr/bin/env bash
# One device call (one H200, about 6-8 minutes) that re-checks the tree and answers issue 15's next question:
#   . .deps/env.sh && GCNPART_COMMIT=<hash> OUT=$OUT bash bench/gpu_check_and_gemm.sh
# 1. builds the gpu preset and runs every gpu test suite (test_kernels, test_engine, test_partition);
# 2. bench/peer/gemm_alignment.py: bf16 GEMMs at 47 / 100 columns as is, on a padded layout, padded on the fly;
# 3. bench epoch on the reddit- and products-sized graphs, degree order, fp32 and bf16 (epoch, breakdown, reorder
#    time: the host arrays no longer zero-fill, not yet measured on the GPU);
# 4. bench/peer/pyg_spmm.py: PyG's SpMM (torch.sparse.mm on CSR) per width on both graphs.
# Results: $OUT/check.tar.gz and $OUT/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}
o=/tmp/check
rm -rf "$o" && mkdir -p "$o" "$OUT"
finish() {
  tar -czf "$OUT/check.tar.gz" -C /tmp check
  cp "$o/summary.txt" "$OUT/" 2>/dev/null
}
trap finish EXIT
SECONDS=0
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$o/gpu.txt"
{ [ -f build/gpu/build.ninja ] || cmake --preset gpu > "$o/configure.log" 2>&1; } &&
  cmake --build build/gpu -j "$(nproc)" --target gcnpart test_kernels test_engine test_partition > "$o/build.log" 2>&1 ||
  { grep -E "error" "$o/build.log" | head -30; exit 1; }
echo "build: ${SECONDS}s" | tee -a "$o/summary.txt"
g=build/gpu/tools/gcnpart
( for spec in "reddit 18 220 602 41" "products 21 30 100 47"; do
    read -r name scale ef features classes <<< "$spec"
    [ -f "/tmp/$name.gcsr" ] || $g -q generate rmat --scale "$scale" --edge-factor "$ef" --features "$features" \
      --classes "$classes" -o "/tmp/$name.gcsr" > /dev/null
  done ) &
for t in test_kernels test_engine test_partition; do
  timeout 240 "build/gpu/tests/$t" --test-suite=gpu --no-intro=true > "$o/$t-gpu.log" 2>&1
  echo "$t gpu: exit $? ($(grep -E 'test cases' "$o/$t-gpu.log" | head -1))" | tee -a "$o/summary.txt"
done
python3 bench/peer/gemm_alignment.py --json "$o/gemm-alignment.json" 2>&1 | tee -a "$o/summary.txt"
wait
for name in reddit products; do
  for p in fp32 bf16; do
    timeout 150 $g -q bench epoch "/tmp/$name.gcsr" --precision $p --spmm own --reorder degree --layers 2 --hidden 256 \
      --warmup 3 --repeats 10 --json "$o/epoch-$name-$p.json" > "$o/epoch-$name-$p.log" 2>&1 || echo "epoch $name $p failed"
    python3 - "$o/epoch-$name-$p.json" "$name-$p" <<'PY' | tee -a "$o/summary.txt"
import json, sys
d = json.load(open(sys.argv[1])); r = d["runs"][0]; c = r["breakdown"]["classes"]
print("%-14s epoch %.2f ms  spmm %.1f %%  gemm %.1f %%  else %.1f %%  reorder %.2f + %.2f s" % (
    sys.argv[2], r["epoch_ms"]["median"], 100 * c["spmm"]["share"], 100 * c["gemm"]["share"], 100 * c["other"]["share"],
    d["reorder"]["order_seconds"], d["reorder"]["apply_seconds"]))
PY
  done
done
for name in reddit products; do  # PyG's SpMM per width (stored order), for the issue 15 table's PyG column
  timeout 150 python3 bench/peer/pyg_spmm.py "/tmp/$name.gcsr" --json "$o/pyg-spmm-$name.json" > "$o/pyg-spmm-$name.log" 2>&1 ||
    echo "pyg_spmm $name failed"
  { echo "PyG SpMM, $name:"; cat "$o/pyg-spmm-$name.log"; } | tee -a "$o/summary.txt"
done
echo "total: ${SECONDS}s" | tee -a "$o/summary.txt"
