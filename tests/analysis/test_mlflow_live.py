"""Live MLflow logging to a real ``mlflow server``: results reach MLflow while the sweep is still running, the
server stops and comes back mid-sweep, and still every result is there exactly once; the export after the
sweep adds nothing twice."""

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

BUDGET = 12000


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


def test_live_logging_reaches_mlflow_during_the_sweep_and_through_a_server_restart_every_result_once(tmp_path, ray_runtime):
    from rlsweep.analysis._ui import free_port, start_server, stop_server

    port, backend = free_port(), f"sqlite:///{tmp_path / 'server.db'}"
    server, url = start_server(backend, port)
    spec = rlsweep.load_spec(
        small_ppo(
            "live", tmp_path / "results", batch=250, epochs=1,
            # 48 iterations per trial: the sweep runs well past the live logger's first flush (every 2 s) and
            # through the server's restart.
            budget={"env_steps": BUDGET, "trials": 2},
            # Live only: whatever MLflow holds at the end, the live logger delivered.
            mlflow={"tracking_uri": url, "experiment": "live", "live": True, "export": False},
        )
    )
    outcome: dict = {}
    runner = threading.Thread(target=lambda: outcome.update(result=rlsweep.run(spec, verbose=0)), daemon=True)
    runner.start()
    client = MlflowClient(tracking_uri=url)

    def children():
        experiment = client.get_experiment_by_name("live")
        if experiment is None:
            return {}
        runs = client.search_runs([experiment.experiment_id], max_results=100)
        return {r.data.tags["rlsweep.trial_id"]: r for r in runs if r.data.tags.get("rlsweep.kind") == "trial"}

    try:
        # Poll the server until a trial's results are there, and look at the sweep at that moment.
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
        assert seen is not None, "no result reached MLflow while the sweep ran"
        _, logged, still_running, on_disk = seen
        # Rows were in MLflow while run() had not returned and the trials had not reached their budget.
        assert still_running
        assert logged and max(logged) < BUDGET, logged
        assert len(on_disk) < 2 or min(on_disk.values()) < BUDGET, on_disk

        assert runner.is_alive(), "the sweep ended before the server could be stopped"
        stop_server(server)  # by its process group; the sweep goes on
        time.sleep(6)
        assert runner.is_alive(), "the sweep ended while the server was down: nothing waited"
        server, _ = start_server(backend, port)  # same port, same store
        runner.join(timeout=600)
        assert not runner.is_alive() and "result" in outcome

        result = outcome["result"]
        assert result.mlflow_run_id is None
        sweep = load(result.path)
        live = children()
        assert set(live) == {t.trial_id for t in sweep.trials}
        for trial in sweep.trials:
            assert trial.rows[-1]["env_steps"] == BUDGET
            history = client.get_metric_history(live[trial.trial_id].info.run_id, "env_steps")
            # Nothing lost while the server was down, nothing sent twice when it came back.
            assert sorted(int(m.step) for m in history) == [r["env_steps"] for r in trial.rows], trial.trial_id
            assert [int(m.value) for m in sorted(history, key=lambda m: m.step)] == [r["env_steps"] for r in trial.rows]
            assert live[trial.trial_id].data.tags["rlsweep.rows_exported"] == str(len(trial.rows))

        sweep.to_mlflow()
        after = children()
        assert {t: r.info.run_id for t, r in after.items()} == {t: r.info.run_id for t, r in live.items()}
        for trial in sweep.trials:
            history = client.get_metric_history(after[trial.trial_id].info.run_id, "return_mean")
            assert sorted(m.step for m in history) == [r["env_steps"] for r in trial.rows]
            assert after[trial.trial_id].info.status == "FINISHED"
    finally:
        stop_server(server)
