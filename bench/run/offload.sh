#!/usr/bin/env bash
# Offload suite (issue 35): a model too large for a 24 GB card trains on one GPU under --memory-limit (a 24 GiB card
# less 600 MiB of context) by streaming its layers through host memory, against the uncapped resident run of the
# same model on the same GPU (losses, accuracy, epoch time), with the machine's copy bandwidth measured in the same
# call. Graphs are stochastic block models generated here (deterministic for the seed).
#
#   On the device machine: `. .deps/env.sh && OUT=$OUT GCNPART=.carry/gcnpart bash bench/run/offload.sh`
#
# Parameters (environment):
#   CASES     ';'-separated "TAG NODES AVG_DEGREE FEATURES CLASSES LAYERS HIDDEN PRECISION [EPOCHS]"
#             (default: products-sized 3 x 1024 fp32)
#   EPOCHS    where a case does not say (default 20)      CAP  --memory-limit of the capped runs (default 24GiB less 600MiB = 25141559296)
#   RESIDENT=0  skip the uncapped resident runs
#   GCNPART, OUT, DEADLINE, GRAPH_DIR: see bench/run/common.sh
# Writes $OUT/offload.tar.gz (copy.json, generate-*, resident-*.json, offload-*.json and logs, table.txt) and
# $OUT/summary.txt.
set -uo pipefail
# shellcheck source=bench/run/common.sh
. "$(dirname "$0")/common.sh"
bench_init offload
ensure_gcnpart
G=$GCNPART
epochs=${EPOCHS:-20}
cap=${CAP:-25141559296}
cases=${CASES:-"products 2449029 50.6 100 47 3 1024 fp32"}
step copy 120 "$G" -q bench copy --json "$W/copy.json"
# Exactness on the GPU, small: Cora resident against every saved matrix on the host in parts of 300 rows.
for spec in "2 16" "3 64"; do
  read -r layers hidden <<< "$spec"
  for mode in "off" "host --offload-part-rows 300"; do
    # shellcheck disable=SC2086  # $mode: an option and its value
    step "cora-l$layers-${mode%% *}" 60 "$G" train "$GCNPART_DATA/cora" --device cuda --epochs 20 --layers "$layers" \
      --hidden "$hidden" --offload $mode --json "$W/cora-l$layers-${mode%% *}.json"
  done
done
IFS=';' read -ra list <<< "$cases"
for c in "${list[@]}"; do
  read -r tag nodes degree features classes layers hidden precision case_epochs <<< "$c"
  graph="$GRAPH_DIR/offload-$tag.gcsr"
  [ -f "$graph" ] || step "generate-$tag" 300 "$G" -q generate sbm --nodes "$nodes" --avg-degree "$degree" \
    --features "$features" --classes "$classes" --train-per-class 2000 --valid 20000 --test 50000 -o "$graph"
  common=(train "$graph" --epochs "${case_epochs:-$epochs}" --layers "$layers" --hidden "$hidden" --precision "$precision"
          --device cuda --reorder none)
  if [ "${RESIDENT:-1}" = 1 ]; then
    step "resident-$tag" 300 "$G" "${common[@]}" --offload off --json "$W/resident-$tag.json"
  fi
  # The process's peak resident host memory (kB) where GNU time exists: what `fit` predicts as host RAM.
  timed=()
  [ -x /usr/bin/time ] && timed=(/usr/bin/time -f "maxrss_kb %M" -o "$W/offload-$tag.rss")
  step "offload-$tag" 500 "${timed[@]}" "$G" "${common[@]}" --offload auto --memory-limit "$cap" \
    --json "$W/offload-$tag.json"
done
python3 - "$W" > "$W/table.txt" <<'EOF'
import glob, json, os, sys
w = sys.argv[1]
for layers in (2, 3):
    try:
        a = json.load(open(os.path.join(w, f"cora-l{layers}-off.json")))
        b = json.load(open(os.path.join(w, f"cora-l{layers}-host.json")))
        worst = max(abs(x - y) / abs(y) for x, y in zip(b["train_loss"], a["train_loss"]))
        print(f"cora {layers} layers: streamed (all on the host, {b['offload']['parts']} parts) vs resident: worst "
              f"relative training-loss difference over 20 epochs {worst:.2e}; test acc "
              f"{a['summary']['accuracy']['test']['mean']:.4f} / {b['summary']['accuracy']['test']['mean']:.4f}")
    except (OSError, KeyError, ValueError) as e:
        print(f"cora {layers} layers: missing ({e})")
for f in sorted(glob.glob(os.path.join(w, "offload-*.json"))):
    tag = os.path.basename(f)[len("offload-"):-5]
    o = json.load(open(f))
    r = json.load(open(os.path.join(w, f"resident-{tag}.json"))) if os.path.exists(os.path.join(w, f"resident-{tag}.json")) else None
    off = o["offload"]
    med = o["summary"]["epoch_seconds"]["median"] * 1e3
    line = (f"{tag}: streamed={off['streamed']} parts={off['parts']}x{off['part_rows']} host={off['host_bytes']/2**30:.2f} GiB "
            f"peak={o['summary']['memory']['peak_bytes']/2**30:.2f} GiB h2d={off['step_h2d_bytes']/1e9:.2f} GB "
            f"d2h={off['step_d2h_bytes']/1e9:.2f} GB bw={off['h2d_GBps']:.1f}/{off['d2h_GBps']:.1f} GB/s "
            f"kernels={off['compute_ms']:.1f} ms bound={off['lower_bound_ms']:.1f} ms epoch={med:.1f} ms "
            f"({med / off['lower_bound_ms'] if off['lower_bound_ms'] else 0:.3f} x bound) on_host={off['on_host']}")
    if r:
        rl, ol = r["train_loss"], o["train_loss"]
        worst = max(abs(a - b) / abs(b) for a, b in zip(ol, rl))
        rmed = r["summary"]["epoch_seconds"]["median"] * 1e3
        line += (f"\n  resident: epoch={rmed:.1f} ms peak={r['summary']['memory']['peak_bytes']/2**30:.2f} GiB; "
                 f"worst relative loss difference over {len(rl)} epochs {worst:.2e}; test acc "
                 f"{r['summary']['accuracy']['test']['mean']:.4f} vs {o['summary']['accuracy']['test']['mean']:.4f}")
    print(line)
EOF
cat "$W/table.txt" | tee -a "$S"
bench_pack
