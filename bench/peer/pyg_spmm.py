#!/usr/bin/env python3
"""PyG's SpMM per width: the PyTorch peer of `gcnpart bench spmm` on the same .gcsr graph (issue 15's table column).

    python3 bench/peer/pyg_spmm.py GRAPH.gcsr [--widths 16,32,41,47,64,100,128,256] [--warmup 3] [--repeats 10]
                                              [--json F]

Â = D^-1/2 (A + I) D^-1/2 exactly as gcnpart builds it (pyg_gcn.normalized_adjacency), as the torch.sparse_csr
tensor that PyG's fastest GCN path hands to torch.sparse.mm (GCNConv propagate on a sparse adjacency), times a dense
random X of each width (float32; bf16 too when torch supports it for CSR). Each call is timed with CUDA events after
an L2-sized buffer is overwritten (as bench spmm's L2 flush), median of --repeats after --warmup. The graph in its
stored order (run gcnpart's `bench spmm --reorder none` for the same order). Prints a table; --json writes it.
"""
import argparse
import datetime
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gcsr import read_gcsr  # noqa: E402
from pyg_gcn import normalized_adjacency, summary  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("graph")
    ap.add_argument("--widths", default="16,32,41,47,64,100,128,256")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        sys.exit("pyg_spmm.py: needs a CUDA device")
    d = read_gcsr(a.graph)
    n = int(d["num_nodes"])
    crow, col, values = normalized_adjacency(d["row_offsets"], d["col_ids"], n)
    dev = torch.device("cuda")
    adj = torch.sparse_csr_tensor(torch.from_numpy(crow), torch.from_numpy(col), torch.from_numpy(values),
                                  size=(n, n)).to(dev)
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size if hasattr(torch.cuda.get_device_properties(dev),
                                                                          "L2_cache_size") else 64 << 20
    flush = torch.empty(max(l2, 64 << 20) // 4, dtype=torch.float32, device=dev)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rows = []
    for width in [int(w) for w in a.widths.split(",") if w]:
        for dtype in (torch.float32, torch.bfloat16):
            name = "pyg-csr" if dtype == torch.float32 else "pyg-csr-bf16"
            try:
                x = torch.randn(n, width, device=dev, dtype=torch.float32).to(dtype)
                m = adj if dtype == torch.float32 else adj.to(dtype)
                times = []
                for i in range(a.warmup + a.repeats):
                    flush.fill_(float(i))
                    start.record()
                    y = torch.sparse.mm(m, x)
                    stop.record()
                    stop.synchronize()
                    if i >= a.warmup:
                        times.append(start.elapsed_time(stop))
                del y, x
                rows.append({"width": width, "name": name, "status": "ok", "time_ms": summary(times)})
            except (RuntimeError, NotImplementedError) as err:  # e.g. no bf16 CSR kernel in this torch
                rows.append({"width": width, "name": name, "status": "unsupported: " + str(err).splitlines()[0]})
            torch.cuda.empty_cache()
    print("%-6s %-14s %10s" % ("width", "kernel", "median ms"))
    for r in rows:
        t = "%.3f" % r["time_ms"]["median"] if r["status"] == "ok" else r["status"][:40]
        print("%-6d %-14s %10s" % (r["width"], r["name"], t))
    doc = {"command": "pyg_spmm", "graph": a.graph, "nodes": n, "entries": int(crow[-1]),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev), "results": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
