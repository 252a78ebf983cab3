#!/usr/bin/env python3
"""The five-minute tour of docs/python.md as one script: load, fit, compare, train, look at the report.

    .venv/bin/python tools/python/examples/tour.py [DATA]     # DATA: a path, a name under $GCNPART_DATA, or demo
"""
import sys

import gcnpart

ds = gcnpart.load(sys.argv[1] if len(sys.argv) > 1 else "demo")
print(ds)
print({k: ds.info()[k] for k in ("nodes", "edges_undirected", "features", "classes")})

fit = gcnpart.fit(ds, layers=2, hidden=256, cards=["rtx3090"])  # does it fit a 24 GB card?
print(fit.verdict)

cmp = gcnpart.compare(ds, parts=[2, 4], layers=[2])
for row in cmp.rows:
    if "metrics" in row:
        print(f"{row['strategy']:<8} K={row['parts']}  lost edges {row['metrics']['lost_fraction']:.1%}  "
              f"peak/device {max(m['peak_bytes'] for m in row['memory']) / 2**20:.1f} MiB")
cmp.to_html("compare.html")

report = gcnpart.train(ds, epochs=200, seed=1)
print(report)
print("memory at the peak:", {k: v for k, v in report.memory["by_category"].items() if v})
logits = report.predict()
print("predicted classes of the first 10 nodes:", logits.argmax(1)[:10])
