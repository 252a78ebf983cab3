#!/usr/bin/env bash
# The own SpMM's lane layout for rows of 5..16 vectors (--spmm-lanes 0 vs 4) on the reddit- and products-sized
# RMAT graphs that bench/gpu_carried.sh generated in /tmp (run it first in the same call): `bench spmm` of the own
# kernel (fp32 and bf16 X) at the stored widths of class counts and hidden sizes (40, 48, 64, 104), then `bench
# epoch` of .carry/new with --spmm-lanes 4 (2 layers, hidden 256, degree order) beside gpu_carried's default runs.
#   device: . .deps/env.sh && OUT=$OUT bash bench/gpu_lanes.sh        (carry: .deps, .carry)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}
W=/tmp/gpu_lanes
rm -rf "$W" && mkdir -p "$W" "$OUT"
g=.carry/new/gcnpart
SECONDS=0
for name in ${GRAPHS:-reddit products}; do
  [ -f "/tmp/$name.gcsr" ] || { echo "$name: /tmp/$name.gcsr missing (run bench/gpu_carried.sh first)" >> "$W/summary.txt"; continue; }
  for lanes in 0 4 0 4; do  # twice, interleaved: the run-to-run spread beside the difference
    i=$( [ -f "$W/spmm-$name-lanes$lanes-a.json" ] && echo b || echo a )
    timeout 90 $g -q bench spmm "/tmp/$name.gcsr" --precision bf16 --reorder degree --spmm own --spmm-lanes $lanes \
      --widths 40,48,64,104 --warmup 3 --repeats 10 --json "$W/spmm-$name-lanes$lanes-$i.json" \
      > "$W/spmm-$name-lanes$lanes-$i.log" 2>&1
    echo "spmm-$name-lanes$lanes-$i: exit $? (${SECONDS}s)" >> "$W/summary.txt"
  done
  for p in bf16 fp32; do
    timeout 60 $g -q bench epoch "/tmp/$name.gcsr" --precision $p --spmm own --reorder degree --layers 2 --hidden 256 \
      --warmup 3 --repeats 10 --spmm-lanes 4 --json "$W/epoch-$name-$p-lanes4.json" > "$W/epoch-$name-$p-lanes4.log" 2>&1
    echo "epoch-$name-$p-lanes4: exit $? (${SECONDS}s)" >> "$W/summary.txt"
  done
done
python3 - "$W" > "$W/table.txt" <<'PY'
import json, glob, os, sys
w = sys.argv[1]
for f in sorted(glob.glob(f"{w}/spmm-*.json")):
    j = json.load(open(f))
    cells = []
    for x in j["widths"]:
        for r in x["results"]:
            n = r.get("name") or r.get("spmm")
            cells.append(f"{x['width']}/{n}:{r['time_ms']['median']:.3f}")
    print(f"{os.path.basename(f)[:-5]:<28} " + " ".join(cells))
for f in sorted(glob.glob(f"{w}/epoch-*.json")):
    j = json.load(open(f))
    r = j["runs"][0]
    print(f"{os.path.basename(f)[:-5]:<28} median {r['epoch_ms']['median']:.3f} ms" if 'epoch_ms' in r else f"{f}: {list(r)}")
PY
cp "$W/table.txt" "$OUT/lanes-table.txt" 2>/dev/null
tar -czf "$OUT/lanes.tar.gz" -C /tmp gpu_lanes
cat "$W/summary.txt" "$W/table.txt"
