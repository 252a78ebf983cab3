"""Shared fixtures of the Python package's tests: where the datasets and the gcnpart CLI are."""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def data_dir() -> Path:
    env = os.environ.get("GCNPART_DATA")
    d = Path(env) if env else ROOT.parent / "shared" / "datasets"
    if not d.is_dir():
        pytest.fail(f"dataset folder not found: {d} (set GCNPART_DATA)")
    return d


@pytest.fixture(scope="session")
def cora_path() -> str:
    return str(data_dir() / "cora")


@pytest.fixture(scope="session")
def cli():
    """Runs the gcnpart CLI (GCNPART_CLI, else build/ci/tools/gcnpart) and returns its --json document."""
    exe = os.environ.get("GCNPART_CLI") or str(ROOT / "build" / "ci" / "tools" / "gcnpart")
    if not os.access(exe, os.X_OK):
        pytest.fail(f"gcnpart CLI not found at {exe}: build it (tools/test does) or set GCNPART_CLI; "
                    "deselect these tests with -m 'not cli'")

    def run(args, tmp_path):
        out = tmp_path / "cli.json"
        subprocess.run([exe, *args, "--json", str(out)], check=True, capture_output=True)
        return json.loads(out.read_text())

    return run
