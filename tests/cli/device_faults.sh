#!/usr/bin/env bash
# A device that fails mid-epoch on K virtual CPU devices (threads mode): the job ends within 30 s with a message
# naming the device, the checkpoint it left resumes, and the resumed run ends bit-identical to an uninterrupted one.
# (The same under mpirun, with a rank SIGKILLed: tests/cli/mpi_train.sh.)
# Usage: device_faults.sh GCNPART_BINARY
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/log" 2>/dev/null; exit 1; }
common=(-q --threads 2 train demo --epochs 12)

for strategy in halo gather; do
  "$bin" "${common[@]}" --strategy "$strategy" --parts 2 --json "$tmp/whole.json" > "$tmp/log" 2>&1 ||
    fail "$strategy: the uninterrupted run"
  start=$(date +%s)
  timeout 60 "$bin" "${common[@]}" --strategy "$strategy" --parts 2 --checkpoint "$tmp/ck-$strategy" \
    --checkpoint-every 4 --fault-fail 1:9 > "$tmp/log" 2>&1
  rc=$?
  elapsed=$(( $(date +%s) - start ))
  [ $rc -ne 0 ] || fail "$strategy: a failed device went unnoticed (exit 0)"
  [ $rc -ne 124 ] || fail "$strategy: the job hung after device 1 failed"
  [ $elapsed -le 30 ] || fail "$strategy: the job took ${elapsed}s to end after device 1 failed (limit 30 s)"
  grep -q "device 1" "$tmp/log" || fail "$strategy: the message does not name device 1"
  "$bin" "${common[@]}" --strategy "$strategy" --parts 2 --checkpoint "$tmp/ck-$strategy" --checkpoint-every 4 \
    --resume --json "$tmp/resumed.json" > "$tmp/log" 2>&1 || fail "$strategy: resuming from the checkpoint"
  python3 - "$tmp/whole.json" "$tmp/resumed.json" "$strategy" <<'PY' || exit 1
import json, sys
whole = json.load(open(sys.argv[1]))["train_loss"]
resumed = json.load(open(sys.argv[2]))
assert resumed["runs"][0]["resumed_at"] == 8, f"resumed at {resumed['runs'][0]['resumed_at']}, expected 8"
assert resumed["train_loss"] == whole, f"{sys.argv[3]}: resumed losses differ from the uninterrupted run"
PY
  echo "$strategy on 2 threads: device 1 failed in epoch 9, the job ended after ${elapsed}s (exit $rc) naming it," \
       "resumed from epoch 8 bit-identical"
done
