"""A corridor whose reward turns non-finite (``bad_reward``: ``nan`` or ``inf``) at the env's ``bad_at``-th
step and stays so, counted over the env's lifetime. Every new env (a trial restarted from its checkpoint
makes one) counts from zero again. ``bad_at: 0`` never goes bad."""

from __future__ import annotations

from typing import Any

from tests.envs.corridor import Corridor


class NonFiniteCorridor(Corridor):
    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = dict(config or {})
        super().__init__(config)
        self.bad_at = int(config.get("bad_at", 0))
        self.bad_reward = float(config.get("bad_reward", "nan"))
        self.lifetime_steps = 0

    def step(self, action: int):  # type: ignore[override]
        self.lifetime_steps += 1
        obs, reward, terminated, truncated, info = super().step(action)
        if self.bad_at and self.lifetime_steps >= self.bad_at:
            reward = self.bad_reward
        return obs, reward, terminated, truncated, info
