#!/usr/bin/env bash
# Issue 15 on one H200, in one device call (repository root, .deps carried):
#   . .deps/env.sh && bash bench/gpu_issue15.sh
# Builds (gpu preset), runs the kernels' gpu suite, generates the reddit-sized (RMAT 18, ef 220, 602 features,
# 41 classes) and products-sized (RMAT 21, ef 30, 100 features, 47 classes) graphs, then per graph and locality
# order: `bench spmm --precision bf16` (own fp32, own bf16 and every cuSPARSE algorithm at the issue's widths),
# `bench epoch` fp32 and bf16 (2 layers, hidden 256, with the per-class breakdown), the PyG CSR peer, a slab sweep
# of the own kernel, and the shared real graphs. Everything lands in $OUT/issue15.tar.gz plus summary.txt.
# Knobs: ORDERS (default "none degree"), GRAPHS, SLABS, STEPS, REPEATS, EPOCHS_SET, LAYERS, DEADLINE.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
o=/tmp/issue15
rm -rf "$o" && mkdir -p "$o"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
orders=${ORDERS:-"none degree"}
graphs=${GRAPHS:-"reddit products"}
slabs=${SLABS:-"64 128"}
steps=${STEPS:-"tests spmm slab epoch pyg real"}
repeats=${REPEATS:-10}
layer_counts=${LAYERS:-"2 3"}
deadline=${DEADLINE:-540}  # seconds: later steps are skipped, so that the results still come back
want() { [[ " $steps " == *" $1 "* ]]; }
g=build/gpu/tools/gcnpart
finish() {
  tar -czf "$OUT/issue15.tar.gz" -C /tmp issue15
  cp "$o/summary.txt" "$OUT/" 2>/dev/null
}
trap finish EXIT
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv | tee "$o/gpu.txt"
SECONDS=0
targets="gcnpart"
want tests && targets="gcnpart test_kernels"
want enginetests && targets="$targets test_engine"
{ [ -f build/gpu/build.ninja ] || cmake --preset gpu > "$o/configure.log" 2>&1; } &&
  cmake --build build/gpu -j 16 --target $targets > "$o/build.log" 2>&1 ||
  { grep -E "error" "$o/build.log" | head -30; exit 1; }
echo "build: ${SECONDS}s"
if want tests; then  # alongside the graph generation (GPU against CPU)
  ( timeout 180 build/gpu/tests/test_kernels --test-suite=gpu --no-intro=true > "$o/test_kernels_gpu.log" 2>&1
    echo "test_kernels gpu: exit $? (${SECONDS}s)"; grep -E "test cases|ERROR|FAILED" "$o/test_kernels_gpu.log" | head -20
    if want enginetests; then
      timeout 240 build/gpu/tests/test_engine --test-suite=gpu --no-intro=true > "$o/test_engine_gpu.log" 2>&1
      echo "test_engine gpu: exit $? (${SECONDS}s)"; grep -E "test cases|ERROR|FAILED" "$o/test_engine_gpu.log" | head -20
    fi ) &
fi
for spec in "reddit 18 220 602 41" "products 21 30 100 47" "arxiv 17 8 128 40"; do
  read -r name scale ef features classes <<< "$spec"
  [[ " $graphs " == *" $name "* ]] || continue
  f=/tmp/$name.gcsr
  [ -f "$f" ] || $g -q generate rmat --scale "$scale" --edge-factor "$ef" --features "$features" \
    --classes "$classes" -o "$f" > "$o/generate-$name.log" 2>&1
done
wait
echo "graphs: ${SECONDS}s"
run() {  # run NAME TIMEOUT CMD...: logs to $o/NAME.log
  local name=$1 t=$2; shift 2
  if [ "$SECONDS" -gt "$deadline" ]; then echo "skipped (deadline): $name"; return; fi
  timeout "$t" "$@" > "$o/$name.log" 2>&1 || echo "FAILED ($?): $name"
}
for name in $graphs; do
  f=/tmp/$name.gcsr
  for r in $orders; do
    want spmm && run "spmm-$name-$r" 200 $g -q bench spmm "$f" --precision bf16 --reorder "$r" \
      --widths 16,32,41,47,64,100,128,256 --warmup 3 --repeats "$repeats" --json "$o/spmm-$name-$r.json"
  done
  if want epoch; then  # order:precision:layers
    for spec in ${EPOCHS_SET:-degree:fp32:2 degree:bf16:2 degree:fp32:3 degree:bf16:3 none:fp32:2 none:bf16:2}; do
      IFS=: read -r r p layers <<< "$spec"
      [[ " $orders " == *" $r "* ]] || continue
      run "epoch-$name-$r-$p-l$layers" 200 $g -q bench epoch "$f" --precision $p --spmm own --reorder "$r" \
        --layers "$layers" --hidden 256 --warmup 3 --repeats "$repeats" --json "$o/epoch-$name-$r-$p-l$layers.json"
    done
  fi
  if want longrow; then
    for lr in ${LONG_ROWS:-512 4096}; do
      run "longrow-$name-$lr" 120 $g -q bench spmm "$f" --precision bf16 --spmm own --reorder degree \
        --spmm-long-row "$lr" --widths 16,64,256 --warmup 3 --repeats "$repeats" --json "$o/longrow-$name-$lr.json"
    done
  fi
  if want slab; then
    for s in $slabs; do
      for p in fp32 bf16; do
        run "slab-$name-$s-$p" 120 $g -q bench spmm "$f" --precision $p --spmm own --reorder degree \
          --spmm-slab "$s" --widths 100,128,256 --warmup 3 --repeats "$repeats" --json "$o/slab-$name-$s-$p.json"
      done
    done
  fi
  want pyg && run "pyg-$name" 200 python3 bench/peer/pyg_gcn.py "$f" --mode csr --hidden 256 --layers 2 \
    --epochs "$repeats" --warmup 3 --json "$o/pyg-$name.json"
  echo "$name: ${SECONDS}s"
done
if want accuracy; then  # Cora and CiteSeer, 10 seeds, each precision, with and without the locality order
  for d in cora citeseer; do
    for p in fp32 bf16; do
      for r in none degree; do
        run "accuracy-$d-$p-$r" 120 $g -q train "$GCNPART_DATA/$d" --device cuda --runs 10 --precision $p \
          --reorder "$r" --json "$o/accuracy-$d-$p-$r.json"
      done
    done
  done
  echo "accuracy: ${SECONDS}s"
fi
if want real; then
  for d in soc-Slashdot0902 email-Enron; do
    f="$GCNPART_DATA/snap/$d.txt.gz"
    [ -f "$f" ] || { echo "no $f"; continue; }
    for r in $orders; do
      run "spmm-$d-$r" 120 $g -q bench spmm "$f" --synthetic-features 128 --synthetic-classes 16 --precision bf16 \
        --reorder "$r" --widths 16,32,41,47,64,100,128,256 --warmup 3 --repeats "$repeats" --json "$o/spmm-$d-$r.json"
    done
  done
  echo "real graphs: ${SECONDS}s"
fi
python3 bench/issue15_summary.py "$o" --json "$o/issue15-summary.json" | tee "$o/summary.txt"
