"""HyperBand brackets in env steps, for Ray's synchronous HyperBand schedulers."""

from __future__ import annotations

import math
from typing import Any

from ray.tune.schedulers import HyperBandScheduler, TrialScheduler
from ray.tune.schedulers.hb_bohb import HyperBandForBOHB

from rlsweep import _compat


class _EnvStepBrackets:
    """Ray sizes HyperBand's brackets from ``max_t`` alone, as if the smallest useful budget were 1 time
    unit: in env steps that is log_eta(100000) ~ 10 brackets, the first planning thousands of trials that
    each get a handful of env steps. Here they are counted from ``max_t / grace`` (HyperBand's R = max
    budget / min budget), so the most aggressive bracket's first rung is ``grace`` env steps.

    A trial that reached ``max_t`` is stopped, not paused: Ray pauses it until the rest of its bracket
    catches up, and when the last of them finishes first, the sweep ends with that trial left PAUSED.
    """

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        decision = super().on_trial_result(tune_controller, trial, result)  # type: ignore[misc]
        time_attr, max_t = _compat.hyperband_clock(self)
        if decision == TrialScheduler.PAUSE and result.get(time_attr, 0) >= max_t:
            return TrialScheduler.STOP
        return decision


class _EnvStepHyperBand(_EnvStepBrackets, HyperBandScheduler):
    pass


class _EnvStepBOHB(_EnvStepBrackets, HyperBandForBOHB):
    pass


def env_step_hyperband(bohb: bool, *, grace: int, **kwargs: Any) -> Any:
    """``HyperBandScheduler`` (or ``HyperBandForBOHB``) with brackets sized from ``grace`` env steps."""
    scheduler = (_EnvStepBOHB if bohb else _EnvStepHyperBand)(**kwargs)
    brackets = int(round(math.log(kwargs["max_t"] / grace) / math.log(kwargs["reduction_factor"]))) + 1
    _compat.set_hyperband_brackets(scheduler, brackets)
    return scheduler
