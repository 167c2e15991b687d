"""What validate says of a sweep of thousands of trials: which searchers keep up (benchmarks/suggest_latency.py)."""

from __future__ import annotations

import copy

import pytest
import yaml

from rlsweep.cli import main
from tests.conftest import TINY_SPEC


@pytest.mark.parametrize(("searcher", "trials", "said"), [
    ("optuna", 5_000, "searcher: optuna's tpe sampler takes longer per suggestion as trials accumulate"),
    ({"name": "optuna", "sampler": "qmc"}, 10_000, None),
    ("random", 10_000, None),
    ("hyperopt", 6_000, "searcher: hyperopt takes longer per suggestion"),
    ("nevergrad", 6_000, "searcher: nevergrad holds every trial in the driver's memory"),
    ("optuna", 4_999, None),
])
def test_validate_names_a_searcher_that_keeps_up_where_a_large_sweeps_would_not(tmp_path, capsys, searcher, trials, said):
    document = {**copy.deepcopy(TINY_SPEC), "searcher": searcher, "scheduler": "fifo",
                "budget": {"env_steps": 1000, "trials": trials}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(document))
    assert main(["validate", str(path), "--no-memory-check"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("searcher:")]
    if said is None:
        assert lines == []
    else:
        assert len(lines) == 1 and lines[0].startswith(said), lines
        assert lines[0].endswith(f"for {trials:,} trials, searcher random, or optuna with sampler: qmc, keep each suggestion under 5 ms")
