"""C++ error classes arrive as Python exceptions of the same names and messages."""
import numpy as np
import pytest

import gcnpart


def test_exception_hierarchy_mirrors_the_cpp_classes():
    for cls in (gcnpart.InvalidInput, gcnpart.IoError, gcnpart.OutOfMemory, gcnpart.DeviceError,
                gcnpart.LogicError, gcnpart.Cancelled):
        assert issubclass(cls, gcnpart.Error)
    assert issubclass(gcnpart.InvalidInput, ValueError)
    assert issubclass(gcnpart.IoError, OSError)
    assert issubclass(gcnpart.OutOfMemory, MemoryError)


def test_missing_file_is_io_error_naming_the_path(tmp_path):
    with pytest.raises(gcnpart.IoError, match="nope.mtx"):
        gcnpart.load(str(tmp_path / "nope.mtx"))


def test_malformed_file_is_invalid_input_with_file_line_column(tmp_path):
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 x\n")
    with pytest.raises(gcnpart.InvalidInput, match=r"bad\.mtx:3:"):
        gcnpart.load(str(bad))


def ring():
    return np.array([[0, 1, 2], [1, 2, 0]])


@pytest.mark.parametrize("edge_index, match", [
    (np.array([[0, -1], [1, 2]]), r"edge_index\[0\].*got '-1'"),
    (np.array([[0, 1], [1, 7]]), r"edge_index\[1\].*got '7', expected 0 <= id < num_nodes = 3"),
    (np.array([[0.0, 1.0], [1.0, 2.0]]), r"parameter edge_index.*float64.*integer array"),
    (np.array([0, 1, 2]), r"parameter edge_index.*shape \(2, E\)"),
])
def test_bad_edge_index_is_invalid_input(edge_index, match):
    with pytest.raises(gcnpart.InvalidInput, match=match):
        gcnpart.Dataset.from_arrays(edge_index, num_nodes=3)


def test_id_beyond_int32_is_refused_not_truncated():
    with pytest.raises(gcnpart.InvalidInput, match="4294967297"):
        gcnpart.Dataset.from_arrays(np.array([[0, 2**32 + 1], [1, 2]]), num_nodes=3)


def test_nan_features_are_invalid_input_naming_the_node():
    x = np.ones((3, 2), np.float32)
    x[1, 1] = np.nan
    with pytest.raises(gcnpart.InvalidInput, match=r"features node 1 column 1: non-finite feature"):
        gcnpart.Dataset.from_arrays(ring(), x=x, y=[0, 1, 0])


def test_wrong_feature_rows_is_invalid_input():
    with pytest.raises(gcnpart.InvalidInput, match=r"parameter x"):
        gcnpart.Dataset.from_arrays(ring(), num_nodes=3, x=np.ones((4, 2), np.float32))


def test_bad_train_arguments_name_the_parameter():
    ds = gcnpart.load("demo")
    with pytest.raises(gcnpart.InvalidInput, match=r"parameter strategy.*'teleport'"):
        gcnpart.train(ds, strategy="teleport", epochs=1, progress=False)
    with pytest.raises(gcnpart.InvalidInput, match=r"parameter precision"):
        gcnpart.train(ds, precision="fp8", epochs=1, progress=False)
    with pytest.raises(gcnpart.InvalidInput, match=r"parameter hidden.*'wide'"):
        gcnpart.train(ds, hidden="wide", epochs=1, progress=False)
    with pytest.raises(gcnpart.InvalidInput, match=r"parameter hiden"):
        gcnpart.train(ds, hiden=4, epochs=1, progress=False)
    with pytest.raises(gcnpart.InvalidInput, match=r"parameter cuda_graph.*'sometimes'"):
        gcnpart.train(ds, cuda_graph="sometimes", epochs=1, progress=False)
    with pytest.raises(gcnpart.InvalidInput, match=r"--cuda-graph.*single"):  # on needs one GPU, single strategy
        gcnpart.train(ds, cuda_graph="on", epochs=1, progress=False)


def test_memory_limit_gives_out_of_memory_with_numbers():
    ds = gcnpart.load("demo")
    with pytest.raises(gcnpart.OutOfMemory, match=r"gcnpart\.fit"):
        gcnpart.train(ds, memory_limit="64KiB", epochs=1, progress=False)


def test_cuda_without_a_gpu_is_invalid_input():
    if gcnpart.cuda_available():
        pytest.skip("a GPU is visible: the CPU-only error cannot occur")
    with pytest.raises(gcnpart.InvalidInput, match="device='cpu'"):
        gcnpart.train(gcnpart.load("demo"), device="cuda", epochs=1, progress=False)
