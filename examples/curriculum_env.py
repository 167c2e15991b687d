"""A task-settable CartPole for examples/curriculum.yaml: its task is the episode's horizon (how many steps
the pole must stay up before the episode is cut), so a curriculum can start short and lengthen it. It has
set_task/get_task, RLlib's TaskSettableEnv contract. Run the example from the repository's root with
`PYTHONPATH=. rlsweep run examples/curriculum.yaml`."""

from __future__ import annotations

from typing import Any

from gymnasium.envs.classic_control.cartpole import CartPoleEnv


class HorizonCartPole(CartPoleEnv):
    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.horizon = int((config or {}).get("horizon", 100))
        self.steps = 0

    def set_task(self, task: int) -> None:
        self.horizon = int(task)

    def get_task(self) -> int:
        return self.horizon

    def reset(self, *, seed: int | None = None, options: dict | None = None):  # type: ignore[override]
        self.steps = 0
        return super().reset(seed=seed, options=options)

    def step(self, action: int):  # type: ignore[override]
        obs, reward, terminated, truncated, info = super().step(action)
        self.steps += 1
        return obs, reward, terminated, truncated or self.steps >= self.horizon, info
