#!/usr/bin/env bash
# Epoch suite: GCN training epochs (forward, backward, Adam) on one GPU, `gcnpart bench epoch` (own SpMM by default,
# hidden 256, median of REPEATS epochs after WARMUP, plus one profiled epoch whose time per kernel class and per
# operation lands in the JSON's runs[0].breakdown), for every graph x precision x depth and every binary of BINS.
# With several binaries the runs are interleaved, ROUNDS times, the order reversed every other round (A B, B A, ...),
# so clock and temperature drift hit each alike; the table gives each binary's median over the rounds and its ratio
# to the first (bench/run/ab_epochs.sh is this with two builds and a verdict). PyG (bench/peer/pyg_gcn.py) is the
# optional peer of the same call.
#
#   bench/run/epochs.sh                                                   # build/gpu/tools/gcnpart
#   GRAPHS="arxiv products reddit" LAYERS="2 3" PEER=1 bench/run/epochs.sh
#   BINS="graph=$G --cuda-graph auto; eager=$G --cuda-graph off" GRAPHS="cora citeseer slashdot enron arxiv" \
#     REPEATS=30 bench/run/epochs.sh                                       # the captured step against launches
# On the device machine: `. .deps/env.sh && OUT=$OUT bash bench/run/epochs.sh` (carry .deps, and .carry for BINS).
#
# Parameters (environment):
#   GRAPHS      arxiv, products, reddit (RMAT, generated), cora, citeseer, slashdot, enron, or .gcsr paths
#               (default "products reddit")
#   PRECISIONS  (default "fp32 bf16")      LAYERS (default 2; a list runs each)      HIDDEN (default 256)
#   SPMM        own (default), cusparse, auto or all      ORDER --reorder (default degree)
#   WARMUP, REPEATS  (default 3, 10)       ROUNDS: runs of each binary per cell (default 1)
#   PEER=1      PyG 2.x on the same .gcsr (bench/peer/pyg_gcn.py, CSR path, fp32, hidden HIDDEN, each depth); PEER_MODES
#               (default csr; "csr edge_index" adds PyG's default path, which runs out of memory on the large graphs)
#   ACCURACY=1  also Cora and CiteSeer, 10 seeds x 200 epochs, each precision, each binary (`gcnpart train`)
#   RECORDS=1   also `gcnpart train` of Cora and CiteSeer with the own and cuSPARSE SpMM (the memory records that
#               tests/partition/memory_model_test.cpp compares with, bench/results/h200-2026-11-29/train-*.json)
#   TOLERANCE   the table's verdict on each binary's ratio to the first (e.g. 0.02; default: none)
#   BINS, GCNPART, OUT, DEADLINE, GCNPART_DATA, GRAPH_DIR: see bench/run/common.sh
# Writes $OUT/epochs.tar.gz (epoch-GRAPH-PRECISION-lLAYERS-TAG[-rROUND].json and .log, pyg-*, accuracy-*, train-*,
# gpu.txt, table.txt) and $OUT/summary.txt (the steps and the table).
set -uo pipefail
# shellcheck source=bench/run/common.sh
. "$(dirname "$0")/common.sh"
bench_init "${BENCH_NAME_OVERRIDE:-epochs}"
[ -n "${BINS:-}" ] || ensure_gcnpart
parse_bins
graphs=${GRAPHS:-"products reddit"}
precisions=${PRECISIONS:-"fp32 bf16"}
rounds=${ROUNDS:-1}
# shellcheck disable=SC2086  # $graphs: a list of names
generate_graphs "${BIN_PATHS[0]}" $graphs
n=${#BIN_TAGS[@]}
for round in $(seq 1 "$rounds"); do
  suffix=$([ "$rounds" -gt 1 ] && echo "-r$round")
  for layers in ${LAYERS:-2}; do
    for name in $graphs; do
      data_args "$name"
      g=$(graph_tag "$name")
      for p in $precisions; do
        for k in $(seq 0 $((n - 1))); do
          i=$k
          [ $((round % 2)) = 0 ] && i=$((n - 1 - k))  # every other round in reverse order
          tag="epoch-$g-$p-l$layers-${BIN_TAGS[i]}$suffix"
          # shellcheck disable=SC2086  # BIN_EXTRA: further options, split on spaces on purpose
          step "$tag" 150 "${BIN_PATHS[i]}" -q bench epoch "${DATA[@]}" --precision "$p" --spmm "${SPMM:-own}" \
            --reorder "${ORDER:-degree}" --layers "$layers" --hidden "${HIDDEN:-256}" --warmup "${WARMUP:-3}" \
            --repeats "${REPEATS:-10}" ${BIN_EXTRA[i]} --json "$W/$tag.json"
        done
      done
    done
  done
done
if [ "${PEER:-0}" = 1 ]; then
  for layers in ${LAYERS:-2}; do
    for name in $graphs; do
      data_args "$name"
      [[ ${DATA[0]} == *.gcsr ]] || continue  # the peer reads .gcsr files
      for mode in ${PEER_MODES:-csr}; do
        epochs=${REPEATS:-10} warm=${WARMUP:-3}
        [ "$mode" = edge_index ] && epochs=5 warm=2  # E x width messages: few epochs, out of memory is an answer
        step "pyg-$mode-$(graph_tag "$name")-l$layers" 200 python3 bench/peer/pyg_gcn.py "${DATA[0]}" --mode "$mode" \
          --layers "$layers" --hidden "${HIDDEN:-256}" --epochs "$epochs" --warmup "$warm" \
          --json "$W/pyg-$mode-$(graph_tag "$name")-l$layers.json"
      done
    done
  done
fi
if [ "${ACCURACY:-0}" = 1 ]; then
  for d in cora citeseer; do
    for p in $precisions; do
      for i in "${!BIN_TAGS[@]}"; do
        # shellcheck disable=SC2086
        step "accuracy-$d-$p-${BIN_TAGS[i]}" 120 "${BIN_PATHS[i]}" -q train "$GCNPART_DATA/$d" --device cuda --runs 10 \
          --epochs 200 --precision "$p" ${BIN_EXTRA[i]} --json "$W/accuracy-$d-$p-${BIN_TAGS[i]}.json"
      done
    done
  done
fi
if [ "${RECORDS:-0}" = 1 ]; then
  for d in cora citeseer; do
    for spmm in own cusparse; do
      step "train-$d-$spmm" 60 "${BIN_PATHS[0]}" -q train "$GCNPART_DATA/$d" --device cuda --spmm "$spmm" \
        --json "$W/train-$d-$spmm.json"
    done
  done
fi
python3 bench/run/tables.py epochs "$W" ${TOLERANCE:+--tolerance "$TOLERANCE"} "${BIN_TAGS[@]}" > "$W/table.txt" 2>&1
cat "$W/table.txt" >> "$S"
bench_pack
cat "$W/table.txt"
