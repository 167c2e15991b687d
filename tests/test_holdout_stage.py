"""The held-out stage at the end of a sweep (``holdout``): what validate refuses before anything runs, and on
real trials, that the best configuration is retrained on test seeds no trial trained with, that the answer
says which number is the held-out estimate and which the tuning value, and that a race over seeds run by
Tune follows the race's decisions."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys

import pytest
import yaml

import rlsweep
from rlsweep import store
from rlsweep.errors import SpecError
from rlsweep.seeds import interquartile_mean
from tests.conftest import REPO, TINY_SPEC, small_ppo


#: TINY_SPEC as a user would write it: without a holdout section, so the stage is at its default.
DEFAULTED = {k: v for k, v in TINY_SPEC.items() if k != "holdout"}


def _problems(holdout, **changes):
    document = {**copy.deepcopy(TINY_SPEC), "holdout": holdout, **changes}
    with pytest.raises(SpecError) as caught:
        rlsweep.load_spec(document, preflight=False)
    return {p.path: p.message for p in caught.value.problems}


@pytest.mark.parametrize("share", [0, 1, 1.5, -0.1])
def test_a_share_that_is_not_strictly_between_0_and_1_is_refused_at_its_path(share):
    problems = _problems({"share": share})
    assert "holdout.share" in problems, problems


def test_a_share_too_small_for_the_winners_seeds_is_refused_with_the_numbers():
    # 19 trials of one seed: 0.3 of them affords 5 held-out runs; the winner needs 6.
    problems = _problems({"share": 0.3}, budget={"env_steps": 4000, "trials": 19})
    assert "affords 5 runs" in problems["holdout.share"] and "needs at least 6" in problems["holdout.share"], problems
    # At the bound it validates: 20 trials, 0.3 -> 6 runs, the least the winner needs.
    document = {**copy.deepcopy(TINY_SPEC), "holdout": {"share": 0.3}, "budget": {"env_steps": 4000, "trials": 20}}
    assert rlsweep.load_spec(document, preflight=False).holdout.share == 0.3


def test_more_test_seeds_than_the_test_range_holds_are_refused_there():
    problems = _problems({"share": 0.5, "min_seeds": 3}, budget={"env_steps": 4000, "trials": 10},
                         seeds={"test": [1000, 1001]})
    assert "seeds.test" in problems, problems


@pytest.mark.parametrize("off", [None, False])
def test_the_stage_is_on_by_default_and_null_or_false_turns_it_off(off, tmp_path, capsys):
    from rlsweep.cli import held_out_plan_line, main

    spec = rlsweep.load_spec({**copy.deepcopy(DEFAULTED), "holdout": off}, preflight=False)
    assert spec.holdout is None and held_out_plan_line(spec).startswith("held-out stage: off (holdout: null)")
    twenty = {"env_steps": 4000, "trials": 20}
    for document in ({**copy.deepcopy(DEFAULTED), "budget": twenty}, {**copy.deepcopy(DEFAULTED), "holdout": {}, "budget": twenty}):
        spec = rlsweep.load_spec(document, preflight=False)
        assert (spec.holdout.share, spec.holdout.candidates, spec.holdout.min_seeds) == (0.3, 4, 6)
    # However large the sweep, the stage takes at most max_runs (40) runs: a 6,000-trial sweep is no 1,800.
    from rlsweep.holdout import DEFAULT_MAX_RUNS, DEFAULT_MIN_SEEDS
    from rlsweep.spec import HoldoutSpec

    # The spec's defaults are the stage's own, which the calibration study chose.
    assert (HoldoutSpec().min_seeds, HoldoutSpec().max_runs) == (DEFAULT_MIN_SEEDS, DEFAULT_MAX_RUNS)

    assert rlsweep.load_spec({**copy.deepcopy(DEFAULTED), "budget": twenty}, preflight=False).holdout.max_runs == DEFAULT_MAX_RUNS == 40
    assert _problems({"max_runs": 2})["holdout.max_runs"] == ("must be at least holdout.min_seeds (6), the least test seeds the "
                                                              "winner is scored on; got 2")
    # Left at its default, a stage the budget cannot afford is no error: validate says it will be skipped.
    path = tmp_path / "spec.yaml"
    for budget, said in ((DEFAULTED["budget"], "held-out stage: skipped: holdout.share 0.3 affords 0 run(s), fewer than "
                          "the 6 its winner needs (budget.trials >= 20 affords them)"),
                         ({"env_steps": 4000, "trials": 16}, "held-out stage: skipped: holdout.share 0.3 affords 4 run(s), "
                          "fewer than the 6 its winner needs (budget.trials >= 20 or holdout.share >= 0.38 affords them)"),
                         ({"env_steps": 4000, "trials": 40}, "held-out stage: 12 runs of 4,000 env steps after the search "
                          "(30% more env steps): up to 4 of the best configurations race over test seeds"),
                         ({"env_steps": 4000, "trials": 6000}, "held-out stage: 40 runs of 4,000 env steps after the search "
                          "(1% more env steps): up to 4 of the best configurations race over test seeds"),
                         ({"env_steps": 4000, "trials": 30}, "held-out stage: 9 runs of 4,000 env steps after the search "
                          "(30% more env steps): the best configuration is retrained on them")):
        path.write_text(yaml.safe_dump({**copy.deepcopy(DEFAULTED), "budget": budget}))
        assert main(["validate", str(path), "--no-memory-check"]) == 0
        assert said in capsys.readouterr().out


def test_a_default_stage_the_budget_cannot_afford_is_skipped_saying_so_and_the_search_answers(tmp_path):
    from rlsweep.api import held_out
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    write_trial(root, "aaaaa_00000", [10, 20, 30, 40], config={"training.lr": 0.001}, done=True)
    spec = rlsweep.load_spec(copy.deepcopy(DEFAULTED), preflight=False)
    stage = held_out(spec, root, verbose=0)
    assert stage == {"skipped": "holdout.share 0.3 of 3 trial(s) x 1 seed(s) affords 0 held-out run(s), fewer than the 6 "
                                "its winner needs (budget.trials >= 20 affords them)"}
    assert not (root / store.HOLDOUT_DIR).exists() and rlsweep.load(root).best().rule == "avg-last-3"
    # A search the time cap ended is not followed by a stage that would run past the cap.
    capped = rlsweep.load_spec({**copy.deepcopy(DEFAULTED), "budget": {"env_steps": 4000, "trials": 20, "time_s": 60}},
                               preflight=False)
    assert held_out(capped, root, verbose=0) == {
        "skipped": "budget.time_s (60 s) ended the search after 1 of its 20 trials; the held-out stage does not run past "
                   "the sweep's time cap"}


@pytest.mark.parametrize("bounds", [[0, 0], [0, -500], [-500], [-500, 0, 1], [float("nan"), 0], ["low", 0]])
def test_a_score_range_that_is_not_two_finite_numbers_lowest_first_is_refused_at_its_path(bounds):
    problems = _problems({"score_range": bounds}, budget={"env_steps": 4000, "trials": 20})
    assert any(path.startswith("holdout.score_range") for path in problems), problems
    if bounds == [0, -500]:
        assert "is [lowest, highest] with lowest < highest, got [0.0, -500.0]" in problems["holdout.score_range"]


def test_a_known_score_range_clips_the_winners_interval_and_counts_its_failed_run_as_the_lowest(tmp_path):
    """Acrobot-like runs that either learn (about -80) or stay at the floor (-500): an interval from 6 of them
    reaches below anything a run can score, unless the spec names the range."""
    from rlsweep.api import stage_plan, stage_record
    from rlsweep.cli import held_out_lines
    from rlsweep.holdout import Race
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    for i in range(20):
        write_trial(root, f"{i:05x}_{i:05d}", [-500.0, -300.0 + i, -90.0 - i], config={"training.lr": 0.001 + i / 1e4}, done=True)
    swept = rlsweep.load(root)
    ranked = swept.ranked()
    twenty = {"env_steps": 4000, "trials": 20}
    scores = [-500.0, -80.0, -500.0, -95.0, None, -85.0]  # the fifth run failed
    records, said = {}, {}
    for bounds in (None, [-500, 0], [-200, 0]):
        holdout = {} if bounds is None else {"score_range": bounds}
        spec = rlsweep.load_spec({**copy.deepcopy(DEFAULTED), "budget": twenty, "holdout": holdout}, preflight=False)
        plan = stage_plan(spec, swept, ranked, 6)
        done = dict(zip(((plan.candidates[0], s) for s in plan.test_seeds), scores))
        key = None if bounds is None else bounds[0]
        records[key] = stage_record(spec, Race(plan), done, {c: {"training.lr": 0.001} for c in plan.candidates}, [])
        said[key] = "\n".join(held_out_lines(records[key], root))
    unknown, known, wrong = records[None], records[-500], records[-200]
    assert unknown["winner"] == known["winner"] == ranked[0].trial_id and list(unknown["failed"]) == list(known["failed"]) == [1004]
    # Unknown: the failed run is left out and the interval reaches past the floor.
    assert unknown["interval"][0] < -500 and unknown["held_out_iqm"] == pytest.approx(interquartile_mean([-500.0, -80.0, -500.0, -95.0, -85.0]))
    assert unknown["score_range"] is None and "score_range_ignored" not in unknown
    # Known: the failed run counts as -500, and the interval stops at the range.
    assert known["held_out_iqm"] == pytest.approx(interquartile_mean([-500.0, -80.0, -500.0, -95.0, -500.0, -85.0]))
    assert known["interval"][0] == -500.0 and -500.0 < known["interval"][1] <= 0.0 and known["score_range"] == [-500.0, 0.0]
    # `rlsweep run` and `rlsweep best` say how many seeds the estimate holds and what a failed run counted as.
    assert "IQM over 5 test seed(s)" in said[None] and "1 of its 6 test runs failed" in said[None] and "counted" not in said[None]
    assert "IQM over 6 test seed(s)" in said[-500] and "95% interval -500 to " in said[-500]
    assert "1 of its 6 test runs failed (seeds 1004), each counted as the lowest score, -500 (holdout.score_range)" in said[-500]
    # A range the scores break (-500 below -200) is wrong for this task: the answer is the unknown-range one, saying why.
    assert (wrong["held_out_iqm"], wrong["interval"], wrong["score_range"]) == (unknown["held_out_iqm"], unknown["interval"], [-200.0, 0.0])
    assert wrong["score_range_ignored"] == (f"holdout.score_range: [-200, 0] does not hold this task's scores: trial {ranked[0].trial_id} "
                                            "scored -500 on test seed 1000 (and 1 more run(s)); the interval is not clipped to it "
                                            "and failed runs are left out")
    assert wrong["score_range_ignored"] in said[-200] and "IQM over 5 test seed(s)" in said[-200] and "counted" not in said[-200]


def test_a_dropped_entrants_failed_run_counts_at_the_known_floor_in_the_held_out_ranking(tmp_path):
    """`rlsweep best --rule held-out` lists the entrants the race dropped by their IQM on the seeds they ran:
    with a known range, a failed run there counts at its lowest score, as the winner's does."""
    from rlsweep.api import stage_plan, stage_record
    from rlsweep.holdout import Race
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    for i in range(20):
        write_trial(root, f"{i:05x}_{i:05d}", [-500.0, -90.0 - i], config={"training.lr": 0.001 + i / 1e4}, done=True)
    swept = rlsweep.load(root)
    ranked = swept.ranked()
    twenty = {"env_steps": 4000, "trials": 20}
    lists = {}
    for bounds in (None, [-500, 0], [-500, -102]):
        holdout = {"share": 0.6} if bounds is None else {"share": 0.6, "score_range": bounds}
        spec = rlsweep.load_spec({**copy.deepcopy(DEFAULTED), "budget": twenty, "holdout": holdout}, preflight=False)
        race = Race(stage_plan(spec, swept, ranked, 12))
        done = {}
        while runs := race.next_runs(done):
            for candidate, seed in runs:
                # Every entrant but the search's best fails its first test seed; the rest score -100 - rank.
                rank = race.plan.candidates.index(candidate)
                first = seed == race.plan.test_seeds[0]
                done[(candidate, seed)] = None if first and rank else -100.0 - rank
        record = stage_record(spec, race, done, {c: {"training.lr": 0.001} for c in race.plan.candidates}, [])
        store.write_holdout(root, record)
        # Entrants with no finished run have no IQM to list; the one dropped after two seeds has one of each.
        dropped = [c for c in record["candidates"] if c["dropped_in"] is not None
                   and None in c["values"].values() and any(v is not None for v in c["values"].values())]
        assert len(dropped) == 1, record["candidates"]
        key = None if bounds is None else tuple(bounds)
        lists[key] = {b.trial_id: b.value for b in rlsweep.load(root).ranked("held-out") if b.trial_id != record["winner"]}
        expected = {}
        for c in dropped:
            ran = list(c["values"].values())
            values = [bounds[0] if v is None else v for v in ran] if key == (-500, 0) else [v for v in ran if v is not None]
            expected[c["candidate"]] = interquartile_mean(values)
        assert {k: lists[key][k] for k in expected} == pytest.approx(expected)
    # The floor makes a difference here: a dropped entrant with a failed run ranks lower once it is counted;
    # a range the winner's -100 broke is not used, as the winner's estimate does not use it.
    assert any(lists[(-500, 0)][k] < lists[None][k] for k in lists[None]) and lists[(-500, -102)] == lists[None]


# --- on real trials -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def with_holdout(tmp_path_factory):
    """One sweep of 4 PPO trials with a held-out stage of 0.75 of its env steps (3 runs: too few to race, so
    the best configuration by tuning value is retrained on 3 test seeds, the least this spec asks for, to
    keep the suite's budget), run by the CLI."""
    root = tmp_path_factory.mktemp("holdout")
    document = small_ppo("held", root / "results", batch=250, epochs=1, budget={"env_steps": 500, "trials": 4},
                         evaluation={"episodes": 2}, holdout={"share": 0.75, "min_seeds": 3})
    spec = root / "spec.yaml"
    spec.write_text(yaml.safe_dump(document))
    done = subprocess.run(
        [sys.executable, "-m", "rlsweep.cli", "run", str(spec), "--progress", "lines", "--set", "ray.num_cpus=2"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=900, start_new_session=True,
    )
    return done, root / "results" / "held"


@pytest.mark.slow
def test_the_winner_is_retrained_on_test_seeds_and_reported_as_held_out_beside_its_tuning_value(with_holdout):
    done, root = with_holdout
    assert done.returncode == 0, done.stderr[-3000:]
    stage = json.loads((root / store.HOLDOUT_FILE).read_text())
    swept = rlsweep.load(root)
    best = swept.best("avg-last-3")  # the search's best, by the rule it ranks by
    # Too few runs to race: the best by tuning value takes all three, on the first three test seeds.
    assert stage["winner"] == best.trial_id and stage["seeds"] == [1000, 1001, 1002]
    assert not set(stage["seeds"]) & {s for t in swept.trials for s in t.seeds}
    # The held-out estimate is the IQM of the winner's own runs on those seeds, read here from their folders.
    runs = {int(t.config[store.TEST_SEED_KEY]): t.values("eval_return_mean")[-1]
            for t in store.read_trials(root / store.HOLDOUT_DIR, budget_env_steps=500)}
    assert sorted(runs) == [1000, 1001, 1002]
    assert stage["held_out_iqm"] == pytest.approx(interquartile_mean(list(runs.values())))
    low, high = stage["interval"]
    assert low <= stage["held_out_iqm"] <= high and high > low
    assert stage["tuning_value"] == pytest.approx(best.value)
    # The last lines say which number is which.
    held = [line for line in done.stdout.splitlines() if line.startswith("held-out:")]
    tuning = [line for line in done.stdout.splitlines() if line.startswith("tuning:")]
    assert len(held) == 1 and "test seed(s) the search never used" in held[0] and f"{stage['held_out_iqm']:.6g}" in held[0]
    assert len(tuning) == 1 and "optimistic" in tuning[0] and f"{best.value:.6g}" in tuning[0]
    # The answer is the stage's: best() gives the held-out estimate and its interval beside the tuning value.
    answer = swept.best()
    assert (answer.trial_id, answer.rule, answer.value) == (stage["winner"], "held-out", stage["held_out_iqm"])
    assert answer.interval == (low, high) and answer.tuning_value == stage["tuning_value"]
    # The progress view ends the stage on that IQM, beside the tuning value, not on one run's value.
    assert f"held-out eval_return_mean so far: {stage['held_out_iqm']:.4g} (IQM over 3 test seed(s), trial {stage['winner']}" in done.stdout
    # `rlsweep best` says the same, and its JSON holds the stage.
    again = subprocess.run([sys.executable, "-m", "rlsweep.cli", "best", str(root)], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert again.returncode == 0 and held[0] in again.stdout, again.stdout


@pytest.mark.slow
def test_tune_runs_a_race_over_seeds_as_the_race_decides(with_holdout, ray_runtime):
    """Three configurations race on 6 runs (one seed each, the better two go on to a second seed, the winner
    takes what is left): Tune starts exactly the runs the race names, round after round."""
    from rlsweep import sweep
    from rlsweep.analysis._confirm import CONFIRM_METRIC, confirmation_document, plan_confirmation
    from rlsweep.api import _held_out_runs
    from rlsweep.holdout import Race, plan_race

    done, root = with_holdout
    assert done.returncode == 0, done.stderr[-3000:]
    swept = rlsweep.load(root)
    ranked = [b.trial_id for b in swept.ranked()][:3]
    plan = plan_race(ranked, 6, test_range=(2000, 2099), env_steps=500, min_seeds=2, max_candidates=3,
                     winner_share=0, race_from_runs=2)
    assert [(s.candidates, s.seeds) for s in plan.stages][0] == (3, 1)
    retrain = plan_confirmation(swept, seeds=len(plan.test_seeds), trials=plan.candidates)
    document = confirmation_document(swept.info["spec"], retrain)
    document["budget"] = {**document["budget"], "trials": plan.planned_runs}
    document["seeds"] = {**document["seeds"], "test": [2000, 2099]}
    stage = {**retrain.to_dict(), "planned_runs": plan.planned_runs}
    folder = root.parent / "race"
    folder.mkdir()
    race = Race(plan)
    path, errored = sweep.run_heldout(folder, document, stage, race, metric=CONFIRM_METRIC, verbose=0)
    ran = _held_out_runs(path, 500)
    assert errored == 0 and race.finished(ran)
    # Every run Tune started is one the race asked for, given what had finished: replaying the race from the
    # runs of each round names exactly the next round's.
    first = {run for run in ran if run[1] == plan.test_seeds[0]}
    assert first == {(c, plan.test_seeds[0]) for c in plan.candidates}
    later = set(ran) - first
    kept = {c for c, _ in later}
    assert kept and kept < set(plan.candidates)
    result = race.result(ran)
    assert result.winner in kept and all(not math.isnan(v) for v in result.interval)
    assert len(ran) == plan.planned_runs
