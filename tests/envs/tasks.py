"""A task-settable env (RLlib's ``TaskSettableEnv`` contract: ``set_task``/``get_task``) whose task is its
difficulty, and whose return shows it: every step pays ``1 / task`` and an episode lasts 10 steps, so an
episode on task 1 returns 10, on task 2 returns 5, on task 4 returns 2.5, whatever the policy does. A test
then sees from the returns alone which task each env runner trained on."""

from __future__ import annotations

from typing import Any

from tests.envs.constant import ConstantReward


class TaskedEnv(ConstantReward):
    """ConstantReward over 10 steps, paying ``1 / task`` a step."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__({"length": 10})
        self.set_task(int((config or {}).get("task", 1)))

    def set_task(self, task: int) -> None:
        self.task = int(task)
        self.reward = 1.0 / self.task

    def get_task(self) -> int:
        return self.task


def harder_when_solved(train_result: dict, env: TaskedEnv, env_context: Any) -> int:
    """RLlib's old env_task_fn contract: double the difficulty once the mean return is at least 5 (the
    current task's return is 10 / task, so task 1 moves to 2, and 2 (return 5) to 4, where it stays)."""
    mean = train_result.get("env_runners", {}).get("episode_return_mean", 0.0)
    task = env.get_task()
    return task * 2 if mean >= 5 and task < 4 else task
