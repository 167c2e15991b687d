"""The sweep stage's contact with Ray before any trial: joining a cluster that is not there fails in seconds
with the address named (Ray itself retries for minutes)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from rlsweep.analysis._ui import free_port
from tests.conftest import REPO, TINY_SPEC


@pytest.mark.parametrize("address", ["127.0.0.1:{port}", "ray://127.0.0.1:{port}", "nonsense"])
def test_run_with_an_address_where_nothing_answers_exits_2_at_once(tmp_path, address):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({**TINY_SPEC, "storage": str(tmp_path / "results"), "mlflow": None}))
    address = address.format(port=free_port())  # a free port: nothing listens there
    done = subprocess.run(
        [sys.executable, "-m", "rlsweep.cli", "run", str(spec), "--address", address],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert address in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "results").exists()  # nothing was started, nothing written
