#!/usr/bin/env python3
"""Tables of issue 15 from the JSON files bench/gpu_issue15.sh writes into one folder.

    python3 bench/issue15_summary.py FOLDER [--json OUT.json]

SpMM: per graph, order and width, the own kernel (fp32 and bf16 X), every cuSPARSE algorithm's best, the ratios
and the own kernel's share of the device-to-device copy bandwidth. Epoch: median ms per graph, order, precision
and layer count, with the per-class breakdown of the profiled epoch, the reordering time and the PyG peer.
"""
import glob
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception as e:  # a failed step leaves no or a partial file
        print(f"  (unreadable {os.path.basename(path)}: {e})")
        return None


def by_name(results):
    return {r["spmm"]: r for r in results if r.get("status") == "ok"}


def main():
    folder = sys.argv[1]
    out = {"spmm": [], "slab": [], "epoch": [], "pyg": {}}
    print("SpMM (median ms; ratios = best fp32 cuSPARSE / ours)")
    print(f"{'graph':18s} {'order':7s} {'width':>5s} {'own':>8s} {'own-bf16':>9s} {'cuSPARSE':>9s} {'best':14s} "
          f"{'own x':>6s} {'bf16 x':>7s} {'%copy':>6s} {'reorder s':>9s}")
    for path in sorted(glob.glob(f"{folder}/spmm-*.json")):
        j = load(path)
        if not j:
            continue
        graph = j["dataset"]["name"] if isinstance(j.get("dataset"), dict) and "name" in j["dataset"] else "?"
        tag = os.path.basename(path)[5:-5]
        order = j.get("reorder", {}).get("method", "none")
        reorder_s = sum(j.get("reorder", {}).get(k, 0) for k in ("order_seconds", "apply_seconds"))
        for w in j["widths"]:
            r = by_name(w["results"])
            own, own16 = r.get("own"), r.get("own-bf16")
            best = w.get("best_cusparse")
            best_ms = w.get("best_cusparse_median_ms")
            row = {"graph": tag.rsplit("-", 1)[0], "dataset": graph, "order": order, "width": w["width"],
                   "own_ms": own and own["time_ms"]["median"], "own_bf16_ms": own16 and own16["time_ms"]["median"],
                   "best_cusparse": best, "best_cusparse_ms": best_ms,
                   "cusparse_ms": {k: v["time_ms"]["median"] for k, v in r.items() if k.startswith("cusparse")},
                   "speedup": w.get("speedup_vs_best_cusparse"),
                   "bf16_speedup": w.get("bf16_speedup_vs_best_cusparse_fp32"),
                   "own_copy_fraction": own and own["fraction_of_copy_bandwidth"], "reorder_seconds": reorder_s,
                   "verified": w.get("verified")}
            out["spmm"].append(row)
            f = lambda v, fmt: (fmt % v) if v is not None else "-"
            print(f"{row['graph']:18s} {order:7s} {w['width']:5d} {f(row['own_ms'], '%8.3f')} "
                  f"{f(row['own_bf16_ms'], '%9.3f')} {f(best_ms, '%9.3f')} {str(best):14s} "
                  f"{f(row['speedup'], '%6.2f')} {f(row['bf16_speedup'], '%7.2f')} "
                  f"{f(row['own_copy_fraction'] and 100 * row['own_copy_fraction'], '%6.1f')} {reorder_s:9.2f}"
                  f"{'' if row['verified'] else '  NOT VERIFIED'}")
    print("\nTuning sweeps (own kernel, degree order, median ms): slab and long-row threshold")
    for path in sorted(glob.glob(f"{folder}/slab-*.json") + glob.glob(f"{folder}/longrow-*.json")):
        j = load(path)
        if not j:
            continue
        slab = j["settings"].get("spmm_slab")
        long_row = j["settings"].get("spmm_long_row")
        for w in j["widths"]:
            r = by_name(w["results"])
            for name, run in r.items():
                out["slab"].append({"file": os.path.basename(path), "slab": slab, "long_row": long_row,
                                    "width": w["width"], "spmm": name, "ms": run["time_ms"]["median"]})
                print(f"  {os.path.basename(path):28s} slab {slab:4d} long row {long_row:5d} width {w['width']:4d} {name:9s} "
                      f"{run['time_ms']['median']:8.3f}")
    for path in sorted(glob.glob(f"{folder}/pyg-*.json")):
        j = load(path)
        if j and j.get("status") == "ok":
            out["pyg"][os.path.basename(path)[4:-5]] = j["epoch_ms"]["median"]
    print("\nEpoch (own SpMM; median ms; breakdown of one profiled epoch)")
    for path in sorted(glob.glob(f"{folder}/epoch-*.json")):
        j = load(path)
        if not j:
            continue
        tag = os.path.basename(path)[6:-5]
        graph = tag.split("-")[0]
        for run in j["runs"]:
            if run.get("status") != "ok":
                print(f"  {tag}: {run.get('status')} {run.get('message', '')}")
                continue
            b = run.get("breakdown", {})
            c = b.get("classes", {})
            pe = b.get("profiled_epoch_ms", 0) or 1
            row = {"tag": tag, "graph": graph, "order": j.get("reorder", {}).get("method"),
                   "precision": j["precision"], "layers": j["model"]["layers"], "epoch_ms": run["epoch_ms"]["median"],
                   "profiled_ms": b.get("profiled_epoch_ms"),
                   "spmm_ms": c.get("spmm", {}).get("ms"), "gemm_ms": c.get("gemm", {}).get("ms"),
                   "other_ms": c.get("other", {}).get("ms"), "unattributed_ms": b.get("unattributed_ms"),
                   "reorder_seconds": sum(j.get("reorder", {}).get(k, 0) for k in ("order_seconds", "apply_seconds")),
                   "pyg_ms": out["pyg"].get(graph)}
            out["epoch"].append(row)
            rest = (row["other_ms"] or 0) + (row["unattributed_ms"] or 0)
            pyg = f"PyG {row['pyg_ms']:.2f} ms ({row['pyg_ms'] / row['epoch_ms']:.2f}x)" if row["pyg_ms"] else ""
            print(f"  {tag:34s} {row['epoch_ms']:8.3f} ms  spmm {100 * (row['spmm_ms'] or 0) / pe:5.1f}%  "
                  f"gemm {100 * (row['gemm_ms'] or 0) / pe:5.1f}%  else {100 * rest / pe:5.1f}%  "
                  f"reorder {row['reorder_seconds']:.2f} s  {pyg}")
    print("\nAccuracy (test, mean +- std over 10 seeds)")
    out["accuracy"] = []
    for path in sorted(glob.glob(f"{folder}/accuracy-*.json")):
        j = load(path)
        if not j:
            continue
        acc = j["summary"]["accuracy"]["test"]
        tag = os.path.basename(path)[9:-5]
        out["accuracy"].append({"tag": tag, "mean": acc["mean"], "std": acc["std"],
                                "epoch_ms": 1e3 * j["summary"]["epoch_seconds"]["median"]})
        print(f"  {tag:24s} {100 * acc['mean']:6.2f} +- {100 * acc['std']:.2f} %")
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
