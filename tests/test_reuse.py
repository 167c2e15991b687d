"""Trials reuse finished trials' worker processes (``ray.reuse_actors``, the default), and each still
reports what is its own."""

from __future__ import annotations

import copy
import os

import pytest

import rlsweep
from rlsweep.analysis import load
from tests.conftest import TINY_SPEC

pytestmark = pytest.mark.slow  # real trials on a Ray runtime

BALLAST_MB = 600


def test_a_trial_in_a_reused_worker_reports_its_own_peak_memory(ray_runtime, tmp_path):
    pid_file = tmp_path / "pids"
    pid_file.touch()
    doc = copy.deepcopy(TINY_SPEC)
    doc.update(name="reuse", storage=str(tmp_path / "results"), mlflow=None, env="tests.envs.ballast:BallastCartPole",
               env_config={"ballast_mb": BALLAST_MB, "pid_file": str(pid_file)})
    doc["config"]["env_runners.num_env_runners"] = 0  # the env lives in the trial's own process
    doc["scheduler"] = "fifo"
    doc["budget"] = {"env_steps": 1000, "trials": 2, "max_concurrent": 1}
    doc["checkpoint"] = {"every_env_steps": 1000}
    result = rlsweep.run(rlsweep.load_spec(doc), verbose=0)

    # Both trials ran in one process: the second reused the first's worker. (Validation made the env once
    # in this process, before launch.)
    workers = set(pid_file.read_text().split()) - {str(os.getpid())}
    assert len(workers) == 1
    # Tune names a trial folder train_<id>_<creation index>_<config>_<time>.
    first, second = sorted(load(result.path).trials, key=lambda t: int(t.path.name.split("_")[2]))
    peaks = [first.rows[-1]["peak_memory_mb"], second.rows[-1]["peak_memory_mb"]]
    # The first trial held the ballast; the second, in the same process, reports only its own peak.
    assert peaks[0] - peaks[1] > BALLAST_MB / 2, peaks  # measured: 993 MB, then 488 MB
