#!/usr/bin/env bash
# fit's time model against its calibration (issue 36): --check-calibration re-prices the stored held-out epochs
# with each family left out and agrees with the stored band; --calibration-without names the families it knows;
# fit with a graph file measures the L2 reuse; generate grid makes the mesh family's graphs.
# Usage: fit_calibration.sh GCNPART_BINARY
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/log" 2>/dev/null; exit 1; }

"$bin" -q fit --check-calibration --json "$tmp/check.json" > "$tmp/log" 2>&1 || fail "fit --check-calibration"
grep -q "^family left out: [0-9]* epochs" "$tmp/log" || fail "no summary line"
python3 - "$tmp/check.json" <<'PY' || fail "the check's figures"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["rows"]) >= 30, len(d["rows"])
assert len({r["family"] for r in d["rows"]}) >= 6
assert abs(d["mean_signed"]) <= 0.05, d["mean_signed"]
assert max(d["worst"], d["whole_worst"]) <= 0.25 + 1e-9, d["worst"]  # issue 36: worst <= 25 %
PY

"$bin" -q fit demo --calibration-without nosuch > "$tmp/log" 2>&1
rc=$?
[ $rc -eq 3 ] || fail "--calibration-without nosuch: exit $rc, expected 3"
grep -q "expected a graph family of the calibration (rmat, .*mesh" "$tmp/log" || fail "the refusal lists no families"

"$bin" -q fit demo --card h200 --rank-gpus 1 --calibration-without uniform > "$tmp/log" 2>&1 ||
  fail "fit demo without the uniform family"
grep -q "^L2 reuse     measured on the graph" "$tmp/log" || fail "fit with a graph did not measure its reuse"
"$bin" -q fit --nodes 100000 --edges 1000000 --features 64 --classes 8 --card h200 --rank-gpus 1 > "$tmp/log" 2>&1 ||
  fail "fit from statistics"
grep -q "^L2 reuse     inferred from the degree distribution" "$tmp/log" || fail "statistics: reuse not said inferred"
grep -q "outside calibration" "$tmp/log" || fail "statistics: no note that the band was measured with graphs"

"$bin" -q generate grid --side 20 --dims 2 --natural-order -o "$tmp/g.gcsr" > "$tmp/log" 2>&1 || fail "generate grid"
"$bin" -q generate grid --side 20 --dims 4 -o "$tmp/h.gcsr" > "$tmp/log" 2>&1 && fail "generate grid --dims 4 accepted"
[ -e "$tmp/h.gcsr" ] && fail "a refused grid left a file"
echo "fit calibration: held-out check, families, measured reuse, grid generator"
