"""What PBT and BOHB promise with RLlib: a mutated hyperparameter is the one the learner uses next, and
a paused trial resumes where it stopped, env-step count included."""

from __future__ import annotations

import math
import tempfile

import pytest

import rlsweep
from rlsweep.analysis import load
from tests.schedulers.test_pairings import BATCH, check_pairing_sweep, document

pytestmark = pytest.mark.slow


def test_a_restored_checkpoint_no_longer_carries_the_saving_trials_learning_rate(ray_runtime, tiny_spec):
    """The trap under PBT: restoring another trial's checkpoint loads its optimizer's learning rate."""
    from rlsweep.trainables._config import build_config
    from rlsweep.trainables._hyperparams import in_effect, reapply_learning_rates

    spec = rlsweep.load_spec(document("random", "pbt"), preflight=False)
    donor = build_config(spec, {"training.lr": 1e-3, "training.clip_param": 0.2}).build_algo()
    donor.train()
    directory = tempfile.mkdtemp(prefix="rlsweep-test-")
    donor.save_to_path(directory)
    donor.stop()

    # The mutated trial also schedules its entropy coefficient (RLlib's format, as a spec's schedule compiles).
    entropy = [[0, 0.02], [4000, 0.0]]
    mutated = build_config(spec, {"training.lr": 2e-4, "training.clip_param": 0.3, "training.entropy_coeff": entropy}).build_algo()
    try:
        mutated.restore_from_path(directory)
        before = in_effect(mutated, ["training.lr", "training.clip_param"])
        # RLlib alone: the optimizer runs the donor's rate until its next update resets it.
        assert math.isclose(before["training.lr"], 1e-3)
        assert before["training.clip_param"] == 0.3
        reapply_learning_rates(mutated, 3000)
        assert math.isclose(in_effect(mutated, ["training.lr"])["training.lr"], 2e-4)
        # The entropy coefficient the next update uses is the schedule's at the restored env step, not its start.
        used = mutated.learner_group.foreach_learner(
            lambda learner: {m: float(s.get_current_value()) for m, s in learner.entropy_coeff_schedulers_per_module.items()})
        assert [round(v, 6) for call in used for v in call.get().values()] == [0.005]
    finally:
        mutated.stop()


def test_pbt_mutation_is_the_value_the_learner_uses_on_the_next_iteration(ray_runtime, tmp_path):
    doc = document("random", "pbt", tmp_path)
    doc["budget"] = {"env_steps": 8 * BATCH, "trials": 2}  # 7 chances to exploit: one is near certain
    doc["scheduler"]["resample_probability"] = 0.0
    spec = rlsweep.load_spec(doc)
    sweep = check_pairing_sweep(spec, rlsweep.run(spec, verbose=0))  # this is the suite's random x pbt sweep

    changes = []
    for trial in sweep.trials:
        for before, after in zip(trial.rows, trial.rows[1:]):
            if after["config"]["training.lr"] != before["config"]["training.lr"]:
                changes.append((before, after))
    assert changes, "no trial was perturbed; PBT never exploited"
    for before, after in changes:
        # hp/ is read from the learner's optimizer before the iteration's first update.
        assert math.isclose(after["hp/training.lr"], after["config"]["training.lr"], rel_tol=1e-6)
        assert not math.isclose(after["hp/training.lr"], before["hp/training.lr"], rel_tol=1e-6)
        assert math.isclose(after["hp/training.clip_param"], after["config"]["training.clip_param"], rel_tol=1e-6)
    # The history shows each iteration's hyperparameters beside its metrics.
    history = sweep.history()
    assert {"hp/training.lr", "hp/training.clip_param"} <= set(history.columns)


def test_bohb_resumes_a_paused_trial_with_its_env_steps(ray_runtime, tmp_path):
    doc = document("bohb", "bohb", tmp_path)
    doc["budget"] = {"env_steps": 4 * BATCH, "trials": 3}
    spec = rlsweep.load_spec(doc)
    # Not the pairing checks: with 3 trials, HyperBandForBOHB can end the sweep with a trial still PAUSED
    # (seen once in a clean-clone run); what this test holds is the env-step count of those it resumed.
    sweep = load(rlsweep.run(spec, verbose=0).path)
    resumed = 0
    for trial in sweep.trials:
        steps = [row["env_steps"] for row in trial.rows]
        # Never rerun: the count only grows, one or more whole batches at a time. (Tune can leave out of
        # result.json the result at which it paused a trial: seen once as [200, 600, 800], resumed from
        # the checkpoint at 400.)
        assert all(b > a and (b - a) % BATCH == 0 for a, b in zip(steps, steps[1:])), (trial.trial_id, steps)
        for previous, row in zip(trial.rows, trial.rows[1:]):
            if row["iterations_since_restore"] == 1:  # a new actor, restored from the pause's checkpoint
                resumed += 1
                assert row["env_steps"] > previous["env_steps"]
    assert resumed, "HyperBandForBOHB paused no trial, so nothing was resumed"
