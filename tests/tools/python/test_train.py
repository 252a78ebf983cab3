"""gcnpart.train: the report, weights, predict() in the user's node order, progress, Ctrl-C."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import gcnpart


def tiny_graph(seed=0, n=60, classes=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    src = rng.integers(0, n, 4 * n)
    dst = np.array([rng.choice(np.flatnonzero(y == y[s])) for s in src])
    x = (np.eye(classes)[y] + rng.normal(0, 1.0, (n, classes))).astype(np.float32)
    return np.stack([src, dst]), x, y


def gcn_forward(ds, weights):
    """A numpy GCN forward (no dropout) with the engine's normalisation: Â = D^-1/2 (A + I) D^-1/2."""
    n = ds.num_nodes
    a = np.zeros((n, n))
    ei = ds.edge_index
    a[ei[0], ei[1]] = 1
    a += np.eye(n)
    d = 1 / np.sqrt(a.sum(1))
    a = d[:, None] * a * d[None, :]
    h = np.array(ds.x, dtype=np.float64)
    layers = len(weights) // 2
    for i in range(layers):
        h = a @ h @ weights[2 * i] + weights[2 * i + 1]
        if i < layers - 1:
            h = np.maximum(h, 0)
    return h


def test_report_has_accuracies_losses_times_memory_and_weights():
    ds = gcnpart.load("demo")
    r = gcnpart.train(ds, epochs=20, hidden=8, progress=False)
    assert set(r.accuracy) == {"train", "valid", "test"} and 0 <= r.test_accuracy <= 1
    assert len(r.train_loss) == 20 and len(r.valid_loss) == 20 and r.train_loss[-1] < r.train_loss[0]
    assert len(r.epoch_seconds) == 20 and r.epoch_time > 0
    assert r.memory["peak_bytes"] > 0 and sum(r.memory["by_category"].values()) == r.memory["peak_bytes"]
    shapes = [w.shape for w in r.weights]
    assert shapes == [(ds.num_features, 8), (8,), (8, ds.num_classes), (ds.num_classes,)]
    assert all(w.dtype == np.float32 for w in r.weights)
    assert r.cuda_graph == "off: CPU device"


def test_offload_streams_through_host_memory_with_the_resident_losses():
    ds = gcnpart.load("demo")
    resident = gcnpart.train(ds, epochs=10, layers=3, hidden=32, offload="off", progress=False)
    streamed = gcnpart.train(ds, epochs=10, layers=3, hidden=32, offload="host", offload_part_rows=97, progress=False)
    assert not resident.offload["streamed"]
    o = streamed.offload
    assert o["streamed"] and o["mode"] == "host" and o["part_rows"] == 97 and o["parts"] >= 2
    assert o["on_device"] == [] and "features" in o["on_host"]
    assert o["step_h2d_bytes"] == o["plan_step_h2d_bytes"] > 0
    np.testing.assert_allclose(streamed.train_loss, resident.train_loss, rtol=1e-5)
    assert streamed.test_accuracy == resident.test_accuracy
    with pytest.raises(gcnpart.InvalidInput, match="offload"):
        gcnpart.train(ds, epochs=1, offload="disk", progress=False)
    with pytest.raises(gcnpart.InvalidInput, match="single"):
        gcnpart.train(ds, epochs=1, strategy="drop", parts=2, offload="host", progress=False)


def test_predict_gives_the_logits_of_every_node_in_the_users_order():
    ei, x, y = tiny_graph()
    splits = {"train": np.arange(0, 40), "valid": np.arange(40, 50), "test": np.arange(50, 60)}
    ds = gcnpart.Dataset.from_arrays(ei, x=x, y=y, splits=splits)
    r = gcnpart.train(ds, epochs=30, hidden=8, dropout=0.0, normalize_features=False, progress=False)
    logits = r.predict()
    assert logits.shape == (60, 3) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, gcn_forward(ds, r.weights), rtol=1e-4, atol=1e-4)
    acc = (logits.argmax(1)[splits["test"]] == y[splits["test"]]).mean()
    assert abs(acc - r.test_accuracy) < 1e-9


def test_the_locality_order_trains_the_same_model_and_predicts_in_the_users_order():
    ei, x, y = tiny_graph(seed=1)
    splits = {"train": np.arange(0, 40), "valid": np.arange(40, 50), "test": np.arange(50, 60)}
    ds = gcnpart.Dataset.from_arrays(ei, x=x, y=y, splits=splits)
    plain = gcnpart.train(ds, epochs=30, hidden=8, reorder="none", normalize_features=False, progress=False)
    by_degree = gcnpart.train(ds, epochs=30, hidden=8, normalize_features=False, progress=False)  # default order
    np.testing.assert_allclose(by_degree.train_loss, plain.train_loss, rtol=1e-4)
    for a, b in zip(by_degree.weights, plain.weights):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(by_degree.predict(), gcn_forward(ds, by_degree.weights), rtol=1e-4, atol=1e-4)
    with pytest.raises(gcnpart.InvalidInput, match="reorder"):
        gcnpart.train(ds, epochs=1, reorder="sideways", progress=False)


def test_progress_callback_sees_every_epoch_on_the_calling_thread():
    events = []
    caller = threading.get_ident()
    gcnpart.train(gcnpart.load("demo"), epochs=7, hidden=4,
                  progress=lambda e: events.append((e["epoch"], e["done"], threading.get_ident())))
    assert [e[0] for e in events] == list(range(1, 8))
    assert all(t == caller for *_, t in events)


def test_an_exception_in_the_progress_callback_stops_training_and_propagates():
    def boom(e):
        if e["epoch"] == 3:
            raise RuntimeError("stop here")
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="stop here"):
        gcnpart.train(gcnpart.load("demo"), epochs=100000, hidden=4, progress=boom)
    assert time.monotonic() - t0 < 60


@pytest.fixture
def sigint_raises():
    """Python's own SIGINT handler for the test: a process started in the background by a non-interactive shell
    inherits SIGINT ignored, and Python then installs no handler, so the Ctrl-C these tests send would be lost."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_during_training_raises_keyboard_interrupt_and_the_engine_stays_usable(sigint_raises):
    ds = gcnpart.load("demo")
    seen = []

    def interrupt_after_two(e):
        seen.append(e["epoch"])
        if e["epoch"] == 2:
            threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT)).start()

    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        gcnpart.train(ds, epochs=100000, hidden=4, progress=interrupt_after_two)
    assert time.monotonic() - t0 < 60 and len(seen) < 100000
    # No hang, nothing left behind: the next call trains normally.
    r = gcnpart.train(ds, epochs=3, hidden=4, progress=False)
    assert len(r.train_loss) == 3


def test_ctrl_c_stops_a_multi_device_strategy_too(sigint_raises):
    ds = gcnpart.load("demo")
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        gcnpart.train(ds, strategy="halo", parts=2, epochs=100000, hidden=4, progress=False)
    assert time.monotonic() - t0 < 60


def test_gpu_training_matches_cpu_accuracy_closely():
    if not gcnpart.cuda_available():
        pytest.skip("no CUDA device visible (CPU-only machine)")
    ds = gcnpart.load("demo")
    cpu = gcnpart.train(ds, epochs=50, progress=False)
    gpu = gcnpart.train(ds, device="cuda", epochs=50, progress=False)
    assert abs(cpu.test_accuracy - gpu.test_accuracy) < 0.02
    assert gpu.predict().shape == (ds.num_nodes, ds.num_classes)
    assert gpu.cuda_graph.startswith("on (")
    eager = gcnpart.train(ds, device="cuda", epochs=50, progress=False, cuda_graph="off")
    assert eager.cuda_graph == "off" and abs(eager.test_accuracy - gpu.test_accuracy) < 0.02
