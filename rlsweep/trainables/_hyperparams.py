"""The hyperparameters in effect inside a running RLlib algorithm, read back from its learners.

PBT restarts a trial with a mutated config from another trial's checkpoint. Restoring that checkpoint
loads the optimizer state of the trial that saved it, learning rate included, and RLlib resets the
learning rate from the config only after the next gradient update: the first update after every
exploit used the donor's rate (measured on Ray 2.60, PPO). :func:`reapply_learning_rates` closes that
gap, and :func:`in_effect` reports what the learner really holds so a user can see a mutation land.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rlsweep import _compat


def reapply_learning_rates(algo: Any, env_steps: int = 0) -> None:
    """Set every optimizer's learning rate, and PPO's entropy coefficient, to the value the trial's own
    config schedules at ``env_steps`` (the restored checkpoint's): a new learner's schedules start at their
    env step 0 value until its first update, so a scheduled rate or coefficient (``training.lr: {schedule:
    linear, ...}``) would restart for one update."""

    def reset(learner: Any) -> None:
        for optimizer, schedule in _compat.optimizer_learning_rates(learner).items():
            _compat.set_optimizer_learning_rate(learner, optimizer, schedule.update(timestep=env_steps))
        for scheduler in _compat.entropy_schedulers(learner).values():
            scheduler.update(timestep=env_steps)

    algo.learner_group.foreach_learner(reset)


def in_effect(algo: Any, paths: Iterable[str]) -> dict[str, float]:
    """Spec path -> running value, for each searched ``method.argument`` path whose value is a number.

    ``training.lr`` is the learner's optimizer learning rate; other ``training.*`` values come from the
    learner's own config (what the loss uses); other sections from the algorithm's config.
    """
    paths = list(paths)
    if not paths or algo.learner_group is None:
        return {}
    values = _numbers({path: _lookup(algo.config, path.partition(".")[2]) for path in paths if not path.startswith("training.")})
    learner_paths = [path for path in paths if path.startswith("training.")]
    if not learner_paths:
        return values

    # Shipped to remote learners (learners.num_learners >= 1): it holds the paths only, not the algorithm.
    def read(learner: Any) -> dict[str, float]:
        found: dict[str, Any] = {}
        schedules = _compat.optimizer_learning_rates(learner)
        for path in learner_paths:
            if path == "training.lr" and schedules:
                found[path] = _compat.optimizer_learning_rate(learner, next(iter(schedules)))
            else:
                found[path] = _lookup(learner.config, path.partition(".")[2])
        return _numbers(found)

    # One result per learner (a RemoteCallResults of CallResults); all learners hold the same values.
    for call in algo.learner_group.foreach_learner(read):
        if call.ok:
            return {**values, **call.get()}
    return values


def _numbers(values: Mapping[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _lookup(config: Any, dotted: str) -> Any:
    key, *rest = dotted.split(".")
    value = getattr(config, key, None)
    for part in rest:
        value = value.get(part) if isinstance(value, Mapping) else None
    return value
