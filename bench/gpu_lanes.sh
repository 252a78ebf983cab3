#!/usr/bin/env bash
# The own SpMM's lane layout for rows of 5..16 vectors (--spmm-lanes 0 vs 4) with the long-row threshold swept, on
# the reddit- and products-sized RMAT graphs (generated here unless bench/gpu_carried.sh left them in /tmp):
# `bench spmm` of the own kernel (fp32 and bf16 X) at the stored widths of class counts and small hidden sizes,
# then `bench epoch` of .carry/new (2 layers, hidden 256, degree order) per combination.
#   device: . .deps/env.sh && OUT=$OUT bash bench/gpu_lanes.sh        (carry: .deps, .carry)
#   COMBOS="lanes:long_row ..." (long_row 0: automatic), EPOCH_COMBOS likewise, WIDTHS=40,44,48,64
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}
W=/tmp/gpu_lanes
rm -rf "$W" && mkdir -p "$W" "$OUT"
g=.carry/new/gcnpart
SECONDS=0
graphs=${GRAPHS:-"reddit products"}
for spec in "products 21 30 100 47" "reddit 18 220 602 41"; do
  read -r name scale ef features classes <<< "$spec"
  [[ " $graphs " == *" $name "* ]] || continue
  [ -f "/tmp/$name.gcsr" ] || $g -q generate rmat --scale "$scale" --edge-factor "$ef" --features "$features" \
    --classes "$classes" -o "/tmp/$name.gcsr" > "$W/generate-$name.log" 2>&1 &
done
wait
echo "graphs: ${SECONDS}s" >> "$W/summary.txt"
for name in $graphs; do
  for c in ${COMBOS:-"0:0 4:0 0:0 4:0"}; do  # a combination listed twice runs twice (the run-to-run spread)
    lanes=${c%%:*}; lr=${c##*:}
    i=$( [ -f "$W/spmm-$name-l$lanes-r$lr-a.json" ] && echo b || echo a )
    timeout 90 $g -q bench spmm "/tmp/$name.gcsr" --precision bf16 --reorder degree --spmm own --spmm-lanes $lanes \
      --spmm-long-row $lr --widths ${WIDTHS:-40,44,48,64} --warmup 3 --repeats 10 \
      --json "$W/spmm-$name-l$lanes-r$lr-$i.json" > "$W/spmm-$name-l$lanes-r$lr-$i.log" 2>&1
    echo "spmm-$name-l$lanes-r$lr-$i: exit $? (${SECONDS}s)" >> "$W/summary.txt"
  done
  for c in ${EPOCH_COMBOS:-"0:0 32:0"}; do
    lanes=${c%%:*}; lr=${c##*:}
    for p in bf16 fp32; do
      timeout 60 $g -q bench epoch "/tmp/$name.gcsr" --precision $p --spmm own --reorder degree --layers 2 --hidden 256 \
        --warmup 3 --repeats 10 --spmm-lanes $lanes --spmm-long-row $lr --json "$W/epoch-$name-$p-l$lanes-r$lr.json" \
        > "$W/epoch-$name-$p-l$lanes-r$lr.log" 2>&1
      echo "epoch-$name-$p-l$lanes-r$lr: exit $? (${SECONDS}s)" >> "$W/summary.txt"
    done
  done
done
python3 - "$W" > "$W/table.txt" <<'PY'
import json, glob, os, sys
w = sys.argv[1]
for f in sorted(glob.glob(f"{w}/spmm-*.json")):
    try:
        j = json.load(open(f))
        cells = [f"{x['width']}/{r['spmm']}:" + (f"{r['time_ms']['median']:.3f}" if "time_ms" in r else r.get("status", "?"))
                 for x in j["widths"] for r in x["results"]]
    except Exception as e:  # a failed run: say so, keep the table
        cells = [f"unreadable ({e})"]
    print(f"{os.path.basename(f)[:-5]:<30} " + " ".join(cells))
for f in sorted(glob.glob(f"{w}/epoch-*.json")):
    try:
        r = json.load(open(f))["runs"][0]
        cell = f"median {r['epoch_ms']['median']:.3f} ms" if "epoch_ms" in r else r.get("status", "?")
    except Exception as e:
        cell = f"unreadable ({e})"
    print(f"{os.path.basename(f)[:-5]:<30} {cell}")
PY
cp "$W/table.txt" "$OUT/lanes-table.txt" 2>/dev/null
tar -czf "$OUT/lanes.tar.gz" -C /tmp gpu_lanes
cat "$W/summary.txt" "$W/table.txt"
