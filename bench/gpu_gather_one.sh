#!/usr/bin/env bash
# The gather strategy's aggregation on one GPU (--parts 1: the table is the whole graph, no traffic), so that an
# SpMM change on its matrices is measured without a second GPU (STRATEGY=boundary: the boundary strategy's, whose
# one part is all interior rows): `train --strategy gather --parts 1` of the reddit-
# and products-sized RMAT graphs (GRAPHS, default "reddit products"; hidden 256, 2 layers, degree order, own SpMM), fp32 and bf16, each binary of BINS
# (.carry/<B>/gcnpart, default "new head") in turn, ROUNDS times (default 2). Epoch medians: $OUT/table.txt;
# every JSON and log: $OUT/gather_one.tar.gz (a call returns only a few files).
#   device: . .deps/env.sh && OUT=$OUT bash bench/gpu_gather_one.sh        (carry: .deps, .carry)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
W=/tmp/gather_one
rm -rf "$W" && mkdir -p "$W"
read -r -a bins <<< "${BINS:-new head}"
strategy=${STRATEGY:-gather}
names=${GRAPHS:-"reddit products"}
s="$W/summary.txt"
late() { return 1; }
. bench/gpu_steps.sh
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$W/gpu.txt" 2>&1
# shellcheck disable=SC2086  # $names: a list of names
generate_rmat ".carry/${bins[0]}/gcnpart" $names
echo "graphs: ${SECONDS}s" >> "$s"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for name in $names; do
    for p in fp32 bf16; do
      for b in "${bins[@]}"; do
        tag="$name-$p-$b-r$round"
        timeout 120 .carry/$b/gcnpart -q train "/tmp/$name.gcsr" --device cuda --strategy "$strategy" --parts 1 --gpus 1 \
          --precision "$p" --hidden 256 --layers 2 --epochs 15 --spmm own --json "$W/$tag.json" > "$W/$tag.log" 2>&1
        echo "$tag: exit $? (${SECONDS}s)" >> "$s"
      done
    done
  done
done
python3 - "$W" > "$W/table.txt" <<'PY'
import glob, json, os, sys, collections
w = sys.argv[1]
t = collections.defaultdict(list)
for f in sorted(glob.glob(f"{w}/*.json")):
    name, p, b, r = os.path.basename(f)[:-5].rsplit("-", 3)
    try:
        t[(name, p, b)].append(json.load(open(f))["summary"]["epoch_seconds"]["median"] * 1e3)
    except Exception as e:
        print(f, e)
for k, v in sorted(t.items()):
    print(f"{k[0]:10s} {k[1]:5s} {k[2]:6s} " + " ".join(f"{x:8.3f}" for x in v) + " ms")
PY
tar -czf "$OUT/gather_one.tar.gz" -C /tmp gather_one
cp "$s" "$W/table.txt" "$OUT/"
cat "$s" "$W/table.txt"
