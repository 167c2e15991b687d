"""A corridor of ``length`` cells: walk right to the end for +1; each step costs 0.01."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class Corridor(gym.Env):
    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = config or {}
        self.length = int(config.get("length", 5))
        self.max_steps = int(config.get("max_steps", 50))
        self.observation_space = gym.spaces.Box(0.0, float(self.length), shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)  # 0 left, 1 right

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.position, self.steps = 0, 0
        return np.array([self.position], dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.position = max(0, self.position + (1 if action == 1 else -1))
        self.steps += 1
        terminated = self.position >= self.length
        truncated = self.steps >= self.max_steps
        reward = 1.0 if terminated else -0.01
        return np.array([self.position], dtype=np.float32), reward, terminated, truncated, {}
