"""gcnpart from Python: load or hand over a graph, ask whether it fits a card, compare strategies, train.

The package is a thin layer over gcnpart's C++ engine (the same library the `gcnpart` CLI calls): it converts
arrays and arguments, calls the engine with the GIL released, and returns reports whose figures are the CLI's.
A five-minute tour: docs/python.md.

    import gcnpart
    ds = gcnpart.load("cora")                     # a path, a name under $GCNPART_DATA, or "demo"
    print(gcnpart.fit(ds, hidden=256, cards=["rtx3090"]).verdict)
    report = gcnpart.train(ds, epochs=200, seed=1)
    print(report.test_accuracy, report.epoch_time)
    logits = report.predict()                     # (num_nodes, classes), in the dataset's node order

Errors are exceptions mirroring the C++ classes: InvalidInput, IoError, OutOfMemory, DeviceError, LogicError
(all subclasses of gcnpart.Error). Ctrl-C during a long call raises KeyboardInterrupt once the engine has
stopped at the next epoch boundary (its memory freed).
"""
from __future__ import annotations

import difflib as _difflib
import json as _json
import os
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from . import _arrays, _core
from ._core import Cancelled, DeviceError, Error, InvalidInput, IoError, LogicError, OutOfMemory

__all__ = [
    "Dataset", "load", "from_pyg", "rmat", "fit", "compare", "train", "FitReport", "CompareReport", "TrainReport",
    "cuda_available", "Error", "InvalidInput", "IoError", "OutOfMemory", "DeviceError", "LogicError", "Cancelled",
]
__version__ = "0.1.0"

Progress = Union[bool, Callable[[dict], Any], None]

_SPLIT_NAMES = ["train", "valid", "val", "test"]


def __dir__() -> list:
    """What the package offers (its helpers and the modules it imports stay out of dir(gcnpart))."""
    return sorted(__all__ + ["__version__", "Progress"])


def cuda_available() -> bool:
    """True when the build has CUDA and a GPU is visible (device="cuda" then works)."""
    return _core.cuda_device_count() > 0


# ---------------------------------------------------------------------------------------------------- datasets


class Dataset:
    """A node-classification graph held by the engine: symmetric CSR, float32 features, int32 labels, splits.

    Make one with :func:`load`, :meth:`Dataset.from_arrays` or :func:`from_pyg`. Arrays come out as numpy
    (``x`` and ``y`` are read-only views of the engine's memory, no copy).
    """

    def __init__(self, core: "_core.Dataset"):
        self._core = core

    # -- construction
    @classmethod
    def from_arrays(cls, edge_index: Any, x: Any = None, y: Any = None, splits: Optional[Mapping[str, Any]] = None,
                    *, num_nodes: Optional[int] = None, name: str = "arrays", symmetrize: bool = True) -> "Dataset":
        """A dataset from arrays (numpy, torch CPU or CUDA tensors, DLPack or buffer-protocol objects).

        The positional order is PyG's ``Data(x, edge_index, y)`` less the keywords: ``from_arrays(edge_index, x,
        y, splits)``; ``num_nodes`` is keyword-only.

        Args:
            edge_index: integer array of shape (2, E), int32 or int64 (PyG's layout); each column an edge.
            x: node features (N, F); float32 C-contiguous is read in place, other real types are converted once.
            y: labels (N,) or (N, 1), integers, -1 for unlabelled.
            splits: {"train": ids or boolean mask, "valid": ..., "test": ...} ("val" is taken as "valid"); other
                names are refused here, before any work.
            num_nodes: number of nodes; default: rows of ``x``, else labels, else the largest id + 1.
            name: the dataset's name in reports.
            symmetrize: add the reverse of every edge (GCN expects an undirected graph).

        Raises:
            InvalidInput: wrong dtype or shape, negative ids, ids >= num_nodes, NaN or infinite features,
                labels < -1, split ids that are unlabelled; the message names the array and the first bad index.

        Example:
            >>> ei = np.array([[0, 1, 2], [1, 2, 0]])
            >>> ds = gcnpart.Dataset.from_arrays(ei, x=np.eye(3, dtype=np.float32), y=[0, 1, 0],
            ...                                  splits={"train": [0, 1], "test": [2]})
        """
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            _core.invalid_input("x", f"the integer {int(x)}",
                                "node features (N, F); the node count is keyword-only: "
                                "from_arrays(edge_index, x, y, splits, num_nodes=N)")
        for key in (splits or {}):
            if str(key) not in _SPLIT_NAMES:
                close = _difflib.get_close_matches(str(key), _SPLIT_NAMES, n=1)
                _core.invalid_input("splits", repr(key), "the names train, valid (or val) and test" +
                                    (f" (did you mean {close[0]!r}?)" if close else ""))
        src, dst = _arrays.edge_index(edge_index)
        xa = ya = None
        if x is not None:
            xa = _arrays.features(x, -1 if num_nodes is None else num_nodes)
        if y is not None:
            ya = _arrays.labels(y, -1 if num_nodes is None else num_nodes)
        if num_nodes is None:
            if xa is not None:
                num_nodes = xa.shape[0]
            elif ya is not None:
                num_nodes = ya.shape[0]
            else:
                num_nodes = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
        num_nodes = int(num_nodes)
        split_list = []
        for key, value in (splits or {}).items():
            if value is None:
                continue
            key = "valid" if key == "val" else str(key)
            split_list.append((key, _arrays.split(value, key, num_nodes)))
        return cls(_core.from_arrays(name, num_nodes, src, dst, xa, ya, split_list, symmetrize))

    # -- figures
    @property
    def name(self) -> str:
        """The dataset's name (e.g. "cora")."""
        return self._core.name

    @property
    def provenance(self) -> str:
        """Where it came from: path and format, generator, or "arrays (Python)"."""
        return self._core.provenance

    @property
    def num_nodes(self) -> int:
        return self._core.num_nodes

    @property
    def num_edges(self) -> int:
        """Directed entries of the CSR (an undirected edge counts twice)."""
        return self._core.num_edges

    @property
    def num_features(self) -> int:
        return self._core.num_features

    @property
    def num_classes(self) -> int:
        return self._core.num_classes

    def info(self) -> dict:
        """What ``gcnpart info --json`` reports: nodes, edges, degree statistics, features, classes, splits, bytes."""
        return self._core.info()

    # -- arrays out
    @property
    def edge_index(self) -> np.ndarray:
        """(2, E) int64 array of the CSR's entries (both directions of every undirected edge), a new array."""
        return self._core.edge_index()

    @property
    def x(self) -> Optional[np.ndarray]:
        """(N, F) float32 features, a read-only view (no copy); None without features."""
        return self._core.features() if self.num_features > 0 else None

    @property
    def y(self) -> Optional[np.ndarray]:
        """(N,) int32 labels, -1 for unlabelled, a read-only view (no copy); None without labels."""
        labels = self._core.labels()
        return labels if labels.shape[0] > 0 else None

    @property
    def splits(self) -> dict:
        """{name: int64 node ids} for every split ("train", "valid", "test", ...)."""
        return self._core.splits()

    def to_pyg(self):
        """A ``torch_geometric.data.Data`` (x, edge_index, y, train_mask, val_mask, test_mask); copies the arrays.

        Raises:
            ImportError: when torch or torch_geometric is not installed.
        """
        try:
            import torch
            from torch_geometric.data import Data
        except ImportError as e:
            raise ImportError(f"Dataset.to_pyg() needs torch and torch_geometric ({e.name or e} is not installed: "
                              "pip install torch torch_geometric)") from e

        n = self.num_nodes
        data = Data(edge_index=torch.from_numpy(self.edge_index), num_nodes=n)
        if self.x is not None:
            data.x = torch.from_numpy(np.array(self.x))
        if self.y is not None:
            data.y = torch.from_numpy(self.y.astype(np.int64))
        for ours, theirs in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
            ids = self.splits.get(ours)
            if ids is not None:
                mask = torch.zeros(n, dtype=torch.bool)
                mask[torch.from_numpy(ids)] = True
                setattr(data, theirs, mask)
        return data

    def __repr__(self) -> str:
        return (f"gcnpart.Dataset({self.name!r}: {self.num_nodes:,} nodes, {self.num_edges:,} directed edges, "
                f"{self.num_features} features, {self.num_classes} classes)")


def load(path_or_name: Union[str, os.PathLike], *, format: str = "auto", split: str = "", symmetrize: bool = True,
         synthetic_features: int = 0, synthetic_classes: int = 0, seed: int = 1) -> Dataset:
    """Loads a dataset exactly as the CLI does (the same loader).

    Args:
        path_or_name: an OGB node-property folder, SNAP edge list (.txt[.gz]), METIS graph (.graph), Matrix
            Market (.mtx[.gz]), .gcsr file, "demo" (built-in SBM, 10,000 nodes), or a name found under
            $GCNPART_DATA (e.g. "cora").
        format: "auto" (detect) or one of "ogb", "snap", "metis", "mtx", "gcsr", "demo".
        split: OGB split folder name (default: meta.csv's, or the only one).
        symmetrize: add reverse edges to structure formats.
        synthetic_features, synthetic_classes: give a structure-only graph synthetic features and labels.
        seed: seed of the synthetic features.

    Raises:
        IoError: missing or unreadable file. InvalidInput: malformed data (file:line:column in the message).

    Example:
        >>> ds = gcnpart.load("demo")
    """
    path = os.fspath(path_or_name)
    if path != "demo" and not os.path.exists(path):
        root = os.environ.get("GCNPART_DATA")
        if root and os.path.exists(os.path.join(root, path)):
            path = os.path.join(root, path)
    return Dataset(_core.load(path, format, split, symmetrize, synthetic_features, synthetic_classes, seed))


def from_pyg(data: Any, *, name: str = "pyg", symmetrize: bool = True) -> Dataset:
    """A dataset from a ``torch_geometric.data.Data`` (edge_index, x, y, train_mask / val_mask / test_mask).

    Tensors are read through numpy without a copy where they are CPU tensors of a usable dtype.

    Example:
        >>> from torch_geometric.datasets import Planetoid
        >>> ds = gcnpart.from_pyg(Planetoid(root, "Cora")[0], name="cora")
    """
    if getattr(data, "edge_index", None) is None:
        _core.invalid_input("data", type(data).__name__,
                            "a torch_geometric.data.Data (or any object) with an edge_index of shape (2, E)")
    splits = {}
    for theirs, ours in (("train_mask", "train"), ("val_mask", "valid"), ("test_mask", "test")):
        mask = getattr(data, theirs, None)
        if mask is not None:
            splits[ours] = mask
    return Dataset.from_arrays(data.edge_index, num_nodes=getattr(data, "num_nodes", None), x=getattr(data, "x", None),
                               y=getattr(data, "y", None), splits=splits, name=name, symmetrize=symmetrize)


def rmat(scale: int, *, edge_factor: float = 16, features: int = 0, classes: int = 0, seed: int = 1) -> Dataset:
    """A Graph500 RMAT graph of 2^scale nodes (``gcnpart generate rmat``), symmetrised, deduplicated; with
    features > 0 and classes >= 2, synthetic class-dependent features, labels and a 60/20/20 split.

    Example:
        >>> ds = gcnpart.rmat(16, features=128, classes=40)
    """
    return Dataset(_core.rmat(scale, edge_factor, features, classes, seed))


# ---------------------------------------------------------------------------------------------------- progress


def _progress(progress: Progress, total: int, desc: str, describe: Callable[[dict], str]):
    """(callback for the engine's events, close) for progress=True (tqdm when installed), False/None or a callable."""
    if callable(progress):
        return progress, lambda: None
    if not progress:
        return None, lambda: None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None, lambda: None
    bar = tqdm(total=total, desc=desc, leave=False)

    def update(event: dict) -> None:
        bar.n = event["done"]
        bar.set_postfix_str(describe(event), refresh=False)
        bar.refresh()

    return update, bar.close


# ---------------------------------------------------------------------------------------------------- reports


def _write_json(doc: dict, path: Union[str, os.PathLike]) -> None:
    _core.write_file_atomic(os.fspath(path), _json.dumps(doc, indent=2) + "\n")


class FitReport:
    """What :func:`fit` answers (``gcnpart fit --json``'s document).

    Attributes:
        verdict: one paragraph, the first two configurations side by side.
        options: every catalogue card at every GPU count (list of dicts: card, gpus, strategy, fits, seconds, ...).
        fastest: the options that fit, fastest epoch first.
        configurations: the configurations asked for, with memory breakdown and epoch time.
    """

    def __init__(self, doc: dict):
        self._doc = doc

    @property
    def verdict(self) -> str:
        return self._doc["verdict"]

    @property
    def options(self) -> list:
        return self._doc["ranking"]["all_options"]

    @property
    def fastest(self) -> list:
        return self._doc["ranking"]["by_epoch_time"]

    @property
    def configurations(self) -> list:
        return self._doc["configurations"]

    def to_dict(self) -> dict:
        """The whole report as ``gcnpart fit --json`` writes it."""
        return self._doc

    def to_json(self, path: Union[str, os.PathLike]) -> None:
        """Writes the report as JSON (atomically)."""
        _write_json(self._doc, path)

    def __repr__(self) -> str:
        return f"gcnpart.FitReport(verdict={self.verdict!r})"


class CompareReport:
    """What :func:`compare` measured (``gcnpart compare --json``'s document).

    ``rows`` is a list of dicts, one per (layers, strategy, K), so ``pandas.DataFrame(report.rows)`` works.
    """

    def __init__(self, doc: dict):
        self._doc = doc

    @property
    def rows(self) -> list:
        return self._doc["rows"]

    @property
    def header(self) -> dict:
        """Everything but the rows: dataset, partitioner, device, precision, model, ..."""
        return {k: v for k, v in self._doc.items() if k != "rows"}

    def to_dict(self) -> dict:
        return self._doc

    def to_json(self, path: Union[str, os.PathLike]) -> None:
        """Writes the report as ``gcnpart compare --json`` does (atomically)."""
        _write_json(self._doc, path)

    def to_html(self, path: Union[str, os.PathLike]) -> None:
        """Writes the self-contained HTML page of ``gcnpart compare --html`` (tables and SVG charts)."""
        _core.write_file_atomic(os.fspath(path), _core.compare_html(_json.dumps(self._doc)))

    def __repr__(self) -> str:
        return f"gcnpart.CompareReport({len(self.rows)} rows on {self._doc['dataset']['name']!r})"


class TrainReport:
    """What :func:`train` measured: accuracies, per-epoch losses, epoch times, memory by category, weights.

    Attributes:
        accuracy: {"train", "valid", "test"}: means over the runs.
        test_accuracy: accuracy["test"].
        train_loss, valid_loss: per epoch (run 1).
        epoch_seconds: per epoch (run 1), the slowest device's train step.
        epoch_time: median seconds per epoch over every run's epochs after the first (warm-up).
        memory: {"peak_bytes", "by_category": {category: bytes at the peak}} of device 0 (run 1).
        weights: [W0 (in, out), b0 (out,), W1, b1, ...] as float32 numpy arrays (run 1).
        cuda_graph: whether the epochs replayed a captured CUDA Graph (GPU, single strategy).
    """

    def __init__(self, result: "_core.TrainResult", dataset: Dataset, device: str):
        self._result = result
        self._dataset = dataset
        self._device = device
        self._doc = result.to_json()

    @property
    def accuracy(self) -> dict:
        """Mean accuracy over the runs per split; None for a split without rows."""
        acc = self._doc["summary"]["accuracy"]
        splits = self._dataset.splits  # a split the dataset does not have, or an empty one, has no accuracy
        return {k: (acc[k]["mean"] if k in acc and len(splits.get(k, ())) > 0 else None)
                for k in ("train", "valid", "test")}

    @property
    def test_accuracy(self) -> float:
        return self.accuracy["test"]

    @property
    def train_loss(self) -> list:
        return self._doc["train_loss"]

    @property
    def valid_loss(self) -> list:
        return self._doc["valid_loss"]

    @property
    def epoch_seconds(self) -> list:
        return self._doc["epoch_seconds"]

    @property
    def epoch_time(self) -> float:
        return self._doc["summary"]["epoch_seconds"]["median"]

    @property
    def memory(self) -> dict:
        m = self._doc["summary"]["memory"]
        return {"peak_bytes": m["peak_bytes"], "by_category": m["at_peak_by_category"]}

    @property
    def cuda_graph(self) -> str:
        """Whether the epochs replayed a CUDA Graph of the step: "on (N nodes, workspace B bytes)", "off", or
        "off: <why>" ("CPU device", "a multi-device strategy", or why a capture failed)."""
        return self._doc.get("cuda_graph", "off")

    @property
    def offload(self) -> dict:
        """How the layers streamed through host memory (``offload=``): {"streamed", "mode", "parts", "part_rows",
        "operands", "host_bytes", "on_host", "on_device", "step_h2d_bytes", "step_d2h_bytes", "h2d_GBps", "d2h_GBps",
        "compute_ms", "lower_bound_ms", ...}; "streamed" is False when the model was resident."""
        return self._doc.get("offload", {"streamed": False})

    @property
    def weights(self) -> list:
        return self._result.parameters(0)

    def predict(self, device: Optional[str] = None, *, run: int = 0) -> np.ndarray:
        """Logits (num_nodes, classes) float32 of every node, in the dataset's node order, from the trained weights
        over the whole graph (dropout off). ``argmax(axis=1)`` gives the predicted classes.

        Args:
            device: where to run the forward pass (default: the training device; a strategy's backend).
            run: which run's weights (0 = run 1).
        """
        if device is None:
            device = self._device if self._device.startswith("cuda") else "cpu"
        return _core.predict(self._dataset._core, self._result, run, device)

    def to_dict(self) -> dict:
        """The whole report as ``gcnpart train --json`` writes it."""
        return self._doc

    def to_json(self, path: Union[str, os.PathLike]) -> None:
        _write_json(self._doc, path)

    def __repr__(self) -> str:
        return (f"gcnpart.TrainReport(test accuracy {100 * self.test_accuracy:.2f} %, "
                f"epoch {1e3 * self.epoch_time:.3f} ms, peak {self.memory['peak_bytes']:,} bytes)")


# ---------------------------------------------------------------------------------------------------- calls


def _card_configs(cards: Optional[Iterable[Union[str, Sequence]]]) -> list:
    out = []
    for c in cards or []:
        if isinstance(c, str):
            card, _, k = c.partition(":")
            try:
                out.append((card, int(k) if k else 1))
            except ValueError:
                _core.invalid_input("cards", c, "a card id, 'ID:K' or (ID, K)")
        else:
            card, k = c
            out.append((str(card), int(k)))
    return out


def fit(dataset_or_statistics: Union[Dataset, Mapping[str, Any]], *, layers: int = 2, hidden: int = 16,
        cards: Optional[Iterable[Union[str, Sequence]]] = None, precision: str = "fp32", dropout: float = 0.5,
        rank_gpus: Sequence[int] = (1, 2, 4), strategies: Optional[Sequence[str]] = None,
        **options: Any) -> FitReport:
    """Does this graph and GCN fit one card, and which cards, GPU counts and strategies would run it best?

    The memory and epoch-time models of ``gcnpart fit`` (partition::advise), no training.

    Args:
        dataset_or_statistics: a :class:`Dataset` (exact statistics) or a dict of statistics: nodes, edges
            (undirected), features, classes, and optionally feature_density, train_nodes, degree_m2, isolated, name.
        layers, hidden, dropout: the model. precision: "fp32" or "bf16" (as train's precision).
        cards: configurations to compare, e.g. ["rtx3090", "rtx3080:2"] or [("h100-sxm", 4)]; the first two make
            the verdict (default: one rtx3090 against 2 x rtx3080). ``gcnpart cards`` lists the ids.
        rank_gpus: GPU counts every catalogue card is ranked at. strategies: priced for K > 1 (default: those
            ``gcnpart fit`` prices: drop, halo, gather, pipeline).
        **options: tf32, spmm, sparse_features_below, partitioner, samples, seed, cards_file.

    Example:
        >>> gcnpart.fit(ds, hidden=256, cards=["rtx3090"]).verdict
    """
    opts = dict(options, layers=layers, hidden=hidden, precision=precision, dropout=dropout,
                rank_gpus=list(rank_gpus), configs=_card_configs(cards))
    if strategies is not None:
        opts["strategies"] = list(strategies)
    if isinstance(dataset_or_statistics, Dataset):
        return FitReport(_core.fit(dataset_or_statistics._core, opts))
    if isinstance(dataset_or_statistics, Mapping):
        for key in ("nodes", "edges", "features", "classes"):
            if key not in dataset_or_statistics:
                _core.invalid_input("statistics", f"no {key!r}", "a dict with nodes, edges, features and classes")
        opts.update(dataset_or_statistics)
        try:
            return FitReport(_core.fit(None, opts))
        except InvalidInput as e:  # the checks are the CLI's: name the dict's keys, not its flags
            text = str(e)
            for flag, key in _FIT_FLAGS:
                text = text.replace(f"parameter {flag}:", f"statistics[{key!r}]:")
            raise InvalidInput(text) from None
    _core.invalid_input("dataset_or_statistics", type(dataset_or_statistics).__name__,
                        "a gcnpart.Dataset or a dict of statistics (nodes, edges, features, classes)")
    raise AssertionError("unreachable")


_FIT_FLAGS = [("--nodes", "nodes"), ("--edges", "edges"), ("--features", "features"), ("--classes", "classes"),
              ("--feature-density", "feature_density"), ("--degree-m2", "degree_m2"),
              ("--isolated-nodes", "isolated"), ("--train-nodes", "train_nodes")]


def compare(dataset: Dataset, *, parts: Sequence[int] = (2, 4), layers: Sequence[int] = (2, 3),
            strategies: Optional[Sequence[str]] = None, train: bool = False, device: str = "cpu",
            epochs: int = 200, measure_epochs: Optional[int] = None, precision: str = "fp32", hidden: int = 16,
            progress: Progress = True, **options: Any) -> CompareReport:
    """Every strategy x device count x layer count on one graph, side by side (``gcnpart compare``).

    Args:
        parts: device counts K. layers: GCN layer counts.
        strategies: besides single (the reference row); default: every strategy.
        train: train each configuration ``epochs`` epochs and report accuracy (else ``measure_epochs`` epochs,
            by default the CLI's 4, measure memory, communication and time: the first warms up, the rest are timed; each row gives
            ``epoch_seconds`` (their median) and ``epoch_ms_median``, ``epoch_ms_min``, ``epoch_ms_max``).
        device: "cpu" (K virtual devices) or "cuda" (GPUs 0..K-1; K above the visible GPUs is skipped).
        progress: True (tqdm when installed), False, or a callable taking {"row", "done", "total"}.
        **options: dropout, lr, seed, partitioner, partition_seed, imbalance, objective, balance, metis_sample,
            boundary_overlap.

    Returns:
        CompareReport: ``.rows`` (list of dicts), ``.to_json(path)``, ``.to_html(path)``.
    """
    opts = dict(options, parts=list(parts), layers=list(layers), train=train, device=device, epochs=epochs,
                precision=precision, hidden=hidden)
    if measure_epochs is not None:  # else the library's default (CompareRequest), the CLI's too
        opts["measure_epochs"] = measure_epochs
    if strategies is not None:
        opts["strategies"] = list(strategies)
    total = _core.compare_total(dataset._core, dict(opts))
    callback, close = _progress(progress, total, "compare",
                                lambda e: f"{e['row']['strategy']} K={e['row']['parts']} L={e['row']['layers']}")
    on_row = None if callback is None else (lambda row, done, tot: callback({"row": row, "done": done, "total": tot}))
    try:
        return CompareReport(_core.compare(dataset._core, opts, on_row))
    finally:
        close()


def train(dataset: Dataset, *, device: str = "cpu", strategy: str = "single", parts: int = 1, layers: int = 2,
          hidden: int = 16, epochs: int = 200, precision: str = "fp32", seed: int = 1, lr: float = 0.01,
          dropout: float = 0.5, weight_decay: float = 5e-4, runs: int = 1, progress: Progress = True,
          **options: Any) -> TrainReport:
    """Trains a GCN (Kipf & Welling) for node classification, as ``gcnpart train`` does.

    Args:
        dataset: the graph (features, labels and a "train" split needed).
        device: "cpu", "cuda" or "cuda:N"; for a multi-device strategy, its backend (virtual CPU devices or
            GPUs 0..parts-1).
        strategy: "single", "drop", "halo", "gather", "pipeline" or "boundary"; parts: devices for it.
        layers, hidden, epochs, lr, dropout, weight_decay: the model and optimiser (the CLI's defaults).
        precision: "fp32", "tf32" or "bf16". seed: seed of run 1 (run r uses seed + r - 1). runs: independent runs.
        progress: True (tqdm when installed), False, or a callable taking {"run", "epoch", "done", "total",
            "train_loss", "valid_loss", "valid_accuracy"} after every epoch (on the calling thread).
        **options: early_stopping, normalize_features, weight_decay_all_layers, memory_limit (bytes or "24GB"),
            partitioner, balance, metis_sample, spmm, checkpoint_dir, checkpoint_every, resume, load_weights,
            boundary_overlap, gather_chunks, link_bench, reorder ("degree", the default: nodes renumbered once
            for memory locality, exact and reported in your node order; "none", "rcm", "metis"), cuda_graph
            ("auto", the default: on one GPU with the single strategy and a small step, rows x widest width up to
            2^25, every epoch from the third replays a CUDA Graph of the step, the report's ``cuda_graph`` says
            whether it did; "on": whatever the size, an error where it cannot; "off"), offload ("auto", the default:
            when the model does not fit the device (memory_limit, or the GPU's free memory), its layers stream through
            host memory by row parts, exactly; "host": always; "off": never), offload_part_rows (rows per streamed
            part; 0: chosen), spmm_long_row, spmm_segment, spmm_lanes (the own SpMM's tuning).

    Returns:
        TrainReport with accuracies, losses, epoch times, memory by category, ``.weights`` and ``.predict()``.

    Raises:
        InvalidInput, OutOfMemory, DeviceError, IoError; KeyboardInterrupt on Ctrl-C (the engine stops at the
        next epoch boundary and frees its memory first).

    Example:
        >>> report = gcnpart.train(gcnpart.load("cora"), epochs=200, seed=1)
        >>> report.test_accuracy
    """
    opts = dict(options, device=device, strategy=strategy, parts=parts, layers=layers, hidden=hidden, epochs=epochs,
                precision=precision, seed=seed, lr=lr, dropout=dropout, weight_decay=weight_decay, runs=runs)
    total = epochs * runs
    callback, close = _progress(progress, total, "train",
                                lambda e: f"loss {e['train_loss']:.4f} val acc {100 * e['valid_accuracy']:.1f}%")
    on_epoch = None
    if callback is not None:
        def on_epoch(run, epoch, loss, vloss, vacc):
            callback({"run": run, "epoch": epoch + 1, "done": run * epochs + epoch + 1, "total": total,
                      "train_loss": loss, "valid_loss": vloss, "valid_accuracy": vacc})
    try:
        result = _core.train(dataset._core, opts, on_epoch)
    finally:
        close()
    return TrainReport(result, dataset, device)
