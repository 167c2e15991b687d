"""Live MLflow logging: results reach MLflow while the sweep is still running, every result exactly once,
and the export after the sweep adds nothing twice."""

from __future__ import annotations

import json
import threading
import time

import pytest
from mlflow import MlflowClient

import rlsweep
from rlsweep.analysis import load
from tests.conftest import small_ppo

pytestmark = pytest.mark.slow

BUDGET = 3000


def _steps_on_disk(path) -> dict[str, int]:
    """trial folder -> the env steps of its last complete result line, as Tune has written them so far."""
    steps = {}
    for result in path.glob("*/result.json"):
        for line in result.read_text().splitlines():
            try:
                steps[result.parent.name] = int(json.loads(line)["env_steps"])
            except (ValueError, KeyError):
                continue
    return steps


def test_live_logging_writes_results_while_the_sweep_runs_and_every_result_once(tmp_path, ray_runtime):
    uri = f"sqlite:///{tmp_path / 'live.db'}"
    spec = rlsweep.load_spec(
        small_ppo(
            "live",
            tmp_path / "results",
            batch=250,
            epochs=1,
            # 12 iterations per trial: the sweep runs well past the live logger's first flush (every 2 s).
            budget={"env_steps": BUDGET, "trials": 2},
            # Live only: what MLflow holds after run() returns is what the live logger wrote.
            mlflow={"tracking_uri": uri, "experiment": "live", "live": True, "export": False},
        )
    )
    outcome: dict = {}
    runner = threading.Thread(target=lambda: outcome.update(result=rlsweep.run(spec, verbose=0)), daemon=True)
    runner.start()
    client = MlflowClient(tracking_uri=uri)

    def children():
        experiment = client.get_experiment_by_name("live")
        if experiment is None:
            return {}
        runs = client.search_runs([experiment.experiment_id], max_results=100)
        return {r.data.tags["rlsweep.trial_id"]: r for r in runs if r.data.tags.get("rlsweep.kind") == "trial"}

    # Poll the store until a trial's results are there, and look at the sweep at that moment.
    seen = None
    deadline = time.monotonic() + 300
    while seen is None and runner.is_alive() and time.monotonic() < deadline:
        for run in children().values():
            history = client.get_metric_history(run.info.run_id, "env_steps")
            if history:
                still_running = runner.is_alive()
                seen = (run, [int(m.value) for m in history], still_running, _steps_on_disk(tmp_path / "results" / "live"))
                break
        else:
            time.sleep(0.2)
    runner.join(timeout=600)
    assert not runner.is_alive() and "result" in outcome
    assert seen is not None, "no result reached MLflow while the sweep ran"
    _, logged, still_running, on_disk = seen
    # Rows were in MLflow while run() had not returned and the trials had not reached their budget.
    assert still_running
    assert logged and max(logged) < BUDGET, logged
    assert len(on_disk) < 2 or min(on_disk.values()) < BUDGET, on_disk

    result = outcome["result"]
    assert result.mlflow_run_id is None
    sweep = load(result.path)
    live = children()
    assert set(live) == {t.trial_id for t in sweep.trials}
    for trial in sweep.trials:
        assert trial.rows[-1]["env_steps"] == BUDGET
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


def test_live_logging_through_an_mlflow_server_restart_loses_and_doubles_nothing(tmp_path, ray_runtime):
    from rlsweep.analysis._ui import free_port, start_server, stop_server

    port, backend = free_port(), f"sqlite:///{tmp_path / 'server.db'}"
    server, url = start_server(backend, port)
    spec = rlsweep.load_spec(
        small_ppo(
            "restart", tmp_path / "results", batch=250, epochs=1,
            budget={"env_steps": 4 * BUDGET, "trials": 2},
            # Live only: whatever MLflow holds at the end, the live logger delivered.
            mlflow={"tracking_uri": url, "experiment": "restart", "live": True, "export": False},
        )
    )
    outcome: dict = {}
    runner = threading.Thread(target=lambda: outcome.update(result=rlsweep.run(spec, verbose=0)), daemon=True)
    runner.start()
    client = MlflowClient(tracking_uri=url)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and runner.is_alive():
            # The live logger's first write: the sweep has a long way to go.
            if client.get_experiment_by_name("restart") is not None:
                break
            time.sleep(0.5)
        assert runner.is_alive(), "the sweep ended before the server could be stopped"
        stop_server(server)  # by its process group; the sweep goes on
        time.sleep(6)
        assert runner.is_alive(), "the sweep ended while the server was down: nothing waited"
        server, _ = start_server(backend, port)  # same port, same store
        runner.join(timeout=600)
        assert not runner.is_alive() and "result" in outcome
        sweep = load(outcome["result"].path)
        experiment = client.get_experiment_by_name("restart")
        runs = client.search_runs([experiment.experiment_id], "tags.`rlsweep.kind` = 'trial'")
        assert sorted(r.data.tags["rlsweep.trial_id"] for r in runs) == sorted(t.trial_id for t in sweep.trials)
        for run in runs:
            (trial,) = [t for t in sweep.trials if t.trial_id == run.data.tags["rlsweep.trial_id"]]
            logged = [int(m.step) for m in client.get_metric_history(run.info.run_id, "env_steps")]
            assert sorted(logged) == [r["env_steps"] for r in trial.rows], (trial.trial_id, logged)
    finally:
        stop_server(server)
