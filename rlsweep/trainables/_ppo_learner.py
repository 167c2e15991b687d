"""rlsweep's PPO learner, plugged in through RLlib's own ``learner_class`` setting (``build_config``).

**Advantages standardized over the rows that train.** RLlib's ``GeneralAdvantageEstimation`` piece (ray 2.60,
``connectors/learner/general_advantage_estimation.py:148``) standardizes the advantages over every row of
the batch, including the bootstrap row ``AddOneTsToEpisodesAndTruncate`` appends to each episode chunk, which
the loss masks out (``Columns.LOSS_MASK``). That row's advantage is not a transition's: its TD residual
reads the value of the next chunk's first observation, or 0 at the end of the batch (``-V(s)``, about -50
on a trained CartPole critic with gamma 0.98). A few such rows shift the mean and inflate the standard
deviation, so every real row's advantage comes out shrunk and offset (ray-project/ray#57989, open). Stable-Baselines3 standardizes
over the real rows. :class:`StandardizeOverLossMask`, placed right after RLlib's piece, standardizes again
over the rows the loss uses: standardizing is affine, so the result is what standardizing RLlib's raw
advantages over those rows gives (except where the real rows' spread is below 1e-4 of all rows', when the
two floors differ), and it changes nothing where they already are (a fixed RLlib).

**``clip_param`` on a schedule.** RLlib's PPO reads ``clip_param`` from the module's config in every loss
(``algorithms/ppo/torch/ppo_torch_learner.py:91``) and keeps no scheduler for it, as it does for
``entropy_coeff``. Stable-Baselines3 decays a ``clip_range: lin_X`` with its learning rate, and rl-zoo3's tuned
PPO entries use that. :class:`ClipScheduledPPOTorchLearner` evaluates the schedule (RLlib's ``Scheduler``:
linear between points, the last value held) at the trial's lifetime env steps before each update, as SB3
evaluates its ``clip_range`` at the env steps collected before each update; so a restored trial takes the
value at its restored env steps, with no state of its own to restore.

**The same update at less CPU per minibatch**: :class:`RlsweepPPOTorchLearner` updates through
``rlsweep.trainables._lean_update.LeanTorchUpdate``, which learns and reports what RLlib's update does.

Every PPO trial trains with :class:`RlsweepPPOTorchLearner`, unless the spec sets ``learners.learner_class``
itself; a trial whose ``training.clip_param`` is a schedule trains with its subclass, whatever the spec
sets. Everything else is ``PPOTorchLearner``'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.connectors.learner import GeneralAdvantageEstimation
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME
from ray.rllib.utils.schedules.scheduler import Scheduler

from rlsweep import _compat
from rlsweep.trainables._lean_update import LeanTorchUpdate


#: The learner metric with the clip value in force (``rllib/learners/<module>/curr_clip_param`` in a row).
CURR_CLIP_PARAM = "curr_clip_param"


class _WithClip:
    """A module's config as the loss reads it, with ``clip_param`` the value in force."""

    def __init__(self, config: Any, clip_param: float) -> None:
        self._config = config
        self.clip_param = clip_param

    def __getattr__(self, name: str) -> Any:
        return getattr(self._config, name)


#: RLlib's floor under the standard deviation it divides by (``max(1e-4, std)``), kept.
STD_FLOOR = 1e-4


class StandardizeOverLossMask(ConnectorV2):
    """Learner connector piece: each module's advantages standardized over its ``LOSS_MASK`` rows (mean 0,
    population standard deviation 1 there), after RLlib's GAE piece. A module batch without advantages or
    without a loss mask passes through."""

    def __call__(self, *, rl_module: Any, batch: dict[str, Any], episodes: Any, explore: Any = None,
                 shared_data: Any = None, **kwargs: Any) -> Any:
        for module_batch in batch.values():
            if not isinstance(module_batch, dict):
                continue
            advantages = module_batch.get(Postprocessing.ADVANTAGES)
            mask = module_batch.get(Columns.LOSS_MASK)
            if advantages is None or mask is None:
                continue
            if isinstance(advantages, np.ndarray):
                real = advantages[np.asarray(mask, dtype=bool)]
                if real.size:
                    module_batch[Postprocessing.ADVANTAGES] = (advantages - real.mean()) / max(STD_FLOOR, float(real.std()))
                continue
            real = advantages[mask.bool()]
            if real.numel():
                module_batch[Postprocessing.ADVANTAGES] = (advantages - real.mean()) / max(STD_FLOOR, float(real.std(unbiased=False)))
        return batch


class StandardizedPPOTorchLearner(PPOTorchLearner):
    """``PPOTorchLearner`` whose advantages are standardized over the rows the loss trains on (RLlib's update)."""

    def build(self) -> None:
        super().build()
        pipeline = _compat.learner_connector(self)
        if pipeline is not None and any(isinstance(piece, GeneralAdvantageEstimation) for piece in pipeline.connectors):
            pipeline.insert_after(GeneralAdvantageEstimation, StandardizeOverLossMask())


class RlsweepPPOTorchLearner(LeanTorchUpdate, StandardizedPPOTorchLearner):
    """``PPOTorchLearner`` whose advantages are standardized over the rows the loss trains on, updating at less
    CPU per minibatch with the same result."""


class ClipScheduledPPOTorchLearner(RlsweepPPOTorchLearner):
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
