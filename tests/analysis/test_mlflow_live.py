"""Live MLflow logging: every result reaches MLflow while the sweep runs, and the export after it adds
nothing twice."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

import rlsweep
from rlsweep.analysis import load
from tests.conftest import small_ppo

pytestmark = pytest.mark.slow


def test_live_logging_writes_every_result_once(tmp_path, ray_runtime):
    uri = f"sqlite:///{tmp_path / 'live.db'}"
    spec = rlsweep.load_spec(
        small_ppo(
            "live",
            tmp_path / "results",
            epochs=1,
            budget={"env_steps": 1500, "trials": 2},
            # Live only: what MLflow holds after run() returns is what the live logger wrote.
            mlflow={"tracking_uri": uri, "experiment": "live", "live": True, "export": False},
        )
    )
    result = rlsweep.run(spec, verbose=0)
    assert result.mlflow_run_id is None
    sweep = load(result.path)
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("live").experiment_id

    def children():
        runs = client.search_runs([experiment], max_results=100)
        return {r.data.tags["rlsweep.trial_id"]: r for r in runs if r.data.tags.get("rlsweep.kind") == "trial"}

    live = children()
    assert set(live) == {t.trial_id for t in sweep.trials}
    for trial in sweep.trials:
        history = client.get_metric_history(live[trial.trial_id].info.run_id, "env_steps")
        assert [int(m.value) for m in history] == [r["env_steps"] for r in trial.rows]
        assert live[trial.trial_id].data.tags["rlsweep.rows_exported"] == str(len(trial.rows))

    sweep.to_mlflow()
    after = children()
    assert {t: r.info.run_id for t, r in after.items()} == {t: r.info.run_id for t, r in live.items()}
    for trial in sweep.trials:
        history = client.get_metric_history(after[trial.trial_id].info.run_id, "return_mean")
        assert [m.step for m in history] == [r["env_steps"] for r in trial.rows]
        assert after[trial.trial_id].info.status == "FINISHED"
