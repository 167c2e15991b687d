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
