"""Tune's ``OptunaSearch`` as rlsweep's trials feed it. Imported when an Optuna sweep builds its searcher
(it imports Ray)."""

from __future__ import annotations

from typing import Any

from ray.tune.result import TRAINING_ITERATION
from ray.tune.search.optuna import OptunaSearch

from rlsweep.metrics import DIVERGED


class TrialAwareOptunaSearch(OptunaSearch):
    """Two things Tune's ``OptunaSearch`` (Ray 2.60) tells Optuna wrongly about rlsweep's trials:

    - A trial restarted from its checkpoint (a retry after a lost actor, a resumed sweep) reports the
      iterations after that checkpoint again. Optuna keeps one value per step and warns at each second
      report ("The reported value is ignored because this step=N is already reported"); only a step's
      first report is told.
    - A trial whose config diverged (a non-finite loss) ends with a row saying so. It is told as pruned at
      its last value before that row, as rl-baselines3-zoo's Optuna objective prunes a diverging trial: TPE
      then ranks it below every completed trial, and the diverged row's value, measured while the loss
      blew up, is not told as the config's score.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: trial id -> the steps told so far (saved with the searcher: OptunaSearch pickles its __dict__).
        self.steps_told: dict[str, set[Any]] = {}

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if result.get(DIVERGED):
            return
        told = self.steps_told.setdefault(trial_id, set())
        step = result.get(TRAINING_ITERATION)
        if step in told:
            return
        told.add(step)
        super().on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        if result and result.get(DIVERGED) and not error:
            # No value: OptunaSearch tells the trial as pruned, and Optuna takes its last reported step's.
            result = {k: v for k, v in result.items() if k != self.metric}
        self.steps_told.pop(trial_id, None)
        super().on_trial_complete(trial_id, result=result, error=error)
