#!/usr/bin/env python3
"""Table of a bench/gpu_spmm_ab.sh result folder: per graph and width, the best cuSPARSE algorithm (measured with the
first binary, in the same call) and each binary's own fp32 time, its ratio to that cuSPARSE time (> 1: own faster)
and its own bf16 time; then every epoch's median.

    python3 bench/spmm_ab_table.py FOLDER BIN [BIN ...]     (FOLDER holds spmm-<graph>-<BIN>.json, epoch-*.json)
"""
import argparse
import glob
import json
import os
import re
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("bins", nargs="+", help="binary tags; the first ran every cuSPARSE algorithm")
    a = ap.parse_args()
    pattern = re.compile(r"spmm-(.*)-(" + "|".join(map(re.escape, a.bins)) + r")\.json")
    tags = sorted({m.group(1) for p in glob.glob(os.path.join(a.folder, "spmm-*.json"))
                   if (m := pattern.match(os.path.basename(p)))})
    if not tags:
        sys.exit(f"no spmm-<graph>-<bin>.json for bins {a.bins} in {a.folder}")
    for tag in tags:
        data = {b: load(os.path.join(a.folder, f"spmm-{tag}-{b}.json")) for b in a.bins}
        first = data[a.bins[0]]
        if not first:
            continue
        print(f"== {tag}")
        print("width  best cuSPARSE (ms)  " + "  ".join(f"{b}: fp32 ratio bf16" for b in a.bins))
        for i, w in enumerate(first["widths"]):
            best = w.get("best_cusparse_median_ms")
            row = f"{w['width']:5d} {w.get('best_cusparse', '?')[-4:]} {best:8.4f} "
            for b in a.bins:
                d = data[b]
                if not d:
                    row += " | -"
                    continue
                results = d["widths"][i]["results"]
                times = {x["spmm"]: x["time_ms"]["median"] for x in results if x.get("status") == "ok"}
                own, own16 = times.get("own"), times.get("own-bf16")
                row += f" | {own:7.4f} {best / own:5.2f}x {own16:7.4f}"
            print(row)
    for path in sorted(glob.glob(os.path.join(a.folder, "epoch-*.json"))):
        e = load(path)
        if e:
            print(f"{os.path.basename(path):34s} {e['runs'][0]['epoch_ms']['median']:8.3f} ms")


if __name__ == "__main__":
    main()
