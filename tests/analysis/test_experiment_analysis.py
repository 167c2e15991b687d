"""The experiment directory stays a Ray Tune experiment: Ray's ExperimentAnalysis reads it with rlsweep's
metric names and picks the same best checkpoint as ``best(rule="max")``; the ``eval`` rule re-evaluates."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import rlsweep
from rlsweep.analysis import load
from tests.conftest import small_ppo

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, ray_runtime):
    root = tmp_path_factory.mktemp("ea")
    # Six checkpoints per trial, two kept: pruning decides which survive.
    spec = rlsweep.load_spec(
        small_ppo(
            "ea",
            root / "results",
            batch=250,
            searcher={"name": "random", "seed": 1},
            budget={"env_steps": 1500, "trials": 3},
            checkpoint={"every_env_steps": 250, "keep": 2},
        )
    )
    return load(rlsweep.run(spec, verbose=0).path)


def test_ray_experiment_analysis_picks_the_same_best_checkpoint_as_best_max(sweep):
    analysis = sweep.experiment_analysis
    assert len(analysis.trials) == len(sweep.trials) == 3
    trial = analysis.get_best_trial(metric="return_mean", mode="max", scope="all")
    checkpoint = analysis.get_best_checkpoint(trial, metric="return_mean", mode="max")
    best = sweep.best(rule="max")
    assert best.trial_id == trial.trial_id
    assert Path(checkpoint.path) == best.checkpoint
    # The normalized names are Tune's columns too.
    frame = analysis.dataframe(metric="return_mean", mode="max")
    assert {"return_mean", "env_steps", "sample_time_s"} <= set(frame.columns)


def test_latest_checkpoint_is_the_newest_on_disk_whatever_tune_calls_last(sweep):
    # Measured trap: with a score attribute and pruning, Tune's get_last_checkpoint returned checkpoint 4
    # of a trial whose checkpoint 5 (the budget) was on disk, because 4 scored better. rlsweep's latest is
    # by env steps.
    analysis = sweep.experiment_analysis
    for trial in sweep.trials:
        latest = trial.latest_checkpoint
        assert latest is not None and latest.env_steps == 1500
        tune_trial = next(t for t in analysis.trials if t.trial_id == trial.trial_id)
        tune_last = analysis.get_last_checkpoint(tune_trial)
        steps = {c.path: c.env_steps for c in trial.checkpoints}
        assert steps[Path(tune_last.path)] <= latest.env_steps


def test_the_eval_rule_re_evaluates_the_top_trials_on_fresh_seeds(sweep):
    best = sweep.best(rule="eval")
    assert best.rule == "eval" and best.metric == "eval_return_mean"
    top3 = {b.trial_id for b in sweep.ranked("avg-last-3")[:3]}
    assert best.trial_id in top3
    assert math.isfinite(best.value) and best.checkpoint is not None
    ranked = sweep.ranked("eval")
    assert [b.value for b in ranked] == sorted((b.value for b in ranked), reverse=True)
