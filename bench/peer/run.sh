#!/usr/bin/env bash
# Issue 6 side by side, on the GPU machine, from the repository root after `. .deps/env.sh`:
#   bench/peer/run.sh                 # all three graphs
#   GRAPHS="arxiv" bench/peer/run.sh  # a subset (reddit, products, arxiv)
# Builds gcnpart (gpu preset) if needed, generates the RMAT graphs of issue 6 into /tmp (kept between calls on
# the same machine), then per graph: `gcnpart bench spmm` (own kernel vs every cuSPARSE algorithm, widths
# 16/64/128/256), `gcnpart bench spmm --precision bf16` (bf16-storage kernel vs the fp32 peers of the same run,
# widths 64/128/256), `gcnpart bench epoch` (GCN 2 layers, hidden 256; own / cuSPARSE / autotuned SpMM) and
# bench/peer/pyg_gcn.py (csr and edge_index modes). JSON and logs go to ${OUT:-bench/out}; the ratio tables
# come last. Each step is capped at ${STEP_TIMEOUT:-300} s so that one hung step cannot eat the lease.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-bench/out}
mkdir -p "$out"
step_timeout=${STEP_TIMEOUT:-300}
graphs=${GRAPHS:-"arxiv reddit products"}
# Which steps to run per graph (a subset saves device time).
steps=${STEPS:-"spmm spmm-bf16 epoch epoch-tf32 epoch-bf16 pyg-csr pyg-edge_index"}
want() { [[ " $steps " == *" $1 "* ]]; }
g=build/gpu/tools/gcnpart
py=${PYTHON:-python3}

nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,driver_version \
  --format=csv > "$out/gpu.txt" 2>&1 && cat "$out/gpu.txt"
if [ ! -f build/gpu/build.ninja ]; then
  cmake --preset gpu > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
fi
cmake --build build/gpu --target gcnpart -j "$(nproc)" > "$out/build.log" 2>&1 ||
  { grep -E "error" "$out/build.log" | head -40; exit 1; }

# name scale edge-factor features classes (issue 6)
spec() {
  case $1 in
    reddit) echo "18 220 602 41" ;;
    products) echo "21 30 100 47" ;;
    arxiv) echo "17 8 128 40" ;;
    *) echo "unknown graph '$1' (reddit, products, arxiv)" >&2; return 1 ;;
  esac
}

run() {  # run LOG CMD...: the command's output to LOG, its last lines to the terminal
  local log=$1
  shift
  local t0=$SECONDS
  timeout "$step_timeout" "$@" > "$log" 2>&1
  local rc=$?
  tail -n 8 "$log"
  echo "-- rc $rc, $((SECONDS - t0)) s: $*"
}

for name in $graphs; do
  s=$(spec "$name") || exit 1
  read -r scale ef features classes <<< "$s"
  f=/tmp/gcnpart-$name-s$scale-e$ef-f$features-c$classes.gcsr
  if [ ! -f "$f" ]; then
    run "$out/generate-$name.log" $g -q generate rmat --scale "$scale" --edge-factor "$ef" --features "$features" \
      --classes "$classes" -o "$f" --json "$out/generate-$name.json"
  fi
  echo "== $name ($f)"
  want spmm && run "$out/spmm-$name.log" $g -q bench spmm "$f" --widths 16,64,128,256 --json "$out/spmm-$name.json"
  want spmm-bf16 && run "$out/spmm-bf16-$name.log" $g -q bench spmm "$f" --precision bf16 --widths 64,128,256 \
    --json "$out/spmm-bf16-$name.json"
  want epoch && run "$out/epoch-$name.log" $g -q bench epoch "$f" --layers 2 --hidden 256 --spmm all \
    --json "$out/epoch-$name.json"
  want epoch-tf32 && run "$out/epoch-tf32-$name.log" $g -q bench epoch "$f" --layers 2 --hidden 256 --spmm auto \
    --precision tf32 --json "$out/epoch-tf32-$name.json"
  want epoch-bf16 && run "$out/epoch-bf16-$name.log" $g -q bench epoch "$f" --layers 2 --hidden 256 --spmm own \
    --precision bf16 --json "$out/epoch-bf16-$name.json"
  want pyg-csr && run "$out/pyg-csr-$name.log" "$py" bench/peer/pyg_gcn.py "$f" --mode csr --layers 2 --hidden 256 \
    --json "$out/pyg-csr-$name.json"
  # The edge_index path materialises E x 256 messages: fewer epochs, and out of memory is an expected answer.
  want pyg-edge_index && run "$out/pyg-edge_index-$name.log" "$py" bench/peer/pyg_gcn.py "$f" --mode edge_index \
    --layers 2 --hidden 256 --warmup 2 --epochs 5 --json "$out/pyg-edge_index-$name.json"
done

# shellcheck disable=SC2086  # one argument per graph name
"$py" - "$out" $graphs <<'EOF'
import json, os, sys

out, graphs = sys.argv[1], sys.argv[2:]
order = [g for g in ("reddit", "products", "arxiv") if g in graphs]

def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def gib(b):
    return f"{b / 2**30:.2f}" if b is not None else "-"

print("\nSpMM fp32, Â with self loops (median ms; speedup = best cuSPARSE / own, > 1: ours faster)")
print(f"{'graph':9} {'width':>5} {'own ms':>9} {'best cuSPARSE':>15} {'ms':>9} {'speedup':>8} {'own %copy':>9} "
      f"{'slowest cuSPARSE':>17} {'ms':>9} {'vs own':>7}")
for g in order:
    j = load(f"spmm-{g}.json")
    if not j:
        print(f"{g:9} (no spmm result)")
        continue
    for w in j["widths"]:
        ok = {r["spmm"]: r for r in w["results"] if r["status"] == "ok"}
        own = ok.get("own")
        cus = {k: v for k, v in ok.items() if k != "own"}
        own_ms = own["time_ms"]["median"] if own else None
        best = min(cus, key=lambda k: cus[k]["time_ms"]["median"]) if cus else None
        worst = max(cus, key=lambda k: cus[k]["time_ms"]["median"]) if cus else None
        def ms(v):
            return f"{v:9.3f}" if v is not None else f"{'-':>9}"
        best_ms = cus[best]["time_ms"]["median"] if best else None
        worst_ms = cus[worst]["time_ms"]["median"] if worst else None
        sp = f"{best_ms / own_ms:7.2f}x" if own_ms and best_ms else f"{'-':>8}"
        spw = f"{worst_ms / own_ms:6.2f}x" if own_ms and worst_ms else f"{'-':>7}"
        frac = f"{100 * own['fraction_of_copy_bandwidth']:8.1f}%" if own else f"{'-':>9}"
        flag = "" if w.get("verified", True) else "  OUTPUTS DISAGREE"
        print(f"{g:9} {w['width']:5} {ms(own_ms)} {best or '-':>15} {ms(best_ms)} {sp} {frac} {worst or '-':>17} "
              f"{ms(worst_ms)} {spw}{flag}")
    print(f"{'':9} copy bandwidth {j['copy_bandwidth']['gbs']:.0f} GB/s (read + write)")

print("\nSpMM bf16 X storage, fp32 accumulation (median ms; ratio = best fp32 cuSPARSE / own-bf16, same run; "
      "issue target >= 1.7x)")
print(f"{'graph':9} {'width':>5} {'bf16 ms':>9} {'own fp32':>9} {'best cuSPARSE':>15} {'ms':>9} {'ratio':>7} "
      f"{'bf16/own':>8} {'bf16 GB/s':>9} {'%copy':>6} {'rel err':>8}")
for g in order:
    j = load(f"spmm-bf16-{g}.json")
    if not j:
        print(f"{g:9} (no bf16 spmm result)")
        continue
    for w in j["widths"]:
        ok = {r["spmm"]: r for r in w["results"] if r["status"] == "ok"}
        b, own = ok.get("own-bf16"), ok.get("own")
        cus = {k: v for k, v in ok.items() if k.startswith("cusparse")}
        best = min(cus, key=lambda k: cus[k]["time_ms"]["median"]) if cus else None
        b_ms = b["time_ms"]["median"] if b else None
        own_ms = own["time_ms"]["median"] if own else None
        best_ms = cus[best]["time_ms"]["median"] if best else None
        def ms(v):
            return f"{v:9.3f}" if v is not None else f"{'-':>9}"
        ratio = f"{best_ms / b_ms:6.2f}x" if b_ms and best_ms else f"{'-':>7}"
        vs_own = f"{own_ms / b_ms:7.2f}x" if b_ms and own_ms else f"{'-':>8}"
        gbs = f"{b['gbs']:9.1f}" if b else f"{'-':>9}"
        frac = f"{100 * b['fraction_of_copy_bandwidth']:5.1f}%" if b else f"{'-':>6}"
        err = f"{b['error']['rel_max']:8.1e}" if b and "error" in b else f"{'-':>8}"
        flag = "" if w.get("verified", True) else "  OUTPUTS DISAGREE"
        met = "" if not (b_ms and best_ms) else ("" if best_ms / b_ms >= 1.7 else "  below target")
        print(f"{g:9} {w['width']:5} {ms(b_ms)} {ms(own_ms)} {best or '-':>15} {ms(best_ms)} {ratio} {vs_own} {gbs} "
              f"{frac} {err}{flag}{met}")

print("\nTraining epoch fp32, GCN 2 layers hidden 256 (median ms; speedup = PyG csr / ours; memory = our peak / PyG peak)")
print(f"{'graph':9} {'PyG csr':>9} {'PyG e_i':>9} {'PyG GiB':>8} | {'ours':8} {'ms':>9} {'speedup':>8} {'GiB':>7} "
      f"{'mem ratio':>9}")
for g in order:
    e, pc, pe = load(f"epoch-{g}.json"), load(f"pyg-csr-{g}.json"), load(f"pyg-edge_index-{g}.json")
    def pyg_ms(p):
        if not p:
            return "-"
        if p.get("status") == "ok":
            return f"{p['epoch_ms']['median']:.3f}"
        return "OOM" if p.get("status") == "out of memory" else p.get("status", "?")
    pyg_csr_ms = pc["epoch_ms"]["median"] if pc and pc.get("status") == "ok" else None
    pyg_peak = pc.get("memory", {}).get("peak_allocated_bytes") if pc and pc.get("status") == "ok" else None
    head = f"{g:9} {pyg_ms(pc):>9} {pyg_ms(pe):>9} {gib(pyg_peak):>8}"
    runs = e["runs"] if e else []
    if not runs:
        print(head + " | (no epoch result)")
    for i, r in enumerate(runs):
        if r.get("status") != "ok":
            line = f"{r['spmm']:8} {r.get('status', '?')}"
        else:
            ms = r["epoch_ms"]["median"]
            peak = r["peak_tracked_bytes"]
            sp = f"{pyg_csr_ms / ms:7.2f}x" if pyg_csr_ms else f"{'-':>8}"
            mr = f"{peak / pyg_peak:9.2f}" if pyg_peak else f"{'-':>9}"
            line = f"{r['spmm']:8} {ms:9.3f} {sp} {gib(peak):>7} {mr}"
        print((head if i == 0 else " " * len(head)) + " | " + line)

print("\nTraining epoch by precision, GCN 2 layers hidden 256 (median ms; speedup = PyG csr fp32 / ours, same run; "
      "issue target for bf16 >= 3x)")
print(f"{'graph':9} {'PyG csr':>9} {'PyG GiB':>8} | {'precision':9} {'spmm':6} {'ms':>9} {'speedup':>8} {'GiB':>7} "
      f"{'mem ratio':>9}")
for g in order:
    pc = load(f"pyg-csr-{g}.json")
    pyg_csr_ms = pc["epoch_ms"]["median"] if pc and pc.get("status") == "ok" else None
    pyg_peak = pc.get("memory", {}).get("peak_allocated_bytes") if pc and pc.get("status") == "ok" else None
    head = f"{g:9} {pyg_csr_ms:9.3f} {gib(pyg_peak):>8}" if pyg_csr_ms else f"{g:9} {'-':>9} {'-':>8}"
    first = True
    for prec, name in (("fp32", f"epoch-{g}.json"), ("tf32", f"epoch-tf32-{g}.json"), ("bf16", f"epoch-bf16-{g}.json")):
        e = load(name)
        if not e:
            continue
        for r in e.get("runs", []):
            if prec == "fp32" and r.get("spmm") != "auto":
                continue
            if r.get("status") != "ok":
                line = f"{prec:9} {r.get('spmm', '?'):6} {r.get('status', '?')}"
            else:
                ms = r["epoch_ms"]["median"]
                peak = r["peak_tracked_bytes"]
                sp = f"{pyg_csr_ms / ms:7.2f}x" if pyg_csr_ms else f"{'-':>8}"
                mr = f"{peak / pyg_peak:9.2f}" if pyg_peak else f"{'-':>9}"
                line = f"{prec:9} {r['spmm']:6} {ms:9.3f} {sp} {gib(peak):>7} {mr}"
            print((head if first else " " * len(head)) + " | " + line)
            first = False
EOF
