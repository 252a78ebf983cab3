#!/usr/bin/env python3
"""Tables of a bench/run/ runner's work folder (the JSON reports of gcnpart bench / compare and of the PyG peers).

    python3 bench/run/tables.py spmm FOLDER TAG [TAG ...]             # bench/run/spmm.sh
    python3 bench/run/tables.py epochs FOLDER [--tolerance 0.02] TAG [TAG ...]   # epochs.sh, ab_epochs.sh
    python3 bench/run/tables.py compare FOLDER                        # multi_gpu.sh

spmm: per graph and width, the best cuSPARSE algorithm (measured by the first TAG's binary in the same call) and each
binary's own fp32 time, ratio best cuSPARSE / own (> 1: own faster) and own bf16-X time; PyG's SpMM when measured.
epochs: per graph, precision and depth, each binary's median over its runs (each run's figure is bench epoch's median
epoch), the spread over runs, the ratio to the first TAG, "everything else" (not SpMM, not GEMM) of its profiled
epoch, and PyG's CSR epoch and its ratio when measured; then Cora / CiteSeer accuracy when measured.
compare: per graph and precision, every strategy of `gcnpart compare --device cuda` against one GPU.
Standard library only; a missing or unreadable file is named and skipped.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:  # a failed or cut step leaves no or a partial file
        print(f"  (unreadable {os.path.basename(path)}: {e})")
        return None


def tag_pattern(tags):
    return "(" + "|".join(re.escape(t) for t in sorted(tags, key=len, reverse=True)) + ")"


def spmm(folder, tags):
    pattern = re.compile(r"spmm-(.+)-" + tag_pattern(tags) + r"\.json$")
    graphs = sorted({m.group(1) for p in glob.glob(os.path.join(folder, "spmm-*.json"))
                     if (m := pattern.match(os.path.basename(p)))})
    if not graphs:
        sys.exit(f"no spmm-<graph>-<tag>.json for tags {tags} in {folder}")
    for g in graphs:
        data = {t: load(os.path.join(folder, f"spmm-{g}-{t}.json")) for t in tags}
        first = data[tags[0]]
        if not first:
            continue
        pyg = load(os.path.join(folder, f"pyg-spmm-{g}.json")) if os.path.exists(
            os.path.join(folder, f"pyg-spmm-{g}.json")) else None
        pyg_ms = {(r["width"], r["name"]): r["time_ms"]["median"] for r in (pyg or {}).get("results", [])
                  if r.get("status") == "ok"}
        print(f"== {g} (median ms; ratio = best cuSPARSE fp32 / own fp32, > 1: own faster)")
        print(f"{'width':>5} {'best':>5} {'cuSPARSE':>9}  " + "  ".join(f"| {t}: fp32 ratio bf16" for t in tags)
              + ("  | PyG fp32 bf16" if pyg_ms else ""))
        for i, w in enumerate(first["widths"]):
            best = w.get("best_cusparse_median_ms")
            row = f"{w['width']:5d} {str(w.get('best_cusparse', '?'))[-4:]:>5} " + (
                f"{best:9.4f}" if best else f"{'-':>9}")
            for t in tags:
                d = data[t]
                if not d or i >= len(d["widths"]):
                    row += "  | -"
                    continue
                times = {x["spmm"]: x["time_ms"]["median"] for x in d["widths"][i]["results"] if x.get("status") == "ok"}
                own, own16 = times.get("own"), times.get("own-bf16")
                ratio = f"{best / own:5.2f}x" if best and own else f"{'-':>6}"
                row += f"  | {own or float('nan'):8.4f} {ratio} {own16 or float('nan'):8.4f}"
            if pyg_ms:
                a, b = pyg_ms.get((w["width"], "pyg-csr")), pyg_ms.get((w["width"], "pyg-csr-bf16"))
                row += f"  | {a or float('nan'):8.4f} {b or float('nan'):8.4f}"
            if not w.get("verified", True):
                row += "  OUTPUTS DISAGREE"
            print(row)


def epochs(folder, tags, tolerance):
    pattern = re.compile(r"epoch-(.+)-(fp32|tf32|bf16)-l(\d+)-" + tag_pattern(tags) + r"(?:-r(\d+))?\.json$")
    cells = {}
    for path in sorted(glob.glob(os.path.join(folder, "epoch-*.json"))):
        m = pattern.match(os.path.basename(path))
        if not m:
            continue
        j = load(path)
        run = j and j.get("runs") and j["runs"][0]
        if not run or run.get("status", "ok") != "ok" or "epoch_ms" not in run:
            print(f"  {os.path.basename(path)}: {run.get('status') if run else 'no run'}")
            continue
        classes = run.get("breakdown", {}).get("classes", {})
        other = classes.get("other", {}).get("share")
        cells.setdefault((m.group(1), m.group(2), int(m.group(3))), {}).setdefault(m.group(4), []).append(
            (run["epoch_ms"]["median"], other))
    if not cells:
        print(f"no epoch-<graph>-<precision>-l<layers>-<tag>.json for tags {tags} in {folder}")
    print("Epoch (median ms over runs; each run: median of its timed epochs; else = not SpMM, not GEMM, of the "
          "profiled epoch)")
    print(f"{'graph':14s} {'prec':5s} {'L':>2s} {'binary':10s} {'runs':>4s} {'median ms':>10s} {'min..max ms':>17s} "
          f"{'/ first':>8s} {'else %':>7s} {'PyG CSR ms':>10s} {'vs PyG':>7s}")
    for (g, p, layers), by_tag in sorted(cells.items()):
        pyg = None
        pyg_path = os.path.join(folder, f"pyg-csr-{g}-l{layers}.json")
        if os.path.exists(pyg_path):
            pj = load(pyg_path)
            pyg = pj["epoch_ms"]["median"] if pj and pj.get("status") == "ok" else None
        base = None
        for t in tags:
            runs = by_tag.get(t)
            if not runs:
                continue
            ms = [r[0] for r in runs]
            med = statistics.median(ms)
            base = med if base is None else base
            ratio = med / base
            shares = [r[1] for r in runs if r[1] is not None]
            other = f"{100 * statistics.median(shares):6.1f}" if shares else f"{'-':>6}"
            verdict = ""
            if tolerance is not None and t != tags[0]:
                verdict = "  within" if abs(ratio - 1) <= tolerance else "  NOT within"
                verdict += f" {100 * tolerance:g} %"
            vs = f"{pyg / med:6.2f}x" if pyg else f"{'-':>7}"
            print(f"{g:14s} {p:5s} {layers:2d} {t:10s} {len(ms):4d} {med:10.3f} {min(ms):8.3f}..{max(ms):<8.3f} "
                  f"{ratio:8.4f} {other:>7s} {(f'{pyg:10.2f}' if pyg else '-'):>10s} {vs}{verdict}")
    acc = sorted(glob.glob(os.path.join(folder, "accuracy-*.json")))
    if acc:
        print("\nAccuracy (test, mean +- std over the seeds)")
        for path in acc:
            j = load(path)
            if j:
                a = j["summary"]["accuracy"]["test"]
                print(f"  {os.path.basename(path)[9:-5]:28s} {100 * a['mean']:6.2f} +- {100 * a['std']:.2f} %")


def compare(folder):
    for path in sorted(glob.glob(os.path.join(folder, "compare-*.json"))):
        j = load(path)
        if not j:
            continue
        name = os.path.basename(path)[8:-5]
        single = {r["layers"]: r for r in j["rows"] if r["strategy"] == "single"}
        print(f"== {name}: epoch ms (median), speed-up vs 1 GPU, per GPU compute / comm / wait ms, MiB sent, "
              f"work imbalance predicted / measured, exposed comm, worst relative loss difference to single")
        for r in j["rows"]:
            if r.get("status") == "skipped":
                print(f"  {r['strategy']:8s} K={r['parts']} L={r['layers']} skipped: {r['reason']}")
                continue
            s = single.get(r["layers"])
            if not s:
                continue
            e, e1 = 1e3 * r["epoch_seconds"], 1e3 * s["epoch_seconds"]
            comp, comm = r.get("compute_ms_per_epoch", []), r.get("comm_ms_per_epoch", [])
            wait = r.get("wait_ms_per_epoch", [float("nan")] * len(comp))
            split = " | ".join(f"{c:.2f}/{m:.2f}/{w:.2f}" for c, m, w in zip(comp, comm, wait))
            sent = "/".join(f"{b / 2**20:.0f}" for b in r.get("bytes_sent_per_epoch", []))
            worst = max((abs(a - b) / abs(b) for a, b in zip(r.get("train_loss", []), s.get("train_loss", [])) if b),
                        default=float("nan"))
            num = lambda v, f: format(v, f) if isinstance(v, (int, float)) else "-"  # noqa: E731
            print(f"  {r['strategy']:8s} K={r['parts']} L={r['layers']}  {e:8.2f} ms  x{e1 / e:5.2f}  [{split}]  "
                  f"sent {sent} MiB  imb {num(r.get('metrics', {}).get('work_imbalance'), '.3f')}/"
                  f"{num(r.get('work_imbalance_measured'), '.3f')}  "
                  f"exposed {num(100 * r['exposed_communication'] if 'exposed_communication' in r else None, '.1f')} %"
                  f"  loss diff {worst:.1e}")
    for path in sorted(glob.glob(os.path.join(folder, "nccl-*.json"))):
        j = load(path)
        if not j:
            continue
        print(f"\nplain collectives, {os.path.basename(path)[:-5]} ({j.get('device')}): bus GB/s")
        for r in j["results"]:
            print(f"  {r['collective']:15} {r['bytes_per_rank'] / 2**20:8.1f} MiB  {r['median_ms'] * 1e3:9.1f} us  "
                  f"{r['bus_GBps']:8.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("spmm")
    s.add_argument("folder")
    s.add_argument("tags", nargs="+", help="binary tags of BINS; the first ran every cuSPARSE algorithm")
    e = sub.add_parser("epochs")
    e.add_argument("folder")
    e.add_argument("--tolerance", type=float, help="verdict on each tag's ratio to the first (e.g. 0.02)")
    e.add_argument("tags", nargs="+", help="binary tags of BINS; ratios are to the first")
    c = sub.add_parser("compare")
    c.add_argument("folder")
    a = ap.parse_args()
    if a.what == "spmm":
        spmm(a.folder, a.tags)
    elif a.what == "epochs":
        epochs(a.folder, a.tags, a.tolerance)
    else:
        compare(a.folder)


if __name__ == "__main__":
    main()
