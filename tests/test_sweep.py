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


@pytest.mark.slow
def test_a_metric_key_the_algorithm_does_not_report_ends_the_sweep_as_a_spec_error(tmp_path):
    """It can only be known from the first result (a key one typo from RLlib's own is refused at validate:
    tests/test_preflight_round3.py); it is the spec's error (exit 2), not a trial failure to retry on every
    trial. Here RLlib's old name, episode_reward_mean."""
    spec = tmp_path / "spec.yaml"
    document = {**TINY_SPEC, "storage": str(tmp_path / "results"), "mlflow": None, "scheduler": "fifo",
                "budget": {"env_steps": 2000, "trials": 4, "max_concurrent": 1}, "failure": {"max_retries": 2},
                "metric": {"name": "rllib/env_runners/episode_reward_mean", "mode": "max"}}
    spec.write_text(yaml.safe_dump(document))
    done = subprocess.run(
        [sys.executable, "-m", "rlsweep.cli", "run", str(spec), "--quiet", "--set", "ray.num_cpus=2"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600, start_new_session=True,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert "metric.name: 'rllib/env_runners/episode_reward_mean' is not in PPO's results" in done.stderr
    assert "rllib/env_runners/episode_return_mean" in done.stderr  # the close match
    trials = list((tmp_path / "results" / "tiny").glob("train_*"))
    assert 1 <= len(trials) < 4, "the sweep went on after the first trial found the spec wrong"
    assert not any((t / "error.txt").exists() for t in trials), "a spec error was retried as a trial failure"
