#!/usr/bin/env bash
# One device call after the merges: the own SpMM with the long-row threshold by the product (degree order, the
# default) on the issue-15 graphs, then the Python package (bench/gpu_python.sh). Results in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
o=/tmp/final; rm -rf "$o"; mkdir -p "$o"
SECONDS=0
{ [ -f build/gpu/build.ninja ] || cmake --preset gpu > "$o/configure.log" 2>&1; } &&
  cmake --build build/gpu -j 16 --target gcnpart > "$o/build.log" 2>&1 || { grep -E "error" "$o/build.log" | head -30; }
echo "build: ${SECONDS}s"
g=build/gpu/tools/gcnpart
for spec in "reddit 18 220 602 41" "products 21 30 100 47" "arxiv 17 8 128 40"; do
  read -r name scale ef features classes <<< "$spec"
  $g -q generate rmat --scale "$scale" --edge-factor "$ef" --features "$features" --classes "$classes" \
    -o "/tmp/$name.gcsr" > /dev/null 2>&1
done
for f in /tmp/reddit.gcsr /tmp/products.gcsr /tmp/arxiv.gcsr "$GCNPART_DATA/snap/soc-Slashdot0902.txt.gz" "$GCNPART_DATA/snap/email-Enron.txt.gz"; do
  n=$(basename "$f"); n=${n%%.*}
  timeout 60 $g -q bench spmm "$f" --synthetic-features 16 --synthetic-classes 4 --precision bf16 --spmm own \
    --widths 16,32,41,64,128,256 --warmup 3 --repeats 10 --json "$o/spmm-$n-degree.json" > "$o/spmm-$n.log" 2>&1 ||
    echo "spmm $n failed"; grep -E "^(16|32|41|64|128|256) " "$o/spmm-$n.log" | sed "s/^/$n /"
done
echo "spmm: ${SECONDS}s"
tar -czf "$OUT/final-spmm.tar.gz" -C /tmp final
OUT=$OUT bash bench/gpu_python.sh
echo "python: ${SECONDS}s"
