"""What every scheduler entry declares: its options (in env steps), what it needs of the trials
(checkpoints at its decisions), and how it is built."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rlsweep._entry import Entry
from rlsweep.errors import Problem
from rlsweep.metrics import ENV_STEPS

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

#: The result key schedulers measure time in: the lifetime env-step count.
TIME_ATTR = ENV_STEPS


@dataclass(frozen=True)
class CheckpointRule:
    """When a scheduler needs the trial to have just checkpointed: at the first report at or past
    ``start`` env steps, then at each report at least ``interval`` env steps after the last one it needed.

    This is PBT's own perturbation rule, so the trainable checkpoints at exactly the reports where PBT
    copies a checkpoint. ``interval=1`` means every report (schedulers that pause trials at any result).
    """

    interval: int
    start: int = 0

    def fires(self, env_steps: int, last: int) -> bool:
        return env_steps >= self.start and env_steps - last >= self.interval


EVERY_REPORT = CheckpointRule(1)


class SchedulerEntry(Entry):
    """A scheduler a spec can name."""

    section = "scheduler"
    #: Default for ``checkpoint.keep`` when the spec does not set it (None: keep every checkpoint).
    default_keep: ClassVar[int | None] = 2
    #: Whether its trials continue from other trials' checkpoints (PBT's exploit): their env-step count
    #: can jump, and network-shaping settings cannot be searched.
    restores_other_trials: ClassVar[bool] = False

    def checkpoint_rule(self, spec: SweepSpec) -> CheckpointRule | None:
        """The reports at which this scheduler needs a checkpoint (besides ``checkpoint.every_env_steps``)."""
        return None

    def check(self, spec: SweepSpec, options: Any) -> list[Problem]:
        """Checks that need the rest of the spec (budgets, the space). Nothing by default."""
        return []

    @abc.abstractmethod
    def build(self, spec: SweepSpec) -> Any:
        """The Tune scheduler for this spec."""
