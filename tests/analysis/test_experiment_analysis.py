"""The experiment directory stays a Ray Tune experiment: Ray's ExperimentAnalysis reads it with rlsweep's
metric names and picks the same best checkpoint as ``best(rule="max")``; the latest checkpoint is the
newest on disk; the ``eval`` rule re-evaluates exactly the top 3 trials."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import rlsweep
from rlsweep.analysis import load
from tests.conftest import small_ppo

pytestmark = pytest.mark.slow

BUDGET = 1000
TRIALS = 4


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, ray_runtime):
    root = tmp_path_factory.mktemp("ea")
    # Four checkpoints per trial, two kept: pruning decides which survive. Four trials: more than the eval
    # rule's 3 candidates, so a wrong candidate set shows.
    spec = rlsweep.load_spec(
        small_ppo(
            "ea",
            root / "results",
            batch=250,
            epochs=1,
            searcher={"name": "random", "seed": 1},
            budget={"env_steps": BUDGET, "trials": TRIALS},
            checkpoint={"every_env_steps": 250, "keep": 2},
        )
    )
    return load(rlsweep.run(spec, verbose=0).path)


def test_ray_experiment_analysis_picks_the_same_best_checkpoint_as_best_max(sweep):
    analysis = sweep.experiment_analysis
    assert len(analysis.trials) == len(sweep.trials) == TRIALS
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
    # the newest: checked against what Tune wrote, not against how rlsweep orders its records.
    analysis = sweep.experiment_analysis
    for trial in sweep.trials:
        latest = trial.latest_checkpoint
        assert latest is not None
        # Tune numbers checkpoint folders in the order they were saved: the newest has the highest index.
        on_disk = sorted(p.name for p in trial.path.glob("checkpoint_*"))
        # checkpoint.keep 2: the best 2 by the metric, plus the latest when it is not among them.
        assert 2 <= len(on_disk) <= 3 and latest.path.name == on_disk[-1], (on_disk, latest.path)
        # The trial's last result carried the checkpoint at the budget, and Tune recorded its folder.
        last = trial.rows[-1]
        assert last["env_steps"] == BUDGET and last["checkpoint_dir_name"] == latest.path.name
        assert latest.env_steps == BUDGET
        tune_trial = next(t for t in analysis.trials if t.trial_id == trial.trial_id)
        tune_last = analysis.get_last_checkpoint(tune_trial)
        assert Path(tune_last.path).name in on_disk


def _avg_last_3(trial) -> float:
    values = [row["return_mean"] for row in trial.rows if math.isfinite(row["return_mean"])]
    return sum(values[-3:]) / len(values[-3:])


def test_the_eval_rule_re_evaluates_exactly_the_top_3_trials(sweep):
    # The candidates, from the histories on disk: the 3 best trials by the mean of their last 3 reports.
    by_score = sorted(sweep.trials, key=_avg_last_3, reverse=True)
    top3 = {t.trial_id for t in by_score[:3]}
    assert _avg_last_3(by_score[2]) > _avg_last_3(by_score[3]), "a tie at the cut: the top 3 are not defined"

    ranked = sweep.ranked("eval")
    assert {b.trial_id for b in ranked} == top3
    assert all(b.rule == "eval" and b.metric == "eval_return_mean" and math.isfinite(b.value) for b in ranked)
    assert [b.value for b in ranked] == sorted((b.value for b in ranked), reverse=True)
    best = sweep.best(rule="eval")
    assert best.trial_id == ranked[0].trial_id and best.value == max(b.value for b in ranked)
    # Each candidate is re-run from its best checkpoint under avg-last-3.
    by_default = {b.trial_id: b.checkpoint for b in sweep.ranked("avg-last-3")}
    assert all(b.checkpoint == by_default[b.trial_id] and b.checkpoint is not None for b in ranked)
