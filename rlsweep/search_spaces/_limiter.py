"""How many suggestions a searcher may have running: Tune's ``ConcurrencyLimiter`` with a limit that
follows the Ray cluster; and each suggestion as a span of the sweep's trace (:mod:`rlsweep.tracing`).
Imported when a sweep builds its searcher (it imports Ray)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import ClassVar

from ray.tune.search import BasicVariantGenerator, ConcurrencyLimiter, Searcher

from rlsweep import tracing

log = logging.getLogger("rlsweep")


class ClusterLimiter(ConcurrencyLimiter):
    """At most as many unfinished trials as the cluster holds now (``capacity()``), and no more than ``cap``
    (``budget.max_concurrent``) where one is set. A model-based searcher so suggests a trial only when it
    can start, with every result in by then, and a node that joins mid-sweep gets trials."""

    #: Seconds between two looks at the cluster: Tune asks for a suggestion up to ten times a second.
    refresh_s: ClassVar[float] = 2.0

    def __init__(self, searcher: Searcher, *, cap: int | None, capacity: Callable[[], int] | None) -> None:
        self.cap, self.capacity = cap, capacity
        super().__init__(searcher, max_concurrent=self._limit())
        self.checked_at = time.monotonic()

    def _limit(self) -> int:
        limits = [n for n in (self.cap, self.capacity() if self.capacity is not None else None) if n is not None]
        return max(1, min(limits))

    def suggest(self, trial_id: str) -> dict | None:
        now = time.monotonic()
        # A limiter restored by `rlsweep resume` saved a time from another process's clock.
        if self.capacity is not None and not 0 <= now - self.checked_at < self.refresh_s:
            self.checked_at = now
            limit = self._limit()
            if limit != self.max_concurrent:
                log.info("concurrency follows the cluster: %d -> %d trials at once", self.max_concurrent, limit)
                self.set_max_concurrency(limit)
                self.searcher.set_max_concurrency(limit)  # a searcher that limits itself (Tune's protocol)
        suggestion = super().suggest(trial_id)
        if isinstance(suggestion, dict):
            _suggested(trial_id, suggestion, limit=self.max_concurrent, searcher=type(self.searcher).__name__)
        return suggestion


def _suggested(trial_id: str, config: dict, **values: object) -> None:
    """A ``suggest`` span on the sweep's trace: the trial and the config it was given."""
    tracer = tracing.driver()
    if tracer.enabled:
        tracer.event("suggest", trial_id=trial_id, **values, **{f"config.{k}": v for k, v in config.items()})


class TracedVariantGenerator(BasicVariantGenerator):
    """Tune's generator of random and grid draws, with a ``suggest`` span per trial it makes."""

    def next_trial(self):  # noqa: ANN201 - Tune's signature
        trial = super().next_trial()
        if trial is not None:
            _suggested(trial.trial_id, dict(trial.config), searcher="BasicVariantGenerator")
        return trial
