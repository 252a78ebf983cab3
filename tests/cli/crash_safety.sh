#!/usr/bin/env bash
# Crash safety: SIGKILL gcnpart at random moments while it writes a .gcsr file, a training checkpoint and a JSON
# report over an existing complete file; afterwards the file must be the old complete one or the new complete
# one (it loads / parses), never a truncated mix. Usage: crash_safety.sh GCNPART_BINARY [ROUNDS]
set -uo pipefail
bin=$1
rounds=${2:-12}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

"$bin" -q generate rmat --scale 15 --edge-factor 16 --features 32 --classes 4 -o "$tmp/g.gcsr" > /dev/null ||
  fail "could not write the first .gcsr"
"$bin" -q train "$tmp/g.gcsr" --epochs 4 --checkpoint "$tmp/ck" --checkpoint-every 1 --json "$tmp/r.json" \
  > /dev/null 2>&1 || fail "could not write the first checkpoint and report"
for ((i = 1; i <= rounds; i++)); do
  delay=$(awk -v s=$RANDOM 'BEGIN { printf "%.3f", (s % 900) / 1000 + 0.05 }')
  "$bin" -q generate rmat --scale 15 --edge-factor 16 --features 32 --classes 4 --seed $((i + 1)) \
    -o "$tmp/g.gcsr" > /dev/null 2>&1 &
  pid=$!
  "$bin" -q train "$tmp/g.gcsr" --epochs 40 --checkpoint "$tmp/ck" --checkpoint-every 1 --json "$tmp/r.json" \
    > /dev/null 2>&1 &
  pid2=$!
  sleep "$delay"
  kill -9 $pid $pid2 2> /dev/null
  wait $pid $pid2 2> /dev/null
  "$bin" -q info "$tmp/g.gcsr" > /dev/null 2>&1 || fail "round $i: g.gcsr is corrupt after SIGKILL at ${delay}s"
  python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/r.json" ||
    fail "round $i: r.json is corrupt after SIGKILL at ${delay}s"
  "$bin" -q train "$tmp/g.gcsr" --epochs 1 --checkpoint "$tmp/ck" --resume > /dev/null 2>&1 ||
    [ $? -ne 3 ] || fail "round $i: the checkpoint is corrupt after SIGKILL at ${delay}s"
  # Leftover temporaries and locks from a killed writer must not block the next one.
done
echo "$rounds rounds of SIGKILL during writes: every file stayed complete"
echo "1 passed, 0 failed"
