"""The per-iteration time split (sample, learn, other) against wall time measured apart by the test, on a
stand-in algorithm whose metrics logger times blocks as RLlib's does (no Ray). The trace test
(tests/test_tracing.py) checks that the spans agree with the row; this checks that the row is the truth."""

from __future__ import annotations

import contextlib
import time

import pytest

from rlsweep.trainables._timing import PhaseTimer

#: Each phase lasts tens of milliseconds; what the timer and the test measure differs by the few calls
#: between their clocks, which a busy machine can stretch to a few milliseconds.
TOLERANCE_S = 0.005


class _Logger:
    def log_time(self, key, **kwargs):
        return contextlib.nullcontext()


class _Algorithm:
    """What PhaseTimer taps: the algorithm's metrics logger (no local learner)."""

    def __init__(self) -> None:
        self.metrics = _Logger()
        self.learner_group = None


def test_sample_learn_and_other_are_the_wall_time_of_each_phase():
    algo = _Algorithm()
    timer = PhaseTimer(algo)
    measured = {"sample": 0.0, "learn": 0.0, "weight_sync": 0.0}

    def phase(timer_key: str, name: str, seconds: float) -> None:
        start = time.perf_counter()
        with algo.metrics.log_time(("env_runners", timer_key)):
            time.sleep(seconds)
        measured[name] += time.perf_counter() - start

    start = time.perf_counter()
    with timer.iteration():
        phase("env_runner_sampling_timer", "sample", 0.03)
        time.sleep(0.02)  # neither: other
        phase("learner_update_timer", "learn", 0.05)
        phase("synch_weights", "weight_sync", 0.03)  # weights to the env runners: other, not learning
        phase("env_runner_sampling_timer", "sample", 0.02)
    wall = time.perf_counter() - start

    split = timer.last
    assert split["iteration_time_s"] == pytest.approx(wall, abs=TOLERANCE_S)
    assert split["sample_time_s"] == pytest.approx(measured["sample"], abs=TOLERANCE_S)
    assert split["learn_time_s"] == pytest.approx(measured["learn"], abs=TOLERANCE_S)
    assert split["other_time_s"] == pytest.approx(wall - measured["sample"] - measured["learn"], abs=TOLERANCE_S)
    assert split["other_time_s"] >= 0.05  # the pause and the weight sync
    # The trace's weight_sync span is the time the sync took.
    synced = sum(end - begin for begin, end in timer.last_intervals["weight_sync"])
    assert synced == pytest.approx(measured["weight_sync"], abs=TOLERANCE_S)


def test_a_learner_update_on_another_thread_while_sampling_counts_once_as_learning():
    # IMPALA/APPO: the learner thread updates while the loop samples; the overlap counts once, as learning.
    import threading

    algo = _Algorithm()
    timer = PhaseTimer(algo)
    learned = []

    def learner_thread() -> None:
        begin = time.perf_counter()
        with algo.metrics.log_time(("learner_thread_update_timer",)):
            time.sleep(0.04)
        learned.append(time.perf_counter() - begin)

    with timer.iteration():
        begin = time.perf_counter()
        with algo.metrics.log_time(("env_runner_sampling_timer",)):
            time.sleep(0.02)
            updater = threading.Thread(target=learner_thread)
            updater.start()
            updater.join()
            time.sleep(0.02)
        sampling = time.perf_counter() - begin
    assert timer.last["learn_time_s"] == pytest.approx(learned[0], abs=TOLERANCE_S)
    assert timer.last["sample_time_s"] == pytest.approx(sampling - learned[0], abs=TOLERANCE_S)
