#!/usr/bin/env bash
# CPU "behaviour unchanged" check of two builds (issue 34): trains every strategy (single, drop, halo, gather,
# boundary, pipeline) x precision (fp32, bf16) x depth (2, 3 layers) on Cora, CiteSeer and an RMAT graph (scale 12,
# 32 features: its hidden width 64 makes the first layer aggregate before its GEMM, Cora's and CiteSeer's sparse
# features take the sparse-input path), plus dropout-0 runs of single / gather / boundary, on virtual CPU devices
# with both binaries, and compares the JSON reports: per-epoch training and validation losses, final losses and
# accuracies (exact equality), and the tracked memory by category. No GPU needed.
#
#   bench/run/cpu_losses.sh BASE_BIN NEW_BIN [OUT_DIR]
#
# Environment: GCNPART_DATA (default ../shared/datasets), EPOCHS (default 6), OMP_NUM_THREADS (default 2).
# Writes OUT_DIR/{base,new}/*.json and OUT_DIR/summary.json (default OUT_DIR: /tmp/gcnpart-cpu-losses); prints one
# line per difference and a last line "N runs compared; D differ in losses/accuracy; M differ in tracked memory";
# exits 1 when anything differs.
set -uo pipefail
case "${1:-}" in -h | --help) sed -n '2,13p' "$0"; exit 0 ;; esac
[ $# -ge 2 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
base=$1 new=$2 out=${3:-/tmp/gcnpart-cpu-losses}
root=$(cd "$(dirname "$0")/../.." && pwd)
export GCNPART_DATA=${GCNPART_DATA:-$root/../shared/datasets} OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
epochs=${EPOCHS:-6}
rm -rf "$out" && mkdir -p "$out/base" "$out/new" || exit 2
rmat=$out/rmat12.gcsr
"$base" generate rmat --scale 12 --edge-factor 8 --features 32 --classes 5 --seed 3 -o "$rmat" > /dev/null || exit 2

# run TAG ARGS...: both binaries, JSON into base/TAG.json and new/TAG.json (empty where a binary refuses).
run() {
  local tag=$1; shift
  for side in base new; do
    local bin=$base; [ $side = new ] && bin=$new
    "$bin" train "$@" --device cpu --epochs "$epochs" --json - > "$out/$side/$tag.json" 2> "$out/$side/$tag.err" || true
  done
}
for ds in cora citeseer "$rmat"; do
  name=$(basename "$ds" .gcsr); hidden=24; [ "$name" = rmat12 ] && hidden=64
  for prec in fp32 bf16; do
    for s in single drop halo gather boundary pipeline; do
      for layers in 2 3; do
        parts=2; [ $s = single ] && parts=1; [ $s = pipeline ] && parts=$layers
        run "$name-$prec-$s-L$layers" "$ds" --layers $layers --hidden $hidden --precision $prec --strategy $s \
          --parts $parts --seed 7
      done
    done
  done
done
for s in single gather boundary; do
  for prec in fp32 bf16; do
    parts=2; [ $s = single ] && parts=1
    run "rmat-p0-$prec-$s" "$rmat" --layers 2 --hidden 40 --dropout 0 --precision $prec --strategy $s --parts $parts \
      --seed 5
  done
done
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
runs = differ = memory = refused = 0
rows = []
for f in sorted(os.listdir(f"{out}/base")):
    if not f.endswith(".json"): continue
    a, b = (open(f"{out}/{side}/{f}").read() for side in ("base", "new"))
    if not a.strip() and not b.strip():
        refused += 1; continue  # both refuse the configuration (bf16 pipeline stages)
    if not a.strip() or not b.strip():
        differ += 1; print(f"{f}: only one build trained"); continue
    ja, jb = json.loads(a), json.loads(b)
    runs += 1
    keys = ("accuracy", "loss", "train_loss", "valid_loss")
    same = ja["train_loss"] == jb["train_loss"] and ja.get("valid_loss") == jb.get("valid_loss") and \
        [{k: r[k] for k in keys} for r in ja["runs"]] == [{k: r[k] for k in keys} for r in jb["runs"]]
    same_memory = json.dumps(ja.get("memory"), sort_keys=True) == json.dumps(jb.get("memory"), sort_keys=True)
    if not same: differ += 1; print(f"{f}: losses or accuracy differ")
    if not same_memory: memory += 1; print(f"{f}: tracked memory differs")
    rows.append({"run": f[:-5], "identical": same, "memory_identical": same_memory,
                 "final_train_loss": ja["train_loss"][-1]})
json.dump({"runs": runs, "differ": differ, "memory_differ": memory, "refused_by_both": refused, "rows": rows},
          open(f"{out}/summary.json", "w"), indent=1)
print(f"{runs} runs compared; {differ} differ in losses/accuracy; {memory} differ in tracked memory "
      f"({refused} configurations refused by both)")
sys.exit(1 if differ or memory else 0)
PY
