"""Selection rules and checkpoint choice, on an experiment directory laid out the way Tune writes one."""

from __future__ import annotations


import pytest

from rlsweep.analysis import load
from rlsweep.errors import SweepError
from tests.experiments import new_experiment, write_trial


@pytest.fixture
def experiment(tmp_path):
    root = new_experiment(tmp_path / "exp")
    # A noisy trial with one lucky peak, and a steady one.
    write_trial(root, "noisy", [10, 300, 20, 30], checkpoints=[2000, 4000], config={"training.lr": 0.01})
    write_trial(root, "steady", [100, 150, 180, 200], checkpoints=[3000, 4000], config={"training.lr": 0.001})
    return root


def test_max_rule_picks_the_peak_and_its_checkpoint_not_the_latest(experiment):
    best = load(experiment).best(rule="max")
    assert best.trial_id == "noisy" and best.value == 300
    assert best.checkpoint.name == "checkpoint_000000" and best.checkpoint_env_steps == 2000


def test_smoothed_rule_is_not_fooled_by_a_single_peak(experiment):
    best = load(experiment).best(rule="avg-last-3")
    assert best.trial_id == "steady"
    assert best.value == pytest.approx((150 + 180 + 200) / 3)
    assert best.checkpoint.name == "checkpoint_000001"


def test_last_rule(experiment):
    assert load(experiment).best(rule="last").trial_id == "steady"


def test_a_truncated_result_line_does_not_lose_the_rows_before_it(experiment):
    result = next(experiment.glob("train_steady*")) / "result.json"
    result.write_text(result.read_text() + '{"trial_id": "steady", "env_ste')
    trial = next(t for t in load(experiment).trials if t.trial_id == "steady")
    assert len(trial.rows) == 4


def test_table_has_one_row_per_trial(experiment):
    table = load(experiment).table()
    assert sorted(table["trial_id"]) == ["noisy", "steady"]
    assert {"config/training.lr", "return_mean", "return_mean_best", "env_steps", "state"} <= set(table.columns)


def test_not_an_experiment_directory(tmp_path):
    with pytest.raises(SweepError):
        load(tmp_path)


def test_max_rule_scores_each_checkpoint_by_its_own_value(tmp_path):
    root = new_experiment(tmp_path / "exp")
    # The peak (300) was never checkpointed; of the two kept, the later one scored higher.
    write_trial(root, "t", [300, 20, 30, 40], checkpoints=[2000, 4000], config={"training.lr": 0.01})
    best = load(root).best(rule="max")
    assert best.value == 300
    assert best.checkpoint.name == "checkpoint_000001" and best.checkpoint_value == 40


def test_default_rule_picks_the_checkpoint_best_by_avg_last_3_not_the_latest_nor_the_peak(tmp_path):
    root = new_experiment(tmp_path / "exp")
    # One report per 1000 env steps; checkpoints at 2000 (the peak), 7000 and 8000 (the latest).
    #   max rule, each checkpoint by its own report:       2000 -> 300, 7000 -> 170, 8000 -> 0
    #   avg-last-3, each checkpoint by the 3 reports to it: 2000 -> (0+300)/2 = 150,
    #                                                       7000 -> (150+160+170)/3 = 160,
    #                                                       8000 -> (160+170+0)/3 = 110
    write_trial(root, "t", [0, 300, 0, 0, 150, 160, 170, 0], checkpoints=[2000, 7000, 8000], config={"training.lr": 0.01})
    write_trial(root, "weak", [0, 1, 2, 3, 4, 5, 6, 7], checkpoints=[8000], config={"training.lr": 0.001})
    sweep = load(root)
    best = sweep.best()
    assert best.rule == "avg-last-3" and best.trial_id == "t"
    assert best.value == pytest.approx((160 + 170 + 0) / 3)
    assert best.checkpoint == root / "train_t_00000_0_x" / "checkpoint_000001"
    assert best.checkpoint_env_steps == 7000 and best.checkpoint_value == pytest.approx(160)
    # Neither the latest checkpoint nor the one the max rule picks.
    trial = next(t for t in sweep.trials if t.trial_id == "t")
    assert trial.latest_checkpoint.path.name == "checkpoint_000002"
    assert sweep.best(rule="max").checkpoint.name == "checkpoint_000000"


def test_where_no_trial_is_a_candidate_best_says_why_not_that_none_reported(tmp_path):
    from rlsweep import store

    root = new_experiment(tmp_path / "exp")
    assert str(_refusal(root)).endswith("no trial has reported 'return_mean' yet")
    failed = write_trial(root, "failed", [10, 20], config={"training.lr": 0.01})
    (failed / store.ERROR_FILE).write_text("Failure # 1\nboom")
    blown = write_trial(root, "blown", [10, 20], config={"training.lr": 0.02})
    with (blown / store.RESULT_FILE).open("a") as out:
        out.write('{"trial_id": "blown", "env_steps": 3000, "return_mean": 1, "timestamp": 3, "diverged": "total_loss"}\n')
    # Both reported: the cause is how they ended.
    assert str(_refusal(root)).endswith("no trial that reported 'return_mean' is a candidate for the best: "
                                        "failed ended in an error; blown diverged")
    write_trial(root, "kept", [1, 2], config={"training.lr": 0.03})  # no checkpoint
    assert load(root).best().trial_id == "kept"
    assert str(_refusal(root, "eval")).endswith("no trial that reported 'return_mean' has a checkpoint to evaluate (rule eval)")


def _refusal(root, rule="avg-last-3"):
    with pytest.raises(SweepError) as refused:
        load(root).best(rule)
    return refused.value
