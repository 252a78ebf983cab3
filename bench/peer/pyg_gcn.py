#!/usr/bin/env python3
"""The PyTorch Geometric peer of `gcnpart bench epoch`: the same full-batch GCN on the same .gcsr graph.

    python3 bench/peer/pyg_gcn.py GRAPH.gcsr [--mode csr|edge_index] [--hidden 256] [--layers 2]
                                             [--epochs 20] [--warmup 5] [--json F]

Model (as gcnpart's engine/gcn.hpp): GCNConv layers features -> hidden x (layers - 1) -> classes, dropout 0.5 on
every layer's input, ReLU between layers, bias, softmax cross-entropy (mean) on the `train` split, Adam lr 0.01 with
L2 weight decay 5e-4 on the first layer's weight only; features row-normalised by their L1 norm as gcnpart does.

Modes:
  csr         PyG's fastest path: GCNConv fed a torch.sparse_csr adjacency, so propagate() fuses into
              torch.sparse.mm (cuSPARSE). --norm precomputed (default): Â = D^-1/2 (A + I) D^-1/2 built once here,
              exactly as gcnpart builds it, and GCNConv(normalize=False). --norm pyg: the raw A as CSR and
              GCNConv(cached=True) normalises it on the first call (gcn_norm) and caches it.
  edge_index  PyG's default path: a 2 x E edge_index, GCNConv(cached=True) (gcn_norm with add_remaining_self_loops,
              cached after the first call), message passing by gather + scatter; it materialises E x width messages
              and runs out of memory on large graphs, which is reported, not fatal.

One epoch = zero_grad, forward, loss, backward, Adam step, timed with torch.cuda.Event after --warmup untimed
epochs; the median of --epochs is reported with min / p90, peak torch.cuda.max_memory_allocated over the whole run
(graph, features and training), the reserved peak and the driver's used bytes. Prints one JSON line on stdout and
writes the same (indented) to --json.
"""

import argparse
import datetime
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gcsr import read_gcsr  # noqa: E402


def normalized_adjacency(row_offsets, col_ids, n):
    """Â of gcnpart (engine::single_device_problem): a self loop added to every node lacking one (rows stay
    sorted), every entry 1 (edge weights ignored), D^-1/2 of the looped degree on both sides. Returns CSR arrays
    (int64 crow, int64 col, float32 values)."""
    ro = row_offsets.astype(np.int64, copy=False)
    ci = col_ids.astype(np.int64)
    deg = np.diff(ro)
    row = np.repeat(np.arange(n, dtype=np.int64), deg)
    has_loop = np.zeros(n, dtype=bool)
    has_loop[row[ci == row]] = True
    added = (~has_loop).astype(np.int64)
    before = np.zeros(n + 1, dtype=np.int64)  # loops added in the rows before row u
    np.cumsum(added, out=before[1:])
    crow = ro + before
    col = np.empty(int(crow[-1]), dtype=np.int64)
    # Columns are strictly ascending within a row: entries left of the diagonal keep their place, the loop
    # follows them, entries right of it move one further.
    shift = before[row] + (added[row] * (ci > row))
    col[np.arange(ci.size, dtype=np.int64) + shift] = ci
    del shift
    less = np.bincount(row, weights=(ci < row), minlength=n).astype(np.int64)
    loops = np.nonzero(added)[0]
    col[ro[loops] + before[loops] + less[loops]] = loops
    del row, ci, less
    looped = deg + added
    dinv = np.zeros(n, dtype=np.float32)
    dinv[looped > 0] = (1.0 / np.sqrt(looped[looped > 0].astype(np.float64))).astype(np.float32)
    new_row = np.repeat(np.arange(n, dtype=np.int64), looped)
    values = dinv[new_row] * dinv[col]
    return crow, col, values


def summary(values):
    if not values:
        return {"median": None, "min": None, "p90": None, "mean": None, "runs": 0, "all": []}
    v = sorted(values)
    n = len(v)
    median = v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])
    p90 = v[max(0, -(-9 * n // 10) - 1)]  # nearest rank: ceil(0.9 n) - 1
    return {"median": median, "min": v[0], "p90": p90, "mean": sum(v) / n, "runs": n, "all": list(values)}


def is_oom(err):
    import torch

    oom_types = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                  getattr(torch.cuda, "OutOfMemoryError", None)) if t is not None)
    if oom_types and isinstance(err, oom_types):
        return True
    text = str(err)
    return isinstance(err, RuntimeError) and ("out of memory" in text or "INSUFFICIENT_RESOURCES" in text
                                              or "CUSPARSE_STATUS_ALLOC_FAILED" in text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("graph", help=".gcsr file with features, labels and a train split")
    ap.add_argument("--mode", choices=["csr", "edge_index"], default="csr")
    ap.add_argument("--norm", choices=["precomputed", "pyg"], default="precomputed",
                    help="csr mode: Â built here (GCNConv normalize=False) or by GCNConv(cached=True)")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=20, help="timed epochs")
    ap.add_argument("--warmup", type=int, default=5, help="untimed epochs first")
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=5e-4, help="on the first layer's weight")
    ap.add_argument("--tf32", action="store_true", help="allow TF32 matrix products")
    ap.add_argument("--no-normalize", action="store_true", help="keep the features as stored")
    ap.add_argument("--no-verify", action="store_true", help="skip the .gcsr CRC checks")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json", help="also write the result here")
    args = ap.parse_args()
    for name in ("hidden", "layers", "epochs"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be >= 1")
    if args.warmup < 0:
        ap.error("--warmup must be >= 0")
    if not 0.0 <= args.dropout < 1.0:
        ap.error("--dropout must be in [0, 1)")

    result = {
        "framework": "pyg",
        "command": "pyg_gcn",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "graph_file": args.graph,
        "mode": args.mode,
        "norm": args.norm if args.mode == "csr" else "gcnconv-cached",
        "precision": "tf32" if args.tf32 else "fp32",
        "settings": {"warmup": args.warmup, "epochs": args.epochs, "seed": args.seed,
                     "timing": "torch.cuda.Event around zero_grad + forward + loss + backward + Adam step"},
        "status": "error",
    }

    def finish(code):
        line = json.dumps(result, separators=(",", ":"))
        print(line, flush=True)
        if args.json:
            tmp = args.json + ".tmp"
            with open(tmp, "w") as f:
                json.dump(result, f, indent=2)
                f.write("\n")
            os.replace(tmp, args.json)
        sys.exit(code)

    t_setup = time.perf_counter()
    try:
        d = read_gcsr(args.graph, verify=not args.no_verify)
        n = int(d["num_nodes"])
        if d["features"] is None or d["labels"] is None or "train" not in d["splits"]:
            raise ValueError(f"{args.graph}: needs features, labels and a 'train' split "
                             "(generate with --features F --classes C)")
        result["dataset"] = {"name": d["name"], "nodes": n, "edges_directed": int(d["num_edges"]),
                             "features": int(d["features"].shape[1]), "classes": int(d["num_classes"])}

        import warnings

        import torch
        import torch.nn.functional as F
        import torch_geometric
        from torch_geometric.nn import GCNConv

        warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support is in beta.*")

        result["versions"] = {"torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
                              "cuda": torch.version.cuda, "python": sys.version.split()[0],
                              "numpy": np.__version__}
        device = torch.device(args.device)
        if device.type == "cuda" and device.index is None and torch.cuda.is_available():
            device = torch.device("cuda", torch.cuda.current_device())  # set_device wants an index
        if device.type != "cuda" or not torch.cuda.is_available():
            raise ValueError(f"--device {args.device}: needs a visible CUDA device")
        torch.cuda.set_device(device)
        result["gpu"] = {"name": torch.cuda.get_device_name(device),
                         "memory_bytes": torch.cuda.get_device_properties(device).total_memory}
        torch.manual_seed(args.seed)
        torch.set_float32_matmul_precision("high" if args.tf32 else "highest")
        torch.cuda.reset_peak_memory_stats(device)

        features = d["features"].astype(np.float32)  # a writable copy
        if not args.no_normalize:
            norms = np.abs(features).sum(axis=1, dtype=np.float64)
            nz = norms > 0
            features[nz] = (features[nz] / norms[nz, None]).astype(np.float32)
        classes = int(d["num_classes"])
        dims = [features.shape[1]] + [args.hidden] * (args.layers - 1) + [classes]
        result["model"] = {"dims": dims, "layers": args.layers, "hidden": args.hidden, "dropout": args.dropout,
                           "lr": args.lr, "weight_decay_first_layer_weight": args.weight_decay,
                           "optimizer": "Adam", "normalize_features": not args.no_normalize}

        ro, ci = d["row_offsets"], d["col_ids"]
        if args.mode == "csr" and args.norm == "precomputed":
            crow, col, values = normalized_adjacency(ro, ci, n)
            normalize = False
        elif args.mode == "csr":
            if np.any(ci.astype(np.int64) == np.repeat(np.arange(n, dtype=np.int64), np.diff(ro))):
                print("pyg_gcn: warning: the graph has self loops; gcn_norm on a torch.sparse adjacency adds "
                      "another one to every node", file=sys.stderr)
            crow, col = ro.astype(np.int64), ci.astype(np.int64)
            values = np.ones(ci.size, dtype=np.float32)
            normalize = True
        else:
            edge_index = np.stack([np.repeat(np.arange(n, dtype=np.int64), np.diff(ro)), ci.astype(np.int64)])
            normalize = True
        result["adjacency_entries"] = int(col.size) if args.mode == "csr" else int(edge_index.shape[1])

        x = torch.from_numpy(features).to(device)
        y = torch.from_numpy(d["labels"].astype(np.int64)).to(device)
        train = torch.from_numpy(d["splits"]["train"].astype(np.int64)).to(device)
        del features
        if args.mode == "csr":
            adj = torch.sparse_csr_tensor(torch.from_numpy(crow), torch.from_numpy(col), torch.from_numpy(values),
                                          size=(n, n)).to(device)
            del crow, col, values
        else:
            adj = torch.from_numpy(edge_index).to(device)
            del edge_index
        del d

        class GCN(torch.nn.Module):
            def __init__(self):
                super().__init__()
                # add_self_loops must be off when normalize is (PyG >= 2.5 refuses the combination).
                self.convs = torch.nn.ModuleList(
                    GCNConv(dims[i], dims[i + 1], cached=True, normalize=normalize, add_self_loops=normalize)
                    for i in range(len(dims) - 1))

            def forward(self, h, a):
                for i, conv in enumerate(self.convs):
                    h = F.dropout(h, p=args.dropout, training=self.training)
                    h = conv(h, a)
                    if i + 1 < len(self.convs):
                        h = h.relu()
                return h

        model = GCN().to(device)
        first = model.convs[0].lin.weight
        optimizer = torch.optim.Adam([
            {"params": [first], "weight_decay": args.weight_decay},
            {"params": [p for p in model.parameters() if p is not first], "weight_decay": 0.0},
        ], lr=args.lr)
        torch.cuda.synchronize(device)
        result["setup_seconds"] = time.perf_counter() - t_setup

        def train_step():
            model.train()
            optimizer.zero_grad(set_to_none=True)
            out = model(x, adj)
            loss = F.cross_entropy(out[train], y[train])
            loss.backward()
            optimizer.step()
            return loss

        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        event_ms, wall_ms, losses = [], [], []
        for epoch in range(args.warmup + args.epochs):
            w0 = time.perf_counter()
            start.record()
            loss = train_step()
            stop.record()
            stop.synchronize()
            wall = 1e3 * (time.perf_counter() - w0)
            losses.append(float(loss.item()))
            if epoch >= args.warmup:
                event_ms.append(start.elapsed_time(stop))
                wall_ms.append(wall)
        result["status"] = "ok"
        result["epoch_ms"] = summary(event_ms)
        result["wall_ms"] = summary(wall_ms)
        result["train_loss"] = losses
    except Exception as err:  # noqa: BLE001 - every failure is reported in the JSON
        oom = "torch" in sys.modules and is_oom(err)
        result["status"] = "out of memory" if oom else "error"
        result["message"] = f"{type(err).__name__}: {str(err)[:2000]}"
        print(f"pyg_gcn: {result['status']}: {result['message'][:400]}", file=sys.stderr)
    finally:
        if "torch" in sys.modules:
            import torch

            if torch.cuda.is_available() and torch.cuda.is_initialized():
                free, total = torch.cuda.mem_get_info()
                result["memory"] = {
                    "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
                    "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
                    "driver_used_bytes": total - free,
                    "note": "peak_allocated: torch.cuda.max_memory_allocated over the whole run (graph, features, "
                            "training); driver_used: cudaMemGetInfo total - free at the end, with the CUDA "
                            "context and PyTorch's cached blocks",
                }
    finish(0 if result["status"] in ("ok", "out of memory") else 1)


if __name__ == "__main__":
    main()
