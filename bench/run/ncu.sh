#!/usr/bin/env bash
# Nsight Compute suite: a profile per kernel (calls, time, DRAM bytes, achieved GB/s, % of peak DRAM and SM
# throughput, L2 hit rate) of a few GCN training epochs and of the SpMM benchmark, per graph; with DETAIL=1 also
# ncu's detail sections (speed of light, occupancy, launch statistics, warp states, memory workload, scheduler,
# instructions) of every SpMM kernel of one `bench spmm` run. On the GPU machine, from the repository root, with
# build/gpu/tools/gcnpart built:
#   bench/run/ncu.sh GRAPH [GRAPH ...]
# GRAPH: a .gcsr file, or reddit / products / arxiv, the issues' RMAT graphs (generated into ${GRAPH_DIR:-/tmp} as
# NAME.gcsr when missing: the same files as the other runners). Per graph NAME, in ${OUT_DIR:-build/ncu}:
# NAME-epoch.* and NAME-spmm.*, each .ncu-rep (open in ncu-ui), .log, .csv (ncu --page raw), .md and .json
# (bench/peer/ncu_summary.py); every table with its command in summary.md, every JSON in summary.json.
#   epoch: gcnpart bench epoch GRAPH --layers 2 --hidden 256 --spmm own --warmup 1 --repeats 2
#          (3 epochs: set-up, forward, backward, Adam, with the own SpMM)
#   spmm:  gcnpart bench spmm GRAPH --widths 256 --spmm all --warmup 0 --repeats 10 --no-flush-l2
#          (own kernel and cuSPARSE algorithms 0-3, 11 calls each; 10 is the bench's minimum; ncu flushes caches itself)
#   detail (DETAIL=1): NAME-detail.csv (ncu --csv --page details, one row per kernel and metric) of
#          gcnpart bench spmm GRAPH --spmm all --reorder degree --widths DETAIL_WIDTH (default 32) --repeats 10,
#          the first DETAIL_COUNT (default 80) SpMM launches
# ncu runs with --clock-control none (the clocks the GPU picks, as for every figure in bench/) and replays each kernel
# with its caches flushed (--cache-control all, ncu's default). A first tiny profile of the demo graph checks that ncu
# reads the counters and knows each metric (one it does not know is replaced by its other name or dropped, noted).
# Environment: NCU (ncu's path), GCNPART (default build/gpu/tools/gcnpart), NCU_METRICS (comma-separated),
# NCU_EPOCH_ARGS / NCU_SPMM_ARGS (replace the bench arguments after GRAPH), NCU_ARGS (more ncu options, e.g.
# "-k regex:spmm" or "--cache-control none"), NCU_LAUNCH_COUNT (kernels profiled per run at most, default 400),
# NCU_TIMEOUT (seconds per profiled run, default 300), NCU_BUDGET (seconds for everything, default 420; runs that
# would start later are skipped and fail the script), DETAIL / DETAIL_WIDTH / DETAIL_COUNT (above). When OUT is set
# (the device machine's folder), everything but reports over 20 MB is packed into $OUT/ncu.tar.gz beside summary.md.
# Device call: `. .deps/env.sh && OUT=$OUT bash bench/run/ncu.sh reddit` (carry .deps); bf16: NCU_EPOCH_ARGS="--layers
# 2 --hidden 256 --spmm own --precision bf16 --warmup 1 --repeats 2" NCU_SPMM_ARGS="--widths 256 --precision bf16
# --spmm own --warmup 0 --repeats 10 --no-flush-l2".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
case "${1:-}" in
  -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
  "") sed -n '2,30p' "$0" >&2; exit 2 ;;
esac

out=${OUT_DIR:-build/ncu}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
summary=$out/summary.md
rm -f "$summary" "$out/summary.json"
gcnpart=${GCNPART:-build/gpu/tools/gcnpart}
if [ ! -x "$gcnpart" ]; then
  echo "ncu.sh: $gcnpart not found: cmake --preset gpu && cmake --build --preset gpu" >&2
  exit 1
fi
ncu=${NCU:-}
if [ -z "$ncu" ]; then
  candidates=("$(command -v ncu 2>/dev/null)" /usr/local/cuda/bin/ncu)
  installed=(/opt/nvidia/nsight-compute/*/ncu)
  for ((i = ${#installed[@]} - 1; i >= 0; i--)); do candidates+=("${installed[i]}"); done  # the newest first
  for c in "${candidates[@]}"; do
    if [ -n "$c" ] && [ -x "$c" ]; then ncu=$c; break; fi
  done
fi
if [ -z "$ncu" ] || [ ! -x "$ncu" ]; then echo "ncu.sh: ncu not found (Nsight Compute; set NCU)" >&2; exit 1; fi
default_metrics=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
default_metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
default_metrics+=,lts__t_sector_hit_rate.pct
metrics=${NCU_METRICS:-$default_metrics}
# shellcheck disable=SC2206  # lists of arguments, split on spaces on purpose
epoch_args=(${NCU_EPOCH_ARGS:---layers 2 --hidden 256 --spmm own --warmup 1 --repeats 2})
# shellcheck disable=SC2206
spmm_args=(${NCU_SPMM_ARGS:---widths 256 --spmm all --warmup 0 --repeats 10 --no-flush-l2})
# shellcheck disable=SC2206
ncu_extra=(${NCU_ARGS:-})
launch_count=${NCU_LAUNCH_COUNT:-400}
run_timeout=${NCU_TIMEOUT:-300}
deadline=$((SECONDS + ${NCU_BUDGET:-420}))
failures=0

say() { echo "$*" | tee -a "$summary"; }
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit + local changes"
say "# Nsight Compute profile ($(date -u +%Y-%m-%dT%H:%MZ))"
say ""
gpu=$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null)
say "- GPU: ${gpu%%$'\n'*} (name, driver, max SM and memory clocks)"
say "- ncu: $ncu ($("$ncu" --version 2>/dev/null | tail -n 1)), --clock-control none, kernel replay," \
    "caches flushed before each launch"
say "- gcnpart: $gcnpart, commit $commit"

# preflight METRICS: profile the first kernel of a tiny run; 0 when ncu profiled it without an error (the program's
# own exit status does not matter here).
preflight() {
  "$ncu" --clock-control none --metrics "$1" --launch-count 1 "$gcnpart" -q bench spmm demo --widths 16 --spmm own \
    --warmup 0 --repeats 10 --no-flush-l2 > "$out/preflight.log" 2>&1
  ! grep -q "^==ERROR==" "$out/preflight.log" && grep -q "^==PROF== Profiling" "$out/preflight.log"
}
other_name() {  # the name a metric has in other Nsight Compute releases
  case "$1" in
    dram__throughput.*) echo "gpu__dram_throughput.${1#dram__throughput.}" ;;
    gpu__dram_throughput.*) echo "dram__throughput.${1#gpu__dram_throughput.}" ;;
  esac
}
if ! preflight "$metrics"; then
  if ! grep -qi "metric" "$out/preflight.log"; then
    echo "ncu.sh: ncu could not profile the demo graph (no counter access?); $out/preflight.log:" >&2
    tail -n 12 "$out/preflight.log" >&2
    exit 1
  fi
  kept=()
  IFS=, read -r -a asked <<< "$metrics"
  for m in "${asked[@]}"; do
    alt=$(other_name "$m")
    if preflight "$m"; then kept+=("$m")
    elif [ -n "$alt" ] && preflight "$alt"; then kept+=("$alt"); say "- metric $m unknown to this ncu: $alt instead"
    else say "- metric $m unknown to this ncu: left out"
    fi
  done
  metrics=$(IFS=,; echo "${kept[*]}")
  [ -n "$metrics" ] || { echo "ncu.sh: ncu knows none of the metrics; $out/preflight.log" >&2; exit 1; }
fi
say "- metrics: $metrics"
say ""

# graph_file NAME|PATH: the .gcsr to profile (issue 6's RMAT graphs are generated when missing).
graph_file() {
  local s
  case "$1" in
    reddit) s="18 220 602 41" ;;
    products) s="21 30 100 47" ;;
    arxiv) s="17 8 128 40" ;;
    *) [ -f "$1" ] && echo "$1" && return 0
       echo "ncu.sh: no such graph '$1' (a .gcsr file, or reddit, products, arxiv)" >&2; return 1 ;;
  esac
  local scale ef features classes
  read -r scale ef features classes <<< "$s"
  local f=${GRAPH_DIR:-/tmp}/$1.gcsr
  if [ ! -f "$f" ]; then
    echo "generating $1 (RMAT scale $scale, edge factor $ef) into $f" >&2
    "$gcnpart" -q generate rmat --scale "$scale" --edge-factor "$ef" --features "$features" --classes "$classes" \
      -o "$f" > "$out/generate-$1.log" 2>&1 || { tail -n 5 "$out/generate-$1.log" >&2; return 1; }
  fi
  echo "$f"
}

# profile TAG TITLE CMD...: CMD under ncu, then its table.
profile() {
  local tag=$1 title=$2
  shift 2
  local left=$((deadline - SECONDS)) rep=$out/$tag t0=$SECONDS
  if [ "$left" -lt 30 ]; then
    say "SKIP $tag: the budget is spent (raise NCU_BUDGET)"
    failures=$((failures + 1))
    return
  fi
  local limit=$run_timeout
  [ "$left" -lt "$limit" ] && limit=$left
  rm -f "$rep.ncu-rep" "$rep.csv" "$rep.md" "$rep.json"
  echo "== $tag: ncu over $*" >&2
  timeout -k 15 "$limit" "$ncu" --clock-control none --metrics "$metrics" --launch-count "$launch_count" \
    "${ncu_extra[@]}" -f -o "$rep" "$@" > "$rep.log" 2>&1
  local rc=$? profiled
  profiled=$(grep -c "^==PROF== Profiling" "$rep.log")
  if [ ! -s "$rep.ncu-rep" ]; then
    say "FAIL $tag: no report (ncu exit $rc after $((SECONDS - t0)) s, limit $limit s); the end of $rep.log:"
    tail -n 8 "$rep.log" | tee -a "$summary"
    failures=$((failures + 1))
    return
  fi
  if ! "$ncu" --import "$rep.ncu-rep" --csv --page raw --print-units base --print-kernel-base demangled \
       > "$rep.csv" 2> "$rep.import.log"; then
    "$ncu" --import "$rep.ncu-rep" --csv --page raw > "$rep.csv" 2>> "$rep.import.log"
  fi
  if ! python3 bench/peer/ncu_summary.py "$rep.csv" --title "$title" --json "$rep.json" --markdown "$rep.md" \
       > /dev/null 2>> "$rep.import.log"; then
    say "FAIL $tag: no table from $rep.csv:"
    tail -n 5 "$rep.import.log" | tee -a "$summary"
    failures=$((failures + 1))
    return
  fi
  cat "$rep.md"
  echo
  {
    cat "$rep.md"
    echo
    echo "ncu exit $rc, $((SECONDS - t0)) s, $profiled launches profiled." \
      "Command: \`ncu --clock-control none --metrics ... $*\`"
    [ "$profiled" -lt "$launch_count" ] ||
      echo "Only the first $launch_count launches were profiled (NCU_LAUNCH_COUNT)."
    echo
  } >> "$summary"
  if [ "$rc" -ne 0 ]; then
    say "FAIL $tag: ncu or the program exited $rc (the table covers what was profiled; $rep.log)"
    grep -E "^==ERROR==|error:" "$rep.log" | tail -n 3 | tee -a "$summary"
    failures=$((failures + 1))
  fi
}

# detail NAME GRAPH: ncu's detail sections of every SpMM kernel of one `bench spmm` run, as CSV.
detail() {
  local rep=$out/$1-detail left=$((deadline - SECONDS))
  if [ "$left" -lt 30 ]; then
    say "SKIP $1-detail: the budget is spent (raise NCU_BUDGET)"
    failures=$((failures + 1))
    return
  fi
  [ "$left" -lt "$run_timeout" ] || left=$run_timeout
  timeout -k 15 "$left" "$ncu" --csv --page details --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats --section InstructionStats \
    -k 'regex:spmm|csr|Csr|SpMM|cusparse' -c "${DETAIL_COUNT:-80}" "${ncu_extra[@]}" \
    "$gcnpart" -q bench spmm "$2" --spmm all --reorder degree --widths "${DETAIL_WIDTH:-32}" --warmup 0 \
    --repeats 10 --no-flush-l2 > "$rep.csv" 2> "$rep.log"
  local rc=$?
  say "$1-detail: ncu exit $rc, $(grep -c '' "$rep.csv") CSV lines in $rep.csv"
  [ "$rc" -eq 0 ] || failures=$((failures + 1))
}

for arg in "$@"; do
  graph=$(graph_file "$arg") || { failures=$((failures + 1)); continue; }
  name=$(basename "$arg" .gcsr)
  say "## $name ($graph)"
  say ""
  profile "$name-epoch" "$name: bench epoch ${epoch_args[*]}" "$gcnpart" -q bench epoch "$graph" "${epoch_args[@]}"
  profile "$name-spmm" "$name: bench spmm ${spmm_args[*]}" "$gcnpart" -q bench spmm "$graph" "${spmm_args[@]}"
  [ "${DETAIL:-0}" = 1 ] && detail "$name" "$graph"
done

python3 - "$out" <<'EOF'
import glob, json, os, sys
out = sys.argv[1]
runs = {}
for path in sorted(glob.glob(os.path.join(out, "*-epoch.json")) + glob.glob(os.path.join(out, "*-spmm.json"))):
    with open(path) as f:
        runs[os.path.basename(path)[:-5]] = json.load(f)
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(runs, f, indent=1)
EOF
say "ncu.sh: $failures failure(s); tables in $summary, JSON in $out/summary.json"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  find "$out" -name "*.ncu-rep" -size +20M -printf "left out of ncu.tar.gz: %p (%s bytes)\n" | tee -a "$summary"
  (cd "$(dirname "$out")" && find "$(basename "$out")" -type f ! \( -name "*.ncu-rep" -size +20M \) -print0 |
    tar -czf "$OUT/ncu.tar.gz" --null -T -)
  cp "$summary" "$OUT/summary.md"
fi
[ "$failures" -eq 0 ]
