#!/usr/bin/env bash
# A/B of the own SpMM (and the epoch) between binaries built on the CPU machine and carried (see gpu_carried.sh):
# .carry/<B>/gcnpart for each B in BINS (default "new head"; the first also runs every cuSPARSE algorithm, the peer
# of the same call), on the small real graphs soc-Slashdot0902 and email-Enron (128 synthetic features), then the
# RMAT graphs in GRAPHS (default "arxiv products reddit"; generated while the kernels' gpu suite runs), then the
# 2-layer epochs of the reddit- and products-sized graphs (EPOCH_GRAPHS: others of GRAPHS) for every binary
# (EPOCHS=0: none), then (ACCURACY=1)
# Cora and CiteSeer 10 seeds with every binary, then (NCU=1) Nsight Compute kernel times of the first binary on
# soc-Slashdot0902 at width 16. The first binary's kernels gpu suite runs first (TESTS_TC: a doctest test-case filter;
# TESTS_TIMEOUT seconds, default 150; TESTS=0 skips it, which saves device time when the first binary was tested in an
# earlier call). A B whose gcnpart is a script (e.g. the new binary with another --spmm-long-row)
# is a variant of the same build.
#   device: . .deps/env.sh && OUT=$OUT bash bench/gpu_spmm_ab.sh        (carry: .deps, .carry)
# Everything lands in $OUT/results.tar.gz (re-packed after every step) and summary.txt; steps past DEADLINE seconds
# are skipped.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
W=/tmp/spmm_ab
rm -rf "$W" && mkdir -p "$W"
read -r -a bins <<< "${BINS:-new head}"
graphs=${GRAPHS:-"arxiv products reddit"}
widths=${WIDTHS:-16,32,41,47,64,100,128,256}
deadline=${DEADLINE:-420}
N=.carry/${bins[0]}
s="$W/summary.txt"
pack() { tar -czf "$OUT/results.tar.gz" -C /tmp spmm_ab; cp "$s" "$OUT/summary.txt"; }
late() { pack; [ "$SECONDS" -gt "$deadline" ] && { echo "skipped (deadline): $1" >> "$s"; return 0; }; return 1; }
SECONDS=0
: > "$s"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$W/gpu.txt" 2>&1
for b in "${bins[@]}"; do echo "$b: $(.carry/$b/gcnpart --version)" >> "$W/gpu.txt"; done
. bench/gpu_steps.sh
# shellcheck disable=SC2086  # $graphs: a list of names
generate_rmat $N/gcnpart $graphs &
gen=$!
if [ -x "$N/test_kernels" ] && [ "${TESTS:-1}" != 0 ]; then
  timeout "${TESTS_TIMEOUT:-150}" "$N/test_kernels" --test-suite=gpu --no-intro=true ${TESTS_TC:+"--test-case=$TESTS_TC"} \
    > "$W/test_kernels_gpu.log" 2>&1
  echo "test_kernels gpu: exit $? (${SECONDS}s)" >> "$s"
fi
# One `bench spmm` per binary and graph: own fp32 and bf16 (--precision bf16 measures both), cuSPARSE with the first.
spmm() {  # tag, data, extra arguments...
  local tag=$1 data=$2
  shift 2
  for b in "${bins[@]}"; do
    late "spmm-$tag-$b" && continue
    local which=own
    [ "$b" = "${bins[0]}" ] && which=all
    timeout 150 .carry/$b/gcnpart -q bench spmm "$data" "$@" --precision bf16 --spmm $which --reorder degree \
      --widths "$widths" --warmup 3 --repeats 10 --json "$W/spmm-$tag-$b.json" > "$W/spmm-$tag-$b.log" 2>&1
    echo "spmm-$tag-$b: exit $? (${SECONDS}s)" >> "$s"
  done
}
for d in soc-Slashdot0902 email-Enron; do
  spmm "$d" "$GCNPART_DATA/snap/$d.txt.gz" --synthetic-features 128 --synthetic-classes 16
done
wait $gen
echo "graphs: ${SECONDS}s" >> "$s"
for name in $graphs; do spmm "$name" "/tmp/$name.gcsr"; done
# shellcheck disable=SC2086  # EPOCH_GRAPHS: a list of names
for name in ${EPOCH_GRAPHS:-products reddit}; do
  [[ " $graphs " == *" $name "* ]] && [ "${EPOCHS:-1}" = 1 ] || continue
  for p in bf16 fp32; do
    for b in "${bins[@]}"; do run_epoch .carry/$b/gcnpart "$name" $p 2 "epoch-$name-$p-$b"; done
  done
done
# ACCURACY=1: Cora and CiteSeer, 10 seeds, fp32 and bf16, with each binary (the issue's accuracy bound).
if [ "${ACCURACY:-0}" = 1 ]; then
  for d in cora citeseer; do
    for p in fp32 bf16; do
      for b in "${bins[@]}"; do run_accuracy .carry/$b/gcnpart $d $p "accuracy-$d-$p-$b"; done
    done
  done
fi
if [ "${NCU:-0}" = 1 ] && ! late ncu-slashdot; then
  timeout 120 /usr/local/cuda/bin/ncu --csv --metrics gpu__time_duration.sum -k regex:spmm \
    $N/gcnpart -q bench spmm "$GCNPART_DATA/snap/soc-Slashdot0902.txt.gz" --synthetic-features 128 \
    --synthetic-classes 16 --spmm own --reorder degree --widths 16 --warmup 0 --repeats 10 --no-flush-l2 \
    > "$W/ncu-slashdot.csv" 2> "$W/ncu-slashdot.log"
  echo "ncu-slashdot: exit $? (${SECONDS}s)" >> "$s"
fi
pack
cat "$s"
