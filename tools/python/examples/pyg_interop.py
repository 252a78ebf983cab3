#!/usr/bin/env python3
"""A PyG dataset into gcnpart and back (needs torch and torch_geometric).

    .venv/bin/python tools/python/examples/pyg_interop.py ROOT   # Planetoid Cora under ROOT (downloaded by PyG)
"""
import sys

import numpy as np
import torch
from torch_geometric.datasets import Planetoid

import gcnpart

data = Planetoid(sys.argv[1], "Cora")[0]
ds = gcnpart.from_pyg(data, name="cora")                  # int64 edge_index, masks -> splits
report = gcnpart.train(ds, device="cuda" if gcnpart.cuda_available() else "cpu", epochs=200)
print(report)
pred = torch.from_numpy(report.predict()).argmax(1)       # logits in PyG's node order
print("test accuracy from the logits:", float((pred[data.test_mask] == data.y[data.test_mask]).float().mean()))
back = ds.to_pyg()                                        # and back: a torch_geometric.data.Data
assert np.array_equal(back.x.numpy(), np.asarray(ds.x))
