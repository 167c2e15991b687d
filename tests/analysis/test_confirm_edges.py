"""Confirmation at its edges, pinned where mutation testing found them unchecked: what a confirmation reports for a
configuration short of scores, and which run's evaluation counts as its final score."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest

from rlsweep import store
from rlsweep.analysis._confirm import CONFIRM_METRIC, ConfirmationPlan, iqm_interval, scores_from, summarize


def plan_of(*candidates: str, seeds=(1000, 1001, 1002)) -> ConfirmationPlan:
    return ConfirmationPlan(
        candidates=candidates,
        configs={c: {"training.lr": 0.001} for c in candidates},
        tuning_values={c: 100.0 for c in candidates},
        tuning_seeds={c: [7, 8] for c in candidates},
        test_seeds=tuple(seeds),
        rule="avg-last-3",
        metric="return_mean",
        episodes=10,
    )


def test_a_configuration_without_any_score_is_reported_with_its_tuning_seeds_and_no_interval():
    plan = plan_of("b", "a", "c")  # the plan's order (best tuning value first) is not the confirmation's
    result = summarize(plan, {"a": {1000: 5.0, 1001: 6.0}, "c": {1000: 3.0}}, missing={"b": ["seed 1000: never started"]})
    rows = {r["trial_id"]: r for r in result["configurations"]}
    assert rows["b"]["per_seed"] == {} and rows["b"]["missing"] == ["seed 1000: never started"]
    assert rows["a"]["tuning_seeds"] == [7, 8]
    for name in ("b", "c"):  # short of two scores: no IQM and no interval, both ends NaN (JSON null)
        assert all(math.isnan(rows[name][k]) for k in ("iqm", "ci_low", "ci_high"))
    assert result["winner"] == "a" and result["tuning_metric"] == "return_mean"
    # Ranked by IQM, those without one last; odds only between configurations that both have scores.
    assert [r["trial_id"] for r in result["configurations"]] == ["a", "b", "c"]
    assert [r["rank"] for r in result["configurations"]] == [1, 2, 3]
    assert set(rows["a"]["p_beats"]) == {"c"} and set(rows["c"]["p_beats"]) == {"a"} and rows["b"]["p_beats"] == {}


def test_nothing_scored_has_no_winner_and_equal_scores_tie_with_it():
    nothing = summarize(plan_of("a", "b"), {}, missing={})
    assert nothing["winner"] is None and nothing["ties"] == []
    # Two configurations scoring the same on every seed: intervals (10, 10) that touch at both ends are a tie.
    same = summarize(plan_of("a", "b"), {c: {1000: 10.0, 1001: 10.0, 1002: 10.0} for c in "ab"}, missing={})
    assert same["winner"] == "a" and same["ties"] == ["b"]


def test_an_interval_of_one_value_or_equal_values_is_that_value_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy warns of a degenerate sample: noise on the user's terminal
        assert iqm_interval([5.0]) == (5.0, 5.0)
        assert iqm_interval([7.0, 7.0, 7.0]) == (7.0, 7.0)


def test_the_interval_uses_the_10000_resamples_the_result_states():
    """Forty spread-out scores: the interval's ends move with the resample count (9,999 would differ)."""
    import numpy as np
    from scipy.stats import bootstrap, trim_mean

    values = [0.1 * i**1.5 for i in range(1, 41)]
    expected = bootstrap(
        (np.asarray(values),), lambda sample, axis: trim_mean(sample, 0.25, axis=axis), confidence_level=0.95,
        n_resamples=10_000, method="percentile", random_state=np.random.default_rng(0),
    ).confidence_interval
    assert iqm_interval(values) == (pytest.approx(expected.low, rel=1e-9), pytest.approx(expected.high, rel=1e-9))


def trial(trial_id: str, candidate: str, seed: int, evals: list[float], *, steps: int = 4000, state=store.TERMINATED) -> store.Trial:
    rows = tuple({"env_steps": steps * (i + 1) // len(evals), CONFIRM_METRIC: v} for i, v in enumerate(evals))
    return store.Trial(trial_id, Path("/exp") / trial_id, {store.CANDIDATE_KEY: candidate, store.TEST_SEED_KEY: seed}, rows, state)


def test_the_final_evaluation_is_the_score_and_runs_short_of_the_budget_or_errored_are_missing_with_why():
    plan = plan_of("a", seeds=(1000, 1001, 1002, 1003))
    trials = [
        trial("other", "not-a-candidate", 1000, [1.0]),  # a run of no candidate, listed first: skipped, not the end
        trial("t0", "a", 1000, [10.0, 20.0, 30.0]),
        trial("t1", "a", 1001, [10.0, 99.0], steps=2000, state=store.RUNNING),  # scored, but short of the budget
        trial("t2", "a", 1002, [10.0, 50.0], state=store.ERROR),
    ]
    scores, missing = scores_from(trials, plan, budget=4000)
    assert scores == {"a": {1000: 30.0}}
    assert missing["a"] == [
        "seed 1001: RUNNING at 2000 env steps",
        f"seed 1002: errored ({Path('/exp/t2') / store.ERROR_FILE})",
        "seed 1003: never started",
    ]



def test_with_a_known_score_range_a_failed_run_scores_the_lowest_as_in_the_held_out_stage():
    plan = plan_of("a", "b", seeds=(1000, 1001, 1002, 1003))
    trials = [
        trial("t0", "a", 1000, [10.0, 30.0]),
        trial("t1", "a", 1001, [10.0, 99.0], steps=2000, state=store.RUNNING),  # still to finish: not a failure
        trial("t2", "a", 1002, [10.0, 50.0], state=store.ERROR),
        trial("t3", "a", 1003, [10.0, 50.0], steps=2000),  # ended short of the budget
        trial("t4", "b", 1000, [10.0], state=store.ERROR),  # b finished nothing: no score, floor or not
    ]
    scores, missing = scores_from(trials, plan, budget=4000, score_range=(0.0, 500.0))
    assert scores == {"a": {1000: 30.0, 1002: 0.0, 1003: 0.0}, "b": {}}
    assert missing["a"] == [
        "seed 1001: RUNNING at 2000 env steps",
        f"seed 1002: errored ({Path('/exp/t2') / store.ERROR_FILE}); counted as the lowest score, 0 (holdout.score_range)",
        "seed 1003: TERMINATED at 2000 env steps; counted as the lowest score, 0 (holdout.score_range)",
    ]
    assert missing["b"][0] == f"seed 1000: errored ({Path('/exp/t4') / store.ERROR_FILE})"
    # A range a finished run broke does not hold for the task: failed runs are left out, as without one.
    assert scores_from(trials, plan, budget=4000, score_range=(0.0, 20.0)) == scores_from(trials, plan, budget=4000)


def test_a_run_that_diverged_has_no_final_score_though_its_last_row_reaches_the_budget():
    """Its evaluation is carried forward from before the divergence: no score of the configuration. The same
    rule scores the held-out stage's runs (rlsweep.api), so a race and a confirmation never disagree."""
    from rlsweep.analysis._confirm import final_score
    from rlsweep.metrics import DIVERGED

    diverged = trial("t0", "a", 1000, [10.0, 20.0])
    diverged = store.Trial(diverged.trial_id, diverged.path, diverged.config,
                           (*diverged.rows[:-1], {**diverged.rows[-1], DIVERGED: "loss is nan"}), store.TERMINATED)
    assert final_score(trial("t1", "a", 1000, [10.0, 20.0]), 4000) == 20.0
    assert final_score(diverged, 4000) is None
    scores, missing = scores_from([diverged], plan_of("a", seeds=(1000, 1001)), budget=4000)
    assert scores == {"a": {}} and missing["a"][0] == "seed 1000: diverged at 4000 env steps (loss is nan)"


# --- the retraining's spec and the plan it records ------------------------------------------------------------


def _plan(**changes) -> ConfirmationPlan:
    values = dict(candidates=("a", "b"), configs={"a": {"training.lr": 1e-3}, "b": {"training.lr": 3e-4}},
                  tuning_values={"a": 480.0, "b": 455.5}, tuning_seeds={"a": [3, 4], "b": [5, 6]},
                  test_seeds=(10, 11, 12), rule="avg-last-3", metric="return_mean", episodes=7)
    return ConfirmationPlan(**{**values, **changes})


def test_the_retraining_spec_is_the_sweeps_with_one_test_seed_per_trial_the_whole_budget_and_no_search():
    from rlsweep.analysis._confirm import confirmation_document

    document = {
        "name": "cp", "preset": "fast", "algorithm": "PPO", "env": "CartPole-v1",
        "config": {"training.gamma": 0.99, "debugging.seed": 3},
        "search_space": {"training.lr": {"loguniform": [1e-4, 1e-2]}, "debugging.seed": {"randint": [0, 9]}},
        "searcher": {"name": "optuna", "seed": 1}, "scheduler": {"name": "asha", "grace_env_steps": 500},
        "stop": {"return_mean": 400}, "metric": {"name": "return_mean", "mode": "max"},
        "evaluation": {"episodes": 2, "every_env_steps": 1000}, "mlflow": {"experiment": "x"},
        "seeds": {"tuning": [0, 9], "test": [10, 19], "per_trial": 3},
        "budget": {"env_steps": 2000, "trials": 8, "time_s": 60, "max_concurrent": 2},
    }
    before = repr(document)
    retrain = confirmation_document(document, _plan())
    assert retrain == {
        "name": "cp-confirm", "algorithm": "PPO", "env": "CartPole-v1",
        "config": {"training.gamma": 0.99},  # the seed is each trial's test seed, not the sweep's
        "search_space": {"training.lr": {"loguniform": [1e-4, 1e-2]}},
        "searcher": "random", "scheduler": "fifo", "stop": {},
        "metric": {"name": CONFIRM_METRIC, "mode": "max"}, "evaluation": {"episodes": 7}, "mlflow": None,
        "holdout": None,  # the retraining has no held-out stage of its own, though the stage is on by default
        "seeds": {"tuning": [0, 9], "test": [10, 19], "per_trial": 1},
        "budget": {"env_steps": 2000, "trials": 6, "max_concurrent": 2},  # 2 configurations x 3 test seeds
    }
    assert repr(document) == before  # the sweep's own document is left as it was
    # With no name, no seeds section and no time cap.
    bare = confirmation_document({"budget": {"env_steps": 500}}, _plan(candidates=("a",), test_seeds=(10,)))
    assert bare["name"] == "sweep-confirm" and bare["seeds"] == {"per_trial": 1}
    assert bare["budget"] == {"env_steps": 500, "trials": 1} and bare["config"] == {} and bare["search_space"] == {}


@pytest.mark.parametrize("aggregate", ["lcb", "min", "iqm", "median", "mean"])
def test_the_retraining_of_a_sweep_with_any_aggregate_is_a_valid_spec(aggregate):
    """A sweep of 3 seeds a trial scored by ``lcb`` (which needs two seeds) was refused at its held-out stage or
    ``confirm``, after the whole search: the retraining trains one seed a trial, where no aggregate applies."""
    import copy

    from rlsweep.analysis._confirm import confirmation_document
    from rlsweep.spec import parse_spec
    from tests.conftest import TINY_SPEC

    document = {**copy.deepcopy(TINY_SPEC), "seeds": {"per_trial": 3, "aggregate": aggregate}}
    spec, problems = parse_spec(document)
    assert spec is not None, problems  # the sweep itself is valid
    retrain, problems = parse_spec(confirmation_document(document, _plan()))
    assert problems == [] and retrain is not None and retrain.seeds.per_trial == 1
    # Nor seeds to add one at a time (seeds.adaptive needs two too): the same one-seed retraining.
    adaptive = {**document, "seeds": {"per_trial": 3, "adaptive": True, "contender_share": 0.3}}
    assert parse_spec(adaptive)[0] is not None
    assert parse_spec(confirmation_document(adaptive, _plan())) == (retrain, [])
    # One seed: the default aggregate, the same retraining as a sweep that named none.
    default, _ = parse_spec(confirmation_document({**document, "seeds": {"per_trial": 3}}, _plan()))
    assert retrain == default


def test_the_plan_records_every_field_as_plain_json():
    import json

    plan = _plan()
    recorded = json.loads(json.dumps(plan.to_dict()))
    assert recorded == {
        "candidates": ["a", "b"], "configs": {"a": {"training.lr": 1e-3}, "b": {"training.lr": 3e-4}},
        "tuning_values": {"a": 480.0, "b": 455.5}, "tuning_seeds": {"a": [3, 4], "b": [5, 6]},
        "test_seeds": [10, 11, 12], "rule": "avg-last-3", "metric": "return_mean", "episodes": 7,
    }
    # What is read back from the record is the plan that was made.
    assert ConfirmationPlan(**{**recorded, "candidates": tuple(recorded["candidates"]),
                               "test_seeds": tuple(recorded["test_seeds"])}) == plan


def _refusal(sweep, **arguments) -> tuple[str, str]:
    from rlsweep.analysis._confirm import plan_confirmation
    from rlsweep.errors import UsageError

    with pytest.raises(UsageError) as caught:
        plan_confirmation(sweep, **arguments)
    return caught.value.argument, str(caught.value).removeprefix(f"{caught.value.argument}: ")


def test_each_refusal_to_confirm_names_the_argument_to_change_and_says_why(tmp_path):
    from rlsweep.analysis import load
    from rlsweep.analysis._confirm import plan_confirmation
    from tests.conftest import TINY_SPEC
    from tests.experiments import new_experiment, write_trial

    # Five test seeds, 1000-1004; a finished, an errored, an unfinished trial and two sharing a prefix.
    root = new_experiment(tmp_path / "exp", {**TINY_SPEC, "seeds": {"tuning": [0, 99], "test": [1000, 1004]}})
    def trial(name, returns, lr, seed):
        settings = {"config": {"training.lr": lr, "debugging.seed": seed}, "seeds": [seed]}
        return write_trial(root, name, returns, config={"training.lr": lr}, settings=settings)

    trial("aaaaa_00000", [10, 20, 30, 40], 0.001, 3)
    (trial("bbbbb_00001", [10, 50, 60, 70], 0.002, 4) / store.ERROR_FILE).write_text("Failure # 1\nboom")
    trial("ccccc_00002", [10, 20], 0.003, 5)
    trial("ddddd_00003", [1, 2, 3, 4], 0.004, 6)
    trial("ddddd_00004", [1, 2, 3, 5], 0.005, 7)
    sweep = load(root)

    # Exactly the test range fits; one more does not.
    assert plan_confirmation(sweep, top=1, seeds=5).test_seeds == (1000, 1001, 1002, 1003, 1004)
    assert _refusal(sweep, top=1, seeds=6) == ("--seeds", "6 seeds do not fit in seeds.test [1000, 1004]; widen it in the spec")
    assert _refusal(sweep, top=1, seeds=1) == ("--seeds", "must be >= 2 (a confidence interval needs two values), got 1")
    assert _refusal(sweep, trials=["zzz"], seeds=2) == ("--trial", "'zzz' is not a trial of this sweep")
    assert _refusal(sweep, trials=["ddddd"], seeds=2) == ("--trial", "'ddddd' matches several trials")
    assert _refusal(sweep, trials=["bbbbb"], seeds=2) == (
        "--trial", "trial bbbbb_00001 ended in an error; confirm a trial that finished")
    assert _refusal(sweep, trials=["ccccc"], seeds=2) == (
        "--trial", "trial ccccc_00002 is RUNNING, not finished; resume the sweep first")
    # Named trials are confirmed in the order named, with what they scored in tuning under the rule.
    named = plan_confirmation(sweep, trials=["ddddd_00004", "aaaaa"], seeds=2)
    assert named == ConfirmationPlan(
        candidates=("ddddd_00004", "aaaaa_00000"),
        configs={"ddddd_00004": {"training.lr": 0.005}, "aaaaa_00000": {"training.lr": 0.001}},
        tuning_values={"ddddd_00004": (2 + 3 + 5) / 3, "aaaaa_00000": (20 + 30 + 40) / 3},
        tuning_seeds={"ddddd_00004": [7], "aaaaa_00000": [3]}, test_seeds=(1000, 1001), rule="avg-last-3",
        metric="return_mean", episodes=10,  # no evaluation section: the default number of episodes
    )
    # A trial from before rlsweep recorded its settings cannot be retrained as it ran.
    write_trial(root, "fffff_00006", [1, 2, 3, 4], config={"training.lr": 0.007})
    assert _refusal(load(root), trials=["fffff"], seeds=2) == (
        "DIR", "trial fffff_00006 recorded no settings (it ran before rlsweep recorded them)")

    # A test seed some trial trained with.
    trial("eeeee_00005", [1, 2, 3, 4], 0.006, 1001)
    assert _refusal(load(root), top=1, seeds=2) == ("--seeds", (
        "test seeds [1001] were training seeds of trial(s) ['eeeee_00005']; a configuration is confirmed on seeds "
        "no trial used: move seeds.test clear of them"))


def test_with_no_finished_trial_the_refusal_names_the_metric_and_what_to_do(tmp_path):
    from rlsweep.analysis import load
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    write_trial(root, "ccccc_00002", [10, 20], config={"training.lr": 0.003})
    assert _refusal(load(root), top=1, seeds=2) == ("DIR", (
        "no trial of this sweep finished with a value of 'return_mean': nothing to confirm (resume the sweep, or run "
        "it with a larger budget)"))


# --- reading a confirmation record back, field by field -------------------------------------------------------


def _nan_as_text(value):
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {k: _nan_as_text(v) for k, v in value.items()}
    return value


def test_a_confirmed_row_of_the_right_shape_is_read_as_written():
    from rlsweep.analysis._confirm import _confirmed_row

    row = {"trial_id": "a", "config": {"training.lr": 0.001}, "iqm": 450.0, "ci_low": 400.0, "ci_high": 480.0,
           "tuning_value": 470.0, "tuning_seeds": [3, 4], "per_seed": {"1000": 440.0, "1001": 460.0}, "missing": [],
           "p_beats": {"b": 0.75}, "rank": 3, "tie_with_winner": True}
    assert _confirmed_row(row, 0) == (row, [])  # its rank as written, not its place in the list
    # An interval of one point holds its IQM; a row without rank takes its place in the list.
    point = {"trial_id": "c", "iqm": 5.0, "ci_low": 5.0, "ci_high": 5.0, "tuning_value": 1.0}
    clean, problems = _confirmed_row(point, 4)
    assert problems == [] and (clean["ci_low"], clean["ci_high"], clean["rank"]) == (5.0, 5.0, 5)
    assert (clean["config"], clean["tuning_seeds"], clean["per_seed"], clean["missing"], clean["p_beats"]) == ({}, [], {}, [], {})
    assert clean["tie_with_winner"] is False


def test_each_wrong_field_of_a_confirmed_row_is_dropped_and_named():
    from rlsweep.analysis._confirm import _confirmed_row

    row = {"trial_id": "b", "config": ["x"], "iqm": "high", "ci_low": None, "ci_high": 480.0, "tuning_value": True,
           "tuning_seeds": [3, True, "4", 5], "per_seed": {"1000": 1.0, "-1001": 2.0, "x": 3.0, "1002": "nan", "1003": None},
           "missing": ["ok", 3], "p_beats": {"a": 0.5, "c": "n/a"}, "rank": True, "tie_with_winner": "yes"}
    clean, problems = _confirmed_row(row, 2)
    assert _nan_as_text(clean) == {
        "trial_id": "b", "config": {}, "iqm": "nan", "ci_low": "nan", "ci_high": 480.0, "tuning_value": "nan",
        "tuning_seeds": [3, 5], "per_seed": {"1000": 1.0, "-1001": 2.0}, "missing": ["ok", "3"], "p_beats": {"a": 0.5},
        "rank": 3, "tie_with_winner": False,
    }
    assert problems == [
        "configurations[2].iqm is 'high', not a number",
        "configurations[2].tuning_value is True, not a number",
        "configurations[2].missing is ['ok', 3], not a list of texts",
        "configurations[2].config is ['x'], not a mapping",
        "configurations[2].per_seed: 3 entr(ies) of the wrong kind left out",
        "configurations[2].p_beats: 1 entr(ies) of the wrong kind left out",
    ]
    # An interval that does not hold its IQM is left out; texts and mappings of the wrong type are named.
    clean, problems = _confirmed_row({"trial_id": "c", "iqm": 5.0, "ci_low": 6.0, "ci_high": 7.0, "tuning_value": 1.0,
                                      "missing": "gone", "tuning_seeds": "3", "per_seed": 3}, 1)
    assert _nan_as_text(clean) == {
        "trial_id": "c", "config": {}, "iqm": 5.0, "ci_low": "nan", "ci_high": "nan", "tuning_value": 1.0,
        "tuning_seeds": [], "per_seed": {}, "missing": ["unreadable: 'gone'"], "p_beats": {}, "rank": 2,
        "tie_with_winner": False,
    }
    assert problems == [
        "configurations[1]: the interval [6.0, 7.0] does not hold the IQM 5.0; the interval is left out",
        "configurations[1].missing is 'gone', not a list of texts",
        "configurations[1].per_seed is 3, not a mapping",
    ]
    for low, high in ((5.0, 4.0), (4.0, 4.5), (5.5, 6.0)):  # IQM 5.0 outside [low, high] at either end
        _, problems = _confirmed_row({"trial_id": "d", "iqm": 5.0, "ci_low": low, "ci_high": high, "tuning_value": 1.0}, 0)
        assert problems and "does not hold the IQM 5.0" in problems[0], (low, high)
    for low, high in ((5.0, 6.0), (4.0, 5.0)):  # at either end: held
        assert _confirmed_row({"trial_id": "d", "iqm": 5.0, "ci_low": low, "ci_high": high, "tuning_value": 1.0}, 0)[1] == []
    # Seeds that are no list are left out, not iterated.
    clean, _ = _confirmed_row({"trial_id": "e", "iqm": 1.0, "ci_low": 1.0, "ci_high": 1.0, "tuning_value": 1.0, "tuning_seeds": 7}, 0)
    assert clean["tuning_seeds"] == []
    # A row that is not a configuration at all is left out whole.
    assert _confirmed_row(["x"], 3) == (None, ["configurations[3] is ['x'], not a configuration"])
    assert _confirmed_row({"trial_id": ""}, 3) == (None, ["configurations[3] has trial_id '', not a trial's id"])
    assert _confirmed_row({"trial_id": 7}, 3) == (None, ["configurations[3] has trial_id 7, not a trial's id"])


def test_a_confirmation_file_is_read_with_each_wrong_field_dropped_and_named(tmp_path):
    import json

    from rlsweep.analysis._confirm import read_confirmation

    file = tmp_path / store.CONFIRMATION_FILE

    def read(content):
        file.write_text(content if isinstance(content, str) else json.dumps(content))
        return read_confirmation(tmp_path)

    def row(trial_id):
        return {"trial_id": trial_id, "config": {}, "iqm": 1.0, "ci_low": 0.5, "ci_high": 2.0, "tuning_value": 1.0}

    result, problems = read({"metric": 3, "winner": "zzz", "ties": ["a", 5, "zzz"], "test_seeds": [10, True, 11],
                             "created": "x", "configurations": [row("a"), row("b"), 4], "extra": 1})
    assert [r["trial_id"] for r in result["configurations"]] == ["a", "b"]
    assert {k: v for k, v in result.items() if k != "configurations"} == {
        "metric": CONFIRM_METRIC, "winner": None, "ties": ["a"], "test_seeds": [10, 11], "created": 0, "extra": 1}
    assert problems == [f"{file}: {p}" for p in (
        "configurations[2] is 4, not a configuration", f"metric is 3, not a name; read as {CONFIRM_METRIC}",
        "winner 'zzz' is none of its configurations", "ties [5, 'zzz'] are none of its configurations; dropped",
        "test_seeds is [10, True, 11], not a list of seeds")]

    result, problems = read({"configurations": [], "metric": "return_mean", "test_seeds": 5})
    assert result["test_seeds"] == [] and problems == [f"{file}: test_seeds is 5, not a list of seeds"]
    result, problems = read({"metric": "return_mean", "winner": "a", "ties": "b", "test_seeds": "10", "created": 17.5,
                             "configurations": [row("a"), row("b")]})
    assert (result["metric"], result["winner"], result["ties"], result["test_seeds"], result["created"]) == (
        "return_mean", "a", [], [], 17.5)
    assert problems == [f"{file}: ties is 'b', not a list of trial ids; read as none", f"{file}: test_seeds is '10', not a list of seeds"]
    for created in ("Infinity", "null", "true"):
        result, _ = read('{"configurations": [], "created": %s}' % created)
        assert result["created"] == 0, created
    assert read({"configurations": [], "metric": "return_mean", "winner": None}) == (  # no winner yet is no problem
        {"configurations": [], "metric": "return_mean", "winner": None, "ties": [], "test_seeds": [], "created": 0}, [])

    assert read([1]) == (None, [f"{file}: holds [1], not an object; not a confirmation rlsweep can read"])
    assert read({"configurations": 3}) == (None, [f"{file}: holds no list of configurations; not a confirmation rlsweep can read"])
    assert read("{not json") == (None, [f"{file}: is not JSON (JSONDecodeError): not a confirmation rlsweep can read"])
    file.unlink()
    assert read_confirmation(tmp_path) == (None, [])


def test_the_plan_retrains_with_the_sweeps_own_evaluation_episodes(tmp_path):
    from rlsweep.analysis import load
    from rlsweep.analysis._confirm import plan_confirmation
    from tests.conftest import TINY_SPEC
    from tests.experiments import new_experiment, write_trial

    spec = {**TINY_SPEC, "evaluation": {"episodes": 4, "every_env_steps": 1000}}
    root = new_experiment(tmp_path / "exp", spec)
    write_trial(root, "aaaaa_00000", [10, 20, 30, 40], config={"training.lr": 0.001},
                settings={"config": {"training.lr": 0.001}, "seeds": [3]})
    assert plan_confirmation(load(root), top=1, seeds=2).episodes == 4


def test_a_named_trial_without_a_value_of_the_metric_is_planned_with_nan_as_its_tuning_value(tmp_path):
    import math

    from rlsweep.analysis import load
    from rlsweep.analysis._confirm import plan_confirmation
    from tests.conftest import TINY_SPEC
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp", {**TINY_SPEC, "seeds": {"tuning": [0, 99], "test": [1000, 1004]}})
    # Finished at its budget, but every return was non-finite: no value under any rule, yet a user may name it.
    settings = {"config": {"training.lr": 0.001, "debugging.seed": 3}, "seeds": [3]}
    write_trial(root, "aaaaa_00000", [math.nan] * 4, config={"training.lr": 0.001}, settings=settings)
    plan = plan_confirmation(load(root), trials=["aaaaa"], seeds=2)
    assert plan.candidates == ("aaaaa_00000",) and math.isnan(plan.tuning_values["aaaaa_00000"])
