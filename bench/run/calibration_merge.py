#!/usr/bin/env python3
"""Builds partition/fit/calibration.json from a fresh `gcnpart bench calibrate` JSON and the held-out epochs of
bench/run/fit_validate.sh measured with it (the recipe of every recalibration so far, now in one place).

  bench/run/calibration_merge.py --calibration OUT/calibration-h200.json --validate OUT/fit-validate.json \
      --previous partition/fit/calibration.json --source bench/results/DIR/fit-validate.md -o partition/fit/calibration.json

Kept from the fresh calibration: its SpMM, GEMM, copy and launch measurements, graphs, GPU and commit. Added: the
previous file's held-out graph statistics (graphs validate-*: the same generators, so the same statistics), the
one-GPU held-out epochs as measurements of role "held-out", and held_out.residual = the worst |relative error| of
those epochs rounded up to a whole percent (what `gcnpart fit` prints as its band). The write is atomic.
"""
import argparse
import json
import math
import os
import sys
import tempfile


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calibration", required=True, help="bench calibrate JSON measured on the card")
    ap.add_argument("--validate", required=True, help="fit-validate.json of bench/run/fit_validate.sh (CALIBRATE=1)")
    ap.add_argument("--previous", required=True, help="the calibration JSON being replaced (for validate-* graphs)")
    ap.add_argument("--source", required=True, help="where the held-out table is recorded (named in the JSON)")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    try:
        new = json.load(open(a.calibration))
        val = json.load(open(a.validate))
        old = json.load(open(a.previous))
    except (OSError, json.JSONDecodeError) as e:
        print(f"calibration_merge: {e}", file=sys.stderr)
        return 2
    rows = [r for r in val.get("rows", []) if r.get("gpus") == 1]
    if not rows:
        print(f"calibration_merge: {a.validate}: no one-GPU rows", file=sys.stderr)
        return 2
    errors = [abs(r["predicted_epoch_s"] / r["measured_epoch_s"] - 1) for r in rows]
    worst = max(errors)
    within = sum(e <= 0.15 for e in errors) / len(errors)
    out = dict(new)
    graphs = dict(new.get("graphs", {}))
    for name, stats in old.get("graphs", {}).items():
        if name.startswith("validate-"):
            graphs[name] = stats
    missing = sorted({"validate-" + r["graph"] for r in rows} - set(graphs))
    if missing:
        print(f"calibration_merge: no statistics for {', '.join(missing)} in {a.previous}", file=sys.stderr)
        return 2
    out["graphs"] = graphs
    held = [{"what": f"{r['graph']} L{r['layers']} h{r['hidden']} {r['precision']} (bench/run/fit_validate.sh)",
             "graph": "validate-" + r["graph"], "hidden": r["hidden"], "layers": r["layers"], "spmm": "auto",
             "precision": r["precision"], "seconds": r["measured_epoch_s"], "role": "held-out"} for r in rows]
    out["measurements"] = [m for m in new.get("measurements", []) if m.get("role") != "held-out"] + held
    date = val.get("summary", {}).get("date", "")[:10]
    out["held_out"] = {
        "residual": math.ceil(worst * 100 - 1e-9) / 100,
        "source": f"{len(rows)} held-out H200 epochs (bench/run/fit_validate.sh, {date}, commit {new.get('commit', '?')}; "
                  f"{round(100 * within)} % within 15 %, worst {100 * worst:.1f} %)",
    }
    comment = old.get("comment", "")
    commit = new.get("commit", "?")
    if "commit " in comment:
        import re
        comment = re.sub(r"commit [0-9a-f]{7,40}", f"commit {commit}", comment)
        comment = re.sub(r"bench/results/[^ )]+/fit-validate\.md", a.source, comment)
    out["comment"] = comment
    order = ["version", "comment", "card", "measured", "commit", "gpu", "copy_gbs", "held_out", "graphs", "spmm", "gemm",
             "measurements"]
    ordered = {k: out[k] for k in order if k in out}
    ordered.update({k: v for k, v in out.items() if k not in ordered})
    d = os.path.dirname(os.path.abspath(a.output))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".calibration.")
    with os.fdopen(fd, "w") as f:
        json.dump(ordered, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.output)
    print(f"{a.output}: {len(rows)} held-out epochs, {100 * within:.0f} % within 15 %, worst {100 * worst:.1f} %, "
          f"band {ordered['held_out']['residual']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
