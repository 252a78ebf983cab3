"""Arrays in and out of gcnpart.Dataset: numpy and torch, int32 and int64, non-contiguous inputs."""
import numpy as np
import pytest

import gcnpart


def ring(n=6, dtype=np.int64):
    src = np.arange(n, dtype=dtype)
    return np.stack([src, (src + 1) % n]).astype(dtype)


def small(dtype=np.int64, n=6):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3) / 10
    y = np.arange(n) % 2
    return ring(n, dtype), x, y


def undirected_pairs(ei):
    return sorted(set(map(tuple, ei.T.tolist())))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_edge_index_round_trips_as_the_symmetric_edge_set(dtype):
    ei, x, y = small(dtype)
    ds = gcnpart.Dataset.from_arrays(ei, x=x, y=y, splits={"train": [0, 1], "test": [2, 3]})
    assert ds.num_nodes == 6 and ds.num_edges == 12
    expected = undirected_pairs(np.concatenate([ei, ei[::-1]], axis=1).astype(np.int64))
    out = ds.edge_index
    assert out.dtype == np.int64 and out.shape == (2, 12)
    assert undirected_pairs(out) == expected
    np.testing.assert_array_equal(ds.x, x)
    np.testing.assert_array_equal(ds.y, y)
    assert ds.y.dtype == np.int32
    np.testing.assert_array_equal(ds.splits["train"], [0, 1])
    np.testing.assert_array_equal(ds.splits["test"], [2, 3])


def test_non_contiguous_inputs_give_the_same_dataset():
    ei, x, y = small()
    wide = np.zeros((2, 2 * ei.shape[1]), dtype=np.int64)
    wide[:, ::2] = ei
    x_f = np.asfortranarray(x.astype(np.float64))
    y_strided = np.repeat(y, 2)[::2]
    a = gcnpart.Dataset.from_arrays(ei, x=x, y=y)
    b = gcnpart.Dataset.from_arrays(wide[:, ::2], x=x_f, y=y_strided)
    assert not wide[:, ::2].flags.c_contiguous and not x_f.flags.c_contiguous
    np.testing.assert_array_equal(a.edge_index, b.edge_index)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.y, b.y)


def test_features_and_labels_come_out_as_read_only_views_without_copy():
    ei, x, y = small()
    ds = gcnpart.Dataset.from_arrays(ei, x=x, y=y)
    v1, v2 = ds.x, ds.x
    assert v1.ctypes.data == v2.ctypes.data  # the engine's memory, not a copy per call
    assert not v1.flags.writeable
    del ds  # the view keeps the dataset alive
    np.testing.assert_array_equal(v1, x)


def test_boolean_masks_and_val_name_become_valid_split():
    ei, x, y = small()
    mask = np.zeros(6, dtype=bool)
    mask[[4, 5]] = True
    ds = gcnpart.Dataset.from_arrays(ei, x=x, y=y, splits={"train": [0, 1], "val": mask})
    np.testing.assert_array_equal(ds.splits["valid"], [4, 5])


def test_num_nodes_defaults_to_the_rows_of_x_and_keeps_isolated_nodes():
    ei, x, y = small()
    x9 = np.vstack([x, np.ones((3, 3), np.float32)])
    ds = gcnpart.Dataset.from_arrays(ei, x=x9)
    assert ds.num_nodes == 9
    assert ds.info()["isolated_nodes"] == 3


def test_info_matches_the_cli_fields():
    ds = gcnpart.load("demo")
    info = ds.info()
    assert info["nodes"] == 10000 and info["symmetric"] is True
    assert {s["name"] for s in info["splits"]} == {"train", "valid", "test"}
    assert info["edges_directed"] == ds.num_edges


def test_torch_cpu_tensors_int32_int64_and_non_contiguous():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    ei, x, y = small()
    ref = gcnpart.Dataset.from_arrays(ei, x=x, y=y)
    for dtype in (torch.int32, torch.int64):
        t = torch.from_numpy(ei).to(dtype)
        ds = gcnpart.Dataset.from_arrays(t, x=torch.from_numpy(x), y=torch.from_numpy(y))
        np.testing.assert_array_equal(ds.edge_index, ref.edge_index)
    tx = torch.from_numpy(np.ascontiguousarray(x.T)).t()  # non-contiguous view
    assert not tx.is_contiguous()
    ds = gcnpart.Dataset.from_arrays(torch.from_numpy(ei), x=tx, y=torch.from_numpy(y))
    np.testing.assert_array_equal(ds.x, x)


def test_pyg_round_trip():
    pytest.importorskip("torch", reason="torch is not installed")
    pytest.importorskip("torch_geometric", reason="torch_geometric is not installed")
    ds = gcnpart.load("demo")
    data = ds.to_pyg()
    assert data.num_nodes == ds.num_nodes and int(data.train_mask.sum()) == len(ds.splits["train"])
    back = gcnpart.from_pyg(data, name="demo")
    np.testing.assert_array_equal(back.edge_index, ds.edge_index)
    np.testing.assert_array_equal(back.x, ds.x)
    np.testing.assert_array_equal(back.splits["test"], ds.splits["test"])


class DLPackOnly:
    """An array reachable only through DLPack (as JAX, CuPy on the host, or other frameworks hand them over)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_objects_are_read_like_arrays():
    ei, x, y = small(np.int32)
    ds = gcnpart.Dataset.from_arrays(DLPackOnly(ei), x=DLPackOnly(x), y=DLPackOnly(y))
    ref = gcnpart.Dataset.from_arrays(ei, x=x, y=y)
    np.testing.assert_array_equal(ds.edge_index, ref.edge_index)
    np.testing.assert_array_equal(ds.x, x)


def test_arrays_meet_the_file_loaders_rules_leakage_duplicates_and_split_names():
    ei, x, y = small()
    with pytest.raises(gcnpart.InvalidInput, match="leakage"):
        gcnpart.Dataset.from_arrays(ei, x=x, y=y, splits={"train": [0, 1], "test": [1, 2]})
    with pytest.raises(gcnpart.InvalidInput, match="twice"):
        gcnpart.Dataset.from_arrays(ei, x=x, y=y, splits={"train": [0, 0, 1]})
    with pytest.raises(gcnpart.InvalidInput, match="training"):
        gcnpart.Dataset.from_arrays(ei, x=x, y=y, splits={"training": [0, 1]})


def test_labels_out_of_range_are_refused_not_narrowed():
    ei = np.array([[0, 1, 2], [1, 2, 0]])
    x = np.ones((3, 2), dtype=np.float32)
    y = np.array([0, 1, np.iinfo(np.uint64).max], dtype=np.uint64)  # would become -1, "unlabelled", if narrowed
    with pytest.raises(gcnpart.InvalidInput, match=r"y.*node 2"):
        gcnpart.Dataset.from_arrays(ei, x=x, y=y)
    with pytest.raises(gcnpart.InvalidInput, match=r"16,777,216"):  # 1e9 classes: refused, not a bad_alloc
        gcnpart.Dataset.from_arrays(ei, x=x, y=np.array([0, 1, 999_999_999]))
