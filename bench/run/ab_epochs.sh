#!/usr/bin/env bash
# A/B of two builds' epoch times, back to back in one call: "behaviour unchanged" checks such as issue 34's (epoch
# times of the products- and reddit-sized graphs within 2 % of before). BASE_BIN and NEW_BIN run `gcnpart bench
# epoch` alternately on the same GPU (round 1: base, new; round 2: new, base; ...) for each graph and precision; the
# table gives each build's median over the rounds of its per-run medians, new / base, and the verdict against
# TOLERANCE. It is bench/run/epochs.sh with BINS="base=BASE_BIN; new=NEW_BIN", more rounds and a tolerance.
#
#   bench/run/ab_epochs.sh BASE_BIN NEW_BIN
#   ROUNDS=6 GRAPHS="products reddit arxiv" bench/run/ab_epochs.sh .carry/head/gcnpart .carry/new/gcnpart
# Two builds for the device machine: build each tree on the CPU machine (`git worktree add /tmp/base <commit>`; ci
# preset, sm_90, where nvcc exists), strip the binaries into an ignored folder (`strip -o .carry/base/gcnpart
# /tmp/base/build/ci/tools/gcnpart`, likewise .carry/new), then
#   . .deps/env.sh && OUT=$OUT bash bench/run/ab_epochs.sh .carry/base/gcnpart .carry/new/gcnpart   (carry .deps, .carry)
#
# Parameters (environment; the rest as in bench/run/epochs.sh):
#   GRAPHS      (default "products reddit")     PRECISIONS (default "fp32 bf16")     LAYERS (default 2)
#   ROUNDS      runs of each build per cell (default 4)
#   TOLERANCE   largest |new / base - 1| reported as within (default 0.02)
#   WARMUP, REPEATS, HIDDEN, SPMM, ORDER, OUT, DEADLINE: as in bench/run/epochs.sh
# Writes $OUT/ab_epochs.tar.gz (every run's JSON and log, gpu.txt with both binaries' versions, table.txt) and
# $OUT/summary.txt; exit status 0 whatever the verdict (read the table).
set -uo pipefail
case "${1:-}" in
  -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
esac
if [ $# -ne 2 ]; then
  sed -n '2,21p' "$0" >&2
  exit 2
fi
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }  # epochs.sh runs from the repository root
BINS="base=$(abs "$1"); new=$(abs "$2")" ROUNDS=${ROUNDS:-4} TOLERANCE=${TOLERANCE:-0.02} GRAPHS=${GRAPHS:-"products reddit"} \
  BENCH_NAME_OVERRIDE=ab_epochs exec bash "$(dirname "$0")/epochs.sh"
