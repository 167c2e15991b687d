"""Normalizing RLlib's results: stable names, values carried over iterations in which no episode ended."""

from __future__ import annotations

import math

from rlsweep.metrics import NORMALIZED_METRICS
from rlsweep.trainables import RLLIB_KEYS, MetricNormalizer


def rllib_result(steps, episode_return=None):
    env_runners = {"num_env_steps_sampled_lifetime": steps, "num_episodes_lifetime": steps // 100}
    if episode_return is not None:
        env_runners.update(episode_return_mean=episode_return, episode_return_min=episode_return - 1,
                           episode_return_max=episode_return + 1, episode_len_mean=episode_return)
    return {"env_runners": env_runners, "num_env_steps_sampled_lifetime": steps, "training_iteration": steps // 100}


def test_every_mapped_name_is_a_documented_normalized_name():
    assert set(RLLIB_KEYS) <= set(NORMALIZED_METRICS)


def test_missing_episode_metrics_are_nan_then_carried_forward():
    normalize = MetricNormalizer()
    first = normalize(rllib_result(100), evaluation=False)
    assert math.isnan(first["return_mean"]) and first["env_steps"] == 100
    second = normalize(rllib_result(200, episode_return=-150.0), evaluation=False)
    assert second["return_mean"] == -150.0 and second["return_max"] == -149.0
    third = normalize(rllib_result(300), evaluation=False)
    assert third["return_mean"] == -150.0 and third["env_steps"] == 300 and third["iteration"] == 3


def test_carried_values_survive_a_restore():
    normalize = MetricNormalizer()
    normalize(rllib_result(100, episode_return=42.0), evaluation=False)
    restored = MetricNormalizer()
    restored.restore(normalize.state())
    assert restored(rllib_result(200), evaluation=False)["return_mean"] == 42.0


def test_a_row_keeps_the_rllib_keys_the_spec_asks_for_and_those_it_optimizes():
    from rlsweep.spec import DEFAULT_RLLIB_KEYS
    from rlsweep.trainables._metrics import kept_rllib_keys, rllib_section

    result = {
        "learners": {"default_policy": {"policy_loss": 0.5, "entropy": 1.2, "weights_seq_no": 7},
                     "__all_modules__": {"num_trainable_parameters": 900}},
        "env_runners": {"env_step_timer": 0.01, "episode_return_mean": 20.0},
        "timers": {"training_iteration": 1.5},
    }
    section = rllib_section(result)
    assert set(kept_rllib_keys(section, list(DEFAULT_RLLIB_KEYS))) == {
        "learners/default_policy/policy_loss", "learners/default_policy/entropy", "timers/training_iteration",
    }
    # A key the spec optimizes or stops on stays, whatever the patterns.
    kept = kept_rllib_keys(section, [], named=["env_runners/env_step_timer"])
    assert kept == {"env_runners/env_step_timer": 0.01}
    assert kept_rllib_keys(section, ["*"]) == section
    assert kept_rllib_keys(section, ["learners/*/weights_*"]) == {"learners/default_policy/weights_seq_no": 7}
