#!/usr/bin/env python3
"""A graph from plain numpy arrays: edge list, features, labels, splits as boolean masks."""
import numpy as np

import gcnpart

rng = np.random.default_rng(0)
n, classes = 1000, 4
y = rng.integers(0, classes, n)
src = rng.integers(0, n, 8 * n)
dst = np.where(rng.random(8 * n) < 0.7, [rng.choice(np.flatnonzero(y == y[s])) for s in src], rng.integers(0, n, 8 * n))
x = np.eye(classes, dtype=np.float32)[y] + rng.normal(0, 2, (n, classes)).astype(np.float32)
train = np.zeros(n, bool)
train[:200] = True
ds = gcnpart.Dataset.from_arrays(np.stack([src, dst]), x=x, y=y,
                                 splits={"train": train, "valid": np.arange(200, 400), "test": np.arange(400, n)})
report = gcnpart.train(ds, epochs=100, hidden=32, progress=lambda e: None)
print(report, report.weights[0].shape)
