"""CartPole seen through an offset and a scale (``obs * scale + offset``, defaults 100 and 1000), starting
every episode from the same state: a policy that acts on raw observations sees numbers near 1000 that
saturate its network, so what normalization does shows in the return, and a greedy episode is the same
whatever the env's seed (RLlib's evaluation and rlsweep's re-evaluation score the very same episodes)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class OffsetCartPole(gym.Env):
    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = config or {}
        self.scale = float(config.get("scale", 100.0))
        self.offset = float(config.get("offset", 1000.0))
        self.start_seed = int(config.get("start_seed", 0))
        self.env = gym.make("CartPole-v1")
        inner = self.env.observation_space
        low, high = inner.low * self.scale + self.offset, inner.high * self.scale + self.offset
        self.observation_space = gym.spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)
        self.action_space = self.env.action_space

    def _seen(self, obs: np.ndarray) -> np.ndarray:
        return (obs * self.scale + self.offset).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        obs, info = self.env.reset(seed=self.start_seed)  # the same start state in every episode
        return self._seen(obs), info

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._seen(obs), float(reward), terminated, truncated, info

    def close(self) -> None:
        self.env.close()
