#!/usr/bin/env bash
# fit on a products-sized file within a time budget (issue 36): generates a products-sized SBM graph (2,449,029
# nodes, ~62 M undirected edges, 100 features, 47 classes; deterministic) unless GRAPH names one, then times
# `gcnpart fit GRAPH --layers 3 --hidden 256` (the default configurations: 1 x rtx3090 against 2 x rtx3080, ranked at
# 1, 2 and 4 GPUs) and fails when it takes longer than BUDGET seconds (default 20). CPU only; not part of CI.
#
#   bench/run/fit_speed.sh                      # build/cpu/tools/gcnpart
#   GCNPART=build/ci/tools/gcnpart BUDGET=20 OUT=bench/results/cpu-$(date +%F)-fit-speed bench/run/fit_speed.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
G=${GCNPART:-build/cpu/tools/gcnpart}
out=${OUT:-/tmp/gcnpart-fit-speed}
budget=${BUDGET:-20}
graph=${GRAPH:-/tmp/products-sbm.gcsr}
mkdir -p "$out"
[ -f "$graph" ] || "$G" -q generate sbm --nodes 2449029 --avg-degree 50.6 --features 100 --classes 47 \
  --train-per-class 2000 --valid 20000 --test 50000 -o "$graph"
start=$(date +%s.%N)
/usr/bin/time -f "%e s wall, %U s user, %M KB peak RSS" -o "$out/fit.time" \
  "$G" fit "$graph" --layers 3 --hidden 256 --json "$out/fit.json" > "$out/fit.txt"
end=$(date +%s.%N)
seconds=$(python3 -c "print(round($end - $start, 2))")
{
  echo "fit on $(basename "$graph"): $seconds s (budget $budget s) on $(nproc) cores, $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD)"
  cat "$out/fit.time"
  grep -E "^split" "$out/fit.txt" || true
} | tee "$out/summary.txt"
python3 -c "import sys; sys.exit(0 if $seconds <= $budget else 1)" || { echo "over the budget" >&2; exit 1; }
