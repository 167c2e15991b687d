"""Confirmation on held-out seeds: the statistics it reports, and the inputs it refuses before it trains."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rlsweep import store
from rlsweep.analysis import load
from rlsweep.analysis._confirm import (
    ConfirmationPlan,
    iqm_interval,
    plan_confirmation,
    probability_of_improvement,
    summarize,
)
from rlsweep.cli import main
from rlsweep.errors import SweepError, UsageError
from rlsweep.seeds import interquartile_mean
from tests.experiments import new_experiment, write_trial


def plan_of(*candidates: str, seeds=(1000, 1001, 1002, 1003)) -> ConfirmationPlan:
    return ConfirmationPlan(
        candidates=candidates,
        configs={c: {"training.lr": 0.001} for c in candidates},
        tuning_values={c: 100.0 for c in candidates},
        tuning_seeds={c: [i] for i, c in enumerate(candidates)},
        test_seeds=tuple(seeds),
        rule="avg-last-3",
        metric="return_mean",
        episodes=10,
    )


def test_each_configuration_gets_its_iqm_an_interval_around_it_and_its_odds():
    plan = plan_of("a", "b", "c")
    scores = {
        "a": {1000: 500.0, 1001: 480.0, 1002: 400.0, 1003: 490.0},  # one weaker seed
        "b": {1000: 300.0, 1001: 310.0, 1002: 305.0, 1003: 295.0},
        "c": {1000: 470.0, 1001: 450.0, 1002: 460.0, 1003: 475.0},
    }
    result = summarize(plan, scores, missing={})
    rows = {r["trial_id"]: r for r in result["configurations"]}
    # IQM of a's 4 values drops the lowest (400) and the highest (500): (480 + 490) / 2.
    assert rows["a"]["iqm"] == pytest.approx(485.0)
    assert [r["trial_id"] for r in result["configurations"]] == ["a", "c", "b"]
    assert result["winner"] == "a" and [r["rank"] for r in result["configurations"]] == [1, 2, 3]
    for row in rows.values():
        assert row["ci_low"] <= row["iqm"] <= row["ci_high"]
        assert row["per_seed"] == {str(s): v for s, v in scores[row["trial_id"]].items()}
    # c's interval overlaps a's wide one (a tie); b's is far below both.
    assert result["ties"] == ["c"] and rows["c"]["tie_with_winner"] and not rows["b"]["tie_with_winner"]
    # a beats c on every pair of seeds but those where a scored 400: 12 of 16 pairs; b on all of them.
    assert rows["a"]["p_beats"]["c"] == pytest.approx(12 / 16) and rows["a"]["p_beats"]["b"] == 1.0
    assert rows["a"]["p_beats"]["c"] + rows["c"]["p_beats"]["a"] == pytest.approx(1.0)
    assert result["test_seeds"] == [1000, 1001, 1002, 1003] and result["metric"] == "eval_return_mean"


#: Eight test seeds' scores, skewed: their IQM (23), median (20) and mean (39.875) all differ.
SKEWED = {1000 + i: v for i, v in enumerate([40.0, 9.0, 136.0, 16.0, 10.0, 72.0, 24.0, 12.0])}


def _scipy_interval(values, confidence):
    """What the confirmation promises: a percentile bootstrap of the IQM (scipy's trim_mean, a quarter off
    each end), 10,000 resamples from generator seed 0, computed here straight from scipy."""
    from scipy.stats import bootstrap, trim_mean

    result = bootstrap(
        (np.asarray(values),), lambda sample, axis: trim_mean(sample, 0.25, axis=axis), confidence_level=confidence,
        n_resamples=10_000, method="percentile", random_state=np.random.default_rng(0),
    )
    return result.confidence_interval.low, result.confidence_interval.high


def test_the_reported_iqm_and_95_percent_interval_are_scipys_on_the_test_seeds_scores():
    from scipy.stats import trim_mean

    plan = plan_of("a", "b", seeds=tuple(SKEWED))
    result = summarize(plan, {"a": SKEWED, "b": {s: v / 2 for s, v in SKEWED.items()}}, missing={})
    rows = {r["trial_id"]: r for r in result["configurations"]}
    values = list(SKEWED.values())
    assert rows["a"]["iqm"] == pytest.approx(trim_mean(values, 0.25)) == pytest.approx(23.0)
    assert rows["a"]["iqm"] != pytest.approx(np.median(values)) and rows["a"]["iqm"] != pytest.approx(np.mean(values))
    assert rows["b"]["iqm"] == pytest.approx(11.5)
    low, high = _scipy_interval(values, 0.95)
    assert (rows["a"]["ci_low"], rows["a"]["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    # A 50% interval of the same resamples would be far narrower: the level is what the test pins.
    narrow = _scipy_interval(values, 0.5)
    assert high - low > 1.5 * (narrow[1] - narrow[0])
    assert result["confidence"] == 0.95


def test_the_interval_is_a_bootstrap_of_the_iqm_and_repeats():
    values = list(SKEWED.values())
    low, high = iqm_interval(values)
    assert (low, high) == iqm_interval(values)  # a fixed bootstrap seed: the same values, the same interval
    assert (low, high) == (pytest.approx(_scipy_interval(values, 0.95)[0]), pytest.approx(_scipy_interval(values, 0.95)[1]))
    assert low < interquartile_mean(values) < high
    assert min(values) <= low and high <= max(values)
    assert iqm_interval([7.0, 7.0, 7.0]) == (7.0, 7.0)
    assert probability_of_improvement([1, 2], [2, 3]) == pytest.approx((0 + 0 + 0.5 + 0) / 4)


def test_a_configuration_short_of_two_scores_has_no_interval_and_says_why():
    plan = plan_of("a", "b", seeds=(1000, 1001))
    result = summarize(plan, {"a": {1000: 5.0, 1001: 6.0}, "b": {1000: 9.0}}, missing={"b": ["seed 1001: errored"]})
    rows = {r["trial_id"]: r for r in result["configurations"]}
    assert result["winner"] == "a" and math.isnan(rows["b"]["iqm"]) and rows["b"]["missing"] == ["seed 1001: errored"]


@pytest.fixture
def swept(tmp_path):
    """A hand-written sweep: a finished, an errored and an unfinished trial (budget 4000 env steps)."""
    root = new_experiment(tmp_path / "exp")
    settings = lambda seed: {"settings": {"debugging.seed": seed}, "config": {"training.lr": 0.001, "debugging.seed": seed}, "seeds": [seed]}  # noqa: E731
    write_trial(root, "aaaaa_00000", [10, 20, 30, 40], config={"training.lr": 0.001}, settings=settings(3))
    errored = write_trial(root, "bbbbb_00001", [10, 50, 60, 70], config={"training.lr": 0.002}, settings=settings(4))
    (errored / store.ERROR_FILE).write_text("Failure # 1\nboom")
    write_trial(root, "ccccc_00002", [10, 20], config={"training.lr": 0.003}, settings=settings(5))
    return root


def test_confirm_refuses_what_cannot_be_confirmed_and_names_the_fix(swept):
    sweep = load(swept)
    with pytest.raises(UsageError, match=r"--top: must be between 1 and the 1 finished trial\(s\), got 2"):
        plan_confirmation(sweep, top=2, seeds=3)
    with pytest.raises(UsageError, match="trial bbbbb_00001 ended in an error; confirm a trial that finished"):
        plan_confirmation(sweep, trials=["bbbbb"])
    with pytest.raises(UsageError, match="RUNNING, not finished; resume the sweep first"):
        plan_confirmation(sweep, trials=["ccccc"])
    with pytest.raises(UsageError, match="--seeds: must be >= 2"):
        plan_confirmation(sweep, top=1, seeds=1)
    plan = plan_confirmation(sweep, top=1, seeds=3)
    assert plan.candidates == ("aaaaa_00000",) and plan.test_seeds == (1000, 1001, 1002)
    assert plan.configs["aaaaa_00000"] == {"training.lr": 0.001}  # the tuning seed is not carried over
    assert plan.tuning_seeds["aaaaa_00000"] == [3]


def test_a_confirmation_after_the_held_out_stage_takes_seeds_the_winner_was_not_chosen_on(swept):
    # The stage chose its winner on 1000-1003: those seeds are no longer new to it.
    store.write_holdout(swept, {"winner": "aaaaa_00000", "seeds": [1000, 1001, 1002, 1003]})
    asked = {}

    def retrain(root, document, plan, **_):
        asked.update(plan)
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        load(swept).confirm(1, 3, retrain=retrain)
    assert asked["test_seeds"] == [1004, 1005, 1006]
    plan = plan_confirmation(load(swept), top=1, seeds=2, spent=[1001])
    assert plan.test_seeds == (1000, 1002)
    with pytest.raises(UsageError, match=r"--seeds: 997 seeds do not fit in seeds.test \[1000, 1999\] beside the 4 the held-out stage"):
        plan_confirmation(load(swept), top=1, seeds=997, spent=[1000, 1001, 1002, 1003])
    assert plan_confirmation(load(swept), top=1, seeds=996, spent=[1000, 1001, 1002, 1003]).test_seeds[-1] == 1999


def held_out_record(winner: str, other: str) -> dict:
    """A finished held-out stage in which ``winner`` (ranked second in the search) beat ``other`` on test seeds."""
    return {
        "winner": winner, "held_out_iqm": 31.5, "interval": [20.0, 40.0], "method": "t_prediction_selected",
        "tuning_value": 60.0, "seeds": [1000, 1001, 1002], "failed": [], "runs": 4, "metric": "eval_return_mean",
        "tuning_metric": "return_mean", "tuning_rule": "avg-last-3", "future_seeds": 10,
        "candidates": [
            {"candidate": other, "tuning_rank": 1, "tuning_value": 70.0, "values": {"1000": 5.0}, "dropped_in": 0},
            {"candidate": winner, "tuning_rank": 2, "tuning_value": 60.0, "values": {"1000": 30.0, "1001": 31.5, "1002": 33.0},
             "dropped_in": None},
        ],
    }


def test_where_the_held_out_stage_ran_the_answer_is_its_winner_by_its_held_out_score(swept, capsys, tmp_path):
    write_trial(swept, "eeeee_00004", [50, 60, 70, 80], config={"training.lr": 0.005})
    assert main(["best", str(swept), "--rule", "held-out"]) == 2
    assert "has no finished held-out stage" in capsys.readouterr().err
    assert load(swept).best().trial_id == "eeeee_00004"  # no stage: the search's best by avg-last-3
    store.write_holdout(swept, held_out_record("aaaaa_00000", "eeeee_00004"))
    best = load(swept).best()
    assert (best.trial_id, best.rule, best.metric, best.value) == ("aaaaa_00000", "held-out", "eval_return_mean", 31.5)
    assert best.interval == (20.0, 40.0) and best.tuning_value == 60.0
    # The entrant it beat follows, by its IQM on the one seed it ran; the search's own ranking stays asked for.
    assert [(b.trial_id, b.value) for b in load(swept).ranked("held-out")] == [("aaaaa_00000", 31.5), ("eeeee_00004", 5.0)]
    assert load(swept).best("avg-last-3").trial_id == "eeeee_00004"
    assert main(["best", str(swept)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["best trial:  aaaaa_00000", "eval_return_mean (held-out, max): 31.5 at 4000 env steps"]
    assert any(line.startswith("held-out:    31.5 (eval_return_mean") for line in lines)
    # Its checkpoint was scored in the search (return_mean, avg-last-3), and is said to be, not as the held-out metric.
    write_trial(swept, "fffff_00005", [10, 20, 30, 40], config={"training.lr": 0.006}, checkpoints=[4000])
    store.write_holdout(swept, held_out_record("fffff_00005", "eeeee_00004"))
    assert main(["best", str(swept)]) == 0
    assert "(in the search 30 at 4000 env steps)" in capsys.readouterr().out
    store.write_holdout(swept, held_out_record("aaaaa_00000", "eeeee_00004"))
    assert main(["best", str(swept), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert (said["trial_id"], said["rule"], said["interval"], said["tuning_value"]) == ("aaaaa_00000", "held-out", [20.0, 40.0], 60.0)
    # The MLflow parent run holds both numbers, each named, and its page says the answer first.
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    parent = MlflowClient(uri).get_run(load(swept).to_mlflow(tracking_uri=uri, experiment="e")).data
    assert parent.metrics["held_out_eval_return_mean_iqm"] == 31.5 and parent.metrics["tuning_return_mean"] == 60.0
    assert (parent.metrics["held_out_eval_return_mean_ci_low"], parent.metrics["held_out_eval_return_mean_ci_high"]) == (20.0, 40.0)
    assert "best_eval_return_mean" not in parent.metrics and parent.tags["rlsweep.best_trial_id"] == "aaaaa_00000"
    assert parent.tags["mlflow.note.content"].startswith("**Answer.** held-out eval_return_mean: 31.5 (IQM on test seeds")
    assert "tuning return_mean: 60 (the search's own value" in parent.tags["rlsweep.answer"]


def test_a_test_seed_a_trial_trained_with_is_refused(swept):
    settings = {"settings": {"debugging.seed": 1001}, "config": {"debugging.seed": 1001}, "seeds": [1001]}
    write_trial(swept, "ddddd_00003", [1, 2, 3, 4], config={"training.lr": 0.004}, settings=settings)
    with pytest.raises(UsageError, match=r"test seeds \[1001\] were training seeds of trial\(s\) \['ddddd_00003'\]"):
        plan_confirmation(load(swept), top=1, seeds=3)


def test_a_sweep_with_no_finished_trial_has_nothing_to_confirm(tmp_path, capsys):
    root = new_experiment(tmp_path / "exp")
    write_trial(root, "ccccc_00002", [10, 20], config={"training.lr": 0.003})
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    assert main(["confirm", str(root), "--top", "1", "--seeds", "3"]) == 2
    assert "DIR: no trial of this sweep finished" in capsys.readouterr().err
    # Nothing written, nothing lost (the readers' caches aside: none of the sweep's data).
    assert sorted(p.relative_to(root) for p in root.rglob("*") if p.name not in store.CACHE_FILES) == before


def test_best_by_confirmation_needs_one_and_then_follows_it(swept, capsys):
    assert main(["best", str(swept), "--rule", "confirmed"]) == 2
    assert "run `rlsweep confirm" in capsys.readouterr().err
    write_trial(swept, "eeeee_00004", [50, 60, 70, 80], config={"training.lr": 0.005})
    # A confirmation in which the trial ranked lower during tuning won on the test seeds.
    plan = plan_of("eeeee_00004", "aaaaa_00000")
    result = summarize(plan, {"eeeee_00004": {1000: 1.0, 1001: 2.0, 1002: 1.5, 1003: 1.0},
                              "aaaaa_00000": {1000: 9.0, 1001: 8.0, 1002: 9.5, 1003: 9.0}}, missing={})
    store.write_confirmation(swept, result)
    assert load(swept).best().trial_id == "eeeee_00004"
    best = load(swept).best("confirmed")
    assert (best.trial_id, best.rule, best.metric) == ("aaaaa_00000", "confirmed", "eval_return_mean")
    assert best.value == pytest.approx(9.0)
    assert main(["best", str(swept), "--rule", "confirmed", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trial_id"] == "aaaaa_00000"


@pytest.mark.parametrize("garble, cause", [
    (lambda row: {**row, "iqm": str(row["iqm"])}, "has no IQM rlsweep can read for any of its configurations (configurations[0].iqm is '"),
    (lambda row: {**row, "trial_id": row["trial_id"].upper()}, "confirms ['AAAAA_00000', 'EEEEE_00004'], none of which is a trial of this sweep"),
], ids=["IQMs that are texts", "trial ids of another sweep"])
def test_a_confirmation_that_ranks_no_trial_names_its_file_and_what_is_wrong_with_it(swept, capsys, garble, cause):
    write_trial(swept, "eeeee_00004", [50, 60, 70, 80], config={"training.lr": 0.005})
    plan = plan_of("eeeee_00004", "aaaaa_00000")
    result = summarize(plan, {"eeeee_00004": {1000: 1.0, 1001: 2.0}, "aaaaa_00000": {1000: 9.0, 1001: 8.0}}, missing={})
    store.write_confirmation(swept, {**result, "configurations": [garble(r) for r in result["configurations"]]})
    # Before: "no trial has reported 'return_mean' yet", though both had: the cause is the confirmation's.
    assert main(["best", str(swept), "--rule", "confirmed"]) == 2
    err = capsys.readouterr().err
    assert f"{swept / store.CONFIRMATION_FILE}: {cause}" in err and "rlsweep confirm" in err and "reported" not in err
    with pytest.raises(UsageError, match="rlsweep_confirmation.json: "):
        plan_confirmation(load(swept), top=1, seeds=3, rule="confirmed")


def confirmed(root, *candidates):
    """A confirmation of ``candidates`` written into the hand-written sweep at ``root``, with its record."""
    from rlsweep.analysis._record import markdown, record

    plan = plan_of(*candidates)
    result = summarize(plan, {c: {1000: 10.0 * i, 1001: 10.0 * i + 2, 1002: 10.0 * i + 1, 1003: 10.0 * i + 3}
                              for i, c in enumerate(candidates, start=1)}, missing={})
    result.update(command=f"rlsweep confirm {root} --top {len(candidates)} --seeds 4 --rule avg-last-3", created=1700000000.0)
    store.write_confirmation(root, result)
    rec = record(load(root), result)
    store.write_reproducibility(root, rec, markdown(rec))
    return result, rec


def test_the_reproducibility_record_holds_what_a_reader_needs(swept):
    result, rec = confirmed(swept, "aaaaa_00000", "ccccc_00002")
    assert rec["spec"]["algorithm"] == "PPO" and rec["search_space"] == load(swept).spec.document["search_space"]
    assert rec["searcher"]["name"] == "optuna" and rec["searcher"]["seed"] == 0
    assert rec["scheduler"] == {"name": "asha", "grace_env_steps": 2000, "reduction_factor": 2}
    assert rec["budget"]["env_steps_per_trial"] == 4000 and rec["budget"]["confirmation_env_steps"] == 4000 * 2 * 4
    assert rec["seeds"]["tuning_used"] == [3, 4, 5] and rec["seeds"]["test_used"] == [1000, 1001, 1002, 1003]
    assert rec["seeds"]["tuning_range"] == [0, 99] and rec["seeds"]["test_range"] == [1000, 1999]
    conf = rec["confirmation"]
    assert conf["incumbent"] == "ccccc_00002" == result["winner"]
    runner_up = conf["configurations"][1]
    assert runner_up["trial_id"] == "aaaaa_00000" and runner_up["ci_low"] <= runner_up["iqm"] <= runner_up["ci_high"]
    assert rec["packages"]["ray"] and rec["packages"]["torch"] and rec["packages"]["mlflow"]
    assert rec["machine"]["cores"] >= 1 and rec["machine"]["memory_gb"] > 0 and rec["machine"]["gpus"] == "none"
    assert rec["commands"]["confirmation"] == result["command"]
    assert rec["commands"]["sweep"].startswith("rlsweep run ") and rec["commands"]["sweep"].endswith(store.SPEC_FILE)
    page = (swept / store.REPRODUCIBILITY_MD).read_text()
    for text in ("Incumbent: **ccccc_00002**", "| 2 | `aaaaa_00000` |", result["command"], "## Where it ran", "ray "):
        assert text in page
    assert json.loads((swept / store.REPRODUCIBILITY_JSON).read_text())["confirmation"]["incumbent"] == "ccccc_00002"


def test_the_export_logs_a_child_run_per_confirmed_configuration_and_the_record(swept, tmp_path):
    from mlflow import MlflowClient

    result, _ = confirmed(swept, "aaaaa_00000", "ccccc_00002")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    for _ in range(2):  # idempotent: a second export adds nothing
        parent = load(swept).to_mlflow(tracking_uri=uri, experiment="e")
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("e").experiment_id], "tags.`rlsweep.kind` = 'confirmation'")
    assert sorted(r.data.tags["rlsweep.trial_id"] for r in runs) == ["aaaaa_00000", "ccccc_00002"]
    for run in runs:
        row = next(r for r in result["configurations"] if r["trial_id"] == run.data.tags["rlsweep.trial_id"])
        assert run.data.tags["mlflow.parentRunId"] == parent
        history = client.get_metric_history(run.info.run_id, "eval_return_mean")
        assert {(m.step, m.value) for m in history} == {(int(s), v) for s, v in row["per_seed"].items()}
        assert run.data.metrics["iqm"] == pytest.approx(row["iqm"]) and run.data.metrics["ci_low"] == pytest.approx(row["ci_low"])
    assert client.get_run(parent).data.tags["rlsweep.confirmed_trial_id"] == "ccccc_00002"
    names = {a.path for a in client.list_artifacts(parent)} | {a.path for a in client.list_artifacts(parent, "plots")}
    assert {"reproducibility.json", "reproducibility.md", "plots/confirmation.png"} <= names


def test_confirm_works_from_the_analysis_alone_in_a_fresh_interpreter(swept):
    """``rlsweep.analysis.load(DIR).confirm()`` asks the sweep stage to retrain when it is called: nothing has to
    be imported first for it (it raised unless rlsweep.api had been). The retraining is replaced by one that
    exits 42, so no Ray starts; the old hook exited 1 with its SweepError."""
    import subprocess
    import sys

    from tests.conftest import REPO

    script = (
        "import sys, rlsweep.sweep\n"
        "def retrain(*args, **kwargs): sys.exit(42 if 'rlsweep.api' not in sys.modules else 43)\n"
        "rlsweep.sweep.run_confirmation = retrain\n"
        "from rlsweep.analysis import load\n"
        f"load({str(swept)!r}).confirm(top=1, seeds=2, verbose=0)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 42, (done.returncode, done.stderr[-2000:])


def test_confirm_counts_a_failed_run_at_the_specs_score_range_floor(tmp_path):
    """`rlsweep confirm` scores a run that failed as the held-out stage does where the spec names the task's
    range: the lowest score, beside the configuration's finished runs."""
    import copy

    from rlsweep.analysis._confirm import CONFIRM_METRIC
    from tests.conftest import TINY_SPEC

    def sweep_with(score_range):
        spec = {**copy.deepcopy(TINY_SPEC), "budget": {"env_steps": 4000, "trials": 20},
                "holdout": {"score_range": score_range} if score_range else None}
        root = new_experiment(tmp_path / f"exp-{score_range}", spec)
        settings = {"settings": {"debugging.seed": 3}, "config": {"training.lr": 0.001, "debugging.seed": 3}, "seeds": [3]}
        write_trial(root, "aaaaa_00000", [10, 20, 30, 40], config={"training.lr": 0.001}, settings=settings, done=True)
        return root

    def retrain(root, document, plan, **_):
        folder = new_experiment(root / "confirm-runs", document)
        for index, seed in enumerate(plan["test_seeds"]):
            trial = folder / f"train_run{index}_0000{index}_x"
            trial.mkdir()
            (trial / store.PARAMS_FILE).write_text(json.dumps({store.CANDIDATE_KEY: "aaaaa_00000", store.TEST_SEED_KEY: seed}))
            rows = [{"trial_id": f"run{index}", "env_steps": 2000 * i, CONFIRM_METRIC: 100.0 + index, "timestamp": i}
                    for i in (1, 2)]
            if index == 0:
                (trial / store.ERROR_FILE).write_text("Failure # 1\nboom")
                rows = rows[:1]
            (trial / store.RESULT_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
        return folder, 1

    known = load(sweep_with([0, 500])).confirm(1, 3, retrain=retrain)
    unknown = load(sweep_with(None)).confirm(1, 3, retrain=retrain)
    (row,) = known["configurations"]
    assert row["per_seed"] == {"1000": 0.0, "1001": 101.0, "1002": 102.0} and "counted as the lowest score, 0" in row["missing"][0]
    (row,) = unknown["configurations"]
    assert row["per_seed"] == {"1001": 101.0, "1002": 102.0} and "counted" not in row["missing"][0]


def test_a_confirmation_stopped_before_its_runs_ended_stores_nothing_and_says_how_to_continue(swept):
    """Ctrl-C during `rlsweep confirm`: an answer from the seeds that finished must not be stored as the
    confirmation (``best(rule="confirmed")`` would read it); the runs are kept and the same command continues."""
    from rlsweep.analysis._confirm import CONFIRM_METRIC

    def retrain(root, document, plan, **_):
        folder = new_experiment(root / "confirm-runs", document)
        for index, seed in enumerate(plan["test_seeds"][:3]):  # the fourth seed never started
            trial = folder / f"train_run{index}_0000{index}_x"
            trial.mkdir()
            (trial / store.PARAMS_FILE).write_text(json.dumps({store.CANDIDATE_KEY: "aaaaa_00000", store.TEST_SEED_KEY: seed}))
            steps = (1, 2) if index == 0 else (1,)  # the second failed halfway, the third was stopped there
            rows = [{"trial_id": f"run{index}", "env_steps": 2000 * i, CONFIRM_METRIC: 100.0 + index, "timestamp": i} for i in steps]
            if index == 1:
                (trial / store.ERROR_FILE).write_text("Failure # 1\nboom")  # ended: a rerun would not change it
            (trial / store.RESULT_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
        return folder, 0

    with pytest.raises(SweepError, match=r"stopped before 2 of its 4 run\(s\) ended \(aaaaa_00000 on seed 1002, "
                                         r"aaaaa_00000 on seed 1003\); nothing was stored.*`rlsweep confirm .* --top 1 --seeds 4 --rule .*` continues them"):
        load(swept).confirm(1, 4, retrain=retrain)
    assert load(swept).confirmation() is None
