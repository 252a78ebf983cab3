#!/usr/bin/env bash
# SpMM suite: the own SpMM against every cuSPARSE algorithm, graphs x widths, `gcnpart bench spmm` (Â X with self
# loops, L2 flushed before each call, median of REPEATS after WARMUP). The first binary of BINS runs `--spmm all`
# (own fp32, own bf16 X with --precision bf16, and every cusparseSpMM CSR algorithm: the same-run peer); the others
# run the own kernel only, so one call compares builds (head / new) or options (a long-row threshold, a lane layout)
# against the same cuSPARSE times. The table: per graph and width, the best cuSPARSE algorithm and each binary's own
# fp32 time, its ratio best cuSPARSE / own (> 1: own faster) and its bf16-X time.
#
#   bench/run/spmm.sh                                                     # build/gpu/tools/gcnpart, every graph
#   GRAPHS="products reddit" WIDTHS=64,256 bench/run/spmm.sh
#   BINS="new=.carry/new/gcnpart; head=.carry/head/gcnpart" bench/run/spmm.sh          # A/B of two builds
#   BINS="g=$G; lr64=$G --spmm-long-row 64; lr256=$G --spmm-long-row 256" GRAPHS=slashdot bench/run/spmm.sh  # a sweep
# On the device machine: `. .deps/env.sh && OUT=$OUT bash bench/run/spmm.sh` (carry .deps, and .carry for BINS).
#
# Parameters (environment):
#   GRAPHS     names: arxiv, products, reddit (RMAT, generated), slashdot, enron (shared SNAP graphs, 128 synthetic
#              features), or .gcsr paths (default "slashdot enron arxiv products reddit")
#   WIDTHS     dense widths, comma-separated (default 16,24,32,41,47,64,100,128,256)
#   PRECISION  bf16 (default: own fp32, own bf16 X and cuSPARSE fp32 in one run) or fp32
#   ORDER      --reorder of every run (default degree, the engine's default; none: the input order)
#   WARMUP, REPEATS  (default 3, 10)
#   PEER=1     also PyG's SpMM (torch.sparse.mm on CSR, bench/peer/pyg_spmm.py) per width on the RMAT graphs
#   BINS, GCNPART, OUT, DEADLINE, GCNPART_DATA, GRAPH_DIR: see bench/run/common.sh
# Writes $OUT/spmm.tar.gz (spmm-GRAPH-TAG.json and .log per graph and binary, pyg-spmm-GRAPH.json, gpu.txt,
# table.txt) and $OUT/summary.txt (the steps and the table).
set -uo pipefail
# shellcheck source=bench/run/common.sh
. "$(dirname "$0")/common.sh"
bench_init spmm
[ -n "${BINS:-}" ] || ensure_gcnpart
parse_bins
graphs=${GRAPHS:-"slashdot enron arxiv products reddit"}
widths=${WIDTHS:-16,24,32,41,47,64,100,128,256}
# shellcheck disable=SC2086  # $graphs: a list of names
generate_graphs "${BIN_PATHS[0]}" $graphs
for name in $graphs; do
  data_args "$name"
  g=$(graph_tag "$name")
  for i in "${!BIN_TAGS[@]}"; do
    which=own
    [ "$i" = 0 ] && which=all
    # shellcheck disable=SC2086  # BIN_EXTRA: further options, split on spaces on purpose
    step "spmm-$g-${BIN_TAGS[i]}" 200 "${BIN_PATHS[i]}" -q bench spmm "${DATA[@]}" --precision "${PRECISION:-bf16}" \
      --spmm "$which" --reorder "${ORDER:-degree}" --widths "$widths" --warmup "${WARMUP:-3}" \
      --repeats "${REPEATS:-10}" ${BIN_EXTRA[i]} --json "$W/spmm-$g-${BIN_TAGS[i]}.json"
  done
  if [ "${PEER:-0}" = 1 ] && rmat_spec "$name" > /dev/null; then
    step "pyg-spmm-$g" 200 python3 bench/peer/pyg_spmm.py "${DATA[0]}" --widths "$widths" \
      --warmup "${WARMUP:-3}" --repeats "${REPEATS:-10}" --json "$W/pyg-spmm-$g.json"
  fi
done
python3 bench/run/tables.py spmm "$W" "${BIN_TAGS[@]}" > "$W/table.txt" 2>&1
cat "$W/table.txt" >> "$S"
bench_pack
cat "$W/table.txt"
