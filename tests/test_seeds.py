"""Every trial trains with a seed that follows from the spec, so a trial, and a whole small sweep, reruns the
same way on CPU; ``rlsweep reproduce`` reruns one trial from what it recorded."""

from __future__ import annotations

import copy
import json
import math
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlsweep
from rlsweep import store
from rlsweep.analysis import load
from rlsweep.cli import main
from rlsweep.seeds import trial_seed
from tests.conftest import TINY_SPEC


def seeded_doc(storage: Path, **changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(TINY_SPEC)
    doc.update(name="seeded", storage=str(storage), mlflow=None, scheduler="fifo")
    doc["budget"] = {"env_steps": 2000, "trials": 2, "max_concurrent": 1}
    doc["checkpoint"] = {"every_env_steps": 2000}
    doc.update(changes)
    return doc


def by_index(path: Path) -> list[Any]:
    # Tune names a trial folder train_<id>_<creation index>_<config>_<time>.
    return sorted(load(path).trials, key=lambda t: int(t.path.name.split(f"_{t.trial_id}_", 1)[1].split("_")[0]))


def learning(row: dict[str, Any]) -> dict[str, float]:
    """What the first iteration learned and saw: its losses and its episodes' returns."""
    keys = [k for k in row if k.startswith("rllib/learners/default_policy/") and "loss" in k]
    assert keys, sorted(row)
    return {k: row[k] for k in [*keys, "return_mean", "episodes"]}


@pytest.fixture(scope="module")
def seeded_twice(tmp_path_factory, ray_runtime) -> list[list[Any]]:
    """The same seeded spec run twice, each run's trials in creation order (read by two tests)."""
    root = tmp_path_factory.mktemp("seeded")
    return [by_index(rlsweep.run(rlsweep.load_spec(seeded_doc(root / run)), verbose=0).path) for run in ("a", "b")]


@pytest.mark.slow
def test_the_same_spec_twice_reruns_the_same_configs_seeds_and_metrics(seeded_twice):
    first, second = seeded_twice
    assert [dict(t.config) for t in first] == [dict(t.config) for t in second]
    assert [t.seed for t in first] == [t.seed for t in second]
    # Each trial has its own seed in seeds.tuning, drawn from searcher.seed (0) and its index.
    assert len({t.seed for t in first}) == 2 and all(0 <= t.seed <= 99 for t in first)
    for a, b in zip(first, second):
        assert learning(a.rows[0]) == learning(b.rows[0])
        assert [r["return_mean"] for r in a.rows] == [r["return_mean"] for r in b.rows]
    # The seed is in the table and in the settings the export logs.
    table = load(first[0].path.parent).table().set_index("trial_id")
    assert table.loc[first[0].trial_id, "seed"] == first[0].seed
    assert first[0].settings["settings"]["debugging.seed"] == first[0].seed


@pytest.mark.slow
def test_the_seed_drives_what_a_trial_learns(ray_runtime, tmp_path):
    # No searched parameter: both trials run the same config. Their own seeds make them differ...
    # (One iteration each: only the first is compared.)
    short = {"budget": {"env_steps": 1000, "trials": 2, "max_concurrent": 1}, "checkpoint": {"every_env_steps": 1000}}
    doc = seeded_doc(tmp_path / "own", search_space={}, **short)
    own = by_index(rlsweep.run(rlsweep.load_spec(doc), verbose=0).path)
    assert own[0].seed != own[1].seed
    assert learning(own[0].rows[0]) != learning(own[1].rows[0])
    # ...and one seed set in config makes them the same.
    doc = seeded_doc(tmp_path / "fixed", search_space={}, **short)
    doc["config"]["debugging.seed"] = 7
    fixed = by_index(rlsweep.run(rlsweep.load_spec(doc), verbose=0).path)
    assert [t.seed for t in fixed] == [7, 7]
    assert learning(fixed[0].rows[0]) == learning(fixed[1].rows[0])


@pytest.mark.slow
def test_reproduce_reruns_a_trial_into_a_new_directory(seeded_twice, capsys):
    trial = seeded_twice[0][1]
    assert main(["reproduce", str(trial.path.parent), trial.trial_id[:5]]) == 0
    printed = capsys.readouterr().out
    (again,) = load(trial.path.parent.parent / f"seeded-reproduce-{trial.trial_id}").trials
    assert f"seeded-reproduce-{trial.trial_id}" in printed
    assert (again.seed, dict(again.config)) == (trial.seed, {**trial.config, "debugging.seed": trial.seed})
    assert [learning(r) for r in again.rows] == [learning(r) for r in trial.rows]


def test_reproduce_names_what_is_wrong(tmp_path, capsys):
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "sweep")
    write_trial(root, "abc", [1.0], config={"training.lr": 1e-3, "rl_module.model_config.fcnet_hiddens": [16]})
    assert main(["reproduce", str(root), "zzz"]) == 2
    assert "TRIAL: 'zzz' is not a trial of this sweep; its trials: abc" in capsys.readouterr().err
    assert main(["reproduce", str(root), "abc"]) == 2  # hand-written: it recorded no settings
    assert "recorded no settings" in capsys.readouterr().err


def test_trial_seeds_follow_the_base_and_index_within_the_range():
    seeds = [trial_seed(0, index, 10, 20) for index in range(200)]
    assert seeds == [trial_seed(0, index, 10, 20) for index in range(200)]
    assert set(seeds) == set(range(10, 21))  # every seed of the range is drawn, none outside it
    assert seeds != [trial_seed(1, index, 10, 20) for index in range(200)]


def test_the_seeds_a_sweep_draws_are_the_same_in_every_release():
    # A sweep's recorded seeds must reproduce: the draws are pinned, not only consistent within a run.
    from rlsweep.seeds import seed_base, trial_seeds

    assert trial_seed(0, 0, 0, 2**31 - 1) == 821328062
    assert trial_seed(12345, 3, 100, 199) == 150
    assert trial_seeds(7, 2, 0, 2**31 - 1, 4) == [1009178997, 1060258595, 957986155, 2086489817]
    assert trial_seeds(7, 2, 100, 199, 4) == [137, 167, 187, 121]  # a range of no power of 2 uses every bit of a draw
    assert (seed_base(None, "abc"), seed_base(5, "abc")) == (891568578, 5)  # crc32 of the sweep id, else the seed
    # n distinct seeds must fit in low..high, also where the range does not start at 0.
    assert sorted(trial_seeds(1, 0, 10, 12, 3)) == [10, 11, 12]
    with pytest.raises(ValueError, match="4 distinct seeds do not fit in 10..12"):
        trial_seeds(1, 0, 10, 12, 4)


@pytest.mark.parametrize("how", ["mean", "median", "iqm", "min", "lcb"])
@pytest.mark.parametrize("mode", ["max", "min"])
def test_any_seed_without_a_value_yet_makes_the_aggregate_nan(how, mode):
    from rlsweep.seeds import aggregate

    assert math.isnan(aggregate([1.0, math.nan, 3.0], how, mode))  # min() alone would skip the NaN
    assert math.isnan(aggregate([], how, mode))


@pytest.mark.parametrize("tuning", [[5, 3], [5], [-1, 4]])
def test_a_seed_range_that_cannot_work_is_an_error_at_its_path(tuning):
    doc = copy.deepcopy(TINY_SPEC)
    doc["seeds"] = {"tuning": tuning}
    with pytest.raises(rlsweep.SpecError) as caught:
        rlsweep.load_spec(doc, preflight=False)
    assert caught.value.problems[0].path.startswith("seeds.tuning")


# --- several seeds per trial -----------------------------------------------------------------------------

def test_a_trials_seeds_are_distinct_in_range_and_start_with_its_single_seed():
    from rlsweep.seeds import trial_seeds

    for index in range(20):
        seeds = trial_seeds(7, index, 10, 14, 5)
        assert sorted(seeds) == [10, 11, 12, 13, 14]  # all five of a five-seed range, none twice
        assert seeds[0] == trial_seed(7, index, 10, 14)
    assert trial_seeds(7, 0, 0, 99, 3) == trial_seeds(7, 0, 0, 99, 3)
    assert trial_seeds(7, 0, 0, 99, 3) != trial_seeds(7, 1, 0, 99, 3)
    with pytest.raises(ValueError, match="do not fit"):
        trial_seeds(7, 0, 0, 1, 3)


#: Eight seeds' values, skewed: their mean (15.875), median (6) and IQM (7.5) all differ.
SKEWED = [64.0, 2.0, 16.0, 0.0, 8.0, 1.0, 32.0, 4.0]


@pytest.mark.parametrize(
    ("how", "mode", "expected"),
    [
        ("mean", "max", 15.875),
        ("median", "max", 6.0),  # (4 + 8) / 2
        # IQM of 8 values drops the lowest 2 (0, 1) and the highest 2 (32, 64): mean of 2, 4, 8, 16.
        ("iqm", "max", 7.5),
        ("min", "max", 0.0),  # the worst seed when higher is better...
        ("min", "min", 64.0),  # ...and when lower is better
        # The mean less one standard error (sample std 22.184 over sqrt(8)): 15.875 - 7.843...
        ("lcb", "max", 8.03181),
        ("lcb", "min", 23.71819),  # ...plus it when lower is better
    ],
)
def test_the_aggregate_is_what_the_searcher_sees(how, mode, expected):
    from rlsweep.seeds import aggregate

    assert aggregate(SKEWED, how, mode) == pytest.approx(expected)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=13))
def test_the_iqm_is_scipys_trim_mean_of_a_quarter_each_side(values):
    from scipy.stats import trim_mean

    from rlsweep.seeds import interquartile_mean

    cut = len(values) // 4  # whole values off each end
    kept = sorted(values)[cut:len(values) - cut]
    rounding = 1e-9 * max(1.0, *map(abs, values))  # sums in another order differ by a few ulps of the largest
    assert interquartile_mean(values) == pytest.approx(trim_mean(values, 0.25), abs=rounding)
    assert interquartile_mean(values) == pytest.approx(sum(kept) / len(kept), abs=rounding)


def test_iqm_cuts_whole_values_and_nan_means_no_value_yet():
    import math

    from rlsweep.seeds import aggregate, interquartile_mean

    # 5 values: a quarter is 1.25 values; scipy's trim_mean cuts whole values (1 each side): mean of 2, 3, 10
    # (the median is 3, the mean 23.2; weighting the quartile values by their fractions would give 4.8).
    assert interquartile_mean([1, 2, 3, 10, 100]) == pytest.approx(5.0)
    assert interquartile_mean([5.0]) == 5.0
    assert math.isnan(aggregate([1.0, math.nan], "mean", "max"))
    with pytest.raises(ValueError, match="unknown aggregate"):
        aggregate([1.0], "max", "max")
    # A lucky seed costs a configuration more under lcb than under the mean; seeds that agree cost it little.
    assert aggregate([10.0, 10.0, 110.0], "lcb", "max") < aggregate([38.0, 40.0, 42.0], "lcb", "max")
    assert aggregate([10.0, 10.0, 110.0], "mean", "max") > aggregate([38.0, 40.0, 42.0], "mean", "max")
    assert aggregate([5.0], "lcb", "max") == 5.0


@pytest.mark.parametrize(
    ("seeds", "path", "words"),
    [
        ({"per_trial": 0}, "seeds.per_trial", ">= 1, got 0"),
        ({"per_trial": 3, "tuning": [5, 6]}, "seeds.per_trial", "do not fit in seeds.tuning [5, 6]"),
        ({"test": [50, 150]}, "seeds.test", "overlaps seeds.tuning [0, 99]"),
        ({"aggregate": "max"}, "seeds.aggregate", "'iqm'"),
        ({"aggregate": "lcb"}, "seeds.aggregate", "lcb (the mean less its standard error over a trial's seeds) needs seeds.per_trial >= 2, got 1"),
        ({"adaptive": True}, "seeds.adaptive", "needs per_trial >= 2, got 1: set per_trial (the most seeds a trial trains)"),
        ({"per_trial": 3, "contender_share": 0.3}, "seeds.contender_share", "0.3 is read only with seeds.adaptive: true"),
        ({"per_trial": 3, "adaptive": True, "contender_share": 1}, "seeds.contender_share", "must be < 1, got 1"),
        ({"per_trial": 3, "adaptive": True, "contender_share": 0}, "seeds.contender_share", "must be > 0, got 0"),
        ({"per_trial": 3, "adaptive": "yes"}, "seeds.adaptive", "must be true or false, got 'yes'"),
        ({"per_trial": 3, "adaptive": True, "aggregate": "lcb"}, "seeds.aggregate", "lcb ranks a trial on several seeds below one"),
        ({"per_trial": 3, "adaptive": True, "aggregate": "min"}, "seeds.aggregate", "trials hold different numbers of seeds: use iqm"),
    ],
)
def test_seed_settings_that_cannot_work_name_their_path(tmp_path, seeds, path, words):
    from rlsweep.errors import SpecError

    with pytest.raises(SpecError) as raised:
        rlsweep.load_spec(seeded_doc(tmp_path, seeds=seeds), preflight=False)
    (problem,) = raised.value.problems
    assert problem.path == path and words in problem.message


def test_the_seeds_count_is_no_score_and_stops_only_a_sweep_that_adds_seeds(tmp_path):
    from rlsweep.errors import SpecError

    with pytest.raises(SpecError, match=r"metric.name: 'seeds' counts the training seeds a row is over"):
        rlsweep.load_spec(seeded_doc(tmp_path, metric={"name": "seeds", "mode": "max"}), preflight=False)
    with pytest.raises(SpecError, match=r"stop.seeds: rows report how many seeds they are over only with seeds.adaptive"):
        rlsweep.load_spec(seeded_doc(tmp_path, stop={"seeds": 3}), preflight=False)
    assert rlsweep.load_spec(seeded_doc(tmp_path, stop={"seeds": 3}, seeds={"per_trial": 3, "adaptive": True}), preflight=False)


def test_one_fixed_seed_and_several_seeds_per_trial_conflict(tmp_path):
    from rlsweep.errors import SpecError

    doc = seeded_doc(tmp_path, seeds={"per_trial": 2})
    doc["config"]["debugging.seed"] = 3
    with pytest.raises(SpecError, match=r"config.debugging.seed: sets one training seed, but seeds.per_trial is 2"):
        rlsweep.load_spec(doc, preflight=False)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(min_value=1000, max_value=1007), min_size=2, max_size=5))
def test_a_rows_env_steps_are_the_least_of_its_seeds_and_each_seeds_own_is_kept(tmp_path_factory, counts):
    """With vectorized envs the seeds of one iteration sample a few env steps apart (docs/guides/seeds.md):
    the row's clock is the least of them, so no seed is counted past the steps it trained."""
    from rlsweep.trainables import TrialLoop

    loop = object.__new__(TrialLoop)  # only the spec is needed to combine the seeds' rows
    loop.spec = rlsweep.load_spec(seeded_doc(tmp_path_factory.mktemp("rows"), seeds={"per_trial": len(counts)}), preflight=False)
    per_seed = [{"env_steps": n, "episodes": 1, "return_mean": 10.0 * k} for k, n in enumerate(counts)]
    row = loop._combined(per_seed)
    assert row["env_steps"] == min(counts)
    assert [row[f"seed/{k}/env_steps"] for k in range(len(counts))] == counts


@pytest.mark.slow
def test_asha_prunes_a_configuration_on_all_its_seeds_at_once(ray_runtime, tmp_path):
    """Three seeds per trial under ASHA, with the default 8 vectorized envs: each row is one iteration of
    every seed, at the least of their env steps (which differ by at most 7 per iteration, docs/guides/seeds.md),
    and their aggregate; a trial ASHA stops stops with all of them; the history keeps each seed's values."""
    seeds = range(3)
    doc = seeded_doc(
        tmp_path,
        # The default envs per runner (TINY_SPEC forces 1, with which every seed samples exactly the batch).
        config={k: v for k, v in TINY_SPEC["config"].items() if k != "env_runners.num_envs_per_env_runner"},
        seeds={"per_trial": 3, "aggregate": "mean"},
        scheduler={"name": "asha", "grace_env_steps": 1000, "reduction_factor": 2},
        searcher={"name": "random", "seed": 3},
        # 8 trials: which ones ASHA stops depends on the order results arrive, but with 8 some always are.
        budget={"env_steps": 3000, "trials": 8, "max_concurrent": 2},
        checkpoint={"every_env_steps": 1000},
        evaluation={"episodes": 2, "every_env_steps": 1000},
    )
    swept = load(rlsweep.run(rlsweep.load_spec(doc), verbose=0).path)
    trials = swept.trials
    assert len(trials) == 8
    for trial in trials:
        assert len(trial.seeds) == 3 and len(set(trial.seeds)) == 3 and all(0 <= s <= 99 for s in trial.seeds)
        assert trial.settings["settings"]["env_runners.num_envs_per_env_runner"] == 8
        for iteration, row in enumerate(trial.rows, start=1):
            # The seeds advance in lockstep: one iteration of each per row, the row at the least of their
            # env steps. 8 envs overshoot the 1000-step batch by 0 to 7 steps per iteration on each seed.
            counts = [row[f"seed/{k}/env_steps"] for k in seeds]
            assert row["iteration"] == iteration, (iteration, row["iteration"])
            assert row["env_steps"] == min(counts), (iteration, row["env_steps"], counts)
            assert 1000 * iteration <= min(counts) <= max(counts) <= 1007 * iteration, (iteration, counts)
            for name in ("return_mean", "eval_return_mean"):
                assert row[name] == pytest.approx(sum(row[f"seed/{k}/{name}"] for k in seeds) / 3)
            assert row["episodes"] == sum(row[f"seed/{k}/episodes"] for k in seeds)
        # Each checkpoint holds every seed's algorithm.
        for record in trial.checkpoints:
            assert (record.path / "rlsweep_seeds" / "2").is_dir()
    lengths = sorted(t.env_steps for t in trials)
    assert lengths[0] < 3000 <= lengths[-1], lengths  # ASHA stopped some trials, not all
    history = swept.history()
    assert {"seed/0/return_mean", "seed/2/return_mean", "seed/2/eval_return_mean"} <= set(history.columns)
    assert history["seed/2/return_mean"].notna().all()
    table = swept.table().set_index("trial_id")
    assert [list(s) for s in table["seeds"]] == [t.seeds for t in trials]


def test_a_contender_ranks_in_the_best_share_of_the_values_handed_in_at_its_check():
    from rlsweep.seeds import SeedRace

    race = SeedRace(0.5, "max")
    # At check 1: alone (ceil(0.5 x 1) = 1 place), worse of two (1 place), second of three (2), third of four (2).
    assert [race.check(1, t, v) for t, v in [("a", 10.0), ("b", 5.0), ("c", 7.0), ("d", 6.0)]] == [True, False, True, False]
    assert race.check(1, "e", 10.0)  # as good as the best: 1 of 5 values, 3 places
    floor = SeedRace(0.5, "max")  # equal values count as better: of trials stuck at the floor, the first adds
    assert [floor.check(1, t, -500.0) for t in "abcd"] == [True, False, False, False]
    assert race.check(2, "b", 1.0)  # each check ranks only its own values
    # Handed in again (a retry from before its check, a resumed sweep): the first answer, the first value.
    assert not race.check(1, "b", 20.0) and race.record()[1]["b"] == {"value": 5.0, "contender": False}
    lower = SeedRace(0.25, "min")  # lower is better: ceil(0.25 x n) places
    assert [lower.check(1, t, v) for t, v in [("a", 3.0), ("b", 1.0), ("c", 2.0), ("d", 0.5), ("e", 4.0)]] == [
        True, True, False, True, False]
    # A resumed sweep's, as its trials recorded it: their answers stand, and the new ones rank against them.
    seeded = SeedRace(0.5, "max", known={1: {"a": {"value": 10.0, "contender": True}, "b": {"value": 5.0, "contender": False}}})
    assert not seeded.check(1, "c", 4.0) and seeded.check(1, "d", 6.0) and not seeded.check(1, "b", 99.0)
    for share, mode in [(0, "max"), (1, "max"), (0.5, "best")]:
        with pytest.raises(ValueError):
            SeedRace(share, mode)
    with pytest.raises(ValueError, match="no value at check 1"):
        race.check(1, "f", math.nan)


def test_adaptive_checks_split_the_budget_evenly_and_a_resumed_race_reads_what_each_trial_recorded():
    from rlsweep.seeds import check_points, race_record

    assert check_points(3000, 3) == [1000, 2000]
    assert check_points(1000, 4) == [250, 500, 750]
    assert check_points(10, 2) == [5]
    settings = {
        "a": {"seeds": [4, 9], "seed_checks": {"1": {"value": 8.0, "contender": True, "env_steps": 1000},
                                               "2": {"value": 9.0, "contender": False, "env_steps": 2000}}},
        "b": {"seeds": [7], "seed_checks": {"1": {"value": 2, "contender": False}}},
        "c": {"seeds": [1]},  # ended before its first check
        "d": None,  # never started
        # Damaged records are skipped: not a check, no answer, a value that is no number or not finite.
        "e": {"seed_checks": {"x": {"value": 1.0, "contender": True}, "1": {"value": 1.0}, "2": {"value": True, "contender": True},
                              "3": {"value": math.nan, "contender": True}}},
        "f": {"seed_checks": [1, 2]},
    }
    assert race_record(settings.items()) == {1: {"a": {"value": 8.0, "contender": True}, "b": {"value": 2.0, "contender": False}},
                                             2: {"a": {"value": 9.0, "contender": False}}}


def test_validate_says_how_a_trial_trains_its_seeds_and_what_it_costs(tmp_path, capsys):
    spec_file = tmp_path / "spec.yaml"
    doc = seeded_doc(tmp_path, budget={"env_steps": 3000, "trials": 4}, ray={"memory_check": False},
                     seeds={"per_trial": 3, "adaptive": True})
    spec_file.write_text(json.dumps(doc))
    assert main(["validate", str(spec_file)]) == 0
    assert ("seeds: each trial starts on 1 seed and adds the next, up to 3, at 1,000, 2,000 env steps while its iqm ranks "
            "in the best 50% of those handed in at that check; about 1.75 x 3,000 env steps a trial") in capsys.readouterr().out
    doc["seeds"] = {"per_trial": 2, "aggregate": "lcb"}
    spec_file.write_text(json.dumps(doc))
    assert main(["validate", str(spec_file)]) == 0
    assert "seeds: each trial trains its configuration on 2 seeds in lockstep; the searcher and the scheduler see their lcb; " \
           "2 x 3,000 env steps a trial" in capsys.readouterr().out
    doc["seeds"] = {"per_trial": 1}
    spec_file.write_text(json.dumps(doc))
    assert main(["validate", str(spec_file)]) == 0
    assert "seeds:" not in capsys.readouterr().out


def test_a_trial_started_again_reads_its_checks_from_its_settings_file_whatever_state_it_is_in():
    """A retried, paused, copied (PBT) or resumed trial reads what it handed in before from its own
    rlsweep_trial.json, so its record keeps every check; a missing or damaged file gives none."""
    assert store.recorded_seed_checks(json.dumps({"seeds": [3, 4], "seed_checks": {"1": {"value": 8.0, "contender": True}}})) == {
        "1": {"value": 8.0, "contender": True}}
    for text in (None, "", "{not json", "[1, 2]", json.dumps({"seeds": [3]}), json.dumps({"seed_checks": [1]})):
        assert store.recorded_seed_checks(text) == {}, text
    assert store.recorded_seed_checks(json.dumps({"seed_checks": {"1": 5, "2": {"value": 1.0, "contender": False}}})) == {
        "2": {"value": 1.0, "contender": False}}


@pytest.mark.slow
def test_adaptive_seeds_go_to_the_contenders_and_catch_up_before_the_next_row(ray_runtime, tmp_path):
    """seeds.adaptive: each trial starts on one seed and, at its check (half the budget with two seeds),
    adds its second only where its value ranks in the best quarter of those handed in so far. One trial at a
    time, so the race sees the trials' values in their order and its decisions can be replayed here."""
    import ray

    from rlsweep.seeds import SeedRace, race_record
    from rlsweep.sweep import reproduction_spec

    doc = seeded_doc(tmp_path, seeds={"per_trial": 2, "adaptive": True, "contender_share": 0.25},
                     searcher={"name": "random", "seed": 3}, budget={"env_steps": 2000, "trials": 4, "max_concurrent": 1},
                     # Evaluated at the budget only, and at the check, where the race needs the value.
                     evaluation={"episodes": 2}, metric={"name": "eval_return_mean", "mode": "max"})
    result = rlsweep.run(rlsweep.load_spec(doc), verbose=0)
    trials = by_index(result.path)
    assert len(trials) == 4 and result.errored_trials == 0
    race = SeedRace(0.25, "max")
    added = []
    for trial in trials:
        first, last = trial.rows
        assert first["env_steps"] == 1000 and first["seeds"] == 1 and "seed/1/env_steps" not in first
        added.append(race.check(1, trial.trial_id, first["eval_return_mean"]))
        assert last["seeds"] == (2 if added[-1] else 1), (trial.trial_id, last["seeds"], added)
        assert len(trial.seeds) == last["seeds"] and len(set(trial.seeds)) == len(trial.seeds)
        if added[-1]:
            # The second seed trained from zero to the first's 1,000 steps, then the iteration both ran.
            assert last["seed/0/env_steps"] == last["seed/1/env_steps"] == last["env_steps"] == 2000
            assert last["seed/1/episodes"] > 0 and math.isfinite(last["seed/1/return_mean"])
            for name in ("return_mean", "eval_return_mean"):
                assert last[name] == pytest.approx((last[f"seed/0/{name}"] + last[f"seed/1/{name}"]) / 2)
            assert (trial.checkpoints[-1].path / "rlsweep_seeds" / "1").is_dir()
        else:
            assert "seed/1/env_steps" not in last
    assert added[0] and not all(added), added  # the first always adds; later ones only if best so far
    # Each trial recorded what it handed in and the answer: a resumed sweep's race starts from exactly that.
    assert race_record((t.trial_id, t.settings) for t in trials) == race.record()
    # reproduce reruns a trial's first seed, the one its recorded config fixes.
    rerun = reproduction_spec(result.path, trials[0].trial_id)
    assert rerun.seeds.per_trial == 1 and not rerun.seeds.adaptive
    assert rerun.document["search_space"]["debugging.seed"] == {"fixed": trials[0].seeds[0]}
    history = load(result.path).history()
    assert history.groupby("trial_id")["seeds"].max().sum() == 4 + sum(added)
    with pytest.raises(ValueError):  # the race ended with the sweep
        ray.get_actor(f"rlsweep-seed-race-{load(result.path).sweep_id}")


# --- confirmation on held-out seeds -----------------------------------------------------------------------

@pytest.mark.slow
def test_confirm_retrains_the_top_configurations_on_seeds_no_trial_used(ray_runtime, tmp_path, capsys):
    doc = seeded_doc(tmp_path, budget={"env_steps": 1000, "trials": 3, "max_concurrent": 2},
                     checkpoint={"every_env_steps": 1000}, seeds={"tuning": [0, 9], "test": [10, 19]})
    root = rlsweep.run(rlsweep.load_spec(doc), verbose=0).path
    capsys.readouterr()
    assert main(["confirm", str(root), "--top", "2", "--seeds", "2", "--json"]) == 0
    printed = capsys.readouterr().out
    result = json.loads(printed)  # --json prints the JSON alone (no progress lines, no Tune table)
    swept = load(root)
    tuning_seeds = {s for t in swept.trials for s in t.seeds}
    assert result["test_seeds"] == [10, 11] and not tuning_seeds & set(result["test_seeds"])
    top2 = [b.trial_id for b in swept.ranked()[:2]]
    assert sorted(r["trial_id"] for r in result["configurations"]) == sorted(top2)
    runs = store.read_trials(store.confirmation_dir(root), budget_env_steps=1000)
    assert len(runs) == 4
    for row in result["configurations"]:
        assert row["ci_low"] <= row["iqm"] <= row["ci_high"] and row["missing"] == []
        assert set(row["p_beats"]) == set(top2) - {row["trial_id"]}
        tuned = next(t for t in swept.trials if t.trial_id == row["trial_id"])
        assert row["tuning_seeds"] == tuned.seeds
        for run in (r for r in runs if r.config["candidate"] == row["trial_id"]):
            # Trained from scratch on its test seed with the configuration's values, scored at the budget.
            assert run.seed == run.config["seed"] and run.env_steps == 1000
            assert {k: v for k, v in run.settings["config"].items() if k != "debugging.seed"} == \
                {k: v for k, v in tuned.settings["config"].items() if k != "debugging.seed"}
            assert row["per_seed"][str(run.seed)] == run.rows[-1]["eval_return_mean"]
    assert result["winner"] == result["configurations"][0]["trial_id"]
    assert load(root).best("confirmed").trial_id == result["winner"]
    # The record's command reruns the confirmation; here it resumes: nothing is retrained, the same result.
    record = json.loads((root / store.REPRODUCIBILITY_JSON).read_text())
    assert record["confirmation"]["incumbent"] == result["winner"] and record["seeds"]["test_used"] == [10, 11]
    before = {r.path.name: r.raw_rows for r in runs}
    assert main([*shlex.split(record["commands"]["confirmation"])[1:], "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in again.items() if k != "created"} == {k: v for k, v in result.items() if k != "created"}
    after = store.read_trials(store.confirmation_dir(root), budget_env_steps=1000)
    assert {r.path.name: r.raw_rows for r in after} == before  # no row appended: no run trained again
    # Other settings would mix two confirmations: refused, the first one kept.
    assert main(["confirm", str(root), "--top", "1", "--seeds", "2"]) == 2
    assert "holds a confirmation of other configurations or seeds" in capsys.readouterr().err
    assert store.read_confirmation(root)["winner"] == result["winner"]
