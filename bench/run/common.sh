# shellcheck shell=bash
# Shared by the runners in bench/run/ (sourced, runs nothing by itself). A runner calls `bench_init NAME` first:
# it moves to the repository root, makes the work folder $W (/tmp/gcnpart-bench/NAME, emptied), starts the summary
# $S and records the GPU and host in $W/gpu.txt. Everything a runner writes lands in $W; `bench_pack` copies it as
# one archive $OUT/NAME.tar.gz plus $OUT/summary.txt (OUT: the device machine's folder that comes back; default
# /tmp/out). `step` packs after every step, so a call cut short still returns what finished.
#
# Environment read here (each runner documents its own on top):
#   OUT        where the archive and summary.txt go (default /tmp/out)
#   DEADLINE   seconds after start past which steps are skipped, not started (default 540: a device call's 10 minutes
#              less the transfers)
#   GCNPART    the gcnpart binary of runners that run one build (default build/gpu/tools/gcnpart; built with the gpu
#              preset when missing, unless BUILD=0)
#   BINS       runners that compare builds or options: ';'-separated "TAG=PATH [extra options...]", e.g.
#              "head=.carry/head/gcnpart; new=.carry/new/gcnpart" or "auto=$G --cuda-graph auto; off=$G --cuda-graph off"
#   GCNPART_DATA  the shared datasets (cora, citeseer, snap/*.txt.gz; default ../shared/datasets)
#   GRAPH_DIR  where generated graphs are written and reused (default /tmp)

# bench_init NAME: the root, $W, $S, $OUT, gpu.txt; starts the clock (SECONDS).
bench_init() {
  BENCH_NAME=$1
  cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
  OUT=${OUT:-/tmp/out}
  W=/tmp/gcnpart-bench/$BENCH_NAME
  S=$W/summary.txt
  DEADLINE=${DEADLINE:-540}
  GRAPH_DIR=${GRAPH_DIR:-/tmp}
  GCNPART_DATA=${GCNPART_DATA:-../shared/datasets}
  rm -rf "$W" && mkdir -p "$W" "$OUT" "$GRAPH_DIR" || exit 1
  : > "$S"
  SECONDS=0
  {
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader 2>&1
    echo "host: $(hostname), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "tree: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$([ -n "$(git status --porcelain \
      --untracked-files=no 2>/dev/null)" ] && echo ' + local changes')"
  } > "$W/gpu.txt"
}

bench_pack() {
  tar -czf "$OUT/$BENCH_NAME.tar.gz" -C "$(dirname "$W")" "$BENCH_NAME"
  cp "$S" "$OUT/summary.txt"
}

# note TEXT: a line in the summary and on the terminal.
note() { echo "$*" | tee -a "$S"; }

# late TAG: true (after noting TAG as skipped) once past the deadline.
late() {
  [ "$SECONDS" -gt "$DEADLINE" ] || return 1
  note "skipped (deadline ${DEADLINE}s): $1"
}

# step TAG TIMEOUT CMD...: CMD with a time limit, output in $W/TAG.log, exit status in the summary; skipped past the
# deadline. Returns CMD's status.
step() {
  local tag=$1 limit=$2 rc
  shift 2
  late "$tag" && return 99
  timeout -k 10 "$limit" "$@" > "$W/$tag.log" 2>&1
  rc=$?
  note "$tag: exit $rc (${SECONDS}s)$([ $rc = 124 ] && echo ', timed out')"
  [ $rc = 0 ] || tail -n 3 "$W/$tag.log" | cut -c1-200
  bench_pack
  return $rc
}

# ensure_gcnpart: $GCNPART (default build/gpu/tools/gcnpart) exists, built with the gpu preset when it does not.
ensure_gcnpart() {
  GCNPART=${GCNPART:-build/gpu/tools/gcnpart}
  [ -x "$GCNPART" ] && return 0
  if [ "${BUILD:-1}" = 0 ] || [ "$GCNPART" != build/gpu/tools/gcnpart ]; then
    echo "no executable $GCNPART" >&2
    exit 1
  fi
  if ! { [ -f build/gpu/build.ninja ] || cmake --preset gpu > "$W/configure.log" 2>&1; } ||
    ! cmake --build build/gpu -j "$(nproc)" --target gcnpart > "$W/build.log" 2>&1; then
    grep -E "error" "$W/build.log" "$W/configure.log" 2>/dev/null | head -30
    exit 1
  fi
  note "build: ${SECONDS}s"
}

# parse_bins: BINS (or, when unset, "gcnpart=$GCNPART") into the arrays BIN_TAGS, BIN_PATHS and BIN_EXTRA (each
# entry's extra options as one string, split again where used).
parse_bins() {
  local entry words entries
  BIN_TAGS=() BIN_PATHS=() BIN_EXTRA=()
  IFS=';' read -r -a entries <<< "${BINS:-gcnpart=${GCNPART:-build/gpu/tools/gcnpart}}"
  for entry in "${entries[@]}"; do
    read -r -a words <<< "$entry"
    [ ${#words[@]} -gt 0 ] || continue
    if [[ ${words[0]} == *=* ]]; then
      BIN_TAGS+=("${words[0]%%=*}")
      BIN_PATHS+=("${words[0]#*=}")
    else
      BIN_TAGS+=("$(basename "$(dirname "${words[0]}")")")
      BIN_PATHS+=("${words[0]}")
    fi
    BIN_EXTRA+=("${words[*]:1}")
  done
  local i
  for i in "${!BIN_PATHS[@]}"; do
    [ -x "${BIN_PATHS[i]}" ] || { echo "BINS: no executable ${BIN_PATHS[i]} (${BIN_TAGS[i]})" >&2; exit 1; }
    echo "${BIN_TAGS[i]}: ${BIN_PATHS[i]} ${BIN_EXTRA[i]} ($("${BIN_PATHS[i]}" --version 2>&1 | head -1))" >> "$W/gpu.txt"
  done
}

# rmat_spec NAME: "scale edge-factor features classes" of the issues' RMAT graphs (Graph500 parameters).
rmat_spec() {
  case $1 in
    arxiv) echo "17 8 128 40" ;;       # 131,072 nodes, 1.9 M edges
    reddit) echo "18 220 602 41" ;;    # 262,144 nodes, 79 M edges
    products) echo "21 30 100 47" ;;   # 2.1 M nodes, 116 M edges
    rmat18) echo "18 16 128 40" ;;     # issue 3's RMAT 18
    rmat20) echo "20 16 128 40" ;;
    *) return 1 ;;
  esac
}

# generate_graphs GCNPART NAME...: $GRAPH_DIR/NAME.gcsr for each RMAT name that lacks one, all at once (other names
# are ignored); generation is deterministic, so a file left by an earlier call on the same machine is reused.
generate_graphs() {
  local bin=$1 name spec scale ef features classes
  shift
  for name in "$@"; do
    spec=$(rmat_spec "$name") || continue
    [ -f "$GRAPH_DIR/$name.gcsr" ] && continue
    read -r scale ef features classes <<< "$spec"
    "$bin" -q generate rmat --scale "$scale" --edge-factor "$ef" --features "$features" --classes "$classes" \
      -o "$GRAPH_DIR/$name.gcsr" > "$W/generate-$name.log" 2>&1 &
  done
  wait
  note "graphs: ${SECONDS}s"
}

# data_args NAME: the graph arguments of a gcnpart command into the array DATA: an RMAT name (generated), cora /
# citeseer, slashdot / enron (shared SNAP graphs with 128 synthetic features, 16 classes) or a path.
# shellcheck disable=SC2034  # DATA: read by the runners
data_args() {
  case $1 in
    cora | citeseer) DATA=("$GCNPART_DATA/$1") ;;
    slashdot | soc-Slashdot0902)
      DATA=("$GCNPART_DATA/snap/soc-Slashdot0902.txt.gz" --synthetic-features 128 --synthetic-classes 16) ;;
    enron | email-Enron) DATA=("$GCNPART_DATA/snap/email-Enron.txt.gz" --synthetic-features 128 --synthetic-classes 16) ;;
    *) if rmat_spec "$1" > /dev/null; then DATA=("$GRAPH_DIR/$1.gcsr"); else DATA=("$1"); fi ;;
  esac
}

# graph_tag NAME: a file-name-safe tag of a graph name or path.
graph_tag() {
  local t
  t=$(basename "$1")
  echo "${t%%.*}"
}
