# Steps shared by the device scripts that run carried binaries (gpu_carried.sh, gpu_spmm_ab.sh). Sourced after the
# script sets W (its work folder), s (its summary file) and late() (true, after noting the step as skipped, once past
# its deadline); sourcing runs nothing.

# generate_rmat GCNPART NAME...: /tmp/NAME.gcsr for each of the issues' RMAT graphs (arxiv-, products- and
# reddit-sized; other names are ignored), all at once; returns when every one is written (logs in $W).
generate_rmat() {
  local bin=$1 name spec
  shift
  for name in "$@"; do
    case $name in
      arxiv) spec="17 8 128 40" ;;
      products) spec="21 30 100 47" ;;
      reddit) spec="18 220 602 41" ;;
      *) continue ;;
    esac
    read -r scale ef features classes <<< "$spec"
    "$bin" -q generate rmat --scale "$scale" --edge-factor "$ef" --features "$features" --classes "$classes" \
      -o "/tmp/$name.gcsr" > "$W/generate-$name.log" 2>&1 &
  done
  wait
}

# run_epoch GCNPART GRAPH PRECISION LAYERS TAG: `bench epoch` of /tmp/GRAPH.gcsr (hidden 256, own SpMM, degree
# order, median of 10 after 3) into $W/TAG.json and .log, unless past the deadline.
run_epoch() {
  local bin=$1 graph=$2 precision=$3 layers=$4 tag=$5
  late "$tag" && return 0
  timeout 60 "$bin" -q bench epoch "/tmp/$graph.gcsr" --precision "$precision" --spmm own --reorder degree \
    --layers "$layers" --hidden 256 --warmup 3 --repeats 10 --json "$W/$tag.json" > "$W/$tag.log" 2>&1
  echo "$tag: exit $? (${SECONDS}s)" >> "$s"
}

# run_accuracy GCNPART DATASET PRECISION TAG: `train` of $GCNPART_DATA/DATASET with 10 seeds (the issues' accuracy
# bound) into $W/TAG.json and .log, unless past the deadline.
run_accuracy() {
  local bin=$1 dataset=$2 precision=$3 tag=$4
  late "$tag" && return 0
  timeout 90 "$bin" -q train "$GCNPART_DATA/$dataset" --device cuda --runs 10 --precision "$precision" \
    --json "$W/$tag.json" > "$W/$tag.log" 2>&1
  echo "$tag: exit $? (${SECONDS}s)" >> "$s"
}
