#!/usr/bin/env bash
# fit suite, on the GPU machine: check `gcnpart fit` against measured training (issue 16). For >= 20 configurations
# held out of the calibration (RMAT and SBM graphs, scale 16-22, 2-4 layers, hidden 64-512, fp32 and bf16, one GPU;
# with two GPUs also drop / halo / gather / pipeline rows) it runs `gcnpart train --device cuda` for a few epochs
# (median train step after the first, driver memory after set-up) and `gcnpart fit` on the same graph, and writes
# $OUT/fit-validate.json and $OUT/fit-validate.md: predicted, measured and error % for time and memory, the share
# within +-15 %, and the worst |error| (the held-out residual fit prints as its band).
#   bench/run/fit_validate.sh                      # about 6-8 minutes on one H200 with an existing build
#   CALIBRATE=1 bench/run/fit_validate.sh          # recalibrate first, then validate that calibration
# Parameters (environment):
#   CALIBRATE=1   first run `gcnpart bench calibrate` here ($OUT/calibration-h200.json) and predict with it (else the
#                 built-in partition/fit/calibration.json); bench/run/calibration_merge.py then builds the new
#                 partition/fit/calibration.json from the two files (held-out epochs and residual included)
#   EPOCHS=N      epochs per training run (default 6)
#   QUICK=1       the first 8 rows only
#   FALSE_FITS=1  then the "never a false fits" check: for an RTX 3090 and an RTX 3080 emulated with `train
#                 --memory-limit` (the card's memory less fit's fixed per-GPU overhead), fit's largest hidden width must
#                 train and 5 % / 10 % wider must not fit (FALSE_FITS_GRAPHS, default rmat21: products-sized RMAT 21;
#                 products: the products-sized SBM; LAYERS, default 2); writes $OUT/false-fits-L<LAYERS>.json (about
#                 2-3 minutes a graph); ONLY_FALSE_FITS=1 skips the rows
#   GCNPART_BIN   a binary built elsewhere (e.g. .carry/new/gcnpart; nothing is built here), else
#                 build/gpu/tools/gcnpart, built when missing or REBUILD is set
#   OUT           where the reports go (default /tmp/out); every train / fit JSON and log: $OUT/fit_validate.tar.gz
# After a change to the model alone, `bench/run/fit_revalidate.py MEASURED.json GRAPH_DIR OUT_PREFIX` re-prices the
# measured rows on the CPU (regenerate the graphs with the generator arguments below; generation is deterministic).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-/tmp/out}
mkdir -p "$out"
work=${TMPDIR:-/tmp}/gcnpart-fit-validate
mkdir -p "$work"
epochs=${EPOCHS:-6}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version --format=csv | tee "$out/gpu.txt"
gpus=$(nvidia-smi -L | wc -l)
g=${GCNPART_BIN:-build/gpu/tools/gcnpart}  # GCNPART_BIN=.carry/new/gcnpart: a binary built elsewhere, no build here
if [ -z "${GCNPART_BIN:-}" ] && { [ ! -x "$g" ] || [ -n "${REBUILD:-}" ]; }; then
  cmake --preset gpu > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
  cmake --build build/gpu --target gcnpart -j "$(nproc)" > "$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -40; exit 1; }
fi
calib=()
if [ -n "${CALIBRATE:-}" ]; then
  $g -q bench calibrate --card h200 --json "$out/calibration-h200.json" 2>"$out/calibrate.log" | tee "$out/calibrate.txt"
  calib=(--calibration "$out/calibration-h200.json")
fi

# Graphs: name -> generator arguments.
declare -A graph=(
  [rmat16]="rmat --scale 16 --edge-factor 16 --features 128 --classes 40"
  [rmat18]="rmat --scale 18 --edge-factor 16 --features 128 --classes 40"
  [rmat18d]="rmat --scale 18 --edge-factor 64 --features 300 --classes 41"
  [sbm200k]="sbm --nodes 200000 --avg-degree 20 --classes 16 --features 128 --train-per-class 5000"
  [rmat20]="rmat --scale 20 --edge-factor 16 --features 100 --classes 47"
  [rmat21]="rmat --scale 21 --edge-factor 30 --features 100 --classes 47"
  [rmat22]="rmat --scale 22 --edge-factor 30 --features 100 --classes 47"
  [products]="sbm --nodes 2449029 --avg-degree 50.6 --features 100 --classes 47 --train-per-class 2000 --valid 20000 --test 50000"
)
# Rows: graph layers hidden precision gpus strategy
rows=(
  "rmat16 2 64 fp32 1 single"   "rmat16 3 256 bf16 1 single"  "rmat16 4 512 fp32 1 single"
  "rmat18 2 128 fp32 1 single"  "rmat18 3 256 fp32 1 single"  "rmat18 3 256 bf16 1 single"  "rmat18 4 64 bf16 1 single"
  "sbm200k 2 256 fp32 1 single" "sbm200k 3 128 bf16 1 single" "sbm200k 2 512 fp32 1 single"
  "rmat18d 2 256 fp32 1 single" "rmat18d 3 512 bf16 1 single"
  "rmat20 2 256 fp32 1 single"  "rmat20 3 128 fp32 1 single"  "rmat20 3 512 bf16 1 single"  "rmat20 4 256 fp32 1 single"
  "rmat21 2 256 fp32 1 single"  "rmat21 2 256 bf16 1 single"  "rmat21 3 64 fp32 1 single"   "rmat21 4 128 bf16 1 single"
  "rmat22 3 256 fp32 1 single"  "rmat22 2 512 bf16 1 single"
)
if [ "$gpus" -ge 2 ]; then
  rows+=("rmat20 3 256 fp32 2 halo" "rmat20 3 256 fp32 2 gather" "rmat20 3 256 fp32 2 drop" "rmat20 3 256 fp32 2 pipeline"
         "rmat21 2 256 bf16 2 gather" "rmat21 2 256 fp32 2 halo")
fi
[ -n "${QUICK:-}" ] && rows=("${rows[@]:0:8}")
[ -n "${ONLY_FALSE_FITS:-}" ] && rows=()

results="$work/rows.jsonl"
: > "$results"
for row in "${rows[@]}"; do
  read -r name layers hidden precision ngpu strategy <<< "$row"
  data="$work/$name.gcsr"
  # shellcheck disable=SC2086  # the generator's arguments, split on purpose
  [ -f "$data" ] || $g -q generate ${graph[$name]} -o "$data" > /dev/null || { echo "generate $name failed"; continue; }
  tag="$name-L$layers-h$hidden-$precision-$ngpu-$strategy"
  train_args=(--device cuda --layers "$layers" --hidden "$hidden" --precision "$precision" --epochs "$epochs")
  fit_args=(--layers "$layers" --hidden "$hidden" --precision "$precision" --rank-gpus 1)
  if [ "$ngpu" -gt 1 ]; then
    train_args+=(--strategy "$strategy" --gpus "$ngpu")
    fit_args+=(--card "h200:$ngpu" --strategies "$strategy")
  else
    fit_args+=(--card h200)
  fi
  start=$(date +%s)
  $g -q train "$data" "${train_args[@]}" --json "$work/train-$tag.json" > "$work/train-$tag.log" 2>&1 || { echo "$tag: train failed"; tail -3 "$work/train-$tag.log"; continue; }
  $g -q fit "$data" "${fit_args[@]}" ${calib[@]+"${calib[@]}"} --json "$work/fit-$tag.json" > "$work/fit-$tag.log" 2>&1 || { echo "$tag: fit failed"; tail -3 "$work/fit-$tag.log"; continue; }
  python3 - "$work/train-$tag.json" "$work/fit-$tag.json" "$row" >> "$results" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); f = json.load(open(sys.argv[2]))
name, layers, hidden, precision, ngpu, strategy = sys.argv[3].split()
s = t["summary"]
cf = f["configurations"][0]
if int(ngpu) == 1:
    e, m = cf["single"]["epoch"], cf["single"]["memory"]
else:
    st = [x for x in cf["strategies"] if x["strategy"] == strategy][0]
    e, m = st["epoch"], st["memory"]
print(json.dumps({"graph": name, "layers": int(layers), "hidden": int(hidden), "precision": precision,
  "gpus": int(ngpu), "strategy": strategy,
  "measured_epoch_s": s["epoch_seconds"]["median"], "predicted_epoch_s": e["seconds"],
  "measured_tracked_peak": s["memory"]["peak_bytes"], "predicted_tracked_peak": m["tracked_peak_bytes"],
  "measured_driver": s.get("driver_used_bytes"), "predicted_driver": m.get("driver_used_bytes_predicted"),
  "predicted_per_card": m.get("per_card_bytes"), "bound": e.get("bound"), "terms": e.get("terms_seconds")}))
PY
  echo "$tag done in $(( $(date +%s) - start )) s"
done

[ -s "$results" ] && python3 bench/run/fit_revalidate.py --report "$results" "$out/fit-validate" "$epochs"

if [ -n "${FALSE_FITS:-}" ]; then
  layers=${LAYERS:-2}
  ff="$work/false-fits.jsonl"
  : > "$ff"
  for gname in ${FALSE_FITS_GRAPHS:-rmat21}; do
    [ -n "${graph[$gname]:-}" ] || { echo "FALSE_FITS_GRAPHS: no graph $gname (expected: ${!graph[*]})" >&2; continue; }
    f=$work/$gname.gcsr
    # shellcheck disable=SC2086
    [ -f "$f" ] || $g -q generate ${graph[$gname]} -o "$f" > /dev/null
    for card in rtx3090 rtx3080; do
      fj="$work/fit-$gname-L$layers-$card.json"
      $g -q fit "$f" --card "$card" --layers "$layers" --hidden 256 --rank-gpus 1 --json "$fj" > /dev/null ||
        { echo "fit $gname $card failed"; continue; }
      read -r largest cap < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); c = d["configurations"][0]; m = c["single"]["memory"]
print(c["single"]["largest_hidden"], c["card_bytes"] - m["fixed_overhead_bytes"])' "$fj")
      for factor in 1.00 1.05 1.10; do
        hidden=$(python3 -c "print(int($largest * $factor))")
        tag="$gname-L$layers-$card-h$hidden"
        $g -q train "$f" --device cuda --layers "$layers" --hidden "$hidden" --epochs 3 --memory-limit "$cap" \
          --offload off --json "$work/train-$tag.json" > "$work/train-$tag.log" 2>&1
        rc=$?
        python3 - "$work/train-$tag.json" "$card" "$layers" "$hidden" "$largest" "$factor" "$cap" "$rc" "$gname" \
          >> "$ff" <<'PY'
import json, sys
path, card, layers, hidden, largest, factor, cap, rc, gname = sys.argv[1:]
try:
    t = json.load(open(path))
    peak, choices = t["summary"]["memory"]["peak_bytes"], t.get("spmm_choices")
except (OSError, ValueError, KeyError):
    peak, choices = None, None
print(json.dumps({"graph": gname, "card": card, "layers": int(layers), "hidden": int(hidden),
                  "largest_predicted": int(largest), "factor": float(factor), "cap_bytes": int(cap),
                  "predicted_fits": factor == "1.00", "train_exit": int(rc), "tracked_peak": peak,
                  "spmm_choices": choices}))
PY
        echo "$gname $card: hidden $hidden (fit's largest $largest x $factor), cap $cap bytes: train exit $rc"
      done
    done
  done
  python3 - "$ff" "$out/false-fits-L$layers.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
false_fits = [r for r in rows if r["predicted_fits"] and r["train_exit"] != 0]
json.dump({"rows": rows, "false_fits": len(false_fits)}, open(sys.argv[2], "w"), indent=1)
print("false fits: %d of %d runs predicted to fit" % (len(false_fits), sum(r["predicted_fits"] for r in rows)))
PY
fi
tar -czf "$out/fit_validate.tar.gz" --exclude="*.gcsr" -C "$(dirname "$work")" "$(basename "$work")"
