"""PPO's ``clip_param`` on a schedule: a learner that RLlib's own ``learner_class`` setting plugs in.

RLlib's PPO reads ``clip_param`` from the module's config in every loss (ray 2.60,
``algorithms/ppo/torch/ppo_torch_learner.py:91``) and keeps no scheduler for it, as it does for
``entropy_coeff``. Stable-Baselines3 decays a ``clip_range: lin_X`` with its learning rate, and rl-zoo3's tuned
PPO entries use that. This learner evaluates the schedule (RLlib's ``Scheduler``: linear between points, the
last value held) at the trial's lifetime env steps before each update, as SB3 evaluates its ``clip_range`` at
the env steps collected before each update; so a restored trial takes the value at its restored env steps,
with no state of its own to restore. Everything else is ``PPOTorchLearner``'s.

Only a trial whose ``training.clip_param`` is a schedule gets this class (``build_config``): every other
trial keeps RLlib's learner as it is.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME
from ray.rllib.utils.schedules.scheduler import Scheduler


#: The learner metric with the clip value in force (``rllib/learners/<module>/curr_clip_param`` in a row).
CURR_CLIP_PARAM = "curr_clip_param"


class _WithClip:
    """A module's config as the loss reads it, with ``clip_param`` the value in force."""

    def __init__(self, config: Any, clip_param: float) -> None:
        self._config = config
        self.clip_param = clip_param

    def __getattr__(self, name: str) -> Any:
        return getattr(self._config, name)


class ClipScheduledPPOTorchLearner(PPOTorchLearner):
    """``PPOTorchLearner`` with ``clip_param`` given as RLlib's ``[[env_steps, value], ...]`` schedule."""

    def build(self) -> None:
        super().build()
        self._clip_schedulers: dict[Any, Scheduler] = {}
        self._clip_in_force: dict[Any, float] = {}

    def before_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        super().before_gradient_based_update(timesteps=timesteps)
        env_steps = timesteps.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0)
        for module_id in self.module.keys():
            points = self.config.get_config_for_module(module_id).clip_param
            if not isinstance(points, (list, tuple)):
                continue  # this module's clip_param is a number: RLlib's loss reads it as it is
            if module_id not in self._clip_schedulers:
                self._clip_schedulers[module_id] = Scheduler(fixed_value_or_schedule=points, framework="torch")
            value = self._clip_schedulers[module_id].update(timestep=env_steps)
            self._clip_in_force[module_id] = value
            # Beside RLlib's own curr_entropy_coeff, so a row shows the value the loss used.
            self.metrics.log_value((module_id, CURR_CLIP_PARAM), value, window=1)

    def compute_loss_for_module(self, *, module_id: Any, config: Any, batch: Any, fwd_out: Any) -> Any:
        if module_id in self._clip_in_force:
            config = _WithClip(config, self._clip_in_force[module_id])
        return super().compute_loss_for_module(module_id=module_id, config=config, batch=batch, fwd_out=fwd_out)
