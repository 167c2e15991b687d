"""The driver's spans of Tune's work (:mod:`rlsweep.tracing`): scheduler decisions, and each trial's root
span from start to end. Imports Ray: the sweep imports it when it builds its Tuner.

Each Tune scheduler rlsweep builds becomes its ``Traced...`` subclass here (same state, one more step after
each decision), so Tune pickles it by reference with the sweep and ``rlsweep resume`` restores it. With
tracing off, the step is one attribute lookup.
"""

from __future__ import annotations

from typing import Any

from ray.tune import Callback
from ray.tune.schedulers import AsyncHyperBandScheduler, FIFOScheduler, MedianStoppingRule, PopulationBasedTraining
from ray.tune.schedulers.pb2 import PB2

from rlsweep import _compat, tracing
from rlsweep.schedulers._hyperband import _EnvStepBOHB, _EnvStepHyperBand


class _Decisions:
    """A ``decide`` span after every ``on_trial_result``: the trial, its env steps and what the scheduler
    decided (CONTINUE, PAUSE, STOP)."""

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        decision = super().on_trial_result(tune_controller, trial, result)  # type: ignore[misc]
        tracer = tracing.driver()
        if tracer.enabled:
            tracer.event(
                "decide", trial_id=trial.trial_id, decision=str(decision), env_steps=result.get("env_steps"),
                scheduler=type(self).__name__.removeprefix("Traced"),
            )
        return decision


_ENDED = frozenset({"TERMINATED", "ERROR"})


class _SkipFinished:
    """``FIFOScheduler.choose_trial_to_run`` (the first PENDING trial in Tune's order, else the first PAUSED)
    without reading again the trials before the first one that has not ended. Tune's loop asks about 20 times
    a trial; its own method reads every trial each time (twice where none waits), so at 3,000 trials it was the
    driver's largest cost (``benchmarks/scale.py --replay``), growing with the trials. A trial that ended
    (TERMINATED, or ERROR with no retry left: a retried one goes back to PENDING within the same step of the
    loop) stays so in a run of the loop, and Tune only appends to its list or moves a running trial to its end,
    so the prefix of ended trials only grows; a new list (a resumed sweep) starts from the top."""

    _prefix: tuple[Any, int] = (None, 0)  # (Tune's trial list, how many of its first trials ended)

    def choose_trial_to_run(self, tune_controller: Any) -> Any:
        trials = tune_controller.get_trials()
        listed, done = self._prefix
        if listed is not trials or done > len(trials) or (done and trials[done - 1].status not in _ENDED):
            done = 0
        while done < len(trials) and trials[done].status in _ENDED:
            done += 1
        self._prefix = (trials, done)
        for wanted in ("PENDING", "PAUSED"):
            for index in range(done, len(trials)):
                if trials[index].status == wanted:
                    return trials[index]
        return None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_prefix", None)  # Tune's list is not the scheduler's to save
        return state


def _exploited(trial: Any, donor: Any, before: dict) -> None:
    """PBT and PB2: an ``exploit`` span when a trial takes a donor's checkpoint, with the donor and each
    mutated hyperparameter's old and new value."""
    tracer = tracing.driver()
    if tracer.enabled:
        changed = {k: v for k, v in trial.config.items() if before.get(k) != v}
        tracer.event(
            "exploit", trial_id=trial.trial_id, donor=donor.trial_id, env_steps=(donor.last_result or {}).get("env_steps"),
            **{f"mutation.{k}": f"{before.get(k)!r} -> {v!r}" for k, v in changed.items()},
        )


class _Exploits(_compat.observe_exploits(_exploited), _Decisions):  # type: ignore[misc]
    pass


class TracedFIFOScheduler(_SkipFinished, FIFOScheduler):
    pass


class TracedAsyncHyperBandScheduler(_SkipFinished, _Decisions, AsyncHyperBandScheduler):
    pass


class TracedHyperBand(_Decisions, _EnvStepHyperBand):
    pass


class TracedBOHB(_Decisions, _EnvStepBOHB):
    pass


class TracedMedianStoppingRule(_SkipFinished, _Decisions, MedianStoppingRule):
    pass


class TracedPopulationBasedTraining(_Exploits, PopulationBasedTraining):
    pass


class TracedPB2(_Exploits, PB2):
    pass


_TRACED = {
    FIFOScheduler: TracedFIFOScheduler,
    AsyncHyperBandScheduler: TracedAsyncHyperBandScheduler,
    _EnvStepHyperBand: TracedHyperBand,
    _EnvStepBOHB: TracedBOHB,
    MedianStoppingRule: TracedMedianStoppingRule,
    PopulationBasedTraining: TracedPopulationBasedTraining,
    PB2: TracedPB2,
}


def traced_scheduler(scheduler: Any) -> Any:
    """``scheduler`` as its traced subclass (unknown classes as they are); FIFO, which decides nothing, only
    chooses the next trial without rereading finished ones (:class:`_SkipFinished`)."""
    traced = _TRACED.get(type(scheduler))
    if traced is not None:
        scheduler.__class__ = traced
    return scheduler


class TrialSpans(Callback):
    """Each trial's root span (``trial``), on the driver, which sees a trial start and end however it ends
    (a scheduler's stop ends a trial's process without warning). Pickled with the sweep; it holds no
    tracer, only the spec's names."""

    def __init__(self, algorithm: str, env: str) -> None:
        self.algorithm, self.env = algorithm, env

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        tracing.driver().start_trial(
            trial.trial_id, algorithm=self.algorithm, env=self.env,
            **{f"config.{path}": value for path, value in trial.config.items()},
        )

    def _end(self, trial: Any, state: str) -> None:
        last = trial.last_result or {}
        tracing.driver().end_trial(trial.trial_id, state=state, env_steps=last.get("env_steps"))

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._end(trial, "TERMINATED")

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._end(trial, "ERROR")
