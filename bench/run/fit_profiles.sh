#!/usr/bin/env bash
# Where fit's epoch terms go wrong, on the GPU machine: `gcnpart bench epoch` (one profiled epoch, every operation
# timed by class: SpMM, GEMM, element-wise, ...) on chosen rows of bench/run/fit_families.sh, beside `gcnpart fit`'s
# terms for the same rows (fit runs on the CPU: bench/run/fit_families.sh's JSON has them). Writes $OUT/profiles.tar.gz.
#   GCNPART_BIN=.carry/gcnpart ROWS="products 2 16 fp32;uni1m 2 256 fp32" bench/run/fit_profiles.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-/tmp/out}
work=${TMPDIR:-/tmp}/gcnpart-fit-profiles
mkdir -p "$out" "$work"
g=${GCNPART_BIN:-build/gpu/tools/gcnpart}
# The graphs of bench/run/fit_families.sh (same generator arguments, deterministic), by name.
eval "$(sed -n '/^declare -A make=(/,/^)/p' bench/run/fit_families.sh)"
IFS=';' read -r -a rows <<< "${ROWS:?ROWS: ';'-separated \"GRAPH LAYERS HIDDEN PRECISION\"}"
for row in "${rows[@]}"; do
  read -r name layers hidden precision <<< "$row"
  spec=${make[$name]:?unknown graph $name}
  if [[ $spec == generate* ]]; then
    data="$work/$name.gcsr"
    # shellcheck disable=SC2086
    [ -f "$data" ] || $g -q $spec -o "$data" > /dev/null || { echo "generate $name failed"; continue; }
  else
    data=$spec
  fi
  tag="$name-L$layers-h$hidden-$precision"
  # shellcheck disable=SC2086
  $g bench epoch $data --spmm auto --layers "$layers" --hidden "$hidden" --precision "$precision" --repeats 10 \
    --json "$work/epoch-$tag.json" > "$work/epoch-$tag.txt" 2>&1 || { echo "$tag failed"; tail -3 "$work/epoch-$tag.txt"; }
  grep -E "profiled epoch" "$work/epoch-$tag.txt" | sed "s/^/$tag: /"
done
tar -czf "$out/profiles.tar.gz" --exclude="*.gcsr" -C "$(dirname "$work")" "$(basename "$work")"
