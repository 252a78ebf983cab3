#!/usr/bin/env bash
# Epochs only, with carried binaries (see gpu_carried.sh): `bench epoch` of the RMAT graphs in GRAPHS (default
# "products reddit") for each binary in BINS (default "new head"), each precision (fp32, bf16) and each depth in
# LAYERS (default "2 3"), hidden 256, own SpMM, degree order. Results in $OUT/epochs.tar.gz and summary.txt.
#   device: . .deps/env.sh && OUT=$OUT bash bench/gpu_epochs.sh        (carry: .deps, .carry)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
W=/tmp/epochs
rm -rf "$W" && mkdir -p "$W"
read -r -a bins <<< "${BINS:-new head}"
graphs=${GRAPHS:-"products reddit"}
deadline=${DEADLINE:-420}
s="$W/summary.txt"
: > "$s"
late() { [ "$SECONDS" -gt "$deadline" ] && { echo "skipped (deadline): $1" >> "$s"; return 0; }; return 1; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$W/gpu.txt" 2>&1
. bench/gpu_steps.sh
# shellcheck disable=SC2086  # $graphs: a list of names
generate_rmat ".carry/${bins[0]}/gcnpart" $graphs
for layers in ${LAYERS:-2 3}; do
  for name in $graphs; do
    for p in bf16 fp32; do
      for b in "${bins[@]}"; do run_epoch ".carry/$b/gcnpart" "$name" "$p" "$layers" "epoch$layers-$name-$p-$b"; done
    done
  done
done
for f in "$W"/epoch*.json; do
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1], j['runs'][0]['epoch_ms']['median'], 'ms')" "$f" >> "$s" 2>&1
done
tar -czf "$OUT/epochs.tar.gz" -C /tmp epochs
cp "$s" "$OUT/summary.txt"
cat "$s"
