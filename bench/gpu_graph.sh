#!/usr/bin/env bash
# CUDA Graph replay of the training step (--cuda-graph auto, the default) against launching every kernel (off):
# `bench epoch` of the carried binary on the small graphs where launches matter (Cora, CiteSeer, the shared SNAP
# graphs with synthetic features, an arxiv-sized RMAT), fp32 and bf16, 2 layers; on / off interleaved per graph.
#   device: . .deps/env.sh && OUT=$OUT bash bench/gpu_graph.sh        (carry: .deps, .carry)
#   HIDDEN=256 (bench epoch's default; 16 is the paper's Cora model), GRAPHS="cora citeseer slashdot enron arxiv"
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}
W=/tmp/gpu_graph
rm -rf "$W" && mkdir -p "$W" "$OUT"
g=${GCNPART_BIN:-.carry/new/gcnpart}
SECONDS=0
graphs=${GRAPHS:-"cora citeseer slashdot enron arxiv"}
[[ " $graphs " == *" arxiv "* ]] && { [ -f /tmp/arxiv.gcsr ] || $g -q generate rmat --scale 17 --edge-factor 8 \
  --features 128 --classes 40 -o /tmp/arxiv.gcsr > "$W/generate-arxiv.log" 2>&1; }
for name in $graphs; do
  case $name in
    cora|citeseer) data=("$GCNPART_DATA/$name") ;;
    slashdot) data=("$GCNPART_DATA/snap/soc-Slashdot0902.txt.gz" --synthetic-features 128 --synthetic-classes 16) ;;
    enron) data=("$GCNPART_DATA/snap/email-Enron.txt.gz" --synthetic-features 128 --synthetic-classes 16) ;;
    arxiv) data=(/tmp/arxiv.gcsr) ;;
  esac
  for p in fp32 bf16; do
    for mode in auto off; do
      timeout 60 $g -q bench epoch "${data[@]}" --precision $p --spmm own --layers 2 --hidden "${HIDDEN:-256}" \
        --warmup 5 --repeats 30 --cuda-graph $mode --json "$W/epoch-$name-$p-$mode.json" > "$W/epoch-$name-$p-$mode.log" 2>&1
      echo "epoch-$name-$p-$mode: exit $? (${SECONDS}s)" >> "$W/summary.txt"
    done
  done
done
python3 - "$W" > "$W/table.txt" <<'PY'
import json, os, sys
w = sys.argv[1]
rows = {}
for f in sorted(os.listdir(w)):
    if not f.endswith(".json"):
        continue
    _, name, p, mode = f[:-5].split("-")
    try:
        r = json.load(open(os.path.join(w, f)))["runs"][0]
        rows.setdefault((name, p), {})[mode] = (r["epoch_ms"]["median"], r.get("cuda_graph", "?"))
    except Exception as e:
        rows.setdefault((name, p), {})[mode] = (float("nan"), f"unreadable ({e})")
print(f"{'graph':<10} {'prec':<5} {'graph ms':>9} {'eager ms':>9} {'eager/graph':>11}  status")
for (name, p), m in sorted(rows.items()):
    on, off = m.get("auto", (float("nan"), "-")), m.get("off", (float("nan"), "-"))
    print(f"{name:<10} {p:<5} {on[0]:9.3f} {off[0]:9.3f} {off[0] / on[0]:11.2f}x  {on[1]}")
PY
tar -czf "$OUT/graph.tar.gz" -C /tmp gpu_graph
cat "$W/summary.txt" "$W/table.txt"
