#!/usr/bin/env bash
# A short device call that builds nothing: it runs binaries built on the CPU machine (ci preset, sm_90, stripped)
# and carried in an ignored folder, for sessions with little device time left.
#   here:   cmake ... && ninja -C build/ci && mkdir -p .carry/new && strip -o .carry/new/gcnpart build/ci/tools/gcnpart
#           (and test_kernels, test_engine, test_partition, test_bench); .carry/head/gcnpart: the tree before a change
#   device: . .deps/env.sh && OUT=$OUT bash bench/gpu_carried.sh        (carry: .deps, .carry)
# In order of priority, each step skipped past DEADLINE seconds: the kernels' gpu suite (while the reddit- and
# products-sized RMAT graphs are generated), `bench epoch` of head and new interleaved (2 layers, hidden 256, fp32 and
# bf16, degree order), `train` on Cora / CiteSeer (own and cuSPARSE SpMM: the memory records tests compare against),
# then the engine's, partition's and bench's gpu suites (ROUNDS=N: the head / new epochs N times; ACCURACY=1: Cora
# and CiteSeer 10 seeds in fp32 and bf16 after the epochs), and with PEERS=1 `bench spmm` and the PyG peers. Everything lands in $OUT/results.tar.gz (re-packed after
# every step, so a call cut short still returns what finished; a call returns only a few files) and summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
W=/tmp/gpu_carried
rm -rf "$W" && mkdir -p "$W"
N=.carry/new
H=.carry/head
deadline=${DEADLINE:-150}
graphs=${GRAPHS:-"products reddit"}
s="$W/summary.txt"
pack() { tar -czf "$OUT/results.tar.gz" -C /tmp gpu_carried; cp "$s" "$OUT/summary.txt"; }
SECONDS=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$W/gpu.txt" 2>&1
$N/gcnpart --version >> "$W/gpu.txt"
late() { pack; [ "$SECONDS" -gt "$deadline" ] && { echo "skipped (deadline): $1" >> "$s"; return 0; }; return 1; }
. bench/gpu_steps.sh
# shellcheck disable=SC2086  # $graphs: a list of names
generate_rmat $N/gcnpart $graphs &
gen=$!
timeout 150 $N/test_kernels --test-suite=gpu --no-intro=true > "$W/test_kernels_gpu.log" 2>&1
echo "test_kernels gpu: exit $? (${SECONDS}s)" >> "$s"
wait $gen
echo "graphs: ${SECONDS}s" >> "$s"
for round in $(seq 1 "${ROUNDS:-1}"); do
  tag=$([ "$round" = 1 ] && echo "" || echo "-r$round")
  for name in $graphs; do
    for p in bf16 fp32; do
      for b in new head; do run_epoch .carry/$b/gcnpart "$name" $p 2 "epoch-$name-$p-$b$tag"; done
    done
  done
done
# ACCURACY=1: Cora and CiteSeer, 10 seeds, fp32 and bf16 (the issue's accuracy bound), new binary, default order.
if [ "${ACCURACY:-0}" = 1 ]; then
  for d in cora citeseer; do
    for p in fp32 bf16; do run_accuracy $N/gcnpart $d $p "accuracy-$d-$p"; done
  done
fi
for d in cora citeseer; do
  for spmm in own cusparse; do
    late "train-$d-$spmm" && continue
    timeout 30 $N/gcnpart -q train "$GCNPART_DATA/$d" --device cuda --spmm $spmm --json "$W/train-$d-$spmm.json" \
      > "$W/train-$d-$spmm.log" 2>&1
    echo "train-$d-$spmm: exit $? (${SECONDS}s)" >> "$s"
  done
done
for t in test_engine test_partition test_bench; do
  late "$t" && continue
  timeout 90 $N/$t --test-suite=gpu --no-intro=true > "$W/${t}_gpu.log" 2>&1
  echo "$t gpu: exit $? (${SECONDS}s)" >> "$s"
done
# With time to spare (PEERS=1): the new SpMM against every cuSPARSE algorithm and the PyG peers (the epoch of
# PyG's CSR path and PyG's SpMM per width) on the same graphs, for the issue-15 table's same-run ratios.
if [ "${PEERS:-0}" = 1 ]; then
  for name in $graphs; do
    late "spmm-$name" || { timeout 120 $N/gcnpart -q bench spmm "/tmp/$name.gcsr" --precision bf16 --reorder degree \
      --widths 16,32,41,47,64,100,128,256 --warmup 3 --repeats 10 --json "$W/spmm-$name.json" > "$W/spmm-$name.log" 2>&1
      echo "spmm-$name: exit $? (${SECONDS}s)" >> "$s"; }
    late "pyg-$name" || { timeout 150 python3 bench/peer/pyg_gcn.py "/tmp/$name.gcsr" --mode csr --hidden 256 --layers 2 \
      --epochs 10 --warmup 3 --json "$W/pyg-$name.json" > "$W/pyg-$name.log" 2>&1
      echo "pyg-$name: exit $? (${SECONDS}s)" >> "$s"; }
    late "pyg-spmm-$name" || { timeout 150 python3 bench/peer/pyg_spmm.py "/tmp/$name.gcsr" --json "$W/pyg-spmm-$name.json" \
      > "$W/pyg-spmm-$name.log" 2>&1
      echo "pyg-spmm-$name: exit $? (${SECONDS}s)" >> "$s"; }
  done
fi
# With EXTRA=1 (or PEERS=1): the small real graphs' SpMM and the 3-layer epochs of the new binary.
if [ "${PEERS:-0}" = 1 ] || [ "${EXTRA:-0}" = 1 ]; then
  for d in soc-Slashdot0902 email-Enron; do
    late "spmm-$d" || { timeout 60 $N/gcnpart -q bench spmm "$GCNPART_DATA/snap/$d.txt.gz" --synthetic-features 128 \
      --synthetic-classes 16 --precision bf16 --reorder degree --widths 16,32,41,47,64,100,128,256 --warmup 3 \
      --repeats 10 --json "$W/spmm-$d.json" > "$W/spmm-$d.log" 2>&1
      echo "spmm-$d: exit $? (${SECONDS}s)" >> "$s"; }
  done
  for name in $graphs; do
    for p in bf16 fp32; do run_epoch $N/gcnpart "$name" $p 3 "epoch-$name-$p-l3"; done
  done
fi
pack
cat "$s"
