#!/usr/bin/env bash
# Issue 13, item 8 ("behaviour unchanged"): H200 epoch times of the reddit-sized and products-sized graphs before
# (the commit whose `git archive` is carried as .deps/base-<commit>.tar.gz) and after (this tree), back to back on
# the same GPU: both builds first, then the runs interleaved (before, after, before, after, ...) so that clocks
# and temperature drift hit both alike. `gcnpart train --device cuda` (the training loop the refactor touched),
# 2 layers, hidden 256, fp32 and bf16; the figure is the median train step over epochs 2..E of each run, and the
# verdict compares the medians of the REPS runs.
# Device command (repository root, .deps carried):  . .deps/env.sh && bash bench/gpu_issue13.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
o=${OUT:-/tmp/o}
mkdir -p "$o"
reps=${REPS:-3}
epochs=${EPOCHS:-30}
base_tar=$(ls .deps/base-*.tar.gz | head -1)
base=${base_tar#.deps/base-}; base=${base%.tar.gz}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv | tee "$o/gpu.txt"
rm -rf /tmp/before && mkdir -p /tmp/before && tar -xzf "$base_tar" -C /tmp/before
SECONDS=0
( cd /tmp/before && cmake --preset gpu > "$o/configure-before.log" 2>&1 &&
  cmake --build build/gpu -j 8 --target gcnpart > "$o/build-before.log" 2>&1 ) &
( cmake --preset gpu > "$o/configure-after.log" 2>&1 &&
  cmake --build build/gpu -j 8 --target gcnpart > "$o/build-after.log" 2>&1 ) &
wait
echo "builds: ${SECONDS}s"
if [ "${GPU_TESTS:-1}" = 1 ]; then  # the gpu suite of this tree (CUDA paths the CPU machine cannot run)
  cmake --build build/gpu -j 16 > "$o/build-tests.log" 2>&1 || grep -E "error" "$o/build-tests.log" | head
  timeout 240 ctest --test-dir build/gpu -L gpu --output-on-failure > "$o/ctest-gpu.log" 2>&1
  echo "gpu tests: exit $? after ${SECONDS}s"; grep -E "tests passed|Failed|\*\*\*" "$o/ctest-gpu.log" | head -20
fi
before=/tmp/before/build/gpu/tools/gcnpart
after=build/gpu/tools/gcnpart
[ -x "$before" ] || { grep -E "error" "$o/build-before.log" | head; exit 1; }
[ -x "$after" ] || { grep -E "error" "$o/build-after.log" | head; exit 1; }
for spec in "reddit 18 220 602 41" "products 21 30 100 47"; do
  read -r name scale ef features classes <<< "$spec"
  f=/tmp/$name.gcsr
  [ -f "$f" ] || $after -q generate rmat --scale "$scale" --edge-factor "$ef" --features "$features" \
    --classes "$classes" -o "$f" > /dev/null 2>&1
done
echo "graphs: ${SECONDS}s"
for name in reddit products; do
  for p in fp32 bf16; do
    for r in $(seq 1 "$reps"); do
      for v in before after; do
        bin=$before; [ $v = after ] && bin=$after
        timeout 300 $bin -q train /tmp/$name.gcsr --device cuda --layers 2 --hidden 256 --epochs "$epochs" \
          --precision $p --json "$o/train-$name-$p-$v-$r.json" > "$o/train-$name-$p-$v-$r.log" 2>&1 ||
          { echo "$name $p $v $r failed"; tail -3 "$o/train-$name-$p-$v-$r.log"; }
      done
    done
  done
done
echo "runs: ${SECONDS}s"
python3 - "$o" "$reps" "$base" <<'PY' | tee "$o/summary.txt"
import json, os, statistics, sys
o, reps, base = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = []
for name in ("reddit", "products"):
    for p in ("fp32", "bf16"):
        med = {}
        for v in ("before", "after"):
            ms = []
            for r in range(1, reps + 1):
                try:
                    j = json.load(open(f"{o}/train-{name}-{p}-{v}-{r}.json"))
                    ms.append(1e3 * j["summary"]["epoch_seconds"]["median"])
                except Exception as e:
                    print(f"missing {name} {p} {v} {r}: {e}")
            med[v] = (statistics.median(ms), ms) if ms else (float("nan"), ms)
        ratio = med["after"][0] / med["before"][0]
        rows.append({"graph": name, "precision": p, "before_ms": med["before"][0], "after_ms": med["after"][0],
                     "before_runs_ms": med["before"][1], "after_runs_ms": med["after"][1], "after_over_before": ratio})
        print(f"{name:9s} {p}  before ({base}) {med['before'][0]:8.3f} ms  after {med['after'][0]:8.3f} ms  "
              f"after/before {ratio:.4f}  {'within 2 %' if abs(ratio - 1) <= 0.02 else 'NOT within 2 %'}")
gpu = open(f"{o}/gpu.txt").read().splitlines()[-1]
json.dump({"gpu": gpu, "base_commit": base, "reps": reps, "rows": rows}, open(f"{o}/issue13-epochs.json", "w"), indent=2)
PY
