"""Envs beyond gymnasium ids: a custom env class by import path, and a two-agent env with policies setups."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import rlsweep
from rlsweep.analysis import load
from rlsweep.policy import policy_ids

pytestmark = pytest.mark.slow  # every test runs real trials on a Ray runtime

PPO_SMALL = {"training.train_batch_size_per_learner": 400, "training.minibatch_size": 100, "training.num_epochs": 2}


def test_a_custom_env_by_import_path_with_env_config(tmp_path: Path, ray_runtime):
    spec = rlsweep.load_spec(
        {
            "name": "corridor",
            "algorithm": "PPO",
            "env": "tests.envs.corridor:Corridor",
            "env_config": {"length": 3, "max_steps": 20},
            "config": PPO_SMALL,
            "search_space": {"training.lr": {"loguniform": [1.0e-4, 1.0e-3]}},
            "searcher": {"name": "random", "seed": 0},
            "scheduler": "fifo",
            "budget": {"env_steps": 800, "trials": 2},
            "storage": str(tmp_path / "results"),
            "mlflow": None,
        }
    )
    result = rlsweep.run(spec, verbose=0)
    assert result.errored_trials == 0
    sweep = load(result.path)
    assert len(sweep.trials) == 2
    for trial in sweep.trials:
        last = trial.rows[-1]
        # env_config reached the env: episodes end by max_steps=20 at the latest (the default is 50).
        assert 3 <= last["episode_len_mean"] <= 20
        assert last["env_steps"] >= 800
    policy = rlsweep.load_policy(sweep.best())
    assert policy.act([0.0]) in (0, 1)
    evaluated = sweep.evaluate(2, episodes=2, seeds=[1])
    assert len(evaluated) == 2 and evaluated["eval_return_mean"].map(math.isfinite).all()


def test_a_two_agent_env_sweeps_shared_against_separate_policies(tmp_path: Path, ray_runtime):
    spec = rlsweep.load_spec(
        {
            "name": "two-agents",
            "algorithm": "PPO",
            "env": "ray.rllib.examples.envs.classes.multi_agent:MultiAgentCartPole",
            "env_config": {"num_agents": 2},
            "config": PPO_SMALL,
            "policies": {
                "shared": {"map": {"*": "main"}},
                # Self-play style: agent 1 acts with a frozen opponent policy.
                "separate": {"map": {"0": "learner", "1": "opponent"}, "train": ["learner"]},
            },
            "search_space": {"policies": {"grid": ["shared", "separate"]}},
            "scheduler": "fifo",
            "budget": {"env_steps": 800, "trials": 2},
            "evaluation": {"episodes": 2},
            "storage": str(tmp_path / "results"),
            "mlflow": None,
        }
    )
    assert spec.searcher.name == "grid"
    result = rlsweep.run(spec, verbose=0)
    assert result.errored_trials == 0
    sweep = load(result.path)
    trials = {t.config["policies"]: t for t in sweep.trials}
    assert set(trials) == {"shared", "separate"}

    shared, separate = trials["shared"], trials["separate"]
    assert policy_ids(shared.checkpoints[-1].path) == ["main"]
    assert policy_ids(separate.checkpoints[-1].path) == ["learner", "opponent"]
    # Only the policies in `train` learn: RLlib reports losses and trained steps for those alone.
    last = separate.rows[-1]
    assert "rllib/learners/learner/policy_loss" in last and last["rllib/learners/learner/num_module_steps_trained"] > 0
    assert "rllib/learners/opponent/policy_loss" not in last
    assert "rllib/learners/opponent/num_module_steps_trained" not in last
    assert "rllib/learners/main/policy_loss" in shared.rows[-1]
    for trial in sweep.trials:
        assert math.isfinite(trial.rows[-1]["eval_return_mean"])
        assert trial.rows[-1]["peak_memory_mb"] > 100

    with pytest.raises(rlsweep.SweepError, match="holds policies"):
        rlsweep.load_policy(separate.checkpoints[-1].path)
    opponent = rlsweep.load_policy(separate.checkpoints[-1].path, "opponent")
    assert opponent.act([0.0, 0.0, 0.0, 0.0]) in (0, 1)
    evaluated = sweep.evaluate(2, episodes=1, seeds=[3])
    assert set(evaluated["trial_id"]) == {shared.trial_id, separate.trial_id}
