#!/usr/bin/env bash
# Nsight Compute's detail sections (speed of light, occupancy, launch statistics, warp states, memory workload,
# scheduler) for every SpMM kernel of one `bench spmm` run: the own kernel and, with SPMM=all, every cuSPARSE
# algorithm, ten repeats each (the first NCU_COUNT launches, default 80), L2 not flushed. Binary $G (default .carry/new/gcnpart), graph $GRAPH (a shared SNAP
# graph name, default soc-Slashdot0902, with 128 synthetic features), width $WIDTH (default 32), REPEATS (10), EXTRA
# (further `bench spmm` arguments), TAG (appended to the file names), NCU_SKIP (launches of the matching kernels
# skipped first, default 0), NCU_METRICS (further metrics, comma-separated). GRAPH may also be one of the issues' RMAT
# graphs (arxiv, products, reddit: generated first with $G into /tmp; their own features, no synthetic ones).
#   device: . .deps/env.sh && OUT=$OUT bash bench/gpu_ncu_detail.sh        (carry: .deps, .carry)
# Writes $OUT/ncu-GRAPH-WIDTH.csv (one row per kernel and metric) and its log.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
g=${G:-.carry/new/gcnpart}
graph=${GRAPH:-soc-Slashdot0902}
width=${WIDTH:-32}
tag="ncu-$graph-$width${TAG:+-$TAG}"
input=("$GCNPART_DATA/snap/$graph.txt.gz" --synthetic-features 128 --synthetic-classes 16)
case $graph in
  arxiv | products | reddit)
    # shellcheck disable=SC2034  # W and s: gpu_steps.sh's work folder and summary
    W=$OUT s=/dev/null
    late() { return 1; }
    # shellcheck source=bench/gpu_steps.sh
    . bench/gpu_steps.sh
    generate_rmat "$g" "$graph"
    input=("/tmp/$graph.gcsr")
    ;;
esac
# shellcheck disable=SC2086  # EXTRA: further `bench spmm` arguments, e.g. --spmm-long-row 128
timeout "${NCU_TIMEOUT:-150}" /usr/local/cuda/bin/ncu --csv --page details --section SpeedOfLight --section Occupancy \
  --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
  --section InstructionStats -k 'regex:spmm|csr|Csr|SpMM|cusparse' -c "${NCU_COUNT:-80}" \
  --launch-skip "${NCU_SKIP:-0}" ${NCU_METRICS:+--metrics "$NCU_METRICS"} \
  "$g" -q bench spmm "${input[@]}" \
  --spmm "${SPMM:-all}" --reorder degree --widths "$width" --warmup 0 --repeats "${REPEATS:-10}" --no-flush-l2 \
  ${EXTRA:-} > "$OUT/$tag.csv" 2> "$OUT/$tag.log"
echo "$tag: exit $?"
