#!/usr/bin/env bash
# Two MPI ranks on this CPU machine, each a virtual CPU device with the MPI communicator:
#  1. start-up and rank mapping work, and halo / gather reproduce single-device losses on the demo graph;
#  2. a rank killed mid-run takes the job down within 30 s, with a message naming the rank, instead of hanging it;
#  3. the killed job's last checkpoint resumes, bit-identical to an uninterrupted run.
# Usage: mpi_train.sh GCNPART_BINARY
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpirun_args=(--oversubscribe -np 2)
[ "$(id -u)" -eq 0 ] && mpirun_args+=(--allow-run-as-root)
# Under the dev preset (AddressSanitizer): OpenMPI's runtime keeps allocations until exit, which LeakSanitizer
# reports as leaks in <unknown module>; our own leaks are caught by every other test of the suite.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
common=(-q --threads 1 train demo --epochs 15)

"$bin" "${common[@]}" --json "$tmp/single.json" > "$tmp/single.log" 2>&1 || { cat "$tmp/single.log"; exit 1; }
for strategy in halo gather; do
  timeout 300 mpirun "${mpirun_args[@]}" "$bin" "${common[@]}" --strategy "$strategy" --json "$tmp/$strategy.json" \
    > "$tmp/$strategy.log" 2>&1 || { echo "mpirun $strategy failed:"; cat "$tmp/$strategy.log"; exit 1; }
  grep -q "one MPI rank each" "$tmp/$strategy.log" || { echo "not run as MPI ranks:"; cat "$tmp/$strategy.log"; exit 1; }
  python3 - "$tmp/single.json" "$tmp/$strategy.json" "$strategy" <<'PY' || exit 1
import json, sys
single = json.load(open(sys.argv[1]))["runs"][0]["train_loss"]
dist = json.load(open(sys.argv[2]))
assert dist["parts"] == 2 and dist["launch"] == "mpi", dist
worst = max(abs(a - b) / abs(a) for a, b in zip(single, dist["train_loss"]))
assert len(dist["train_loss"]) == len(single), "epoch counts differ"
print(f"{sys.argv[3]} on 2 MPI ranks: largest relative loss difference to single {worst:.2e}")
assert worst <= 1e-5, "losses differ from single-device training"
PY
done

start=$(date +%s)
timeout 120 mpirun "${mpirun_args[@]}" "$bin" "${common[@]}" --strategy halo --fault-kill 1:3 \
  > "$tmp/kill.log" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
if [ $rc -eq 0 ]; then echo "a killed rank went unnoticed"; cat "$tmp/kill.log"; exit 1; fi
if [ $rc -eq 124 ]; then echo "the job hung after a rank was killed"; cat "$tmp/kill.log"; exit 1; fi
if [ $elapsed -gt 30 ]; then echo "the job took ${elapsed}s to end after rank 1 was killed (limit 30 s)"; exit 1; fi
# The launcher's message names the rank ("mpirun noticed that process rank 1 ... exited on signal 9").
grep -q "rank 1" "$tmp/kill.log" || { echo "no message names rank 1:"; cat "$tmp/kill.log"; exit 1; }
echo "killed rank 1 at epoch 3: the job ended with status $rc after ${elapsed}s, naming rank 1"

# 3. A job killed mid-run resumes from its last checkpoint and ends bit-identical to an uninterrupted one.
for strategy in halo gather; do
  ck="$tmp/ck-$strategy"
  timeout 120 mpirun "${mpirun_args[@]}" "$bin" "${common[@]}" --strategy "$strategy" --checkpoint "$ck" \
    --checkpoint-every 4 --fault-kill 1:10 > "$tmp/killed-$strategy.log" 2>&1 &&
    { echo "the killed $strategy job exited 0"; cat "$tmp/killed-$strategy.log"; exit 1; }
  timeout 300 mpirun "${mpirun_args[@]}" "$bin" "${common[@]}" --strategy "$strategy" --checkpoint "$ck" \
    --checkpoint-every 4 --resume --json "$tmp/resumed-$strategy.json" > "$tmp/resumed-$strategy.log" 2>&1 ||
    { echo "resuming $strategy failed:"; cat "$tmp/resumed-$strategy.log"; exit 1; }
  python3 - "$tmp/$strategy.json" "$tmp/resumed-$strategy.json" "$strategy" <<'PY' || exit 1
import json, sys
whole = json.load(open(sys.argv[1]))["train_loss"]
resumed = json.load(open(sys.argv[2]))["train_loss"]
assert resumed == whole, f"{sys.argv[3]}: resumed losses differ from the uninterrupted run: {resumed} vs {whole}"
print(f"{sys.argv[3]} on 2 MPI ranks: killed in epoch 10, resumed from epoch 8, losses bit-identical")
PY
done
echo "1 passed, 0 failed"
