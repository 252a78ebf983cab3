"""Conversion of user arrays (numpy, torch, anything with DLPack or the buffer protocol) to what the engine takes.

The rules, applied once and never silently lossy:
- edge_index: integer array of shape (2, E); int32 and int64 are read as they are (a non-contiguous or other
  integer array is copied once to int64); floating-point or boolean ids are refused.
- x: real array of shape (N, F); float32 C-contiguous is read as it is, anything else is copied once to float32.
- y: integer array of shape (N,) or (N, 1); -1 means unlabelled.
- splits: per name, an integer id array or a boolean mask of length N.
The engine then copies them once into its own dataset (CSR, features, labels).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import _core


def _invalid(name: str, value: str, expected: str) -> None:
    _core.invalid_input(name, value, expected)  # raises gcnpart.InvalidInput, worded as the CLI's


def to_numpy(a: Any, name: str) -> np.ndarray:
    """A CPU numpy view of `a` (torch tensors on a GPU are copied to the host once; no copy otherwise)."""
    if isinstance(a, np.ndarray):
        return a
    mod = type(a).__module__
    if mod.startswith("torch"):
        t = a.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        return t.numpy()
    if hasattr(a, "__dlpack__"):
        try:
            return np.from_dlpack(a)
        except (TypeError, RuntimeError, BufferError):
            pass
    try:
        return np.asarray(a)
    except Exception:  # noqa: BLE001 - report what was given
        _invalid(name, type(a).__name__, "a numpy array, a torch tensor or an object with __dlpack__")
        raise  # unreachable


def _describe(a: np.ndarray) -> str:
    return f"{a.dtype} array of shape {a.shape}"


def ids(a: Any, name: str, shape_text: str) -> np.ndarray:
    """Node ids as a C-contiguous int64 array (checked for range later, by the engine, before narrowing)."""
    arr = to_numpy(a, name)
    if arr.dtype.kind not in "iu":
        _invalid(name, _describe(arr), f"an integer array (int32 or int64) of shape {shape_text}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        _invalid(name, f"id {int(arr.max())}", "ids below 2^63")
    return np.ascontiguousarray(arr, dtype=np.int64)


def edge_index(a: Any) -> tuple[np.ndarray, np.ndarray]:
    arr = to_numpy(a, "edge_index")
    if arr.dtype.kind not in "iu":  # the whole array is described, not a row of it
        _invalid("edge_index", _describe(arr), "an integer array (int32 or int64) of shape (2, E)")
    if arr.ndim != 2 or arr.shape[0] != 2:
        _invalid("edge_index", _describe(arr), "shape (2, E) as in PyG (row 0 sources, row 1 targets)")
    return ids(arr[0], "edge_index", "(2, E)"), ids(arr[1], "edge_index", "(2, E)")


def _rows(num_nodes: int) -> str:
    return "N" if num_nodes < 0 else str(num_nodes)


def features(a: Any, num_nodes: int) -> np.ndarray:
    arr = to_numpy(a, "x")
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2 or arr.dtype.kind not in "fiub" or arr.dtype.kind == "c":
        _invalid("x", _describe(arr), f"a real array of shape ({_rows(num_nodes)}, F)")
    return np.ascontiguousarray(arr, dtype=np.float32)


def labels(a: Any, num_nodes: int) -> np.ndarray:
    arr = to_numpy(a, "y")
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        _invalid("y", _describe(arr), f"an integer array of shape ({_rows(num_nodes)},), -1 for unlabelled nodes")
    # Checked before narrowing: a uint64 2^64 - 1 would otherwise become -1, "unlabelled".
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int32).max - 1:
        node = int(arr.argmax())
        _invalid("y", f"label {int(arr[node])} at node {node}", "a class id below 2^31 - 1, or -1 for unlabelled")
    return np.ascontiguousarray(arr, dtype=np.int64)


def split(a: Any, name: str, num_nodes: int) -> np.ndarray:
    arr = to_numpy(a, f"splits['{name}']")
    if arr.dtype == np.bool_:
        if arr.ndim == 2:  # PyG's several random splits: the first one
            arr = arr[:, 0]
        if arr.ndim != 1 or arr.shape[0] != num_nodes:
            _invalid(f"splits['{name}']", _describe(arr), f"a boolean mask of length {num_nodes} or node ids")
        return np.flatnonzero(arr).astype(np.int64)
    if arr.ndim != 1:
        _invalid(f"splits['{name}']", _describe(arr), f"a boolean mask of length {num_nodes} or a 1-D id array")
    return ids(arr, f"splits['{name}']", "(n,)")
