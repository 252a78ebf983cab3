#!/usr/bin/env bash
# Small graphs' own SpMM against cuSPARSE: the long-row threshold and segment size swept on the shared real graphs
# (soc-Slashdot0902, email-Enron) and an arxiv-sized RMAT (scale 17), fp32, widths 16-256, degree order; one
# `--spmm all` run per graph gives the same-run cuSPARSE times. Binary: $G (default .carry/new/gcnpart; nothing is
# built here). COMBOS: "long_row:segment ..." (0: automatic), WIDTHS: comma-separated.
#   device: . .deps/env.sh && OUT=$OUT bash bench/gpu_small_sweep.sh        (carry: .deps, .carry)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}
W=/tmp/gpu_small_sweep
rm -rf "$W" && mkdir -p "$W"
g=${G:-.carry/new/gcnpart}
SECONDS=0
$g -q generate rmat --scale 17 --edge-factor 8 --features 128 --classes 40 -o /tmp/arxiv.gcsr > "$W/generate.log" 2>&1
widths=${WIDTHS:-16,32,48,64,128,256}
combos=${COMBOS:-"0:256 16:32 32:32 32:64 64:64 64:128 128:64 128:128"}
for d in soc-Slashdot0902 email-Enron arxiv; do
  if [ "$d" = arxiv ]; then f=/tmp/arxiv.gcsr; extra=(); else f="$GCNPART_DATA/snap/$d.txt.gz"; extra=(--synthetic-features 128 --synthetic-classes 16); fi
  timeout 60 $g -q bench spmm "$f" "${extra[@]}" --precision fp32 --spmm all --widths $widths --warmup 3 --repeats 10 \
    --json "$W/$d-all.json" > "$W/$d-all.log" 2>&1
  echo "$d all: exit $? (${SECONDS}s)" >> "$W/summary.txt"
  for c in $combos; do
    lr=${c%%:*}; seg=${c##*:}
    timeout 60 $g -q bench spmm "$f" "${extra[@]}" --precision fp32 --spmm own --spmm-long-row "$lr" --spmm-segment "$seg" \
      --widths $widths --warmup 3 --repeats 10 --json "$W/$d-own-$lr-$seg.json" > "$W/$d-own-$lr-$seg.log" 2>&1
    echo "$d own $lr:$seg: exit $? (${SECONDS}s)" >> "$W/summary.txt"
  done
done
python3 - "$W" > "$W/table.txt" <<'PY'
import json, glob, os, sys
w = sys.argv[1]
for d in ["soc-Slashdot0902", "email-Enron", "arxiv"]:
    try:
        base = json.load(open(f"{w}/{d}-all.json"))
    except Exception as e:
        print(d, "no baseline", e); continue
    best = {x["width"]: x["best_cusparse_median_ms"] for x in base["widths"]}
    print(f"{d}: best cuSPARSE ms " + " ".join(f"{k}:{v:.4f}" for k, v in best.items()))
    for f in sorted(glob.glob(f"{w}/{d}-own-*.json")) + [f"{w}/{d}-all.json"]:
        j = json.load(open(f))
        cells = []
        for x in j["widths"]:
            own = [r for r in x["results"] if r.get("name") == "own" or r.get("spmm") == "own"]
            ms = own[0]["time_ms"]["median"] if own else float("nan")
            cells.append(f"{x['width']}:{ms:.4f}({best[x['width']] / ms:.2f}x)")
        print(f"  {os.path.basename(f)[:-5]:<32} " + " ".join(cells))
PY
cp "$W/table.txt" "$OUT/" 2>/dev/null
tar -czf "$OUT/small-sweep.tar.gz" -C /tmp gpu_small_sweep
cat "$W/summary.txt" | tail -3
cat "$W/table.txt"
