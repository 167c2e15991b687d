"""The same learner update at less CPU per minibatch, plugged in through RLlib's ``learner_class``.

A PPO trial with rl-zoo3's settings takes hundreds of minibatch updates per iteration, and RLlib's
``Learner.update`` (Ray 2.60) spends about as much Python around each one as the torch work itself
(``benchmarks/step_cost.py``). :class:`LeanTorchUpdate` cuts what does not change what is learned or
reported:

- it slices the minibatches from the batch's tensors (:class:`CyclicMinibatches`: RLlib's cyclic order and
  its ``np.random.permutation`` per pass) rather than building a ``SampleBatch`` per slice and
  concatenating it;
- it logs the snapshot metrics (``window=1``: the losses, KL, gradient norm, off-policyness), which keep only
  their last value, for the last minibatch only;
- it sets the modules to train mode once per update, not on every forward pass;
- it checks the gradients for ``nan``/``inf`` with one reduction, handing a non-finite one to RLlib's own
  handling;
- it steps Adam over all tensors at once (``foreach``), the same arithmetic as torch's per-tensor loop.

The weights and the learner metrics come out bit for bit as RLlib's update leaves them
(``tests/trainables/test_ppo_learner.py``, single-agent PPO on CPU). A learner that torch-compiles its update,
runs more than one learner, scales its gradients or steps torch learning-rate schedulers takes RLlib's update;
so does a multi-module whose module overrides RLlib's training forward pass; a dataset iterator, a stateful
module or a column that is not a tensor takes RLlib's minibatches. The private RLlib names it relies on, and
the two private methods of RLlib's update it changes (through :class:`rlsweep._compat.LearnerUpdateSeams`), are
in ``rlsweep._compat``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.minibatch_utils import MiniBatchCyclicIterator

from rlsweep import _compat


class SnapshotsDropped:
    """A learner's ``MetricsLogger`` as a minibatch before the last sees it: a snapshot (``window=1``) keeps
    only the value logged last, so one logged before the last minibatch is dropped; the rest passes."""

    def __init__(self, metrics: Any) -> None:
        self._metrics = metrics

    def log_value(self, *args: Any, window: Any = None, **kwargs: Any) -> None:
        if window != 1:
            self._metrics.log_value(*args, window=window, **kwargs)

    def log_dict(self, *args: Any, window: Any = None, **kwargs: Any) -> None:
        if window != 1:
            self._metrics.log_dict(*args, window=window, **kwargs)

    def __contains__(self, key: Any) -> bool:
        return key in self._metrics

    def __getattr__(self, name: str) -> Any:
        return getattr(self._metrics, name)


class CyclicMinibatches:
    """RLlib's ``MiniBatchCyclicIterator`` over a batch of flat tensors: the same minibatches in the same
    order (cycling through each module's rows, reshuffled with ``np.random.permutation`` each time a pass
    ends, as ``SampleBatch.shuffle`` does), sliced from the tensors rather than through ``SampleBatch`` slices.
    Each minibatch's columns are copies, as RLlib's concatenation makes them, so a module that writes into
    its batch changes no later minibatch."""

    def __init__(self, iterator: MiniBatchCyclicIterator) -> None:
        batch, self._minibatch_size, self._num_epochs, self._shuffle, self._num_total_minibatches = (
            _compat.cyclic_minibatch_settings(iterator))
        self._env_steps = len(batch)
        self._columns = {mid: dict(rows) for mid, rows in batch.policy_batches.items()}
        self._counts = {mid: len(rows) for mid, rows in batch.policy_batches.items()}

    @staticmethod
    def reproduces(iterator: Any, modules: Any) -> bool:
        """Whether ``iterator`` is one this class makes the same minibatches as: RLlib's cyclic iterator over
        flat tensors, with no sequences, no stateful module and no empty module batch (RLlib raises there)."""
        if type(iterator) is not MiniBatchCyclicIterator:
            return False
        for mid, rows in _compat.cyclic_minibatch_settings(iterator)[0].policy_batches.items():
            if modules[mid].is_stateful() or len(rows) == 0 or SampleBatch.SEQ_LENS in rows:
                return False
            if not all(isinstance(column, torch.Tensor) for column in rows.values()):
                return False
        return True

    def __iter__(self) -> Iterator[MultiAgentBatch]:
        start = dict.fromkeys(self._columns, 0)
        passes_done = dict.fromkeys(self._columns, 0)
        yielded = 0
        while ((self._num_total_minibatches == 0 and min(passes_done.values()) < self._num_epochs)
               or (self._num_total_minibatches > 0 and yielded < self._num_total_minibatches)):
            minibatch = {}
            for mid, count in self._counts.items():
                columns, first, wanted, pieces = self._columns[mid], start[mid], self._minibatch_size, []
                while first + wanted >= count:  # the rest of this pass, then a new (shuffled) pass
                    pieces.append({name: column[first:] for name, column in columns.items()})
                    wanted -= count - first
                    first = 0
                    passes_done[mid] += 1
                    if self._shuffle:
                        order = np.random.permutation(count)
                        columns = self._columns[mid] = {name: column[order] for name, column in columns.items()}
                end = first + wanted
                if end > first:
                    pieces.append({name: column[first:end] for name, column in columns.items()})
                minibatch[mid] = SampleBatch({name: torch.cat([piece[name] for piece in pieces]) for name in columns})
                start[mid] = end
            yield MultiAgentBatch(minibatch, self._env_steps)
            yielded += 1


class MarkingLast:
    """An iterator's minibatches, one ahead: ``on_next(is_last)`` is called before each is handed out, and
    with ``True`` once the iteration ends, however it ends. Reading ahead draws a pass's reshuffle one
    minibatch update earlier than RLlib does: the same permutation, unless a module or loss draws from
    numpy's global generator itself (PPO's do not)."""

    def __init__(self, minibatches: Any, on_next: Callable[[bool], None]) -> None:
        self._minibatches = minibatches
        self._on_next = on_next

    def __iter__(self) -> Iterator[Any]:
        try:
            ahead = iter(self._minibatches)
            try:
                current = next(ahead)
            except StopIteration:
                return
            for following in ahead:
                self._on_next(False)
                yield current
                current = following
            self._on_next(True)
            yield current
        finally:
            self._on_next(True)


class LeanTorchUpdate(_compat.LearnerUpdateSeams):
    """A torch learner's ``Learner.update`` with its per-minibatch overhead cut and its results unchanged (see
    the module's docstring). Goes before a ``TorchLearner`` class among the bases."""

    #: Whether the minibatch being updated on is the update's last (always, outside a lean iteration).
    _last_minibatch = True

    def _lean(self) -> bool:
        return (self.config.num_learners <= 1 and not self.config.torch_compile_learner
                and _compat.learner_update_is_plain(self))

    def _lean_forward(self, batch: dict[str, Any]) -> bool:
        """Whether the training forward pass can go module by module: RLlib's multi-module and torch modules
        whose training pass is RLlib's (the default ``forward_train``), none of them inference-only."""
        modules = self.module
        if not _compat.trains_as_multi_rl_module(modules):
            return False
        return all(isinstance(modules[mid], TorchRLModule) and type(modules[mid]).forward_train is TorchRLModule.forward_train
                   and not modules[mid].inference_only for mid in batch if mid in modules)

    def _note_last(self, is_last: bool) -> None:
        self._last_minibatch = is_last

    def make_minibatches(self, **kwargs: Any) -> Any:
        minibatches = super().make_minibatches(**kwargs)
        if not self._lean() or isinstance(minibatches, dict) or self.iterator is not None:
            return minibatches
        for mid in self.module.keys():  # once per update, where TorchRLModule.forward_train sets it on every call
            if isinstance(self.module[mid], torch.nn.Module):
                self.module[mid].train()
        if CyclicMinibatches.reproduces(minibatches, self.module):
            minibatches = CyclicMinibatches(minibatches)
        return MarkingLast(minibatches, self._note_last)

    def update_on_minibatch(self, batch: dict[str, Any], **kwargs: Any) -> tuple[Any, Any, Any]:
        last, self._last_minibatch = self._last_minibatch, True
        if not (self._lean() and self._lean_forward(batch)):
            return super().update_on_minibatch(batch, **kwargs)
        if last:
            _compat.log_off_policyness(self, batch)  # a snapshot: the last minibatch's value is the one reported
        modules = self.module
        fwd_out = {mid: _compat.module_forward_train(modules[mid], rows) for mid, rows in batch.items() if mid in modules}
        metrics = self.metrics
        if not last:
            self.metrics = SnapshotsDropped(metrics)
        try:
            loss_per_module = self.compute_losses(fwd_out=fwd_out, batch=batch)
            gradients = self.postprocess_gradients(self.compute_gradients(loss_per_module))
        finally:
            self.metrics = metrics
        self.apply_gradients(gradients)
        return fwd_out, loss_per_module, {}

    def apply_gradients(self, gradients_dict: dict[Any, Any]) -> None:
        """RLlib's ``apply_gradients``, with the finite case (every gradient there and finite: no ``nan``
        to zero) checked in one reduction and stepped directly."""
        if not self._lean():
            super().apply_gradients(gradients_dict)
            return
        optimizers = _compat.learner_optimizers(self)
        for module_optimizers in optimizers.values():
            for optimizer in module_optimizers:
                _use_foreach(optimizer)
        gradients = [gradient for gradient in gradients_dict.values() if gradient is not None]
        if (len(gradients) != len(gradients_dict) or not gradients
                or not bool(torch.isfinite(torch.nn.utils.get_total_norm(gradients)))):
            super().apply_gradients(gradients_dict)  # RLlib's handling of a non-finite gradient, and its warnings
            return
        _compat.set_gradients(self, gradients_dict)
        for module_optimizers in optimizers.values():
            for optimizer in module_optimizers:
                optimizer.step()


def _use_foreach(optimizer: Any) -> None:
    """Adam over all tensors at once, where torch allows it: not with a learning rate held as a tensor (as
    RLlib's lr schedule holds it); again after a restored state has put back the default."""
    if isinstance(optimizer, torch.optim.Adam):
        for group in optimizer.param_groups:
            group["foreach"] = not isinstance(group["lr"], torch.Tensor)
