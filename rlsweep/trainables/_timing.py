"""Per-iteration split of wall time into sampling, learning and the rest.

RLlib's ``timers/*`` are smoothed across iterations, so they cannot be summed per iteration. Every
algorithm times its phases through ``algo.metrics.log_time(key)``; we tap that call and add up the raw
durations of the outermost sampling and learning blocks of each iteration ourselves.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

#: RLlib timer keys (last element of the key tuple) -> phase.
PHASE_OF_TIMER: dict[str, str] = {
    "env_runner_sampling_timer": "sample",
    "sample": "sample",
    "offline_sampling_timer": "sample",
    "learner_update_timer": "learn",
    "learn_on_batch": "learn",
}


class PhaseTimer:
    """Wraps one algorithm's metrics logger; :meth:`iteration` measures one ``algo.train()`` call."""

    def __init__(self, algo: Any) -> None:
        self._totals = {"sample": 0.0, "learn": 0.0}
        self._active: str | None = None
        self.last: dict[str, float] = {}
        logger = algo.metrics
        original = logger.log_time

        def log_time(key: Any, *args: Any, **kwargs: Any) -> Any:
            name = key[-1] if isinstance(key, tuple) else key
            phase = PHASE_OF_TIMER.get(name)
            inner = original(key, *args, **kwargs)
            if phase is None or self._active is not None:
                return inner
            return self._timed(inner, phase)

        logger.log_time = log_time

    @contextlib.contextmanager
    def _timed(self, inner: Any, phase: str) -> Iterator[Any]:
        self._active = phase
        start = time.perf_counter()
        try:
            with inner as value:
                yield value
        finally:
            self._totals[phase] += time.perf_counter() - start
            self._active = None

    @contextlib.contextmanager
    def iteration(self) -> Iterator[None]:
        self._totals = {"sample": 0.0, "learn": 0.0}
        start = time.perf_counter()
        try:
            yield
        finally:
            total = time.perf_counter() - start
            sample = min(self._totals["sample"], total)
            learn = min(self._totals["learn"], total - sample)
            self.last = {
                "iteration_time_s": total,
                "sample_time_s": sample,
                "learn_time_s": learn,
                "other_time_s": total - sample - learn,
            }
