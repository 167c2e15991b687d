"""Per-iteration split of wall time into sampling, learning and the rest.

RLlib's ``timers/*`` are smoothed across iterations, so they cannot be summed per iteration. Every
algorithm times its phases through a ``MetricsLogger.log_time(key)`` block; we tap that call on the
algorithm's logger and on the local learner's logger and record when each outermost sampling or learning
block ran.

Synchronous algorithms (PPO, DQN, SAC) sample and learn one after the other in the training loop. IMPALA
and APPO hand batches to a learner thread that updates while the loop samples; on a trial's single CPU
the two threads take turns. The split therefore works on wall-clock intervals: time in which any learner
update ran counts as learning, sampling is the sampling time outside those updates, and the rest is
other, so the three always add up to the iteration's wall time.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from rlsweep import _compat
from rlsweep.metrics import TIMING_TOTAL

#: RLlib timer keys (last element of the key tuple) -> phase.
PHASE_OF_TIMER: dict[str, str] = {
    "env_runner_sampling_timer": "sample",
    "sample": "sample",
    "offline_sampling_timer": "sample",
    "learner_update_timer": "learn",
    "learn_on_batch": "learn",
    # IMPALA/APPO: the learner thread's own update, running beside the training loop.
    "learner_thread_update_timer": "learn",
    # Weights from the learner to the env runners: part of other_time_s, a span of its own in a trace.
    "synch_weights": "weight_sync",
}


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        elif end > start:
            merged.append((start, end))
    return merged


def _length(intervals: list[tuple[float, float]]) -> float:
    return sum(end - start for start, end in intervals)


def _minus(intervals: list[tuple[float, float]], removed: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """``intervals`` with every part covered by ``removed`` cut out (both unions)."""
    result = []
    for start, end in intervals:
        cursor = start
        for r_start, r_end in removed:
            if r_end <= cursor or r_start >= end:
                continue
            if r_start > cursor:
                result.append((cursor, r_start))
            cursor = max(cursor, r_end)
        if cursor < end:
            result.append((cursor, end))
    return result


class PhaseTimer:
    """Taps one algorithm's metrics loggers; :meth:`iteration` measures one ``algo.train()`` call."""

    def __init__(self, algo: Any) -> None:
        self._lock = threading.Lock()
        self._closed: list[tuple[str, float, float]] = []
        self._open: dict[int, tuple[str, float]] = {}
        self.last: dict[str, float] = {}
        #: The last iteration's window and its phases' intervals (perf_counter seconds), which never overlap:
        #: ``sample`` and ``learn`` add up to ``sample_time_s`` and ``learn_time_s``; ``weight_sync`` lies
        #: in ``other_time_s``. A trace's spans are made from them.
        self.last_window: tuple[float, float] = (0.0, 0.0)
        self.last_intervals: dict[str, list[tuple[float, float]]] = {}
        self._tap(algo.metrics)
        learner = _compat.local_learner(getattr(algo, "learner_group", None))
        if learner is not None and getattr(learner, "metrics", None) is not None:
            # A local learner (num_learners=0) runs in this process, possibly on its own thread.
            self._tap(learner.metrics)

    def _tap(self, logger: Any) -> None:
        depth = threading.local()

        def on_block(key: Any, inner: Any) -> Any:
            phase = PHASE_OF_TIMER.get(key[-1] if isinstance(key, tuple) else key)
            if phase is None or getattr(depth, "active", False):
                return inner
            return self._timed(inner, phase, depth)

        _compat.tap_log_time(logger, on_block)

    @contextlib.contextmanager
    def _timed(self, inner: Any, phase: str, depth: threading.local) -> Iterator[Any]:
        depth.active = True
        thread = threading.get_ident()
        start = time.perf_counter()
        with self._lock:
            self._open[thread] = (phase, start)
        try:
            with inner as value:
                yield value
        finally:
            with self._lock:
                self._open.pop(thread, None)
                self._closed.append((phase, start, time.perf_counter()))
            depth.active = False

    @contextlib.contextmanager
    def iteration(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            end = time.perf_counter()
            self.last = self._split(start, end)

    def _split(self, start: float, end: float) -> dict[str, float]:
        with self._lock:
            spans = [*self._closed, *((phase, t0, end) for phase, t0 in self._open.values())]
            self._closed = []
        clipped: dict[str, list[tuple[float, float]]] = {"sample": [], "learn": [], "weight_sync": []}
        for phase, t0, t1 in spans:
            t0, t1 = max(t0, start), min(t1, end)
            if t1 > t0:
                clipped[phase].append((t0, t1))
        learn = _union(clipped["learn"])
        sample = _minus(_union(clipped["sample"]), learn)
        sync = _minus(_minus(_union(clipped["weight_sync"]), learn), sample)
        self.last_window = (start, end)
        self.last_intervals = {"sample": sample, "learn": learn, "weight_sync": sync}
        total = end - start
        learn_s, sample_s = _length(learn), _length(sample)
        return {
            TIMING_TOTAL: total,
            "sample_time_s": sample_s,
            "learn_time_s": learn_s,
            "other_time_s": max(0.0, total - sample_s - learn_s),
        }
