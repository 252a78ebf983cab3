#!/usr/bin/env python3
"""Builds partition/fit/calibration.json from a `gcnpart bench calibrate` JSON and the held-out configurations of
bench/run/fit_families.sh measured with it (leave-one-family-out validation).

  bench/run/calibration_merge.py --calibration calibration-h200.json --families OUT/fit-families.json \
      --fits DIR_WITH_FIT_JSONS --source bench/results/DIR/README.md -o partition/fit/calibration.json

Kept from the calibration: its SpMM calls and their graphs (family, reuse profile), GEMMs, copy and launch epochs,
GPU and commit. Added: each validation graph's statistics (from the row's fit JSON: counts, splits, degree moment,
reuse profile, family) and each measured epoch as a measurement of role "held-out"; held_out.residual = the worst
|relative error| over the leave-one-family-out and the whole-calibration predictions, rounded up to a whole percent
(what `gcnpart fit` prints as its band). The write is atomic.

  --also LABEL=DOC (repeatable) adds the held-out epochs (and their graphs, renamed NAME@LABEL) of a calibration
  document an earlier merge wrote: earlier validation sets kept beside the new one, so that `gcnpart fit
  --check-calibration` re-prices all of them. --residual R then sets the band to R (the worst that check reports over
  every set, rounded up to a percent) where it exceeds the new set's own worst; --note adds a sentence to the source.
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
    ap.add_argument("--families", required=True, help="fit-families.json of bench/run/fit_families.sh")
    ap.add_argument("--fits", required=True, help="the folder of fit_families.sh's fit-all-*.json files")
    ap.add_argument("--source", required=True, help="where the held-out table is recorded (named in the JSON)")
    ap.add_argument("--also", action="append", default=[], metavar="LABEL=DOC",
                    help="keep the held-out epochs of an earlier merged calibration document (repeatable)")
    ap.add_argument("--residual", type=float, help="the band when it exceeds the new set's worst (check-calibration)")
    ap.add_argument("--note", default="", help="a sentence appended to held_out.source")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    try:
        doc = json.load(open(a.calibration))
        fam = json.load(open(a.families))
    except (OSError, ValueError) as e:
        print("calibration_merge: %s" % e, file=sys.stderr)
        return 1
    worst = 0.0
    for r in fam["rows"]:
        tag = "%s-L%d-h%d-%s" % (r["graph"], r["layers"], r["hidden"], r["precision"])
        fit = json.load(open(os.path.join(a.fits, "fit-all-%s.json" % tag)))
        g = fit["graph"]
        name = "validate-" + r["graph"]
        doc["graphs"][name] = {"family": r["family"], "nodes": g["nodes"], "edges": g["edges"],
                               "features": g["features"], "feature_density": g["feature_density"],
                               "classes": g["classes"], "splits": g["splits"],
                               "degree_second_moment": g["degree_second_moment"],
                               "reuse_hits": g["reuse"]["hits_by_log2_rows"]}
        if g["reuse"].get("optimal_hits_by_log2_rows"):
            doc["graphs"][name]["static_hits"] = g["reuse"]["optimal_hits_by_log2_rows"]
        doc["measurements"].append({"what": "%s L%d h%d %s (bench/run/fit_families.sh)" % (
                                        r["graph"], r["layers"], r["hidden"], r["precision"]),
                                    "graph": name, "hidden": r["hidden"], "layers": r["layers"], "spmm": "auto",
                                    "precision": r["precision"], "seconds": r["measured_epoch_s"],
                                    "role": "held-out"})
        worst = max(worst, abs(r["error"]), abs(r["error_all"]))
    kept = 0
    for spec in a.also:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            print("calibration_merge: --also %r: expected LABEL=DOC" % spec, file=sys.stderr)
            return 1
        try:
            other = json.load(open(path))
        except (OSError, ValueError) as e:
            print("calibration_merge: %s" % e, file=sys.stderr)
            return 1
        try:
            for m in other["measurements"]:
                if m.get("role") != "held-out":
                    continue
                name = "%s@%s" % (m["graph"], label)
                doc["graphs"][name] = other["graphs"][m["graph"]]
                doc["measurements"].append(dict(m, graph=name, what="%s [%s]" % (m["what"], label)))
                kept += 1
        except (KeyError, TypeError) as e:
            print("calibration_merge: %s: not a merged calibration document (missing %s)" % (path, e), file=sys.stderr)
            return 1
    if a.residual is not None:
        worst = max(worst, a.residual)
    s = fam["summary"]["leave_one_family_out"]
    doc["held_out"] = {
        "residual": math.ceil(100 * worst - 1e-9) / 100,
        "source": "%d held-out H200 configurations on %d graph families (bench/run/fit_families.sh, %s), each "
                  "predicted with its family left out of the calibration: %.0f %% within 15 %%, worst %.1f %%, mean "
                  "signed %+.1f %%" % (
                      s["rows"], fam["summary"]["families"], a.source, 100 * s["within_15"], 100 * s["worst"],
                      100 * s["mean_signed"])}
    if kept:
        doc["held_out"]["source"] += "; with the %d held-out epochs of earlier sets (%s)" % (
            kept, ", ".join(x.partition("=")[0] for x in a.also))
    if a.note:
        doc["held_out"]["source"] += "; " + a.note
    doc["held_out"]["source"] += ("; the band is the worst of these (family left out and whole calibration), rounded "
                                  "up to a percent")
    doc["comment"] = doc.get("comment", "") + " Held-out measurements: bench/run/fit_families.sh (" + a.source + ")."
    out_dir = os.path.dirname(os.path.abspath(a.output))
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".calibration.", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.chmod(tmp, 0o644)  # mkstemp's 0600 would make the tracked file unreadable to others
    os.replace(tmp, a.output)
    print("wrote %s: %d SpMM calls, %d measurements, band %.2f" % (a.output, len(doc["spmm"]), len(doc["measurements"]),
                                                                  doc["held_out"]["residual"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
