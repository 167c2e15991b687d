"""An env whose return does not depend on the policy: every step pays ``reward`` and an episode lasts
``length`` steps, so every episode returns ``reward * length``. A sweep over ``reward`` ranks its trials
before they run, which makes a scheduler's decision known in advance."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class ConstantReward(gym.Env):
    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = config or {}
        self.reward = float(config.get("reward", 1.0))
        self.length = int(config.get("length", 10))
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.steps += 1
        return np.full(1, self.steps / self.length, dtype=np.float32), self.reward, False, self.steps >= self.length, {}
