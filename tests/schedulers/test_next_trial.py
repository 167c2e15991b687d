"""The next trial to start: rlsweep's FIFO, ASHA and median-stopping schedulers choose it as Tune's own FIFO
does, without rereading the trials that finished (a cost that grew with the sweep)."""

from __future__ import annotations

import pickle
import random

import pytest
from ray.tune.schedulers import AsyncHyperBandScheduler, FIFOScheduler, MedianStoppingRule

from rlsweep.schedulers._traced import traced_scheduler

STATES = ("PENDING", "RUNNING", "PAUSED", "TERMINATED", "ERROR")


class _Trial:
    def __init__(self, name: str) -> None:
        self.name, self.status = name, "PENDING"

    def __repr__(self) -> str:
        return f"{self.name}:{self.status}"


class _Controller:
    def __init__(self) -> None:
        self.trials: list[_Trial] = []

    def get_trials(self) -> list[_Trial]:
        return self.trials


@pytest.mark.parametrize("built", [FIFOScheduler, lambda: AsyncHyperBandScheduler(time_attr="env_steps", max_t=100),
                                   lambda: MedianStoppingRule(time_attr="env_steps")], ids=["fifo", "asha", "median"])
def test_the_next_trial_is_the_one_tunes_fifo_chooses_as_trials_start_finish_fail_and_requeue(built):
    ours, tunes = traced_scheduler(built()), FIFOScheduler()
    rng = random.Random(7)
    controller = _Controller()
    most_errored = 0
    for step in range(4000):
        move = rng.random()
        # In a run of Tune's loop a trial that ended (finished, or failed with no retry left) stays so.
        unfinished = [t for t in controller.trials if t.status not in ("TERMINATED", "ERROR")]
        running = [t for t in unfinished if t.status == "RUNNING"]
        if move < 0.25 or not controller.trials:
            controller.trials.append(_Trial(f"t{step}"))  # the searcher adds a trial
        elif move < 0.8 and unfinished:
            rng.choice(unfinished).status = rng.choice(STATES)  # a trial starts, pauses, fails or finishes
        elif move < 0.9 and running:
            trial = rng.choice(running)  # a failed trial with retries left: Tune requeues it at the end of its list
            controller.trials.pop(controller.trials.index(trial))
            controller.trials.append(trial)
            trial.status = "PENDING"
        elif move < 0.93:
            # `rlsweep resume`: a new controller lists every trial again, those that failed to run again
            controller.trials = list(controller.trials)
            for trial in controller.trials:
                if trial.status in ("ERROR", "RUNNING"):
                    trial.status = "PENDING"
            if not isinstance(ours, MedianStoppingRule):  # Tune's median rule holds a lambda: it does not pickle
                ours = pickle.loads(pickle.dumps(ours))
        assert ours.choose_trial_to_run(controller) is tunes.choose_trial_to_run(controller), (step, controller.trials)
        most_errored = max(most_errored, sum(t.status == "ERROR" for t in controller.trials))
    assert sum(t.status == "TERMINATED" for t in controller.trials) > 100  # the prefix was long enough to skip
    assert most_errored > 10  # and failed ones among them, until a resume ran them again
