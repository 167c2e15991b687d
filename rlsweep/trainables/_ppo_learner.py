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

**The same update at less CPU per minibatch.** A PPO trial with rl-zoo3's settings takes hundreds of
minibatch updates per iteration, and RLlib's ``Learner.update`` spends about as much Python around each one
as the torch work itself (``benchmarks/step_cost.py``). :class:`LeanTorchUpdate` cuts what does not change
what is learned or reported: it slices the minibatches from the batch's tensors without building a
``SampleBatch`` per slice and concatenating it (the same rows: RLlib's cyclic order and its
``np.random.permutation`` per epoch); it logs the snapshot metrics (``window=1``: the losses, KL, gradient
norm, off-policyness), which keep only their last value, for the last minibatch only; it sets the module to
train mode once rather than on every forward pass; it checks the gradients for ``nan``/``inf`` with one
reduction, handing a non-finite one to RLlib's own handling; and it steps Adam over all tensors at once
(``foreach``). The weights and the reported metrics come out bit for bit as RLlib's update leaves them
(``tests/trainables/test_ppo_learner.py``). A learner that torch-compiles its update, uses more than one
learner, scales its gradients, steps torch learning-rate schedulers or trains on a dataset iterator or a
stateful module takes RLlib's path.

Every PPO trial trains with :class:`RlsweepPPOTorchLearner`, unless the spec sets ``learners.learner_class``
itself; a trial whose ``training.clip_param`` is a schedule trains with its subclass, whatever the spec
sets. Everything else is ``PPOTorchLearner``'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.connectors.learner import GeneralAdvantageEstimation
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.minibatch_utils import MiniBatchCyclicIterator
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
        pipeline = self._learner_connector
        if pipeline is not None and any(isinstance(piece, GeneralAdvantageEstimation) for piece in pipeline.connectors):
            pipeline.insert_after(GeneralAdvantageEstimation, StandardizeOverLossMask())


class _SnapshotsDropped:
    """A learner's ``MetricsLogger`` as a minibatch before the last sees it: a snapshot (``window=1``) keeps
    only the value logged last, so one logged before the last minibatch is dropped unlogged; the rest passes."""

    def __init__(self, metrics: Any) -> None:
        self._metrics = metrics

    def log_value(self, *args: Any, window: Any = None, **kwargs: Any) -> None:
        if window != 1:
            self._metrics.log_value(*args, window=window, **kwargs)

    def log_dict(self, *args: Any, window: Any = None, **kwargs: Any) -> None:
        if window != 1:
            self._metrics.log_dict(*args, window=window, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._metrics, name)


class _CyclicMinibatches:
    """RLlib's ``MiniBatchCyclicIterator`` over a batch of flat tensors: the same minibatches in the same order
    (cycling through each module's rows, reshuffled with ``np.random.permutation`` each time an epoch ends, as
    ``SampleBatch.shuffle`` does), sliced from the tensors rather than through ``SampleBatch`` slices."""

    def __init__(self, rllib: MiniBatchCyclicIterator) -> None:
        self._env_steps = len(rllib._batch)
        self._columns = {mid: dict(rows) for mid, rows in rllib._batch.policy_batches.items()}
        self._counts = {mid: len(rows) for mid, rows in rllib._batch.policy_batches.items()}
        self._minibatch_size = rllib._minibatch_size
        self._num_epochs = rllib._num_epochs
        self._shuffle = rllib._shuffle_batch_per_epoch
        self._num_total_minibatches = rllib._num_total_minibatches

    @staticmethod
    def handles(rllib: Any, learner: Any) -> bool:
        """Whether the batch is one this iterator reproduces: flat tensors, no sequences, no empty module."""
        if type(rllib) is not MiniBatchCyclicIterator:
            return False
        for mid, rows in rllib._batch.policy_batches.items():
            if learner.module[mid].is_stateful() or len(rows) == 0 or SampleBatch.SEQ_LENS in rows:
                return False
            if not all(isinstance(column, torch.Tensor) for column in rows.values()):
                return False
        return True

    def __iter__(self) -> Iterator[MultiAgentBatch]:
        start = dict.fromkeys(self._columns, 0)
        epochs_covered = dict.fromkeys(self._columns, 0)
        made = 0
        while ((self._num_total_minibatches == 0 and min(epochs_covered.values()) < self._num_epochs)
               or (self._num_total_minibatches > 0 and made < self._num_total_minibatches)):
            minibatch = {}
            for mid, count in self._counts.items():
                columns, first, wanted, pieces = self._columns[mid], start[mid], self._minibatch_size, []
                while first + wanted >= count:  # the rest of this pass, then a new (shuffled) pass
                    pieces.append({name: column[first:] for name, column in columns.items()})
                    wanted -= count - first
                    first = 0
                    epochs_covered[mid] += 1
                    if self._shuffle:
                        order = np.random.permutation(count)
                        columns = self._columns[mid] = {name: column[order] for name, column in columns.items()}
                end = first + wanted
                if end > first:
                    pieces.append({name: column[first:end] for name, column in columns.items()})
                rows = pieces[0] if len(pieces) == 1 else {name: torch.cat([piece[name] for piece in pieces]) for name in columns}
                minibatch[mid] = SampleBatch(rows)
                start[mid] = end
            yield MultiAgentBatch(minibatch, self._env_steps)
            made += 1


class _MarkingLast:
    """Yields an iterator's minibatches one ahead, telling the learner whether the one it gets is the last."""

    def __init__(self, minibatches: Any, learner: LeanTorchUpdate) -> None:
        self._minibatches = minibatches
        self._learner = learner

    def __iter__(self) -> Iterator[Any]:
        ahead = iter(self._minibatches)
        try:
            current = next(ahead)
        except StopIteration:
            return
        for following in ahead:
            self._learner._last_minibatch = False
            yield current
            current = following
        self._learner._last_minibatch = True
        yield current


class LeanTorchUpdate:
    """A torch learner's ``Learner.update`` with its per-minibatch overhead cut and its results unchanged (see
    the module's docstring). Goes before a ``TorchLearner`` class among the bases."""

    #: Whether the minibatch being updated on is the update's last (always, outside the lean path).
    _last_minibatch = True

    def _lean(self) -> bool:
        return (self.config.num_learners <= 1 and not self.config.torch_compile_learner
                and self._grad_scalers is None and self._lr_scheduler_classes is None)

    def configure_optimizers_for_module(self, module_id: Any, config: Any = None) -> None:
        super().configure_optimizers_for_module(module_id=module_id, config=config)
        if not self._lean():
            return
        for name in self._module_optimizers.get(module_id, ()):
            optimizer = self.get_optimizer(module_id, name)
            if isinstance(optimizer, torch.optim.Adam):
                for group in optimizer.param_groups:
                    group["foreach"] = True  # the same arithmetic as the per-tensor loop torch uses on CPU

    def _create_iterator_if_necessary(self, **kwargs: Any) -> Any:
        minibatches = super()._create_iterator_if_necessary(**kwargs)
        if not self._lean() or isinstance(minibatches, dict) or self.iterator is not None:
            return minibatches
        if _CyclicMinibatches.handles(minibatches, self):
            minibatches = _CyclicMinibatches(minibatches)
        return _MarkingLast(minibatches, self)

    def _uncompiled_update(self, batch: dict[str, Any], **kwargs: Any) -> tuple[Any, Any, Any]:
        modules = self.module
        lean = self._lean() and isinstance(modules, MultiRLModule) and all(
            isinstance(modules[mid], TorchRLModule) and not modules[mid].inference_only for mid in batch if mid in modules)
        if not lean:
            return super()._uncompiled_update(batch, **kwargs)
        last = self._last_minibatch
        self._last_minibatch = True
        if last:
            self._compute_off_policyness(batch)  # a snapshot: the last minibatch's value is the one reported
        fwd_out = {}
        for mid, rows in batch.items():
            if mid in modules:
                module = modules[mid]
                if not module.training:  # what TorchRLModule.forward_train does on every call
                    module.train()
                fwd_out[mid] = module._forward_train(rows)
        metrics = self.metrics
        if not last:
            self.metrics = _SnapshotsDropped(metrics)
        try:
            loss_per_module = self.compute_losses(fwd_out=fwd_out, batch=batch)
            gradients = self.compute_gradients(loss_per_module)
            gradients = self.postprocess_gradients(gradients)
        finally:
            self.metrics = metrics
        self.apply_gradients(gradients)
        return fwd_out, loss_per_module, {}

    def apply_gradients(self, gradients_dict: dict[Any, Any]) -> None:
        for optimizer in self._named_optimizers.values():
            for group in optimizer.param_groups:
                if group.get("foreach") and isinstance(group["lr"], torch.Tensor):
                    group["foreach"] = False  # RLlib's lr schedule sets a tensor, which torch's foreach Adam refuses
        gradients = [gradient for gradient in gradients_dict.values() if gradient is not None]
        if (not self._lean() or len(gradients) != len(gradients_dict) or not gradients
                or not bool(torch.isfinite(torch.stack(torch._foreach_norm(gradients))).all())):
            super().apply_gradients(gradients_dict)  # RLlib's handling of a non-finite gradient, and its warnings
            return
        for pid, gradient in gradients_dict.items():
            self._params[pid].grad = gradient
        for module_id, names in self._module_optimizers.items():
            for name in names:
                self.get_optimizer(module_id, name).step()


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
