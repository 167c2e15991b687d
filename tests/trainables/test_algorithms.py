"""Every listed RLlib algorithm through ``rlsweep.run`` on a small budget: normalized metrics, the timing
split, evaluation, peak memory, the iteration settings in the trial's params, and the policy back out."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import rlsweep
from rlsweep.analysis import load
from rlsweep.analysis._mlflow import trial_params
from rlsweep.metrics import ADAPTIVE_SEEDS_METRICS, CURRICULUM_METRICS, EVALUATION_METRICS, NORMALIZED_METRICS
from rlsweep.spec import DEFAULT_RLLIB_KEYS

pytestmark = pytest.mark.slow  # every test runs real trials on a Ray runtime

#: algorithm -> (env, fixed config, searched parameter, budget, evaluation every).
CASES: dict[str, tuple[str, dict[str, Any], str, int]] = {
    "PPO": (
        "CartPole-v1",
        {"training.train_batch_size_per_learner": 500, "training.minibatch_size": 125, "training.num_epochs": 2},
        "training.lr",
        1000,
    ),
    # IMPALA/APPO keep rlsweep's iteration default (1000 env steps, no 10 s floor): asserted below.
    "APPO": ("CartPole-v1", {}, "training.lr", 2000),
    "IMPALA": ("CartPole-v1", {}, "training.lr", 2000),
    "DQN": (
        "CartPole-v1",
        {"reporting.min_sample_timesteps_per_iteration": 500, "training.num_steps_sampled_before_learning_starts": 500},
        "training.lr",
        1000,
    ),
    # SAC's iteration is RLlib's own 100 env steps (rlsweep's default, no 1 s floor), on 200-step episodes: the
    # first iteration ends no episode. The uniform buffer (SB3's, as convert --from zoo sets it) trains
    # through rlsweep's fast buffer and its columns. It samples 4 env steps a round (SB3's train_freq=4) at one
    # update per env step (updates_per_env_step below).
    "SAC": (
        "Pendulum-v1",
        {
            "training.num_steps_sampled_before_learning_starts": 200,
            "training.replay_buffer_config.type": "EpisodeReplayBuffer",
            "env_runners.rollout_fragment_length": 4,
        },
        "training.actor_lr",
        300,
    ),
}


#: How far rlsweep's iteration time may differ from Tune's for the same call (measured: under 1 ms).
TIMING_TOLERANCE_S = 0.02
TIMING_TOLERANCE_REL = 0.05


def _spec(tmp_path: Path, algorithm: str) -> rlsweep.SweepSpec:
    env, config, searched, budget = CASES[algorithm]
    return rlsweep.load_spec(
        {
            "name": f"algo-{algorithm.lower()}",
            "algorithm": algorithm,
            "env": env,
            "config": config,
            "search_space": {searched: {"loguniform": [1.0e-4, 1.0e-3]}},
            "searcher": {"name": "random", "seed": 0},
            "scheduler": "fifo",
            "budget": {"env_steps": budget, "trials": 1},
            "evaluation": {"episodes": 2, "every_env_steps": budget},
            "storage": str(tmp_path / "results"),
            "mlflow": None,
            # SAC trains, checkpoints and comes back through rlsweep's Q network (SB3's critic, critic: concat);
            # RLlib's own is built and sized in test_critic.py.
            **(
                {"critic": "concat", "updates_per_env_step": 1, "report": {"rllib_keys": [
                    *DEFAULT_RLLIB_KEYS, "learners/*/replay_columns_rows", "learners/*/num_module_steps_trained_lifetime"]}}
                if algorithm == "SAC"
                else {}
            ),
        }
    )


@pytest.mark.parametrize("algorithm", list(CASES))
def test_algorithm_runs_reports_evaluates_and_gives_its_policy_back(algorithm, tmp_path, ray_runtime):
    spec = _spec(tmp_path, algorithm)
    result = rlsweep.run(spec, verbose=0)
    assert result.errored_trials == 0
    sweep = load(result.path)
    (trial,) = sweep.trials
    rows = trial.rows
    budget = spec.budget.env_steps

    for row in rows:
        for name in set(NORMALIZED_METRICS) - set(CURRICULUM_METRICS) - set(ADAPTIVE_SEEDS_METRICS):  # no curriculum, one seed
            assert name in row, f"{algorithm} did not report {name}"
        # Against a clock rlsweep does not compute: Tune's own time for the same algo.train() call.
        iteration = row["rllib/time_this_iter_s"]
        assert abs(row["iteration_time_s"] - iteration) <= TIMING_TOLERANCE_S + TIMING_TOLERANCE_REL * iteration, (
            row["iteration_time_s"], iteration
        )
        # Every iteration samples; no phase is negative, and sampling and learning together fit in the
        # iteration as Tune timed it.
        assert row["sample_time_s"] > 0 and row["learn_time_s"] >= 0 and row["other_time_s"] >= 0
        assert row["sample_time_s"] + row["learn_time_s"] <= iteration + TIMING_TOLERANCE_S
        assert row["peak_memory_mb"] > 100
        # Building an RLlib algorithm takes a noticeable while; the trial says how long, once for all rows.
        assert row["setup_time_s"] == rows[0]["setup_time_s"] > 0.2
    # Learning has started by the last iteration, and its time is counted (IMPALA/APPO: the learner thread).
    assert rows[-1]["learn_time_s"] > 0
    steps = [row["env_steps"] for row in rows]
    assert steps == sorted(set(steps)) and steps[-1] >= budget
    assert math.isfinite(rows[-1]["return_mean"])
    assert math.isfinite(rows[-1]["eval_return_mean"]) and rows[-1]["eval_time_s"] > 0
    if algorithm == "SAC":
        # An iteration that ends no episode: SAC on Pendulum at 100 env steps per iteration, episodes ending
        # at 200, 400, ... env steps. No return yet at 100; at 300 the return of the episode that ended at
        # 200 is carried forward, not dropped to NaN.
        by_steps = {row["env_steps"]: row for row in rows}
        assert sorted(by_steps) == [100, 200, 300]
        assert math.isnan(by_steps[100]["return_mean"])
        assert math.isfinite(by_steps[200]["return_mean"])
        assert by_steps[300]["return_mean"] == by_steps[200]["return_mean"]
        # The learner took each 256-row batch as columns from rlsweep's fast buffer (the uniform buffer's swap
        # happened, and TransitionColumns found the columns it handed over).
        assert by_steps[300]["rllib/learners/__all_modules__/replay_columns_rows"] == 256, sorted(by_steps[300])
        # One update per env step in rounds of 4: learning starts with the round that reaches 200 env steps, so
        # 26 rounds (200, 204, ..., 300) of 4 updates of 256 rows. RLlib's own ratio would run 26 updates.
        assert by_steps[300]["rllib/learners/__all_modules__/num_module_steps_trained_lifetime"] == 26 * 4 * 256

    # What an iteration is shows in the trial's params: never a time floor.
    # As the trial recorded them when it started (what the export logs, with no Ray needed).
    params = trial_params(trial.settings, trial.config)
    assert params["reporting.min_time_s_per_iteration"] == 0
    # On-policy algorithms step 8 vectorized envs per env runner; off-policy ones (a replay buffer) keep 1,
    # so their updates per env step stay as configured.
    vector_envs = params.get("env_runners.num_envs_per_env_runner", 1)
    assert vector_envs == (8 if algorithm in ("PPO", "APPO", "IMPALA") else 1)
    if algorithm == "SAC":  # RLlib's own work floor, left unset by the spec: rows every 100 env steps above
        assert params["reporting.min_sample_timesteps_per_iteration"] == 100
    if algorithm in ("APPO", "IMPALA"):
        assert params["reporting.min_sample_timesteps_per_iteration"] == 1000
        # Work-bound, not RLlib's 10 s floor (which samples ~10,000+ env steps per iteration here): at
        # least 1000 env steps, plus at most one more sample call of 50 steps (their rollout fragment) per env.
        assert all(1000 <= b - a < 1000 + 50 * vector_envs for a, b in zip([0, *steps], steps)), steps

    # The policy back out of the best checkpoint acts in the env, greedy and sampled.
    best = sweep.best()
    policy = rlsweep.load_policy(best)
    env = gym.make(spec.env)
    obs, _ = env.reset(seed=0)
    for explore in (False, True):
        action = policy.act(obs, explore=explore)
        assert env.action_space.contains(np.asarray(action, dtype=env.action_space.dtype))
        obs, *_ = env.step(action)
    table = sweep.evaluate(1, episodes=1, seeds=[7, 8])
    assert list(table["trial_id"]) == [best.trial_id]
    assert table.loc[0, "episodes"] == 2 and math.isfinite(table.loc[0, "eval_return_mean"])


def test_evaluation_metrics_appear_only_with_an_evaluation_section(tmp_path, ray_runtime):
    document = dict(_spec(tmp_path, "PPO").document)
    del document["evaluation"]
    result = rlsweep.run(rlsweep.load_spec(document), verbose=0)
    (trial,) = load(result.path).trials
    assert not any(name in row for row in trial.rows for name in EVALUATION_METRICS)
