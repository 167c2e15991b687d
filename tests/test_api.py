"""Claims the documentation (README and docs/) makes that no other test checked, each tried the way a user would meet it. Each test
quotes the claim it checks."""

from __future__ import annotations

import copy
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rlsweep import cli, store
from tests.conftest import REPO, TINY_SPEC
from tests.experiments import new_experiment, write_trial


def _sweep(root: Path, spec: dict | None = None) -> Path:
    new_experiment(root, spec or TINY_SPEC)
    write_trial(root, "aaa", [10, 20, 30, 40], checkpoints=[4000], config={"training.lr": 0.01})
    write_trial(root, "bbb", [5, 50, 60, 70], checkpoints=[4000], config={"training.lr": 0.001}, done=True)
    failed = write_trial(root, "ccc", [1, 2], config={"training.lr": 0.1})
    (failed / store.ERROR_FILE).write_text("Failure # 1 (occurred at 2026-11-22)\nTraceback ...\nValueError: the env blew up\n")
    return root


def test_status_shows_each_failed_trials_error(tmp_path, capsys):
    """Docs: a trial that keeps failing 'ends ERROR with its error text in table()["error"], rlsweep status
    and MLflow'."""
    root = _sweep(tmp_path / "exp")
    assert cli.main(["status", str(root)]) == 0
    out = capsys.readouterr().out
    assert "1 ERROR" in out and "[ccc] error:\nValueError: the env blew up" in out
    assert cli.main(["status", str(root), "--json"]) == 0
    rows = {r["trial_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["ccc"]["state"] == "ERROR" and "the env blew up" in rows["ccc"]["error"]
    assert rows["bbb"]["error"] is None


def test_resume_with_a_spec_file_that_differs_is_refused_with_the_difference(tmp_path, capsys):
    """Docs: '`--spec FILE` checks the file you mean to use the same way' (refused, exit 2, `path: old -> new`)."""
    root = _sweep(tmp_path / "exp")
    # A resumable folder (every trial listed, a whole tuner), so only the spec stops the resume.
    entries = [[json.dumps({"trial_id": t, "status": s}), json.dumps({"num_failures": 0})]
               for t, s in (("aaa", "RUNNING"), ("bbb", "TERMINATED"), ("ccc", "ERROR"))]
    (root / "experiment_state-2026-01-01_00-00-00.json").write_text(json.dumps({"trial_data": entries}))
    (root / store.TUNER_FILE).write_bytes(pickle.dumps({"tuner": "state"}))
    mine = copy.deepcopy(TINY_SPEC)
    mine["budget"]["env_steps"] = 8000
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(mine))
    assert cli.main(["resume", str(root), "--spec", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path} differs from the spec this sweep ran with: budget.env_steps: 4000 -> 8000" in err


def test_the_default_mlflow_store_is_mlflow_db_in_the_working_directory(tmp_path):
    """Docs: 'logs the sweep to `./mlflow.db`' and 'MLflow store `sqlite:///mlflow.db`' by default."""
    spec = {k: v for k, v in TINY_SPEC.items()}
    spec.pop("mlflow", None)
    root = _sweep(tmp_path / "exp", spec)
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "rlsweep.cli", "export", str(root)], cwd=work, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (work / "mlflow.db").is_file()
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'mlflow.db'}")
    (experiment,) = [e for e in client.search_experiments() if e.name != "Default"]
    assert experiment.name == "rlsweep"
    assert len(client.search_runs([experiment.experiment_id])) == 4  # the parent and a child per trial


def test_the_parent_run_carries_the_summary_metrics(tmp_path):
    """Docs: the parent run has 'summary metrics (best value, trials, errored trials, total env steps)'."""
    from mlflow import MlflowClient

    from rlsweep.analysis import load

    root = _sweep(tmp_path / "exp")
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    parent_id = load(root).to_mlflow(tracking_uri=uri, experiment="claims")
    metrics = MlflowClient(tracking_uri=uri).get_run(parent_id).data.metrics
    best = load(root).best()
    assert metrics == {
        f"best_{best.metric}": pytest.approx(best.value),
        "trials": 3,
        "errored_trials": 1,
        "env_steps_total": 4000 + 4000 + 2000,
    }


# --- claims about running sweeps (a real Ray runtime, tiny PPO trials) ----------------------------------

STEP = 200
GOOD, BAD = {"reward": 1.0, "length": 10}, {"reward": 0.0, "length": 10}


def _constant_reward_sweep(tmp_path: Path, name: str, rewards: list[dict], **sections) -> dict:
    """Trials whose return is known before they run: 10 x the env's reward per episode."""
    from tests.conftest import small_ppo

    return small_ppo(
        name, tmp_path / "results", batch=STEP, minibatch=100, epochs=1,
        env="tests.envs.constant:ConstantReward",
        search_space={"environment.env_config": {"grid": rewards}}, searcher="grid", **sections,
    )


@pytest.mark.slow
def test_a_second_run_of_the_same_spec_goes_to_a_dated_folder_and_overwrites_nothing(tmp_path, ray_runtime):
    """Docs: 'a second run of the same spec goes to `<name>-<date>`: nothing already computed is
    overwritten'."""
    import re

    import rlsweep

    spec = rlsweep.load_spec(_constant_reward_sweep(tmp_path, "twice", [GOOD], budget={"env_steps": STEP, "trials": 1}))
    first = rlsweep.run(spec, verbose=0).path
    before = {p: p.read_bytes() for p in first.rglob("*") if p.is_file()}
    second = rlsweep.run(spec, verbose=0).path
    assert first.name == "twice" and re.fullmatch(r"twice-\d{8}-\d{6}", second.name), second
    assert second.parent == first.parent
    assert {p: p.read_bytes() for p in first.rglob("*") if p.is_file()} == before
    assert len(rlsweep.load(second).trials) == 1


@pytest.mark.slow
def test_stop_thresholds_end_a_trial_at_runtime(tmp_path, ray_runtime):
    """Docs: `stop` holds 'per-trial thresholds that end a trial early: metric -> value'."""
    import rlsweep

    budget = 4 * STEP
    spec = rlsweep.load_spec(_constant_reward_sweep(
        tmp_path, "stops", [GOOD, BAD], budget={"env_steps": budget, "trials": 2}, stop={"return_mean": 5.0},
    ))
    result = rlsweep.run(spec, verbose=0)
    assert not result.interrupted and result.errored_trials == 0
    final = {t.config["environment.env_config"]["reward"]: (t.state, t.rows[-1]["env_steps"]) for t in rlsweep.load(result.path).trials}
    # GOOD returns 10 >= 5 at its first report and stops there; BAD (0) runs its whole budget.
    assert final == {1.0: ("TERMINATED", STEP), 0.0: ("TERMINATED", budget)}


@pytest.mark.slow
def test_the_time_budget_ends_the_sweep_and_it_is_not_reported_as_interrupted(tmp_path, ray_runtime, capsys):
    """Docs: `budget.time_s` is a 'wall-clock cap for the whole sweep'."""
    import time

    import rlsweep

    document = _constant_reward_sweep(
        tmp_path, "capped", [GOOD] * 12, budget={"env_steps": 50 * STEP, "trials": 12, "max_concurrent": 1, "time_s": 10},
    )
    spec = rlsweep.load_spec(document)
    start = time.monotonic()
    result = rlsweep.run(spec, verbose=0)
    took = time.monotonic() - start
    sweep = rlsweep.load(result.path)
    # Twelve trials of 10,000 env steps one at a time take minutes; the cap ended the sweep after ~10 s.
    assert took < 120, took
    assert 1 <= len(sweep.trials) < 12
    assert all(t.state == "TERMINATED" for t in sweep.trials), [t.state for t in sweep.trials]
    # The cap is the user's own limit: the sweep ended as asked, not interrupted.
    assert not result.interrupted, result.unfinished_trials


@pytest.mark.slow
def test_concurrency_is_the_clusters_cpus_over_a_trials_cpus(tmp_path, ray_runtime):
    """Docs: 'concurrency = cluster CPUs / CPUs per trial' when `budget.max_concurrent` is left out: on
    the 2-CPU runtime, 1-CPU trials run two at a time, never three."""
    from ray.tune import Callback

    import rlsweep
    from rlsweep import sweep

    running: set[str] = set()
    most: list[int] = []

    class Count(Callback):  # Tune's own start and end events, on the driver
        def on_trial_start(self, iteration, trials, trial, **info):
            running.add(trial.trial_id)
            most.append(len(running))

        def on_trial_complete(self, iteration, trials, trial, **info):
            running.discard(trial.trial_id)

    spec = rlsweep.load_spec(_constant_reward_sweep(tmp_path, "packed", [GOOD] * 3, budget={"env_steps": 4 * STEP, "trials": 3}))
    path, errored = sweep.run(spec, verbose=0, callbacks=lambda *_: [Count()])
    assert errored == 0 and len(rlsweep.load(path).trials) == 3
    assert max(most) == 2, most
