#!/usr/bin/env bash
# On nvidia-h200-x2 (issue 5): build with MPI where the image allows, then
#   1. plain NCCL collectives on 2 GPUs (bench nccl; threads and mpirun);
#   2. exactness: halo / gather on 2 GPUs against single-GPU losses (relative 1e-4) on Cora and RMAT scale 20,
#      in threads mode and under `mpirun -np 2`;
#   3. epoch time 1 vs 2 GPUs for every strategy on RMAT scale 21 (ef 30, 100 features, 47 classes, hidden 256,
#      2 layers, 10 epochs): communication / compute split, memory check, link bandwidth against a plain collective;
#      threads mode, then mpirun mode while time is left;
#   4. a summary table.
# Logs and JSON under $OUT_DIR (default /tmp/o); when $OUT is set (the device tool's folder, which returns at most
# 8 files) and differs, they are tarred into $OUT/gpu_x2.tgz beside a copy of summary.txt. Device command, from the
# repository root, carrying .deps:
#   bash bench/gpu_x2.sh
# A step that fails or times out is reported and the script goes on; steps that would not fit the time budget
# (BUDGET_S, default 465 s from the start) are skipped and named.
set -uo pipefail
cd "$(dirname "$0")/.."
o=${OUT_DIR:-/tmp/o}
mkdir -p "$o"
budget=${BUDGET_S:-465}
SECONDS=0
# Debian packages the image lacks (../shared/tools/device-deps, run here): METIS, CLI11, json, doctest, zlib headers,
# and libopenmpi-dev's headers; NCCL_NVLS_ENABLE=0 (NVLink multicast stays off on these hosts).
if [ -f .deps/env.sh ] && [[ ":${CMAKE_PREFIX_PATH:-}:" != *gcnpart-deps* ]]; then . .deps/env.sh; fi
# env.sh unpacks only once per machine (a stamp file): a warm machine unpacked by an older .deps lacks the MPI headers.
for f in .deps/debs/libopenmpi-dev_*.deb; do
  [ -f "$f" ] && [ ! -f /opt/gcnpart-deps/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ] && dpkg -x "$f" /opt/gcnpart-deps
done
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
# Open MPI on one host: shared memory only, no CUDA-aware transports (MPI only bootstraps NCCL and gathers the
# report), no core binding (each rank runs OpenMP threads).
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
mpirun_cmd=(mpirun --allow-run-as-root -np 2 --bind-to none -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH)

left() { echo $((budget - SECONDS)); }
# step NAME NEED_S LIMIT_S CMD...: runs CMD with a timeout (at most what is left) if NEED_S seconds are left.
step() {
  local name=$1 need=$2 limit=$3; shift 3
  local rest; rest=$(left)
  if [ "$rest" -lt "$need" ]; then echo "$name: skipped (${rest}s left, needs ~${need}s)" | tee -a "$o/steps.txt"; return 99; fi
  [ "$limit" -gt $((rest - 5)) ] && limit=$((rest - 5))
  local t0=$SECONDS
  timeout -k 10 "$limit" "$@" > "$o/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $((SECONDS - t0))s$([ $rc = 124 ] && echo ' (timed out)')" | tee -a "$o/steps.txt"
  [ $rc = 0 ] || tail -5 "$o/$name.log" | cut -c1-240
  return $rc
}

echo "== machine and MPI runtime" | tee "$o/env.txt"
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  nvidia-smi topo -m
  echo "mpirun: $(command -v mpirun || echo none)"; mpirun --version 2>&1 | head -2
  command -v ompi_info > /dev/null && ompi_info --parsable --path libdir 2>/dev/null
  python3 -c "from mpi4py import MPI; print('mpi4py:', MPI.Get_library_version().splitlines()[0])" 2>&1 | tail -1
  ldconfig -p 2>/dev/null | grep -E "libmpi\.so" | head -3
  cmake --version | head -1
} >> "$o/env.txt" 2>&1
cat "$o/env.txt"

echo "== build (gpu preset, gcnpart only)"
cmake --preset gpu > "$o/configure.log" 2>&1 || { tail -20 "$o/configure.log"; exit 1; }
grep -E "MPI" "$o/configure.log"
t0=$SECONDS
cmake --build --preset gpu -j 32 --target gcnpart > "$o/build.log" 2>&1 || { grep -E "error" "$o/build.log" | head -30; exit 1; }
echo "build: $((SECONDS - t0))s"
g=build/gpu/tools/gcnpart
mpi=0
if ldd $g | grep -q libmpi; then
  mpi=1
  echo "gcnpart links $(ldd $g | grep -E 'libmpi\.so' | awk '{print $1, "=>", $3}')"
else
  echo "gcnpart built without MPI: the mpirun steps are skipped (see $o/configure.log)"
fi
echo "gcnpart links $(ldd $g | grep -E 'libnccl' | awk '{print $1, "=>", $3}')"
if [ "${GPU_TESTS:-0}" = 1 ]; then  # the gpu test suite, on request (adds the test binaries to the build)
  step build-tests 150 240 cmake --build --preset gpu -j 32
  step ctest-gpu 100 180 ctest --preset gpu --output-on-failure
fi
d=${GCNPART_DATA:-../shared/datasets}

echo "== plain NCCL collectives on 2 GPUs"
step nccl-threads 20 60 $g -q bench nccl --gpus 2 --bytes 1MiB,16MiB,64MiB,256MiB --json "$o/nccl-threads.json" \
  && tail -13 "$o/nccl-threads.log"
[ $mpi = 1 ] && step nccl-mpi 25 60 "${mpirun_cmd[@]}" $g -q bench nccl --bytes 1MiB,64MiB --json "$o/nccl-mpi.json"

echo "== exactness on 2 GPUs: Cora and RMAT-20 (20 epochs)"
step gen-r20 10 60 $g -q generate rmat --scale 20 --edge-factor 16 --features 128 --classes 40 -o /tmp/r20.gcsr
for ds in "$d/cora" /tmp/r20.gcsr; do
  n=$(basename "$ds" .gcsr)
  step single-$n 15 90 $g -q train "$ds" --device cuda --epochs 20 --json "$o/single-$n.json"
  for s in halo gather; do
    [ $mpi = 1 ] && step $s-$n-mpi 30 120 "${mpirun_cmd[@]}" $g -q --threads 16 train "$ds" --device cuda \
      --strategy $s --epochs 20 --json "$o/$s-$n-mpi.json"
    if [ $n = cora ]; then
      step $s-$n-threads 15 90 $g -q train "$ds" --device cuda --gpus 2 --strategy $s --epochs 20 \
        --json "$o/$s-$n-threads.json"
    fi
  done
done

echo "== RMAT-21: epoch time 1 vs 2 GPUs (threads)"
step gen-r21 15 90 $g -q generate rmat --scale 21 --edge-factor 30 --features 100 --classes 47 -o /tmp/r21.gcsr
r21=(--device cuda --layers 2 --hidden 256 --epochs 10)
step r21-single 20 120 $g -q train /tmp/r21.gcsr "${r21[@]}" --json "$o/r21-single.json"
for s in drop halo gather pipeline; do
  step r21-$s-threads 40 150 $g -q train /tmp/r21.gcsr "${r21[@]}" --gpus 2 --strategy $s \
    --json "$o/r21-$s-threads.json" && grep -E "epoch time|^device|^memory check|^link" "$o/r21-$s-threads.log"
done
echo "== RMAT-21: gather without the chunked overlap; bf16 on 1 and 2 GPUs (threads)"
step r21-gather-nooverlap-threads 40 150 $g -q train /tmp/r21.gcsr "${r21[@]}" --gpus 2 \
  --strategy gather --gather-chunks 1 --json "$o/r21-gather-nooverlap-threads.json"
step r21-single-bf16 20 120 $g -q train /tmp/r21.gcsr "${r21[@]}" --precision bf16 --json "$o/r21-single-bf16.json"
for s in gather halo; do
  step r21-$s-bf16-threads 40 150 $g -q train /tmp/r21.gcsr "${r21[@]}" --gpus 2 --strategy $s --precision bf16 \
    --json "$o/r21-$s-bf16-threads.json"
done
if [ $mpi = 1 ]; then
  echo "== RMAT-21 under mpirun, while time is left"
  for s in gather halo drop pipeline; do
    step r21-$s-mpi 50 150 "${mpirun_cmd[@]}" $g -q --threads 16 train /tmp/r21.gcsr "${r21[@]}" --strategy $s \
      --json "$o/r21-$s-mpi.json"
  done
fi
echo "== RMAT-20 exactness in threads mode, while time is left"
for s in halo gather; do
  step $s-r20-threads 40 120 $g -q train /tmp/r20.gcsr --device cuda --gpus 2 --strategy $s --epochs 20 \
    --json "$o/$s-r20-threads.json"
done

echo "== summary ($SECONDS s)"
python3 - "$o" <<'PY' | tee "$o/summary.txt"
import glob, json, os, statistics, sys
o = sys.argv[1]
def load(name):
    p = os.path.join(o, name + ".json")
    try:
        return json.load(open(p))
    except Exception:
        return None
def median_after_first(v):
    v = v[1:] if len(v) > 1 else v
    return 1e3 * statistics.median(v) if v else float("nan")

print("exactness (2 GPUs vs 1 GPU, 20 epochs; largest relative train-loss difference, limit 1e-4)")
ok_all = True
for ds in ("cora", "r20"):
    single = load(f"single-{ds}")
    for s in ("halo", "gather"):
        for launch in ("threads", "mpi"):
            dist = load(f"{s}-{ds}-{launch}")
            if single is None or dist is None:
                print(f"  {ds:5} {s:7} {launch:8} not run")
                continue
            a = single["runs"][0]["train_loss"]
            b = dist["train_loss"]
            worst = max(abs(x - y) / abs(x) for x, y in zip(a, b)) if len(a) == len(b) else float("inf")
            ok = worst <= 1e-4
            ok_all &= ok
            print(f"  {ds:5} {s:7} {launch:8} {worst:.2e} {'ok' if ok else 'FAIL'}")
print("  all within 1e-4" if ok_all else "  SOME RUN DIFFERS")

print("\nRMAT-21, hidden 256, 2 layers (epoch: median of epochs 2-10, slowest GPU; comm / compute: mean per GPU,")
print("largest over GPUs; mem: driver vs accounted, worst GPU; link: training / plain bus bandwidth)")
print(f"  {'run':18} {'epoch ms':>9} {'x single':>8} {'comm ms':>8} {'compute':>8} {'sent/ep':>10} {'mem err':>8}"
      f" {'train GB/s':>10} {'plain GB/s':>10} {'ratio':>6}")
single = load("r21-single")
t1 = median_after_first(single["runs"][0]["epoch_seconds"]) if single else float("nan")
if single:
    mc = single["summary"].get("memory_check", {})
    err = mc.get("rel_error")
    print(f"  {'single':18} {t1:9.2f} {1.0:8.2f} {0.0:8.2f} {t1:8.2f} {'-':>10} "
          f"{(f'{100*err:+.1f}%' if err is not None else '-'):>8} {'-':>10} {'-':>10} {'-':>6}")
single_bf16 = load("r21-single-bf16")
if single_bf16:
    tb = median_after_first(single_bf16["runs"][0]["epoch_seconds"])
    print(f"  {'single bf16':18} {tb:9.2f} {t1 / tb if tb else 0:8.2f}")
for launch in ("threads", "mpi", "nooverlap-threads", "bf16-threads"):
    for s in ("drop", "halo", "gather", "pipeline"):
        j = load(f"r21-{s}-{launch}")
        if j is None:
            continue
        t = median_after_first(j["epoch_seconds"])
        comm = max(j.get("comm_ms_per_epoch") or [0])
        comp = max(j.get("compute_ms_per_epoch") or [0])
        sent = max(j.get("bytes_sent_per_epoch") or [0]) / 2**20
        errs = [m["rel_error"] for m in j.get("memory_check", []) if m.get("rel_error") is not None]
        err = max(errs, key=abs) if errs else None
        link = j.get("link") or {}
        def num(x, f):
            return format(x, f) if isinstance(x, (int, float)) else "-"
        print(f"  {s + ' ' + launch:18} {t:9.2f} {t1 / t if t else 0:8.2f} {comm:8.2f} {comp:8.2f} {sent:8.1f}Mi"
              f" {(f'{100*err:+.1f}%' if err is not None else '-'):>8} {num(link.get('train_GBps'), '10.1f'):>10}"
              f" {num(link.get('plain_GBps'), '10.1f'):>10} {num(link.get('ratio'), '6.2f'):>6}")

print("\nmemory check (|driver - accounted| / accounted <= 5 % per GPU)")
worst_runs = []
for p in sorted(glob.glob(os.path.join(o, "*.json"))):
    j = json.load(open(p))
    checks = j.get("memory_check")
    if checks is None and "summary" in j:
        checks = [j["summary"].get("memory_check")]
    checks = [m for m in (checks or []) if m and m.get("available")]
    if not checks:
        continue
    worst = max(checks, key=lambda m: abs(m["rel_error"]))
    flag = "ok" if all(m["within_5pct"] for m in checks) else "OUTSIDE 5 %"
    print(f"  {os.path.basename(p)[:-5]:22} worst {100*worst['rel_error']:+6.2f} %  measured {worst['measured']/2**20:9.1f} MiB"
          f"  context {worst['context']/2**20:7.1f}  nccl {worst['nccl']/2**20:7.1f}  libs {worst['libraries']/2**20:6.1f}"
          f"  tracked {worst['tracked_peak']/2**20:9.1f}  slack {worst['cache_slack']/2**20:7.1f} MiB  {flag}")

for name in ("nccl-threads", "nccl-mpi"):
    j = load(name)
    if j is None:
        continue
    print(f"\nplain collectives, {name} ({j.get('device')}): bus GB/s")
    for r in j["results"]:
        print(f"  {r['collective']:15} {r['bytes_per_rank']/2**20:8.1f} MiB  {r['median_ms']*1e3:9.1f} us  {r['bus_GBps']:8.1f}")
PY
echo "steps:"; cat "$o/steps.txt"
echo "done in ${SECONDS}s"
if [ -n "${OUT:-}" ] && [ "$o" != "$OUT" ]; then
  cp "$o/summary.txt" "$OUT/" 2>/dev/null
  tar czf "$OUT/gpu_x2.tgz" -C "$o" .
fi
