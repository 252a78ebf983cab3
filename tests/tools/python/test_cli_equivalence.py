"""Python and the CLI call the same library: the same figures for the same arguments and seed."""
import numpy as np
import pytest

import gcnpart

pytestmark = pytest.mark.cli


def test_cora_accuracy_and_losses_equal_the_cli_for_the_same_seed(cli, cora_path, tmp_path):
    doc = cli(["train", cora_path, "--seed", "3", "--epochs", "100"], tmp_path)
    report = gcnpart.train(gcnpart.load(cora_path), seed=3, epochs=100, progress=False)
    assert report.test_accuracy == doc["summary"]["accuracy"]["test"]["mean"]
    assert report.accuracy["valid"] == doc["summary"]["accuracy"]["valid"]["mean"]
    assert report.train_loss == doc["train_loss"]
    assert report.memory["peak_bytes"] == doc["summary"]["memory"]["peak_bytes"]
    assert report.test_accuracy > 0.7


def test_fit_equals_the_cli_json(cli, tmp_path):
    doc = cli(["fit", "demo", "--hidden", "64", "--card", "rtx3090", "--card", "rtx3080:2"], tmp_path)
    report = gcnpart.fit(gcnpart.load("demo"), hidden=64, cards=["rtx3090", ("rtx3080", 2)])
    assert report.to_dict() == doc
    assert report.verdict == doc["verdict"] and len(report.options) > 0


def test_fit_from_statistics_equals_the_cli_json(cli, tmp_path):
    doc = cli(["fit", "--nodes", "2449029", "--edges", "61859140", "--features", "100", "--classes", "47",
               "--hidden", "256", "--layers", "3", "--name", "products"], tmp_path)
    report = gcnpart.fit({"nodes": 2449029, "edges": 61859140, "features": 100, "classes": 47, "name": "products"},
                         hidden=256, layers=3)
    assert report.to_dict() == doc


MEASURED = {"exposed_communication", "work_imbalance_measured", "link"}  # derived from timings


def strip_times(value):
    """The report without what a clock measured (seconds, milliseconds and figures derived from them)."""
    if isinstance(value, dict):
        return {k: strip_times(v) for k, v in value.items()
                if k not in MEASURED and not k.endswith("seconds") and "_ms" not in k}
    if isinstance(value, list):
        return [strip_times(v) for v in value]
    return value


def test_compare_rows_equal_the_cli_json_but_for_timings(cli, tmp_path):
    doc = cli(["compare", "demo", "--parts", "2", "--layers", "2", "--strategies", "halo,drop"], tmp_path)
    report = gcnpart.compare(gcnpart.load("demo"), parts=[2], layers=[2], strategies=["halo", "drop"], progress=False)
    assert len(report.rows) == len(doc["rows"]) == 3
    assert strip_times(report.rows) == strip_times(doc["rows"])
    assert report.header["dataset"] == doc["dataset"]
    out = tmp_path / "report.json"
    report.to_json(out)
    html = tmp_path / "report.html"
    report.to_html(html)
    assert html.read_text().startswith("<!DOCTYPE html>")
