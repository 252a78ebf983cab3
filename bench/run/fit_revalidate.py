#!/usr/bin/env python3
"""Re-price measured configurations with the current `gcnpart fit` (no GPU needed).

bench/run/fit_validate.sh measures each configuration on the GPU (gcnpart train) and prices it with gcnpart fit in
the same run. When only the model changes (partition/fit/cost_model.*, memory_model.*, calibration.json), the
measurements stay valid as long as the engine that produced them did not change: this script runs the current
`gcnpart fit` on the same generated graphs (regenerate them with the generator arguments of fit_validate.sh;
generation is deterministic) and writes the same JSON and table, with the measured columns copied.

  bench/run/fit_revalidate.py MEASURED.json GRAPH_DIR OUT_PREFIX [--gcnpart build/ci/tools/gcnpart] [--calibration F]

GRAPH_DIR holds NAME.gcsr for every graph the rows name. Writes OUT_PREFIX.json and OUT_PREFIX.md.
`fit_revalidate.py --report ROWS.jsonl OUT_PREFIX EPOCHS` writes the same report from fit_validate.sh's rows.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile


def fit_row(gcnpart, graph, row, calibration=None):
    args = [gcnpart, "-q", "fit", graph, "--layers", str(row["layers"]), "--hidden", str(row["hidden"]),
            "--precision", row["precision"], "--rank-gpus", "1"]
    if row["gpus"] > 1:
        args += ["--card", "h200:%d" % row["gpus"], "--strategies", row["strategy"]]
    else:
        args += ["--card", "h200"]
    if calibration:
        args += ["--calibration", calibration]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "fit.json")
        subprocess.run(args + ["--json", out], check=True, stdout=subprocess.DEVNULL)
        f = json.load(open(out))
    cf = f["configurations"][0]
    if row["gpus"] == 1:
        e, m = cf["single"]["epoch"], cf["single"]["memory"]
    else:
        st = [x for x in cf["strategies"] if x["strategy"] == row["strategy"]][0]
        e, m = st["epoch"], st["memory"]
    return e, m


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--report":  # ROWS.jsonl OUT_PREFIX EPOCHS (fit_validate.sh)
        rows = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
        report(rows, {"epochs_per_run": int(sys.argv[4]),
                      "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                      "method": "gcnpart train --device cuda: median train step over the epochs after the first; "
                                "driver memory = cudaMemGetInfo after set-up (summary.driver_used_bytes); gcnpart fit "
                                "on the same .gcsr (exact degree statistics)"}, sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measured")
    ap.add_argument("graphs")
    ap.add_argument("out_prefix")
    ap.add_argument("--gcnpart", default="build/ci/tools/gcnpart")
    ap.add_argument("--calibration", help="a calibration JSON for fit (default: the built-in one)")
    a = ap.parse_args()
    measured = json.load(open(a.measured))
    rows = []
    for r in measured["rows"]:
        graph = os.path.join(a.graphs, r["graph"] + ".gcsr")
        if not os.path.exists(graph):
            sys.exit("missing %s (generate it with bench/run/fit_validate.sh's arguments)" % graph)
        e, m = fit_row(a.gcnpart, graph, r, a.calibration)
        n = dict(r)
        n.update({"predicted_epoch_s": e["seconds"], "predicted_tracked_peak": m["tracked_peak_bytes"],
                  "predicted_driver": m.get("driver_used_bytes_predicted"), "predicted_per_card": m.get("per_card_bytes"),
                  "bound": e.get("bound"), "terms": e.get("terms_seconds")})
        rows.append(n)
        print("%s L%d h%d %s: %.2f ms predicted, %.2f measured" % (r["graph"], r["layers"], r["hidden"], r["precision"],
              1e3 * n["predicted_epoch_s"], 1e3 * n["measured_epoch_s"]), file=sys.stderr)

    summary = dict(measured.get("summary", {}))
    summary.update({
        "repriced": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "repriced_from": a.measured,
        "method": measured.get("summary", {}).get("method", "") +
        "; predictions re-priced on the CPU by bench/run/fit_revalidate.py with the current gcnpart fit"})
    report(rows, summary, a.out_prefix)


def report(rows, summary, out_prefix):
    """Errors, the summary (share within 15 %, worst error, memory within 5 %) and the table: OUT_PREFIX.json / .md.
    Shared with bench/run/fit_validate.sh (`fit_revalidate.py --report ROWS.jsonl OUT_PREFIX`)."""
    def err(p, m):
        return None if not m or p is None else p / m - 1
    for r in rows:
        r["epoch_error"] = err(r["predicted_epoch_s"], r["measured_epoch_s"])
        r["tracked_error"] = err(r["predicted_tracked_peak"], r["measured_tracked_peak"])
        r["driver_error"] = err(r["predicted_driver"], r["measured_driver"])
    te = [abs(r["epoch_error"]) for r in rows if r["epoch_error"] is not None]
    de = [abs(r["driver_error"]) for r in rows if r["driver_error"] is not None]
    summary = dict(summary)
    summary.update({
        "rows": len(rows),
        "time_within_15pct": sum(e <= 0.15 for e in te) / max(1, len(te)), "time_worst_abs_error": max(te, default=None),
        "driver_memory_within_5pct": sum(e <= 0.05 for e in de) / max(1, len(de)),
        "driver_memory_worst_abs_error": max(de, default=None), "held_out_residual": max(te, default=None)})
    json.dump({"summary": summary, "rows": rows}, open(out_prefix + ".json", "w"), indent=1)
    pct = lambda x: "-" if x is None else "%+.1f %%" % (100 * x)
    gib = lambda b: "-" if b is None else "%.2f" % (b / 2**30)
    lines = ["| graph | L | hidden | prec | GPUs | strategy | epoch predicted ms | measured ms | error | "
             "driver predicted GiB | measured GiB | error | tracked error |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %d | %d | %s | %d | %s | %.2f | %.2f | %s | %s | %s | %s | %s |" % (
            r["graph"], r["layers"], r["hidden"], r["precision"], r["gpus"], r["strategy"], 1e3 * r["predicted_epoch_s"],
            1e3 * r["measured_epoch_s"], pct(r["epoch_error"]), gib(r["predicted_driver"]), gib(r["measured_driver"]),
            pct(r["driver_error"]), pct(r["tracked_error"])))
    lines.append("")
    lines.append("time within +-15 %%: %.0f %% of %d rows, worst |error| %s (the held-out residual); driver memory "
                 "within 5 %%: %.0f %%, worst %s" % (100 * summary["time_within_15pct"], len(rows),
                                                    pct(summary["time_worst_abs_error"]),
                                                    100 * summary["driver_memory_within_5pct"],
                                                    pct(summary["driver_memory_worst_abs_error"])))
    open(out_prefix + ".md", "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
