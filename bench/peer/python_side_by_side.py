#!/usr/bin/env python3
"""PyG and gcnpart side by side in one Python process: the same GCN on the same data on one GPU.

    python3 bench/peer/python_side_by_side.py [--cora DIR] [--rmat-scale 18] [--epochs 200] [--rmat-epochs 50]
                                         [--json /tmp/out/python-side-by-side.json]

Data: Cora (OGB folder, $GCNPART_DATA/cora) and a generated RMAT graph (gcnpart.rmat: 2^scale nodes, edge
factor 16, 128 synthetic features, 40 classes). Both frameworks get the graph from the same gcnpart.Dataset
(PyG through Dataset.to_pyg-style tensors), so nodes, edges, features, labels and splits are identical.

Model (gcnpart's engine/gcn.hpp, mirrored in PyG): GCNConv layers features -> hidden x (layers - 1) -> classes,
dropout 0.5 on every layer's input, ReLU between layers, bias, softmax cross-entropy on the train split, Adam lr
0.01 with weight decay 5e-4 on the first layer's weight only, features row-normalised (L1) as gcnpart does.

PyG runs twice: `edge_index` (its default: GCNConv(cached=True), gather/scatter messages) and `csr` (Â built once
as torch.sparse_csr, GCNConv(normalize=False): torch.sparse.mm / cuSPARSE, PyG's fastest full-batch path).
Epoch = zero_grad + forward + loss + backward + Adam step, CUDA events, median after warm-up epochs.
Memory: PyG's torch.cuda.max_memory_allocated (reset before each framework's run), gcnpart's tracked peak and its
driver view. Accuracy: test accuracy after the last epoch (model of the last epoch, dropout off).
Prints a table and writes the JSON.
"""
import argparse
import datetime
import json
import os
import sys
import time

import numpy as np


def median(v):
    v = sorted(v)
    n = len(v)
    return None if n == 0 else (v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2]))


def pyg_run(ds, mode, hidden, layers, epochs, warmup, seed):
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv

    dev = torch.device("cuda")
    torch.manual_seed(seed)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    n = ds.num_nodes
    x = torch.from_numpy(np.array(ds.x)).to(dev)
    x = x / x.abs().sum(1, keepdim=True).clamp_min(1e-30)  # gcnpart's row normalisation (L1)
    y = torch.from_numpy(ds.y.astype(np.int64)).to(dev)
    splits = {k: torch.from_numpy(v).to(dev) for k, v in ds.splits.items()}
    ei = torch.from_numpy(ds.edge_index).to(dev)
    if mode == "csr":
        loops = torch.arange(n, device=dev)
        row = torch.cat([ei[0], loops])
        col = torch.cat([ei[1], loops])
        deg = torch.bincount(row, minlength=n).float()
        dinv = deg.pow(-0.5)
        order = torch.argsort(row * n + col)
        row, col = row[order], col[order]
        val = dinv[row] * dinv[col]
        adj = torch.sparse_coo_tensor(torch.stack([row, col]), val, (n, n)).coalesce().to_sparse_csr()
        graph = adj
        conv = lambda i, o: GCNConv(i, o, normalize=False)  # noqa: E731
    else:
        graph = ei
        conv = lambda i, o: GCNConv(i, o, cached=True)  # noqa: E731
    dims = [ds.num_features] + [hidden] * (layers - 1) + [ds.num_classes]

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList(conv(dims[i], dims[i + 1]) for i in range(layers))

        def forward(self, h):
            for i, c in enumerate(self.convs):
                h = F.dropout(h, 0.5, self.training)
                h = c(h, graph)
                if i < layers - 1:
                    h = F.relu(h)
            return h

    model = Net().to(dev)
    first = [model.convs[0].lin.weight]
    rest = [p for p in model.parameters() if p is not model.convs[0].lin.weight]
    opt = torch.optim.Adam([{"params": first, "weight_decay": 5e-4}, {"params": rest, "weight_decay": 0.0}], lr=0.01)
    train = splits["train"]
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    try:
        for e in range(warmup + epochs):
            model.train()
            start.record()
            opt.zero_grad()
            loss = F.cross_entropy(model(x)[train], y[train])
            loss.backward()
            opt.step()
            stop.record()
            stop.synchronize()
            if e >= warmup:
                times.append(start.elapsed_time(stop) * 1e-3)
        model.eval()
        with torch.no_grad():
            pred = model(x).argmax(1)
        acc = {k: float((pred[v] == y[v]).float().mean()) for k, v in splits.items()}
        status = "ok"
    except torch.cuda.OutOfMemoryError as err:  # PyG's edge_index path materialises E x width messages
        acc, status = {}, f"out of memory: {str(err).splitlines()[0]}"
    peak = torch.cuda.max_memory_allocated()
    del model, opt, graph, x
    torch.cuda.empty_cache()
    return {"framework": f"pyg-{mode}", "status": status, "epoch_seconds_median": median(times),
            "epochs_timed": len(times), "peak_bytes": peak, "peak_what": "torch.cuda.max_memory_allocated",
            "accuracy": acc}


def gcnpart_run(gcnpart, ds, hidden, layers, epochs, seed):
    r = gcnpart.train(ds, device="cuda", hidden=hidden, layers=layers, epochs=epochs, seed=seed, progress=False)
    doc = r.to_dict()
    return {"framework": "gcnpart", "status": "ok", "epoch_seconds_median": r.epoch_time,
            "epochs_timed": max(0, len(r.epoch_seconds) - 1), "peak_bytes": r.memory["peak_bytes"],
            "peak_what": "gcnpart tracked peak", "memory_by_category": r.memory["by_category"],
            "driver_used_bytes": doc["summary"]["driver_used_bytes"], "spmm_choices": doc["spmm_choices"],
            "accuracy": r.accuracy}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cora", default=os.path.join(os.environ.get("GCNPART_DATA", "../shared/datasets"), "cora"))
    ap.add_argument("--rmat-scale", type=int, default=18)
    ap.add_argument("--epochs", type=int, default=200, help="Cora epochs")
    ap.add_argument("--rmat-epochs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5, help="PyG's untimed epochs (gcnpart drops its first)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default="/tmp/out/python-side-by-side.json")
    args = ap.parse_args()

    import torch
    import torch_geometric

    import gcnpart

    if not torch.cuda.is_available() or not gcnpart.cuda_available():
        sys.exit("python_side_by_side: needs a CUDA GPU visible to torch and to gcnpart")
    cases = [("cora", lambda: gcnpart.load(args.cora), 16, 2, args.epochs),
             ("cora-h256", lambda: gcnpart.load(args.cora), 256, 2, args.epochs),
             (f"rmat-s{args.rmat_scale}", lambda: gcnpart.rmat(args.rmat_scale, features=128, classes=40), 256, 2,
              args.rmat_epochs),
             (f"rmat-s{args.rmat_scale}-l3", lambda: gcnpart.rmat(args.rmat_scale, features=128, classes=40), 256,
              3, args.rmat_epochs)]
    result = {"command": "python_side_by_side",
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "commit": gcnpart._core.commit, "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "torch_geometric": torch_geometric.__version__, "cases": []}
    print(f"{'data':<16} {'framework':<16} {'epoch ms':>10} {'peak MiB':>10} {'test acc':>9}  status")
    cache = {}
    for name, make, hidden, layers, epochs in cases:
        key = name.split("-l")[0].replace("-h256", "")
        if key not in cache:
            cache.clear()
            t0 = time.perf_counter()
            cache[key] = make()
            print(f"# {name}: {cache[key]!r} in {time.perf_counter() - t0:.1f} s", flush=True)
        ds = cache[key]
        case = {"data": name, "nodes": ds.num_nodes, "edges_directed": ds.num_edges, "features": ds.num_features,
                "classes": ds.num_classes, "hidden": hidden, "layers": layers, "epochs": epochs, "runs": []}
        runs = [gcnpart_run(gcnpart, ds, hidden, layers, epochs, args.seed)]
        for mode in ("csr", "edge_index"):
            runs.append(pyg_run(ds, mode, hidden, layers, epochs, args.warmup, args.seed))
        for r in runs:
            t = r["epoch_seconds_median"]
            acc = r["accuracy"].get("test")
            print(f"{name:<16} {r['framework']:<16} {1e3 * t if t else float('nan'):>10.3f} "
                  f"{r['peak_bytes'] / 2**20:>10.1f} {100 * acc if acc is not None else float('nan'):>8.2f}%  "
                  f"{r['status']}", flush=True)
        g = runs[0]["epoch_seconds_median"]
        case["speedup_vs_pyg"] = {r["framework"]: (r["epoch_seconds_median"] / g if r["epoch_seconds_median"] else None)
                                  for r in runs[1:]}
        case["runs"] = runs
        result["cases"].append(case)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json + ".tmp", "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    os.replace(args.json + ".tmp", args.json)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
