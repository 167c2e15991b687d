"""A real small sweep, end to end: spec -> Ray Tune + RLlib PPO -> best checkpoint -> MLflow, read back."""

from __future__ import annotations

import copy
import math

import pytest
from mlflow import MlflowClient

import rlsweep
from rlsweep.analysis import load
from tests.conftest import TINY_SPEC

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def swept(tmp_path_factory, ray_runtime):
    root = tmp_path_factory.mktemp("e2e")
    document = copy.deepcopy(TINY_SPEC)
    document["storage"] = str(root / "results")
    document["mlflow"] = {"tracking_uri": f"sqlite:///{root / 'mlflow.db'}", "experiment": "e2e"}
    spec = rlsweep.load_spec(document)
    result = rlsweep.run(spec, verbose=0)
    return spec, result


def test_every_trial_ran_and_reported_normalized_metrics(swept):
    spec, result = swept
    sweep = load(result.path)
    assert len(sweep.trials) == spec.budget.trials
    assert result.errored_trials == 0
    for trial in sweep.trials:
        assert trial.state == "TERMINATED"
        row = trial.rows[-1]
        for name in ("return_mean", "return_min", "return_max", "episode_len_mean", "episodes", "env_steps", "iteration"):
            assert name in row, name
        assert row["return_min"] <= row["return_mean"] <= row["return_max"]
        # RLlib's own keys ride along, the lean default of them (report.rllib_keys): losses, timers...
        assert "rllib/learners/default_policy/policy_loss" in row and "rllib/timers/training_iteration" in row
        # ... and not RLlib's ~70 others, nor Tune's CSV and TensorBoard copies of the rows.
        assert "rllib/env_runners/env_to_module_connector/connector_pipeline_timer" not in row
        assert sum(k.startswith("rllib/") for k in row) < 30
        assert not list(trial.path.glob("progress.csv")) and not list(trial.path.glob("events.out.tfevents*"))
        steps = [r["env_steps"] for r in trial.rows]
        assert steps == sorted(steps) and steps[0] == 1000


def test_tunes_saved_state_keeps_a_finished_trials_rows_without_rllibs_diagnostics(swept):
    # Tune's driver keeps every finished trial's last row and its kept checkpoints' rows, and saves them all
    # again in each experiment-state save; RLlib's diagnostics stay in result.json (above), not there.
    import json

    from rlsweep import store

    spec, result = swept
    (state,) = sorted(result.path.glob(store.STATE_GLOB))
    trials = json.loads(state.read_text())["trial_data"]
    assert len(trials) == spec.budget.trials
    for _, run_metadata in trials:
        last = json.loads(run_metadata)["last_result"]
        assert last["env_steps"] > 0 and spec.metric.name in last and "hp/training.lr" in last
        assert not [k for k in last if k.startswith("rllib/")], sorted(last)


def test_sample_shows_the_configs_the_sweep_tried(swept):
    spec, result = swept
    tried = sorted((t.config["training.lr"], repr(t.config["rl_module.model_config.fcnet_hiddens"])) for t in load(result.path).trials)
    shown = sorted((c["training.lr"], repr(c["rl_module.model_config.fcnet_hiddens"])) for c in rlsweep.sample(spec, spec.budget.trials))
    assert tried == shown


def test_budget_and_asha_work_in_env_steps(swept):
    spec, result = swept
    final_steps = sorted(t.rows[-1]["env_steps"] for t in load(result.path).trials)
    grace = spec.scheduler.options["grace_env_steps"]
    # Every trial gets its grace period and none runs past its budget. Whether ASHA stops any of 3 trials
    # depends on which reaches a rung first (the first one always continues), so only where a stopped
    # trial stopped is checked: at a rung, counted in env steps.
    assert final_steps[0] >= grace
    assert final_steps[-1] == spec.budget.env_steps
    assert all(steps in (grace, spec.budget.env_steps) for steps in final_steps)


def test_asha_is_built_with_env_step_rungs(tiny_spec):
    from rlsweep.schedulers import SCHEDULERS

    spec = rlsweep.load_spec(tiny_spec)
    scheduler = SCHEDULERS["asha"].build(spec)
    assert scheduler._time_attr == "env_steps" and scheduler._max_t == 4000
    assert sorted(rung[0] for rung in scheduler._brackets[0]._rungs) == [2000, 4000]


#: How far rlsweep's timings may differ from RLlib's own clocks for the same span: both time the same
#: call or block, with different clocks and a little bookkeeping in between (measured: under 1 ms).
TIMING_TOLERANCE_S = 0.02
TIMING_TOLERANCE_REL = 0.05

#: RLlib smooths its timers: reported_n = (1 - c) * reported_{n-1} + c * measured_n, with c = 0.01 (the
#: default of ``MetricsLogger.log_time`` in Ray 2.60), and reported_1 = measured_1.
RLLIB_TIMER_EMA = 0.01


def _close(ours: float, theirs: float) -> bool:
    return abs(ours - theirs) <= TIMING_TOLERANCE_S + TIMING_TOLERANCE_REL * abs(theirs)


def _rllib_measured(rows, key: str) -> list[float]:
    """RLlib's own per-iteration measurement of a timer, unsmoothed from the reported moving average."""
    measured, previous = [], None
    for row in rows:
        reported = row[key]
        measured.append(reported if previous is None else (reported - (1 - RLLIB_TIMER_EMA) * previous) / RLLIB_TIMER_EMA)
        previous = reported
    return measured


def test_timing_split_agrees_with_rllibs_own_clocks(swept):
    # Checked against clocks rlsweep does not compute: Tune's time for the whole algo.train() call
    # (time_this_iter_s), and RLlib's timers of its sampling and learner-update blocks. PPO runs one
    # training step per iteration, so each timer is measured once per iteration.
    _, result = swept
    for trial in load(result.path).trials:
        rows = trial.rows
        assert all(row["rllib/num_training_step_calls_per_iteration"] == 1 for row in rows)
        sampled = _rllib_measured(rows, "rllib/timers/env_runner_sampling_timer")
        learned = _rllib_measured(rows, "rllib/timers/learner_update_timer")
        for row, rllib_sample, rllib_learn in zip(rows, sampled, learned):
            where = (trial.trial_id, row["env_steps"])
            iteration = row["rllib/time_this_iter_s"]
            assert _close(row["iteration_time_s"], iteration), (where, row["iteration_time_s"], iteration)
            assert _close(row["sample_time_s"], rllib_sample), (where, row["sample_time_s"], rllib_sample)
            assert _close(row["learn_time_s"], rllib_learn), (where, row["learn_time_s"], rllib_learn)
            # Both phases took time, and together no more than the iteration as Tune timed it.
            assert row["sample_time_s"] > 0 and row["learn_time_s"] > 0 and row["other_time_s"] >= 0, where
            assert row["sample_time_s"] + row["learn_time_s"] <= iteration + TIMING_TOLERANCE_S, where


def test_best_is_the_best_scoring_trial_and_checkpoint(swept):
    spec, result = swept
    sweep = load(result.path)
    best = sweep.best(rule="max")
    best_values = {t.trial_id: max(t.values("return_mean")) for t in sweep.trials}
    assert best.value == max(best_values.values())
    assert best_values[best.trial_id] == best.value
    trial = next(t for t in sweep.trials if t.trial_id == best.trial_id)
    assert 1 <= len(trial.checkpoints) <= spec.checkpoint.keep
    kept = {c.path: c.metrics["return_mean"] for c in trial.checkpoints}
    assert best.checkpoint in kept and kept[best.checkpoint] == max(kept.values())
    assert (best.checkpoint / "rllib_checkpoint.json").exists()
    assert result.best is not None and result.best.rule == "avg-last-3"


def test_python_api_best_gives_config_value_checkpoint(swept):
    _, result = swept
    best = load(result.path).best()
    assert set(best.config) == {"training.lr", "rl_module.model_config.fcnet_hiddens"}
    assert best.config["rl_module.model_config.fcnet_hiddens"] in ([16], [32, 32])
    assert math.isfinite(best.value) and best.checkpoint is not None


def test_mlflow_export_is_complete_and_idempotent(swept):
    spec, result = swept
    sweep = load(result.path)
    client = MlflowClient(tracking_uri=spec.mlflow.tracking_uri)
    experiment = client.get_experiment_by_name("e2e")

    def runs():
        return client.search_runs([experiment.experiment_id], max_results=1000)

    first = runs()
    again = sweep.to_mlflow()
    second = runs()
    assert again == result.mlflow_run_id
    assert sorted(r.info.run_id for r in first) == sorted(r.info.run_id for r in second)

    parents = [r for r in second if r.data.tags.get("rlsweep.kind") == "sweep"]
    children = [r for r in second if r.data.tags.get("rlsweep.kind") == "trial"]
    assert len(parents) == 1 and len(children) == len(sweep.trials)
    parent = parents[0]
    assert parent.info.run_name == spec.name and parent.info.status == "FINISHED"
    assert parent.data.tags["rlsweep.searcher"] == "optuna"
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"spec.yaml", "best_config.yaml"} <= artifacts

    by_id = {t.trial_id: t for t in sweep.trials}
    for child in children:
        trial = by_id[child.data.tags["rlsweep.trial_id"]]
        assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert child.info.status == "FINISHED"
        assert child.data.params["training.lr"] == repr(trial.config["training.lr"])
        # What an iteration is, and rlsweep's defaults, are recorded too (as tags beside the draw's params):
        # nothing hides in a default.
        assert child.data.tags["rlsweep.setting.reporting.min_time_s_per_iteration"] == "0"
        assert child.data.tags["rlsweep.setting.env_runners.num_env_runners"] == "0"
        history = client.get_metric_history(child.info.run_id, "return_mean")
        assert [m.step for m in history] == [r["env_steps"] for r in trial.rows]
        assert [m.value for m in history] == pytest.approx([r["return_mean"] for r in trial.rows])


def test_run_refuses_a_trial_larger_than_the_cluster(ray_runtime, tiny_spec):
    tiny_spec["config"] = {**tiny_spec["config"], "env_runners.num_env_runners": 3}
    tiny_spec["ray"] = {"num_cpus": 8}  # passes the local check; the real 2-CPU runtime does not fit it
    spec = rlsweep.load_spec(tiny_spec)
    with pytest.raises(rlsweep.SpecError) as info:
        rlsweep.run(spec, verbose=0)
    assert "one trial needs 4 CPUs" in str(info.value) and "has 2" in str(info.value)
