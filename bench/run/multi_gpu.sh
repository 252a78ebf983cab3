#!/usr/bin/env bash
# Multi-GPU suite (on nvidia-h200-x2 or larger): 1 GPU against K GPUs for every strategy, `gcnpart compare --device
# cuda` (single on GPU 0 and K parts on GPUs 0..K-1 through NCCL, one process, work-balanced METIS partitions):
# per-GPU compute / communication / waiting, bytes sent, predicted and measured work imbalance, exposed communication,
# and each strategy's training losses against single's (exactness: halo, gather, boundary and pipeline reproduce
# them; drop does not). Graphs: the products-sized (RMAT 21, ef 30, 100 features, 47 classes) and reddit-sized
# (RMAT 18, ef 220, 602 features, 41 classes) graphs; fp32 and bf16. First, on request, the plain NCCL collectives
# (`gcnpart bench nccl`), the link bandwidth the strategies' traffic is compared with. NVLink multicast stays off
# (NCCL_NVLS_ENABLE=0 on these hosts). Successor of the former gpu_x2.sh / gpu_issue14.sh.
#
#   bench/run/multi_gpu.sh
#   PRECISIONS=fp32 GRAPHS=products STRATEGIES=halo,gather bench/run/multi_gpu.sh
# On the device machine: `. .deps/env.sh && OUT=$OUT bash bench/run/multi_gpu.sh` (carry .deps). As with the former
# gpu_issue14.sh, plan one precision per call (PRECISIONS=fp32, then bf16) to fit a device call's 10 minutes.
#
# Parameters (environment):
#   GRAPHS      (default "products reddit"; any name of bench/run/common.sh, e.g. rmat20, or a .gcsr path)
#   PRECISIONS  (default "fp32 bf16")     PARTS K (default 2)     LAYERS (default 2,3: compare's list)
#   STRATEGIES  (default drop,halo,gather,boundary; pipeline is the fifth)    HIDDEN (default 256)
#   EPOCHS      measured epochs per run (default 20)      NCCL=1  the plain collectives first (1-256 MiB)
#   GCNPART, OUT, DEADLINE, GCNPART_DATA, GRAPH_DIR: see bench/run/common.sh
# Writes $OUT/multi_gpu.tar.gz (compare-GRAPH-PRECISION.json and .log, nccl.json, gpu.txt with `nvidia-smi topo -m`,
# table.txt) and $OUT/summary.txt. The mpirun launch (one process per GPU) is not run here: tests/cli/mpi_train.sh
# covers it on CPU ranks, and the 2026-11-29 figures (bench/README.md) found the two launch modes alike.
set -uo pipefail
# shellcheck source=bench/run/common.sh
. "$(dirname "$0")/common.sh"
bench_init multi_gpu
export NCCL_NVLS_ENABLE=0
ensure_gcnpart
nvidia-smi topo -m >> "$W/gpu.txt" 2>&1
parts=${PARTS:-2}
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$gpus" -ge "$parts" ] || note "only $gpus GPU(s) visible for PARTS=$parts: compare skips those rows"
graphs=${GRAPHS:-"products reddit"}
if [ "${NCCL:-0}" = 1 ]; then
  step nccl 60 "$GCNPART" -q bench nccl --gpus "$parts" --bytes 1MiB,16MiB,64MiB,256MiB --json "$W/nccl.json"
fi
# shellcheck disable=SC2086  # $graphs: a list of names
generate_graphs "$GCNPART" $graphs
for name in $graphs; do
  data_args "$name"
  g=$(graph_tag "$name")
  for p in ${PRECISIONS:-fp32 bf16}; do
    step "compare-$g-$p" 400 "$GCNPART" -q compare "${DATA[@]}" --device cuda --parts "$parts" \
      --layers "${LAYERS:-2,3}" --strategies "${STRATEGIES:-drop,halo,gather,boundary}" --hidden "${HIDDEN:-256}" \
      --measure-epochs "${EPOCHS:-20}" --precision "$p" --json "$W/compare-$g-$p.json"
  done
done
python3 bench/run/tables.py compare "$W" > "$W/table.txt" 2>&1
cat "$W/table.txt" >> "$S"
bench_pack
cat "$W/table.txt"
