#!/usr/bin/env bash
# Issue 37, item 16: saved weights and checkpoints are checksummed. One byte changed in a file written by
# `train --save` or by `--checkpoint` is refused on load with exit 3 and one "gcnpart: error:" line naming the file
# and "checksum mismatch"; the untouched files load.
# Usage: damaged_files.sh GCNPART_BINARY
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/log" 2>/dev/null; exit 1; }

flip_byte() {  # flip_byte FILE OFFSET: inverts one byte in place
  python3 - "$1" "$2" <<'PY'
import sys
path, at = sys.argv[1], int(sys.argv[2])
data = bytearray(open(path, "rb").read())
data[at] ^= 0xff
open(path, "wb").write(bytes(data))
PY
}

expect_refused() {  # expect_refused WHAT FILE ARGS...: exit 3, one error line, last, naming FILE and the checksum
  local what=$1 file=$2; shift 2
  "$bin" -q "$@" > /dev/null 2> "$tmp/log"
  local rc=$?
  [ $rc -eq 3 ] || fail "$what: exit $rc, expected 3"
  [ "$(grep -c '^gcnpart: error:' "$tmp/log")" -eq 1 ] || fail "$what: not exactly one 'gcnpart: error:' line"
  tail -n 1 "$tmp/log" | grep -q "^gcnpart: error: .*$file: checksum mismatch in the .*(.*the file is damaged or was edited)" ||
    fail "$what: the error line does not name $file and the checksum mismatch"
}

common=(train demo --device cpu --epochs 1)
( cd "$tmp" && "$bin" -q "${common[@]}" --save w.bin > /dev/null 2> "$tmp/log" ) || fail "train --save"
( cd "$tmp" && "$bin" -q "${common[@]}" --load w.bin > /dev/null 2> "$tmp/log" ) || fail "train --load of an intact file"
flip_byte "$tmp/w.bin" 200  # inside W0's floats (64 x 16)
( cd "$tmp" && expect_refused "train --load of a damaged weights file" w.bin "${common[@]}" --load w.bin )

"$bin" -q train demo --device cpu --epochs 3 --checkpoint "$tmp/ck" --checkpoint-every 1 > /dev/null 2> "$tmp/log" ||
  fail "train --checkpoint"
newest=$(ls -t "$tmp"/ck/*.gckpt | head -n 1)
[ -n "$newest" ] || fail "no .gckpt in the checkpoint folder"
"$bin" -q train demo --device cpu --epochs 4 --checkpoint "$tmp/ck" --checkpoint-every 1 --resume > /dev/null \
  2> "$tmp/log" || fail "--resume from an intact checkpoint"
newest=$(ls -t "$tmp"/ck/*.gckpt | head -n 1)
flip_byte "$newest" 300  # inside the parameters
expect_refused "--resume from a damaged checkpoint" "$(basename "$newest")" \
  train demo --device cpu --epochs 5 --checkpoint "$tmp/ck" --checkpoint-every 1 --resume
echo "damaged weights and checkpoint files: refused with exit 3 naming the file and the checksum mismatch"
