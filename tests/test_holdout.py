"""The held-out stage's core: the runs a share affords, the race it plans, the race's decisions on score
tables whose right answer is known, and the winner's interval against scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rlsweep.holdout import (
    Race,
    Stage,
    holdout_interval,
    known_floor,
    outside_range,
    plan_race,
    race_budget,
)
from rlsweep.errors import SpecError, SweepError

TEST = (1000, 1999)
#: Skewed like Acrobot: mostly solved near -90, a few seeds at -500 (mean, median and IQM all differ).
SKEWED = [-500.0, -91.0, -84.0, -80.0, -470.0, -97.0, -88.0]


def plan(ranked="abcd", runs=8, **kwargs):
    """A plan that races from 4 runs on and leaves the winner at least 3 seeds, as the planner's tables here
    assume (the default races from 10 and leaves 6)."""
    kwargs.setdefault("race_from_runs", 4)
    kwargs.setdefault("min_seeds", 3)
    return plan_race(list(ranked), runs, test_range=kwargs.pop("test_range", TEST), env_steps=50_000, **kwargs)


def run_out(race, table, done=None):
    """Drive the race to its end, taking each run's value from ``table[candidate][seed index]``."""
    done = dict(done or {})
    for _ in range(100):  # a race that asks for runs it has already got would go on forever
        if race.finished(done):
            return done
        runs = race.next_runs(done)
        assert runs, "a race that is not finished and has nothing pending must name runs"
        assert not set(runs) & set(done), f"asks again for runs it has: {sorted(set(runs) & set(done))}"
        for candidate, seed in runs:
            done[(candidate, seed)] = table[candidate][seed - TEST[0]]
    raise AssertionError("the race did not finish in 100 rounds of runs")


# -- the budget -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("share", "trials", "per_trial", "runs"),
    [(0.3, 10, 1, 3), (0.2, 14, 1, 2), (0.2, 15, 1, 3), (0.29, 100, 1, 29), (0.25, 10, 3, 7), (0.1, 9, 1, 0), (0.5, 1, 2, 1)],
)
def test_the_budget_is_the_share_of_the_sweeps_seed_runs_rounded_down(share, trials, per_trial, runs):
    assert race_budget(share, trials, per_trial) == runs
    assert race_budget(share, trials, per_trial, max_runs=runs) == runs and race_budget(share, trials, per_trial, max_runs=2) == min(runs, 2)


@pytest.mark.parametrize("share", [0.0, 1.0, -0.1, 1.5])
def test_a_share_of_nothing_or_everything_is_refused_with_its_path(share):
    with pytest.raises(SpecError) as caught:
        race_budget(share, 20, 1)
    assert [p.path for p in caught.value.problems] == ["holdout.share"]
    assert str(share) in caught.value.problems[0].message


def test_no_trials_or_seeds_are_refused_together():
    with pytest.raises(SpecError) as caught:
        race_budget(0.2, 0, 0)
    assert [p.path for p in caught.value.problems] == ["budget.trials", "seeds.per_trial"]


# -- the plan ---------------------------------------------------------------------------------------------


def test_runs_at_the_winners_least_seeds_are_one_config_on_them_and_one_fewer_is_refused():
    at_bound = plan(runs=3)
    assert at_bound.candidates == ("a",) and at_bound.stages == (Stage(1, 3),)
    with pytest.raises(SpecError) as caught:
        plan(runs=2)
    (problem,) = caught.value.problems
    assert problem.path == "holdout.share"
    assert problem.message == (
        "affords 2 runs of 50000 env steps; the held-out estimate needs at least 3; raise holdout.share or budget.trials"
    )
    assert plan(runs=2, min_seeds=2).stages == (Stage(1, 2),)


@pytest.mark.parametrize(
    ("runs", "stages"),
    [
        (4, [(2, 1), (1, 3)]),
        (5, [(2, 2), (1, 3)]),
        (6, [(3, 1), (2, 2), (1, 3)]),
        (7, [(3, 1), (2, 2), (1, 4)]),
        (8, [(4, 1), (2, 2), (1, 4)]),
        (10, [(4, 1), (2, 2), (1, 6)]),
        (12, [(4, 1), (2, 2), (1, 8)]),
        (16, [(4, 2), (2, 4), (1, 8)]),
        (20, [(4, 2), (2, 4), (1, 12)]),
        (30, [(4, 3), (2, 6), (1, 18)]),
    ],
)
def test_the_planner_enters_as_many_as_fit_then_grows_the_first_round_and_gives_the_rest_to_the_winner(runs, stages):
    made = plan("abcdefgh", runs=runs)
    assert [(s.candidates, s.seeds) for s in made.stages] == stages
    assert made.candidates == tuple("abcdefgh"[: stages[0][0]])
    assert made.planned_runs == runs and made.runs == runs and made.eta == 2
    assert made.test_seeds == tuple(range(1000, 1000 + stages[-1][1]))


def test_two_configs_whose_first_round_holds_the_winners_seeds_race_one_round():
    assert [(s.candidates, s.seeds) for s in plan("ab", runs=12).stages] == [(2, 6), (1, 6)]
    race = Race(plan("ab", runs=12))
    done = run_out(race, {"a": [-100.0] * 6, "b": [-90.0] * 6})
    assert race.result(done).winner == "b" and race.result(done).runs == 12


def test_below_the_runs_a_race_needs_the_best_config_takes_them_all():
    made = plan_race(list("abcdefgh"), 9, test_range=TEST, env_steps=1)
    assert made.candidates == ("a",) and made.stages == (Stage(1, 9),)
    made = plan_race(list("abcdefgh"), 10, test_range=TEST, env_steps=1)
    assert made.candidates == tuple("abcd") and made.stages == (Stage(4, 1), Stage(2, 2), Stage(1, 6))


def test_the_winner_keeps_its_share_of_the_runs_before_more_configs_enter():
    def stages(runs, **kwargs):
        return [(s.candidates, s.seeds) for s in plan("abcdefgh", runs=runs, **kwargs).stages]

    # without a share, 7 enter 15 runs and the winner ends with 4 seeds; with half, 4 enter and it has 11
    assert stages(15, max_candidates=8, winner_share=0) == [(7, 1), (4, 2), (2, 4), (1, 4)]
    assert stages(15, max_candidates=8) == [(4, 1), (2, 2), (1, 11)]
    assert stages(15, winner_share=0) == [(4, 2), (2, 4), (1, 7)]
    # 0.7 of 6 runs is 4.2, rounded up to 5: one round of two, then the winner's four more
    assert stages(6, winner_share=0.7) == [(2, 1), (1, 5)]
    # 0.56 of 25 runs is 14, not 14.000000000000002 rounded up to 15 (which would leave room for 6 entrants)
    assert stages(25, winner_share=0.56, max_candidates=8) == [(7, 1), (4, 2), (2, 4), (1, 14)]
    assert stages(8, winner_share=1) == [(1, 8)]


def test_without_a_cap_more_enter_and_a_halving_rate_of_three_keeps_a_third():
    def stages(runs, ranked="abcdefgh", **kwargs):
        return [(s.candidates, s.seeds) for s in plan(ranked, runs=runs, max_candidates=None, winner_share=0, **kwargs).stages]

    assert stages(16) == [(8, 1), (4, 2), (2, 4), (1, 4)]
    # 8 entrants need 16 runs; with 14, 6 enter (6 + 3 + 2 * 2 + 1)
    assert stages(14) == [(6, 1), (3, 2), (2, 4), (1, 5)]
    assert stages(17, "abcdefghi", eta=3) == [(9, 1), (3, 3), (1, 5)]
    assert plan("ab", runs=20, max_candidates=None).candidates == ("a", "b")


def test_the_winners_least_seeds_decide_when_a_second_config_can_enter():
    assert plan(runs=4, min_seeds=4).candidates == ("a",)
    assert plan(runs=5, min_seeds=4).stages == (Stage(2, 1), Stage(1, 4))


def test_test_seeds_beyond_the_test_range_are_refused_with_its_path():
    assert plan(runs=8, test_range=(1000, 1003)).test_seeds == (1000, 1001, 1002, 1003)
    with pytest.raises(SpecError) as caught:
        plan(runs=8, test_range=(1000, 1002))
    (problem,) = caught.value.problems
    assert problem.path == "seeds.test" and "needs 4 test seeds" in problem.message and "holds 3" in problem.message


def test_a_test_seed_the_search_trained_with_is_refused():
    with pytest.raises(SpecError) as caught:
        plan(runs=8, tuning_seeds={5, 1003})
    assert caught.value.problems[0].path == "seeds.test" and "[1003]" in caught.value.problems[0].message
    assert plan(runs=8, tuning_seeds={5, 1004}).test_seeds[-1] == 1003


def test_impossible_race_settings_are_refused_together_with_their_paths():
    with pytest.raises(SpecError) as caught:
        plan(eta=1, min_seeds=1, max_candidates=0, winner_share=1.5)
    assert [str(p) for p in caught.value.problems] == [
        "holdout.eta: must be >= 2 (the race keeps 1/eta of its candidates each round), got 1",
        "holdout.min_seeds: must be >= 2 (an interval needs two values), got 1",
        "holdout.max_candidates: must be >= 1, got 0",
        "holdout.winner_share: must be between 0 and 1, got 1.5",
    ]
    with pytest.raises(SpecError, match="holdout.winner_share: must be between 0 and 1, got -0.1"):
        plan(winner_share=-0.1)
    assert plan(eta=2, min_seeds=2, max_candidates=1).candidates == ("a",)


def test_nothing_to_race_is_a_sweep_error_and_a_repeated_candidate_a_mistake():
    with pytest.raises(SweepError, match="^no trial finished with a value: there is no configuration to retrain"):
        plan("", runs=8)
    with pytest.raises(ValueError, match="distinct"):
        plan("aab", runs=8)


def test_the_plan_carries_each_entrants_tuning_value():
    made = plan(runs=8, tuning_values={"a": -80.0, "b": -95.0})
    assert made.tuning_values["a"] == -80.0 and made.tuning_values["b"] == -95.0 and math.isnan(made.tuning_values["c"])


# -- the race ---------------------------------------------------------------------------------------------

#: Four entrants, 8 runs: all on seed 1000; the better two on 1001; the winner on 1002 and 1003.
TABLE = {
    "a": [-300.0, -90.0, -90.0, -90.0],
    "b": [-100.0, -500.0, -80.0, -80.0],
    "c": [-200.0, -150.0, -120.0, -60.0],
    "d": [-400.0, -10.0, -10.0, -10.0],  # dropped after seed 1000, the best on every later one
}


def test_the_race_keeps_the_better_half_each_round_and_never_revisits_a_dropped_config():
    race = Race(plan(runs=8, tuning_values={"a": -50.0, "b": -60.0, "c": -70.0, "d": -75.0}))
    assert race.next_runs({}) == [("a", 1000), ("b", 1000), ("c", 1000), ("d", 1000)]
    # d's later seeds are there, and would win: the race does not look at them.
    done = run_out(race, TABLE, {("d", 1001): -10.0, ("d", 1002): -10.0})
    assert race.next_runs(done) == []
    result = race.result(done)
    assert result.winner == "c"
    dropped = {c.candidate: c.dropped_in for c in result.candidates}
    assert dropped == {"a": 0, "d": 0, "b": 1, "c": None}
    assert result.seeds == (1000, 1001, 1002, 1003)
    assert result.held_out_iqm == pytest.approx(stats.trim_mean(TABLE["c"], 0.25))
    assert result.tuning_value == -70.0
    assert result.runs == 8
    by_id = {c.candidate: c for c in result.candidates}
    assert by_id["d"].values == {1000: -400.0}
    assert by_id["b"].values == {1000: -100.0, 1001: -500.0}
    assert by_id["b"].scores == (-100.0, -300.0) and by_id["c"].scores == (-200.0, -175.0)
    assert [c.tuning_rank for c in result.candidates] == [1, 2, 3, 4]
    assert [c.tuning_value for c in result.candidates] == [-50.0, -60.0, -70.0, -75.0]
    assert result.method == "t_prediction_selected"
    half = stats.t.ppf(1 - 0.05 / 8, 3) * np.std(TABLE["c"], ddof=1) * math.sqrt(1 / 4 + 1 / 10)
    assert result.interval == pytest.approx((np.mean(TABLE["c"]) - half, np.mean(TABLE["c"]) + half))


def test_a_round_waits_for_its_results_and_names_only_what_is_neither_done_nor_started():
    race = Race(plan(runs=8))
    first = {("a", 1000): -300.0, ("b", 1000): -100.0, ("c", 1000): -200.0}
    assert race.next_runs(first) == [("d", 1000)]
    assert race.next_runs(first, pending={("d", 1000)}) == []
    assert not race.finished(first)
    with pytest.raises(ValueError, match="not finished: round 0 waits for 1"):
        race.result(first)
    second = {**first, ("d", 1000): -400.0}
    assert race.next_runs(second) == [("b", 1001), ("c", 1001)]
    assert race.next_runs(second, pending={("b", 1001)}) == [("c", 1001)]


def test_a_tie_goes_to_the_better_tuning_rank():
    table = {"a": [-100.0, -100.0, -100.0], "b": [-100.0, 0.0, 0.0]}
    assert Race(plan("ab", runs=4)).result(run_out(Race(plan("ab", runs=4)), table)).winner == "a"
    flipped = Race(plan("ba", runs=4))
    assert flipped.result(run_out(flipped, table)).winner == "b"


def test_a_failed_run_counts_as_the_worst_value_for_the_decision():
    race = Race(plan("ab", runs=4))
    done = run_out(race, {"a": [None, -90.0, -90.0], "b": [-499.0, -90.0, -90.0]})
    result = race.result(done)
    assert result.winner == "b"
    assert {c.candidate: c.values for c in result.candidates}["a"] == {1000: None}
    nan_run = Race(plan("ab", runs=4))
    assert nan_run.result(run_out(nan_run, {"a": [math.nan, 0.0, 0.0], "b": [-499.0, 0.0, 0.0]})).winner == "b"


def test_the_winners_failed_run_counts_as_the_lowest_score_where_the_range_is_known_and_is_named_where_not():
    table = {"a": [-90.0, None, -80.0, -70.0]}
    known = Race(plan("a", runs=4, score_range=(-500.0, 0.0)))
    result = known.result(run_out(known, table))
    assert result.failed == (1001,)
    assert result.held_out_iqm == pytest.approx(stats.trim_mean([-90.0, -500.0, -80.0, -70.0], 0.25))
    unknown = Race(plan("a", runs=4))
    result = unknown.result(run_out(unknown, table))
    assert result.failed == (1001,)
    assert result.held_out_iqm == pytest.approx(-80.0)
    assert result.interval == holdout_interval([-90.0, -80.0, -70.0], entrants=1)


def test_a_score_range_holds_until_a_finished_score_lies_outside_it_and_a_failed_runs_nan_says_nothing():
    # The rule the stage's answer, the progress view, the dropped entrants' ranking and confirm all share.
    scores = {("a", 1): -90.0, ("a", 2): math.nan, ("b", 1): None, ("b", 2): -math.inf}
    assert outside_range((-500.0, 0.0), scores) == []
    assert known_floor((-500.0, 0.0), scores) == -500.0
    scores |= {("c", 1): 12.5, ("b", 3): -600.0}
    assert outside_range((-500.0, 0.0), scores) == [(("b", 3), -600.0), (("c", 1), 12.5)]
    assert known_floor((-500.0, 0.0), scores) is None
    assert known_floor((-500.0, 0.0), {("a", 1): 0.0, ("a", 2): -500.0}) == -500.0  # the ends are inside
    assert known_floor(None, {("a", 1): -90.0}) is None and outside_range(None, {("a", 1): 1e9}) == []


def test_a_winner_whose_test_seeds_all_scored_the_same_is_reported_with_an_interval_to_its_tuning_value():
    race = Race(plan("a", runs=4, tuning_values={"a": -76.2}))
    result = race.result(run_out(race, {"a": [-500.0] * 4}))
    assert result.held_out_iqm == -500.0 and result.interval == (-500.0, -76.2)


def test_a_winner_with_one_finished_run_has_no_interval():
    race = Race(plan("a", runs=2, min_seeds=2))
    result = race.result(run_out(race, {"a": [-90.0, None]}))
    assert result.held_out_iqm == -90.0 and all(math.isnan(x) for x in result.interval)


def test_the_same_results_give_the_same_decisions_in_any_order():
    made = plan("abcdefgh", runs=12, max_candidates=None)
    rng = np.random.default_rng(3)
    table = {c: list(rng.choice([-500.0, -90.0, -85.0], size=10)) for c in "abcdefgh"}
    done = run_out(Race(made), table)
    backwards = dict(reversed(list(done.items())))
    first, second = Race(made).result(done), Race(made).result(backwards)
    assert first == second
    assert Race(made).next_runs({}) == Race(made).next_runs({})


def test_an_unknown_interval_method_is_refused_when_the_race_is_made():
    with pytest.raises(ValueError, match="unknown interval method 'wilson'"):
        Race(plan(), method="wilson")


# -- the interval -----------------------------------------------------------------------------------------


def test_the_t_prediction_interval_is_scipys_for_a_ten_seed_mean():
    data = np.array(SKEWED)
    n = len(data)
    half = stats.t.ppf(0.975, n - 1) * data.std(ddof=1) * math.sqrt(1 / n + 1 / 10)
    assert holdout_interval(SKEWED, method="t_prediction") == pytest.approx((data.mean() - half, data.mean() + half))
    half_5 = stats.t.ppf(0.975, n - 1) * data.std(ddof=1) * math.sqrt(1 / n + 1 / 5)
    low, high = holdout_interval(SKEWED, method="t_prediction", future_seeds=5)
    assert (low, high) == pytest.approx((data.mean() - half_5, data.mean() + half_5))


def test_the_selection_widened_interval_takes_the_t_quantile_at_the_entrants_bonferroni_level():
    data = np.array(SKEWED)
    n = len(data)
    half = stats.t.ppf(1 - 0.05 / 8, n - 1) * data.std(ddof=1) * math.sqrt(1 / n + 1 / 10)
    got = holdout_interval(SKEWED, method="t_prediction_selected", entrants=4)
    assert got == pytest.approx((data.mean() - half, data.mean() + half))
    assert holdout_interval(SKEWED, method="t_prediction_selected", entrants=1) == holdout_interval(SKEWED, method="t_prediction")


def test_the_interval_is_clipped_to_the_score_range():
    spread = [-500.0, -500.0, -90.0, -85.0, -80.0]
    wide = holdout_interval(spread, method="t_prediction")
    assert wide[0] < -500 and wide[1] > 0
    assert holdout_interval(spread, method="t_prediction", score_range=(-500.0, 0.0)) == (-500.0, 0.0)
    assert holdout_interval(spread, method="t_prediction", score_range=(-550.0, 0.0)) == (-550.0, 0.0)
    assert holdout_interval(spread, method="t_prediction", score_range=(-1000.0, 50.0)) == (wide[0], 50.0)
    # Four runs that all failed at the floor have no spread: the interval reaches to the configuration's one
    # other run, its tuning value (a zero-width interval at -500 would claim every future seed fails too).
    assert holdout_interval([-500.0] * 4, tuning_value=-80.0) == (-500.0, -80.0)
    assert holdout_interval([-500.0] * 4, tuning_value=-80.0, score_range=(-450.0, 0.0)) == (-450.0, -80.0)
    assert holdout_interval([-500.0] * 4) == holdout_interval([-500.0] * 4, tuning_value=math.nan) == (-500.0, -500.0)
    inside = holdout_interval([-100.0, -90.0, -95.0], method="t_prediction", score_range=(-500.0, 0.0))
    assert inside == holdout_interval([-100.0, -90.0, -95.0], method="t_prediction")
    # a range the whole interval lies above or below pins both ends to that side
    assert holdout_interval([-100.0, -90.0, -95.0], score_range=(0.0, 500.0)) == (0.0, 0.0)
    assert holdout_interval([-100.0, -90.0, -95.0], score_range=(-500.0, -400.0)) == (-400.0, -400.0)


@pytest.mark.parametrize("sample", [SKEWED, [*SKEWED, -120.0, -300.0, -75.0, -95.0, -410.0]])
def test_the_percentile_bootstrap_is_scipys_with_the_same_generator(sample):
    # scipy draws its resamples as rng.integers(n, size=(resamples, n)) too, so seeded alike they agree exactly
    ours = holdout_interval(sample, method="bootstrap")
    theirs = stats.bootstrap(
        (np.array(sample),), lambda s, axis: stats.trim_mean(s, 0.25, axis=axis), confidence_level=0.95,
        n_resamples=10_000, method="percentile", random_state=np.random.default_rng(0),
    ).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), rel=1e-12)
    assert ours != holdout_interval(SKEWED, method="t_prediction")


def test_the_predictive_bootstrap_spans_where_ten_seed_iqms_of_the_sample_fall():
    # 10-seed IQMs drawn straight from the sample: the predictive interval holds their middle 95% and is
    # wider than the interval of the IQM itself, which leaves the future seeds' noise out.
    rng = np.random.default_rng(7)
    future = stats.trim_mean(rng.choice(SKEWED, size=(20_000, 10)), 0.25, axis=1)
    low, high = holdout_interval(SKEWED, method="predictive_bootstrap")
    assert low <= np.quantile(future, 0.025) + 1 and high >= np.quantile(future, 0.975) - 1
    narrow = holdout_interval(SKEWED, method="bootstrap")
    assert high - low > narrow[1] - narrow[0]
    assert holdout_interval(SKEWED, method="predictive_bootstrap") == (low, high)


def test_a_sample_that_does_not_vary_is_its_own_interval_and_too_few_values_are_refused():
    assert holdout_interval([-500.0, -500.0, -500.0]) == (-500.0, -500.0)
    with pytest.raises(ValueError, match="at least 2 finite values"):
        holdout_interval([-90.0])
    with pytest.raises(ValueError, match="at least 2 finite values"):
        holdout_interval([-90.0, math.nan])
    with pytest.raises(ValueError, match="at least 2 finite values"):
        holdout_interval([-90.0, None])
    with pytest.raises(ValueError, match="unknown interval method"):
        holdout_interval(SKEWED, method="wald")


def test_the_winners_interval_predicts_its_future_seeds_at_the_entrants_level_within_the_score_range():
    race = Race(plan(runs=8, score_range=(-500.0, 0.0)), method="t_prediction_selected", future_seeds=5)
    result = race.result(run_out(race, TABLE))
    assert result.winner == "c" and result.method == "t_prediction_selected"
    values = np.array(TABLE["c"])
    half = stats.t.ppf(1 - 0.05 / 8, 3) * values.std(ddof=1) * math.sqrt(1 / 4 + 1 / 5)
    assert values.mean() + half > 0  # the range's top clips it
    assert result.interval == pytest.approx((values.mean() - half, 0.0))


def test_the_race_reports_the_interval_of_the_method_it_was_given():
    race = Race(plan(runs=8), method="t_prediction")
    result = race.result(run_out(race, TABLE))
    values = np.array(TABLE["c"])
    half = stats.t.ppf(0.975, 3) * values.std(ddof=1) * math.sqrt(1 / 4 + 1 / 10)
    assert result.method == "t_prediction"
    assert result.interval == pytest.approx((values.mean() - half, values.mean() + half))


def test_a_race_whose_last_round_waits_is_not_finished():
    race = Race(plan(runs=8))
    done = run_out(race, TABLE)
    del done[("c", 1003)]
    assert not race.finished(done) and race.next_runs(done) == [("c", 1003)]
    with pytest.raises(ValueError, match="not finished: round 2 waits for 1"):
        race.result(done)


def test_a_winner_with_two_runs_has_an_interval_and_one_whose_every_run_failed_has_no_estimate():
    import warnings

    two = Race(plan("a", runs=2, min_seeds=2))
    result = two.result(run_out(two, {"a": [-90.0, -80.0]}))
    assert result.interval == holdout_interval([-90.0, -80.0])
    failed = Race(plan("a", runs=2, min_seeds=2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning from an IQM of nothing
        result = failed.result(run_out(failed, {"a": [None, None]}))
    assert math.isnan(result.held_out_iqm) and result.failed == (1000, 1001)
    # A known floor stands in for failed runs beside finished ones, not for a winner that finished none.
    floored = Race(plan("a", runs=2, min_seeds=2, score_range=(-500.0, 0.0)))
    result = floored.result(run_out(floored, {"a": [None, None]}))
    assert math.isnan(result.held_out_iqm) and all(math.isnan(v) for v in result.interval)


def test_two_values_make_an_interval_and_a_repeated_value_is_exactly_itself():
    low, high = holdout_interval([-90.0, -80.0])
    assert low < -90.0 and high > -80.0
    # the mean of three 0.1s is 0.10000000000000002: an interval of a value that never varies is the value
    assert holdout_interval([0.1, 0.1, 0.1]) == (0.1, 0.1)
    assert holdout_interval(SKEWED, method="t_prediction_selected") == holdout_interval(SKEWED, method="t_prediction")


def test_the_predictive_bootstrap_is_the_two_stage_resampling_it_documents():
    # resample the seeds, draw ten future seeds from each resample, take the IQMs' 2.5 and 97.5 percentiles
    sample = np.array([-500.0, -91.0, -84.0, -80.0, -470.0, -97.0, -88.0, -120.0, -300.0, -75.0, -95.0, -410.0, -66.0])
    rng = np.random.default_rng(0)
    population = sample[rng.integers(len(sample), size=(10_000, len(sample)))]
    picks = rng.integers(len(sample), size=(10_000, 10))
    future = np.array([row[pick] for row, pick in zip(population, picks)])
    iqms = stats.trim_mean(future, 0.25, axis=1)
    expected = (np.quantile(iqms, 0.025), np.quantile(iqms, 0.975))
    assert holdout_interval(sample, method="predictive_bootstrap") == pytest.approx(expected, rel=1e-12)
