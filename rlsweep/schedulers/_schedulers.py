"""The trial schedulers a spec can name. Their time unit is always the lifetime env-step count."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlsweep.errors import Problem
from rlsweep.schedulers._base import Entry, Option

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

#: The result key schedulers measure time in.
TIME_ATTR = "env_steps"


class Scheduler(Entry):
    section = "scheduler"


class FifoScheduler(Scheduler):
    name = "fifo"
    doc = "run every trial to its budget"

    def build(self, spec: SweepSpec, **context: Any) -> Any:
        from ray.tune.schedulers import FIFOScheduler

        return FIFOScheduler()


class AshaScheduler(Scheduler):
    name = "asha"
    doc = "asynchronous successive halving: stop trials that trail their peers at each rung"
    options = {
        "grace_env_steps": Option(
            (int,), None, minimum=1, doc="env steps every trial gets before it can be stopped (default: budget/9)"
        ),
        "reduction_factor": Option((int, float), 3, exclusive_minimum=1, doc="keep 1/reduction_factor at each rung"),
        "brackets": Option((int,), 1, minimum=1, doc="number of brackets"),
    }

    def grace_env_steps(self, spec: SweepSpec) -> int:
        options = self.resolved(spec.scheduler.options)
        if options["grace_env_steps"] is not None:
            return int(options["grace_env_steps"])
        return max(1, int(spec.budget.env_steps / options["reduction_factor"] ** 2))

    def check(self, spec: SweepSpec) -> list[Problem]:
        if self.check_options(spec.scheduler.options):
            return []
        grace = self.grace_env_steps(spec)
        if grace >= spec.budget.env_steps:
            return [
                Problem(
                    "scheduler.grace_env_steps",
                    f"must be below budget.env_steps={spec.budget.env_steps} or ASHA never stops a trial, got {grace}",
                )
            ]
        return []

    def build(self, spec: SweepSpec, **context: Any) -> Any:
        from ray.tune.schedulers import AsyncHyperBandScheduler

        options = self.resolved(spec.scheduler.options)
        return AsyncHyperBandScheduler(
            time_attr=TIME_ATTR,
            max_t=spec.budget.env_steps,
            grace_period=self.grace_env_steps(spec),
            reduction_factor=options["reduction_factor"],
            brackets=options["brackets"],
        )


#: Every scheduler by the name a spec uses. The CLI's choices and the docs come from here.
SCHEDULERS: dict[str, Scheduler] = {s.name: s for s in (FifoScheduler(), AshaScheduler())}
