#!/usr/bin/env bash
# Where fit's epoch terms go wrong, on the GPU machine: `gcnpart bench epoch` (one profiled epoch, every operation
# timed by class: SpMM, GEMM, element-wise, ...) on chosen rows of bench/run/fit_families.sh (the graphs of
# bench/run/families.sh), to set beside `gcnpart fit`'s terms for the same rows (fit runs on the CPU;
# fit_families.sh's JSON has them). Packs every report into $OUT/fit-profiles.tar.gz (bench/run/common.sh).
#   GCNPART=.carry/gcnpart ROWS="products 2 16 fp32;uni1m 2 256 fp32" bench/run/fit_profiles.sh
set -uo pipefail
. "$(dirname "$0")/common.sh"
bench_init fit-profiles
[ -n "${GCNPART_BIN:-}" ] && GCNPART=$GCNPART_BIN
ensure_gcnpart
. "$(dirname "$0")/families.sh"
IFS=';' read -r -a rows <<< "${ROWS:?ROWS: ';'-separated \"GRAPH LAYERS HIDDEN PRECISION\"}"
for row in "${rows[@]}"; do
  read -r name layers hidden precision <<< "$row"
  data=$(family_data "$name") || continue
  tag="epoch-$name-L$layers-h$hidden-$precision"
  # shellcheck disable=SC2086  # $data: DATA and its options
  step "$tag" 300 "$GCNPART" bench epoch $data --spmm auto --layers "$layers" --hidden "$hidden" \
    --precision "$precision" --repeats 10 --json "$W/$tag.json"
  grep -E "profiled epoch" "$W/$tag.log" | sed "s/^/$tag: /" | tee -a "$S"
done
bench_pack
