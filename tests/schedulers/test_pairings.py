"""Every searcher x scheduler pairing: the allowed ones run a real tiny RLlib sweep, the forbidden ones
fail validation with a message that says how to fix the spec."""

from __future__ import annotations

import copy
import itertools
import math

import pytest

import rlsweep
from rlsweep import SpecError
from rlsweep.analysis import load
from rlsweep.schedulers import SCHEDULERS, SEARCHERS
from tests.conftest import TINY_SPEC

#: The pairings rlsweep refuses, and the text its error must contain. Written out here rather than read
#: from the name tables, so a change to the rules shows up as a failing test.
FORBIDDEN = {
    **{(s, "bohb"): "scheduler 'bohb' runs only with searcher 'bohb'" for s in SEARCHERS if s != "bohb"},
    **{("bohb", h): "searcher 'bohb' runs only with scheduler 'bohb'" for h in SCHEDULERS if h != "bohb"},
    **{(s, h): f"scheduler {h!r} runs only with searcher 'random'" for s in SEARCHERS for h in ("pbt", "pb2") if s not in ("random", "bohb")},
}
ALLOWED = sorted(set(itertools.product(SEARCHERS, SCHEDULERS)) - set(FORBIDDEN))

CONDITIONAL_SPACE = {
    "training.lr": {"loguniform": [1.0e-4, 3.0e-3]},
    "rl_module.model_config.fcnet_hiddens": {"choice": [[16], [32, 32]]},
    "training.use_kl_loss": {"choice": [True, False]},
    "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}},
}

#: A space each searcher (and PBT/PB2, which mutate it) can express exactly.
SPACES = {
    "grid": {"training.lr": {"grid": [1.0e-3, 3.0e-3]}},
    "bayesopt": {"training.lr": {"loguniform": [1.0e-4, 3.0e-3]}, "training.gamma": {"uniform": [0.95, 0.99]}},
    "pbt": {"training.lr": {"loguniform": [1.0e-4, 3.0e-3]}, "training.clip_param": {"uniform": [0.1, 0.3]}},
    "pb2": {"training.lr": {"uniform": [1.0e-4, 3.0e-3]}, "training.gamma": {"uniform": [0.95, 0.99]}},
}

#: Scheduler options that make each scheduler act within a 600-env-step trial of 200-step iterations.
SCHEDULER_OPTIONS = {
    "fifo": {},
    "asha": {"grace_env_steps": 200, "reduction_factor": 2},
    "hyperband": {"grace_env_steps": 200},
    "bohb": {"grace_env_steps": 200},
    "median": {"grace_env_steps": 200, "min_samples_required": 2},
    "pbt": {"perturbation_env_steps": 200, "quantile_fraction": 0.5},
    "pb2": {"perturbation_env_steps": 200, "quantile_fraction": 0.5},
}

BATCH = 200


def document(searcher: str, scheduler: str, tmp_path=None) -> dict:
    doc = copy.deepcopy(TINY_SPEC)
    doc.update(
        config={"training.train_batch_size": BATCH, "training.minibatch_size": 100, "training.num_epochs": 1},
        search_space=copy.deepcopy(SPACES.get(searcher) or SPACES.get(scheduler) or CONDITIONAL_SPACE),
        searcher={"name": searcher, "seed": 3},
        scheduler={"name": scheduler, **SCHEDULER_OPTIONS[scheduler]},
        budget={"env_steps": 3 * BATCH, "trials": 2},
        checkpoint={},
        mlflow=None,
    )
    if tmp_path is not None:
        doc["storage"] = str(tmp_path)
    return doc


@pytest.mark.parametrize(("searcher", "scheduler"), sorted(FORBIDDEN))
def test_forbidden_pairing_fails_validation_saying_how_to_fix_it(searcher, scheduler):
    with pytest.raises(SpecError) as caught:
        rlsweep.load_spec(document(searcher, scheduler), preflight=False)
    messages = [str(p) for p in caught.value.problems]
    assert any(FORBIDDEN[searcher, scheduler] in m and "use " in m for m in messages), messages


def test_every_name_is_in_the_matrix():
    assert len(ALLOWED) + len(FORBIDDEN) == len(SEARCHERS) * len(SCHEDULERS)
    assert ("bohb", "bohb") in ALLOWED and ("random", "pbt") in ALLOWED and ("random", "pb2") in ALLOWED


@pytest.mark.slow
@pytest.mark.parametrize(("searcher", "scheduler"), ALLOWED)
def test_allowed_pairing_runs_a_real_sweep(ray_runtime, tmp_path, searcher, scheduler):
    spec = rlsweep.load_spec(document(searcher, scheduler, tmp_path))
    result = rlsweep.run(spec, verbose=0)
    sweep = load(result.path)
    assert result.errored_trials == 0, [t.error for t in sweep.trials]
    assert len(sweep.trials) == 2
    for trial in sweep.trials:
        assert trial.state == "TERMINATED"
        for parameter in spec.search_space:
            if parameter.is_active(trial.config):
                assert parameter.domain.contains(trial.config[parameter.path]), (parameter.path, trial.config)
            else:
                assert parameter.path not in trial.config
        steps = [row["env_steps"] for row in trial.rows]
        assert all(s % BATCH == 0 for s in steps) and steps[-1] <= spec.budget.env_steps, steps
        if scheduler not in ("pbt", "pb2"):
            # The scheduler's clock is the lifetime env-step count: it only grows, never rerun after a pause
            # (Tune can leave out the result at which it paused a trial, so a gap of whole batches is
            # possible). Under PBT a trial that exploits continues from the copied trial's count.
            assert all(b > a for a, b in zip(steps, steps[1:])), steps
        # What the learner holds is reported beside the result, and it is the config the trial runs.
        for row in trial.rows:
            assert math.isclose(row["hp/training.lr"], row["config"]["training.lr"], rel_tol=1e-6), row["config"]
    if scheduler in ("fifo", "pbt", "pb2"):
        assert all(t.rows[-1]["env_steps"] == spec.budget.env_steps for t in sweep.trials)
