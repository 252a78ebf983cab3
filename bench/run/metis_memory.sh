#!/usr/bin/env bash
# Why METIS fails (issue 36): METIS 5.1 under a host-memory limit, on the CPU. `gcnpart fit --exact` partitions an
# RMAT 2^17 graph (3.7 M entries, generated) for K = 2 under `ulimit -v` limits around what METIS needs, and each
# limit's line shows what METIS printed ("***Memory allocation failed for <where>", "Failed during initial
# partitioning") and what fit made of it (the split's note: the status, the retry on a tenth of the edges, or the
# random partitioner's fallback). An allocation failing in the recursive bisection METIS's K-way scheme runs for its
# initial partition comes back as METIS_ERROR with "Failed during initial partitioning": the failure seen once on a
# products-sized graph. The limits that hit it depend on the binary's own size (LIMITS_MB, default for a cpu-preset
# build; a ci-preset binary maps the CUDA libraries and needs larger ones).
#   bench/run/metis_memory.sh                  # build/cpu/tools/gcnpart
#   GCNPART=... LIMITS_MB="200 220 240" OUT=dir bench/run/metis_memory.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
G=${GCNPART:-build/cpu/tools/gcnpart}
out=${OUT:-/tmp/gcnpart-metis-memory}
limits=${LIMITS_MB:-"190 200 210 220 230 240 244 246 250 260 300 400"}
mkdir -p "$out"
graph="$out/rmat17.gcsr"
[ -f "$graph" ] || "$G" -q generate rmat --scale 17 --edge-factor 16 --features 16 --classes 8 -o "$graph" > /dev/null
{
  echo "METIS under ulimit -v: gcnpart fit --exact on RMAT 2^17 (131,072 nodes, 3,729,114 entries), K = 2, one thread;"
  echo "$(date -u +%FT%TZ), commit $(git rev-parse --short HEAD), $G"
  for mb in $limits; do
    ( ulimit -v $((mb * 1024))
      OMP_NUM_THREADS=1 "$G" -q --threads 1 fit "$graph" --layers 2 --hidden 16 --rank-gpus 2 --strategies drop \
        --exact --json "$out/fit-$mb.json" > /dev/null 2> "$out/fit-$mb.err" )
    rc=$?
    metis=$(grep -oE 'Memory allocation failed for [A-Za-z0-9_]+: [a-z]+|Failed during initial partitioning' \
              "$out/fit-$mb.err" | uniq -c | sed 's/^ *//' | paste -sd ';' -)
    note=$(python3 -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit()
s = [s.get("split_source", "") for c in d["configurations"] for s in c.get("strategies", [])]
print(s[0] if s else "")' "$out/fit-$mb.json" 2>/dev/null)
    echo "$mb MB: exit $rc | METIS printed: ${metis:-nothing} | split: ${note:-(no JSON)}"
  done
} | tee "$out/summary.txt"
