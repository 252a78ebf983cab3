#!/usr/bin/env bash
# Issue 14 on nvidia-h200-x2: 1 vs 2 GPUs for every strategy on the products-sized (RMAT 21, ef 30, 100 features,
# 47 classes) and reddit-sized (RMAT 18, ef 220, 602 features, 41 classes) graphs, 2 and 3 layers, hidden 256, with
# `gcnpart compare --device cuda` (single on GPU 0 and K = 2 on GPUs 0..1 through NCCL, one process, work-balanced
# partitions), EPOCHS epochs each: per-GPU compute / communication / waiting, bytes sent, predicted and measured
# work imbalance, exposed communication, losses (exactness against single). PRECISIONS picks fp32 / bf16 (a call
# per precision fits the device tool's 10 minutes); GRAPHS picks the graphs. Summary table at the end.
# Device command (repository root, .deps carried):  . .deps/env.sh && PRECISIONS=fp32 bash bench/gpu_issue14.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
o=${OUT:-/tmp/o}
mkdir -p "$o"
export NCCL_NVLS_ENABLE=0
epochs=${EPOCHS:-20}
SECONDS=0
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$o/gpu.txt" 2>&1; cat "$o/gpu.txt"
nvidia-smi topo -m >> "$o/gpu.txt" 2>&1
if [ ! -x build/gpu/tools/gcnpart ]; then
  cmake --preset gpu > "$o/configure.log" 2>&1 || { tail -20 "$o/configure.log"; exit 1; }
  cmake --build build/gpu -j 32 --target gcnpart > "$o/build.log" 2>&1 || { grep -E "error" "$o/build.log" | head; exit 1; }
fi
g=build/gpu/tools/gcnpart
echo "build: ${SECONDS}s"
for spec in ${GRAPHS:-"products:21:30:100:47 reddit:18:220:602:41"}; do
  IFS=: read -r name scale ef features classes <<< "$spec"
  f=/tmp/$name.gcsr
  [ -f "$f" ] || $g -q generate rmat --scale "$scale" --edge-factor "$ef" --features "$features" \
    --classes "$classes" -o "$f" > "$o/generate-$name.log" 2>&1
  for p in ${PRECISIONS:-fp32 bf16}; do
    timeout 400 $g -q compare "$f" --device cuda --parts 2 --layers 2,3 --strategies drop,halo,gather,boundary \
      --hidden 256 --measure-epochs "$epochs" --precision "$p" --json "$o/compare-$name-$p.json" \
      > "$o/compare-$name-$p.log" 2>&1
    echo "$name $p: exit $? after ${SECONDS}s"; cat "$o/compare-$name-$p.log" | cut -c1-200
  done
done
python3 - "$o" <<'PY' | tee "$o/summary-issue14.txt"
import glob, json, os, sys
o = sys.argv[1]
for path in sorted(glob.glob(f"{o}/compare-*.json")):
    j = json.load(open(path))
    name = os.path.basename(path)[8:-5]
    single = {r["layers"]: r for r in j["rows"] if r["strategy"] == "single"}
    print(f"== {name}: epoch ms (median), speed-up vs 1 GPU, per GPU compute / comm / wait ms, MiB sent, "
          f"work imbalance predicted / measured, exposed comm, worst relative loss difference to single")
    for r in j["rows"]:
        if r.get("status") == "skipped":
            print(f"  {r['strategy']:8s} K={r['parts']} L={r['layers']} skipped: {r['reason']}"); continue
        s = single[r["layers"]]
        e, e1 = 1e3 * r["epoch_seconds"], 1e3 * s["epoch_seconds"]
        split = " | ".join(f"{c:.2f}/{m:.2f}/{w:.2f}" for c, m, w in
                           zip(r["compute_ms_per_epoch"], r["comm_ms_per_epoch"], r["wait_ms_per_epoch"]))
        sent = "/".join(f"{b / 2**20:.0f}" for b in r["bytes_sent_per_epoch"])
        worst = max(abs(a - b) / abs(b) for a, b in zip(r["train_loss"], s["train_loss"]))
        print(f"  {r['strategy']:8s} K={r['parts']} L={r['layers']}  {e:8.2f} ms  x{e1 / e:5.2f}  [{split}]  "
              f"sent {sent} MiB  imb {r['metrics']['work_imbalance']:.3f}/{r['work_imbalance_measured']:.3f}  "
              f"exposed {100 * r['exposed_communication']:.1f} %  loss diff {worst:.1e}")
PY
