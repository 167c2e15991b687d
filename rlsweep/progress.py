"""What a sweep shows while it runs: the env steps done out of the planned total with an ETA, the trials
running, finished, stopped and errored, the best so far (value, trial, config), and a line per running
trial (its env steps, metric and env steps per second).

Four modes: ``bar``, a live view on a terminal (rich); ``lines``, plain lines at a bounded rate for a
log file, CI or ``nohup`` (a summary at most every ``interval_s`` seconds, plus one line when a trial
ends); ``results``, a line per result of every trial (unbounded: for a log to grep, or a script that
acts on a trial's progress); ``none``. In every mode a failed trial prints where its error is.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from rlsweep import _compat
from rlsweep.metrics import DIVERGED, ENV_STEPS

MODES = ("bar", "lines", "results", "none")

#: ``lines`` mode: at most one summary line per this many seconds.
LINES_INTERVAL_S = 10.0


def default_mode(stream: TextIO | None = None) -> str:
    """``bar`` on a terminal, else ``lines``."""
    stream = stream or sys.stdout
    return "bar" if getattr(stream, "isatty", lambda: False)() else "lines"


def checked_mode(mode: str | None) -> str | None:
    """``mode`` if it is one of :data:`MODES` (or None: the terminal's default when the sweep starts).

    Raises:
        UsageError: any other value.
    """
    if mode is not None and mode not in MODES:
        from rlsweep.errors import UsageError

        raise UsageError(f"progress must be one of {', '.join(MODES)}, got {mode!r}", "progress")
    return mode


@dataclass
class TrialState:
    env_steps: int = 0
    value: float | None = None
    steps_per_s: float = 0.0
    state: str = "running"  # running | finished | stopped | errored


@dataclass
class SweepState:
    """The sweep as its results come in (pure: no terminal, no Ray)."""

    metric: str
    mode: str
    budget: int
    trials: int
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)
    by_trial: dict[str, TrialState] = field(default_factory=dict)
    configs: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    best: tuple[float, str] | None = None
    #: Env steps the trials ran since this view started: the rate behind the ETA. A resumed sweep's trials
    #: had run steps before, and a trial that goes on from an earlier checkpoint than its last result
    #: runs some again; only the increases of each trial's count since are counted.
    ran: int = 0
    #: The held-out stage's view (None in a search): each entrant's value in the search, by trial id; and
    #: which entrant each run retrains, by run. Its "best" is then the leading entrant's IQM over the test
    #: seeds it finished, beside its tuning value, never one lucky run.
    tuning_values: dict[str, float] | None = None
    entrant_of: dict[str, str] = field(default_factory=dict)
    #: ``holdout.score_range`` in the held-out stage's view: a run that failed (errored, diverged, stopped
    #: short) counts at its lowest score, as in the stage's answer, unless a finished run scored outside it.
    score_range: tuple[float, float] | None = None
    #: Held while the state changes (Tune's thread) and while the live view reads it (rich's thread).
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its callbacks with the sweep (to restore them on resume); a lock does not pickle.
        return {k: v for k, v in self.__dict__.items() if k != "lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.RLock()

    def restored(self, trials: list[Any], config_of: Callable[[Any], Mapping[str, Any] | None] = lambda t: None) -> None:
        """Count the trials a resumed sweep starts with (Tune's trials): their last results, and those that
        had ended (also a trial that failed before its first result); the ETA counts only the env steps run
        from here on."""
        with self.lock:
            ran = self.ran
            for trial in trials:
                if trial.trial_id in self.by_trial:
                    continue
                if trial.last_result:
                    self._result(trial.trial_id, trial.last_result, config_of(trial))
                if trial.status in ("TERMINATED", "ERROR"):
                    self.ended(trial.trial_id, error=trial.status == "ERROR")
            self.ran = ran

    def result(self, trial_id: str, result: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> None:
        with self.lock:
            self._result(trial_id, result, config)

    def _result(self, trial_id: str, result: Mapping[str, Any], config: Mapping[str, Any] | None) -> None:
        trial = self.by_trial.setdefault(trial_id, TrialState())
        steps = int(result.get(ENV_STEPS, trial.env_steps) or 0)
        self.ran += max(0, steps - trial.env_steps)
        trial.env_steps = steps
        rate = result.get("env_steps_per_s")
        trial.steps_per_s = float(rate) if isinstance(rate, (int, float)) else trial.steps_per_s
        value = result.get(self.metric)
        if isinstance(value, (int, float)) and value == value:
            trial.value = float(value)
            if self.best is None or (value > self.best[0] if self.mode == "max" else value < self.best[0]):
                self.best = (float(value), trial_id)
        if config is not None:
            self.configs[trial_id] = config

    def ended(self, trial_id: str, *, error: bool = False) -> None:
        with self.lock:
            trial = self.by_trial.setdefault(trial_id, TrialState())
            trial.state = "errored" if error else "finished" if trial.env_steps >= self.budget else "stopped"

    @property
    def planned(self) -> int:
        """The env steps the sweep will have run: the budget of every trial, less what the trials that
        ended early (stopped by the scheduler, or failed) will never run."""
        short = sum(self.budget - t.env_steps for t in self.by_trial.values() if t.state != "running" and t.env_steps < self.budget)
        return self.trials * self.budget - short

    @property
    def done(self) -> int:
        return sum(min(t.env_steps, self.budget) for t in self.by_trial.values())

    def eta_s(self) -> float | None:
        """Seconds left at the rate so far (None before any env step)."""
        elapsed = self.clock() - self.started
        if self.ran <= 0 or elapsed <= 0:
            return None
        return max(0.0, (self.planned - self.done) / (self.ran / elapsed))

    def counts(self) -> dict[str, int]:
        found = {"running": 0, "finished": 0, "stopped": 0, "errored": 0}
        for trial in self.by_trial.values():
            found[trial.state] += 1
        return found

    def summary(self) -> str:
        """One line: env steps done / planned, %, ETA, trial counts, the best so far."""
        done, planned = self.done, max(self.planned, 1)
        eta = self.eta_s()
        counts = ", ".join(f"{n} {state}" for state, n in self.counts().items())
        line = (f"env steps {done:,} / {planned:,} ({100 * done / planned:.0f}%), ETA {_duration(eta)}; "
                f"trials {counts} of {self.trials}")
        return line + "; " + self.best_text()

    def best_text(self) -> str:
        if self.tuning_values is not None:
            return self._held_out_text()
        if self.best is None:
            return f"best {self.metric}: none yet"
        value, trial_id = self.best
        config = ", ".join(f"{k}={_short(v)}" for k, v in (self.configs.get(trial_id) or {}).items())
        return f"best {self.metric} {value:.4g} (trial {trial_id}{': ' + config if config else ''})"

    def held_out_scores(self) -> dict[str, list[float]]:
        """Each entrant's values on the test seeds whose runs ended: a run that finished at the budget gives its
        value; one that failed gives the lowest score of ``score_range`` where the range is known and holds
        (no finished run scored outside it), as the stage's answer counts it, and is left out otherwise."""
        scores: dict[str, list[float]] = {}
        ended = [(entrant, trial) for trial_id, trial in self.by_trial.items()
                 if (entrant := self.entrant_of.get(trial_id)) is not None and trial.state != "running"]
        from rlsweep.holdout import known_floor

        def scored(trial: Any) -> bool:  # an infinite value is a failed run, as the stage counts it
            return trial.state == "finished" and trial.value is not None and math.isfinite(trial.value)

        floor = known_floor(self.score_range, dict(enumerate(trial.value for _, trial in ended if scored(trial))))
        for entrant, trial in ended:
            if scored(trial):
                scores.setdefault(entrant, []).append(trial.value)
            elif floor is not None:
                scores.setdefault(entrant, []).append(floor)
        return scores

    def _held_out_text(self) -> str:
        from rlsweep.seeds import interquartile_mean

        scores = self.held_out_scores()
        if not scores:
            return f"held-out {self.metric}: no run finished yet"
        better = 1 if self.mode == "max" else -1
        # The leader: most test seeds finished (the race's survivors), then the best IQM over them.
        entrant = max(scores, key=lambda e: (len(scores[e]), better * interquartile_mean(scores[e])))
        tuning = (self.tuning_values or {}).get(entrant)
        beside = f"; tuning value {tuning:.4g}, the search's own: optimistic" if tuning is not None else ""
        return (f"held-out {self.metric} so far: {interquartile_mean(scores[entrant]):.4g} (IQM over "
                f"{len(scores[entrant])} test seed(s), trial {entrant}{beside})")


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "--"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Display:
    """Shows a :class:`SweepState` in one of :data:`MODES`."""

    def __init__(self, state: SweepState, mode: str, stream: TextIO | None = None, interval_s: float = LINES_INTERVAL_S) -> None:
        self.state, self.mode, self.stream = state, mode, stream or sys.stdout
        self.interval_s = interval_s
        self.last_line = -float("inf")
        self.lock = threading.Lock()
        self.live: Any = None
        if mode == "bar":
            from rich.console import Console
            from rich.live import Live

            self.console = Console(file=self.stream)
            self.live = Live(self._view(), console=self.console, refresh_per_second=4, transient=False,
                             get_renderable=self._view)
            self.live.start()

    def say(self, line: str, *, always: bool = False) -> None:
        """An event line (a trial ended, failed): above the live view, or a plain line. ``always``: shown in
        every mode, ``none`` too (a failure, a retry, a config that diverged)."""
        if self.mode == "none" and not always:
            return
        with self.lock:
            if self.live is not None:
                self.live.console.print(line, markup=False, highlight=False)
            else:
                print(line, file=self.stream, flush=True)

    def update(self) -> None:
        if self.mode != "lines":
            return  # the live view redraws itself; results mode says each result
        now = self.state.clock()
        if now - self.last_line >= self.interval_s:
            self.last_line = now
            self.say(self.state.summary())

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
        elif self.mode in ("lines", "results"):
            self.say(self.state.summary())

    def _view(self) -> Any:
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        with self.state.lock:
            return self._drawn(Group, ProgressBar, Table, Text)

    def _drawn(self, Group: Any, ProgressBar: Any, Table: Any, Text: Any) -> Any:
        state = self.state
        done, planned = state.done, max(state.planned, 1)
        header = Table.grid(padding=(0, 1))
        header.add_row(Text("env steps"), ProgressBar(total=planned, completed=done, width=40),
                       Text(f"{done:,} / {planned:,}  {100 * done / planned:.0f}%  ETA {_duration(state.eta_s())}"))
        counts = state.counts()
        lines = [
            header,
            Text(f"trials: {counts['running']} running, {counts['finished']} finished, {counts['stopped']} stopped, "
                 f"{counts['errored']} errored, of {state.trials}"),
            Text(state.best_text()),
        ]
        running = [(tid, t) for tid, t in state.by_trial.items() if t.state == "running"]
        if running:
            table = Table(box=None, padding=(0, 2), show_edge=False)
            for column in ("trial", "env steps", state.metric, "env steps/s"):
                table.add_column(column, justify="left" if column == "trial" else "right")
            for trial_id, trial in running:
                table.add_row(trial_id, f"{trial.env_steps:,} / {state.budget:,}",
                              "--" if trial.value is None else f"{trial.value:.4g}", f"{trial.steps_per_s:,.0f}")
            lines.append(table)
        return Group(*lines)


def tune_callback(
    spec: Any, mode: str | None, stream: TextIO | None = None, trials: int | None = None,
    tuning_values: Mapping[str, float] | None = None,
) -> Any:
    """A Tune callback that shows the sweep's progress in ``mode`` (None: the terminal's default, decided
    when the sweep starts, so a sweep resumed from a log file shows lines though it began on a terminal;
    ``trials``: how many the sweep runs, default ``budget.trials``; ``tuning_values``: the held-out stage's
    entrants' values in the search, which makes it the stage's view)."""
    from ray.tune import Callback

    from rlsweep import store

    checked_mode(mode)

    class Progress(Callback):
        def __init__(self) -> None:
            bounds = getattr(getattr(spec, "holdout", None), "score_range", None)
            self.state = SweepState(spec.metric.name, spec.metric.mode, spec.budget.env_steps, trials or spec.budget.trials,
                                    tuning_values=dict(tuning_values) if tuning_values is not None else None,
                                    score_range=(float(bounds[0]), float(bounds[1])) if bounds and tuning_values is not None else None)
            self.display: Display | None = None
            self.mode = mode
            self.seeded = False

        def __getstate__(self) -> dict[str, Any]:
            # Tune pickles its callbacks with the sweep; a resumed sweep starts its own view.
            return {**self.__dict__, "display": None, "seeded": False}

        def setup(self, **info: Any) -> None:
            self.state.started = self.state.clock()
            self.mode = mode or default_mode(stream)
            self.display = Display(self.state, self.mode, stream)
            # This view says each failure in a line (its cause and error file): Tune's ERROR line with the
            # trial's whole traceback, per attempt, would bury it.
            logging.getLogger(TUNE_CONTROLLER).addFilter(_TUNE_TRIAL_FAILED)

        def on_step_begin(self, iteration: int, trials: list, **info: Any) -> None:
            if not self.seeded:
                self.seeded = True
                for trial in trials:
                    self._note_entrant(trial)
                self.state.restored(trials, lambda t: _searched(spec, t.config))

        def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
            self._note_entrant(trial)
            self.state.result(trial.trial_id, result, _searched(spec, trial.config))
            if self.display is None:
                return
            if self.mode == "results":
                self.display.say(result_line(spec, trial.trial_id, result))
            self.display.update()

        def _note_entrant(self, trial: Any) -> None:
            if self.state.tuning_values is not None and (entrant := (trial.config or {}).get(store.CANDIDATE_KEY)) is not None:
                self.state.entrant_of[trial.trial_id] = str(entrant)

        def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            self._note_entrant(trial)
            self.state.ended(trial.trial_id)
            ended = self.state.by_trial[trial.trial_id]
            if self.display is None:
                return
            diverged = (getattr(trial, "last_result", None) or {}).get(DIVERGED)
            if diverged:
                self.display.say(f"[{trial.trial_id}] diverged at {ended.env_steps:,} env steps ({diverged})", always=True)
                return
            value = "--" if ended.value is None else f"{ended.value:.4g}"
            self.display.say(f"[{trial.trial_id}] {ended.state} at {ended.env_steps:,} env steps: {spec.metric.name} {value}")

        def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            if self.display is not None:
                failures = trial.run_metadata.num_failures
                self.display.say(
                    f"[{trial.trial_id}] failed ({_cause(trial)}); retrying from its latest checkpoint, attempt "
                    f"{failures + 1} of {trial.max_failures + 1 if trial.max_failures >= 0 else 'unlimited'}; "
                    f"see {trial.path}/{store.ERROR_FILE}",
                    always=True,
                )

        def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            self.state.ended(trial.trial_id, error=True)
            if self.display is not None:
                self.display.say(f"[{trial.trial_id}] FAILED ({_cause(trial)}); see {trial.path}/{store.ERROR_FILE}", always=True)

        def on_experiment_end(self, trials: list, **info: Any) -> None:
            logging.getLogger(TUNE_CONTROLLER).removeFilter(_TUNE_TRIAL_FAILED)
            if self.display is not None:
                self.display.close()
                self.display = None

    return Progress()


#: Ray 2.60: Tune's controller logs ``Trial task failed for trial <trial>`` at ERROR with the traceback.
TUNE_CONTROLLER = "ray.tune.execution.tune_controller"


_TUNE_TRIAL_FAILED = _compat.DropMessage("Trial task failed for trial")


def _cause(trial: Any) -> str:
    """The last line of a failed Tune trial's latest error (its exception, without the traceback)."""
    from rlsweep import store

    return store.last_error_line(Path(trial.path) / store.ERROR_FILE) or "no error recorded"


def result_line(spec: Any, trial_id: str, result: Mapping[str, Any]) -> str:
    """One result in ``results`` mode: the trial, its env steps of the budget, the metric and the
    iteration's time split."""
    value = result.get(spec.metric.name)
    shown = f"{value:.4g}" if isinstance(value, (int, float)) else value
    return (
        f"[{trial_id}] env_steps {result.get(ENV_STEPS, 0):>8}/{spec.budget.env_steps}  {spec.metric.name} {shown}  "
        f"iteration {result.get('iteration_time_s', 0):.2f}s (sample {result.get('sample_time_s', 0):.2f}, "
        f"learn {result.get('learn_time_s', 0):.2f}, other {result.get('other_time_s', 0):.2f})"
    )


def _searched(spec: Any, config: Mapping[str, Any]) -> dict[str, Any]:
    paths = spec.search_space.paths
    return {k: v for k, v in config.items() if k in paths}
