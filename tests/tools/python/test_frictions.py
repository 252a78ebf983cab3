"""Issue 37, item 9: the Python frictions a new user hit, each fixed or refused with a clear error."""
import numpy as np
import pytest

import gcnpart


def _tiny():
    ei = np.array([[0, 1, 2, 3], [1, 2, 3, 0]])
    x = np.eye(4, dtype=np.float32)
    y = np.array([0, 1, 0, 1])
    return ei, x, y


def test_from_arrays_takes_pyg_order_and_num_nodes_is_keyword_only():
    ei, x, y = _tiny()
    ds = gcnpart.Dataset.from_arrays(ei, x, y, {"train": [0, 1], "test": [2, 3]})
    assert ds.num_nodes == 4 and ds.num_features == 4
    with pytest.raises(gcnpart.InvalidInput, match="num_nodes=N"):
        gcnpart.Dataset.from_arrays(ei, 4)
    assert gcnpart.Dataset.from_arrays(ei, x, num_nodes=4).num_nodes == 4


def test_a_float_edge_index_is_described_whole():
    with pytest.raises(gcnpart.InvalidInput, match=r"shape \(2, 3\)"):
        gcnpart.Dataset.from_arrays(np.zeros((2, 3), dtype=np.float64))


def test_split_names_are_checked_when_the_dataset_is_made():
    ei, x, y = _tiny()
    with pytest.raises(gcnpart.InvalidInput, match="did you mean 'train'"):
        gcnpart.Dataset.from_arrays(ei, x, y, splits={"training": [0, 1]})


def test_no_valid_split_reports_none():
    ei, x, y = _tiny()
    ds = gcnpart.Dataset.from_arrays(ei, x, y, {"train": [0, 1], "test": [2, 3]})
    rep = gcnpart.train(ds, epochs=2, hidden=4, progress=False)
    assert rep.accuracy["valid"] is None
    assert rep.accuracy["test"] is not None


def test_from_pyg_of_something_else_is_invalid_input():
    with pytest.raises(gcnpart.InvalidInput, match="edge_index"):
        gcnpart.from_pyg(object())


def test_dir_lists_the_api_only():
    names = dir(gcnpart)
    for leaked in ("np", "os", "Any", "_json"):
        assert leaked not in names
    for name in ("Dataset", "load", "fit", "train", "InvalidInput"):
        assert name in names


def test_fit_statistics_errors_name_the_dict_keys():
    with pytest.raises(gcnpart.InvalidInput, match=r"statistics\['features'\]") as e:
        gcnpart.fit({"nodes": 100, "edges": 300, "features": 0, "classes": 3})
    assert "--features" not in str(e.value)
    with pytest.raises(gcnpart.InvalidInput, match="no 'classes'"):
        gcnpart.fit({"nodes": 100, "edges": 300, "features": 8})


def test_to_pyg_without_torch_says_what_to_install(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return real_import(name, *args, **kwargs)

    ei, x, y = _tiny()
    ds = gcnpart.Dataset.from_arrays(ei, x, y)
    monkeypatch.setattr(builtins, "__import__", no_torch)
    with pytest.raises(ImportError, match="pip install torch torch_geometric"):
        ds.to_pyg()
