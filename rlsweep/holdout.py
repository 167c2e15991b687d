"""The held-out stage's core: how many held-out runs a share of a sweep's env steps affords, which of the
search's best configurations enter a race over test seeds and on which seeds, the race's decisions, and the
winner's held-out estimate with a 95% interval.

The race is successive halving over seeds. Every candidate of a round trains on the same test seeds (the
first seeds of ``seeds.test``), so the comparison between them is paired; at the end of a round the better
``ceil(k / eta)`` (by the interquartile mean over the round's seeds, ties to the better tuning rank) go on
and train on more seeds, until one is left. The winner then trains on more seeds until it holds the least
its estimate needs, and every run the budget has left goes to it too. A dropped candidate is never
revisited, whatever its later seeds would have said.

Everything here is pure: the sweep stage starts the runs :meth:`Race.next_runs` names and hands the
results back; the same results always give the same decisions, so a resumed stage replays them.

The interval predicts the IQM of the winner on ``future_seeds`` fresh seeds (what a user who retrains it
sees), not only the mean of its distribution: see :data:`INTERVALS` and
``benchmarks/holdout_calibration.py`` for the study that chose the default.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from rlsweep.errors import SpecError, SweepError

#: Held-out runs' share of the sweep's env steps, the winner's least seeds, the race's halving rate and how
#: many configurations may enter it, by default (``benchmarks/holdout_calibration.py`` chose them).
DEFAULT_SHARE = 0.3
#: The most held-out runs a stage takes, whatever its share affords: with 4 entrants the winner then ends on
#: 20 seeds or more, where the t interval of a 10-seed IQM is within a quarter of the narrowest any number of
#: seeds gives (sqrt(1/20 + 1/10) against sqrt(1/10)); past it, the env steps are better spent searching,
#: and a sweep of thousands of trials would need more test seeds than seeds.test holds.
DEFAULT_MAX_RUNS = 40
#: The least test seeds the winner is scored on. The study's small stages (the search's best configuration
#: alone, on n seeds) covered the 10-seed test IQM with the t interval in 0.86-0.95 of sweeps from 3 or 4
#: seeds, and 0.92-0.95 from 6 on every simulated task and on resampled real scores; four seeds rarely show a
#: configuration's occasional collapse (real CartPole sweeps: 1 of 3 covered from 4 seeds).
DEFAULT_MIN_SEEDS = 6
DEFAULT_ETA = 2
DEFAULT_MAX_CANDIDATES = 4
#: The winner ends with at least this share of the race's runs: an interval from few seeds, chosen among
#: several on those same seeds, covers too rarely (the study's 7 entrants on 15 runs left the winner 4 seeds).
DEFAULT_WINNER_SHARE = 0.5
#: Fewer runs than this all go to the best configuration by tuning value: in the study, every race on 4 or
#: 6 runs left its winner 3 seeds and an interval that covered the 10-seed test IQM in 0.72-0.88 of sweeps
#: on the CartPole-like task, where 6 runs on one configuration covered in 0.92.
DEFAULT_RACE_FROM_RUNS = 10
#: The interval is a prediction of the winner's IQM on this many fresh seeds.
DEFAULT_FUTURE_SEEDS = 10
CONFIDENCE = 0.95
#: Bootstrap resamples and the generator seed: the same values always give the same interval.
RESAMPLES = 10_000
BOOTSTRAP_SEED = 0

#: A run's key: (candidate, test seed).
Run = tuple[str, int]
K = TypeVar("K")


def race_budget(share: float, trials: int, per_trial: int, max_runs: int | None = None) -> int:
    """How many held-out runs, each one seed for the full budget, ``share`` of the sweep's env steps affords.

    The sweep trains ``trials * per_trial`` seeds of ``budget.env_steps`` each; a held-out run is one seed
    of ``budget.env_steps``, so the env steps cancel: ``floor(share * trials * per_trial)``.

    Args:
        share: ``holdout.share``, strictly between 0 and 1.
        trials: ``budget.trials``.
        per_trial: ``seeds.per_trial``.

        max_runs: ``holdout.max_runs``: at most this many (None: no cap).

    Returns:
        The number of held-out runs (rounded down, and at most ``max_runs``).

    Raises:
        SpecError: a share outside (0, 1), or fewer than one trial or seed per trial.
    """
    problems = []
    if not 0 < share < 1:
        problems.append(("holdout.share", f"must be > 0 and < 1 (a share of the sweep's env steps), got {share}"))
    if trials < 1:
        problems.append(("budget.trials", f"must be >= 1, got {trials}"))
    if per_trial < 1:
        problems.append(("seeds.per_trial", f"must be >= 1, got {per_trial}"))
    if problems:
        from rlsweep.errors import Problem

        raise SpecError([Problem(path, rule) for path, rule in problems])
    # Rounded to 9 places first: 0.29 * 100 is 28.999999999999996 in floating point, and means 29 runs.
    runs = math.floor(round(share * trials * per_trial, 9))
    return runs if max_runs is None else min(runs, max_runs)


def least_trials(share: float, per_trial: int, runs: int) -> int:
    """The fewest ``budget.trials`` whose share affords ``runs`` held-out runs (:func:`race_budget`)."""
    return math.ceil(round(runs / (share * per_trial), 9))


def least_share(trials: int, per_trial: int, runs: int) -> float | None:
    """The smallest ``holdout.share`` (in hundredths) that affords ``runs`` held-out runs to a sweep of
    ``trials`` x ``per_trial``; None where no share below 1 does."""
    share = math.ceil(round(100 * runs / (trials * per_trial), 9)) / 100
    return share if share < 1 else None


def affords_them(share: float, trials: int, per_trial: int, runs: int) -> str:
    """How a budget too small for ``runs`` held-out runs would afford them: more trials, or a larger share."""
    said = f"budget.trials >= {least_trials(share, per_trial, runs)}"
    if (larger := least_share(trials, per_trial, runs)) is not None:
        said += f" or holdout.share >= {larger:g}"
    return f"{said} affords them"


@dataclass(frozen=True)
class Stage:
    """One round of the race: how many candidates it holds and how many test seeds (the first ones) each
    has trained on by its end."""

    candidates: int
    seeds: int


@dataclass(frozen=True)
class RacePlan:
    """Which configurations race, on which test seeds, round by round.

    Attributes:
        candidates: The entrants, best tuning rank first.
        tuning_values: Each entrant's tuning value (NaN where none was given).
        stages: The rounds; the last holds only the winner, with all its seeds.
        test_seeds: The test seeds, in the order runs take them (the first ``stage.seeds`` in a round).
        runs: The held-out runs the budget affords; the plan spends all of them unless the test range is
            what bounds it.
        eta: The halving rate.
        score_range: The task's (lowest, highest) score, if known: intervals are clipped to it and a failed
            run counts as its lowest.
    """

    candidates: tuple[str, ...]
    tuning_values: Mapping[str, float]
    stages: tuple[Stage, ...]
    test_seeds: tuple[int, ...]
    runs: int
    eta: int
    score_range: tuple[float, float] | None = None

    @property
    def planned_runs(self) -> int:
        """The runs the plan starts when no candidate fails: every stage's new seeds for its candidates."""
        total, before = 0, 0
        for stage in self.stages:
            total += stage.candidates * (stage.seeds - before)
            before = stage.seeds
        return total


def _stages(entrants: int, first_seeds: int, eta: int, min_seeds: int) -> list[Stage]:
    """Successive halving over seeds: ``entrants`` on ``first_seeds`` seeds, the better ``ceil(k / eta)``
    on ``eta`` times as many, until one is left; the winner then up to ``min_seeds`` seeds."""
    stages = [Stage(entrants, first_seeds)]
    left, seeds = entrants, first_seeds
    while left > 1:
        left = math.ceil(left / eta)
        if left > 1:
            seeds *= eta
            stages.append(Stage(left, seeds))
    if entrants > 1 or first_seeds < min_seeds:
        stages.append(Stage(1, max(seeds, min_seeds)))
    return stages


def _cost(stages: Sequence[Stage]) -> int:
    total, before = 0, 0
    for stage in stages:
        total += stage.candidates * (stage.seeds - before)
        before = stage.seeds
    return total


def plan_race(
    ranked: Sequence[str],
    runs: int,
    *,
    test_range: tuple[int, int],
    env_steps: int,
    tuning_values: Mapping[str, float] | None = None,
    min_seeds: int = DEFAULT_MIN_SEEDS,
    max_candidates: int | None = DEFAULT_MAX_CANDIDATES,
    eta: int = DEFAULT_ETA,
    winner_share: float = DEFAULT_WINNER_SHARE,
    race_from_runs: int = DEFAULT_RACE_FROM_RUNS,
    score_range: tuple[float, float] | None = None,
    tuning_seeds: Collection[int] = (),
) -> RacePlan:
    """The race ``runs`` held-out runs afford among the ``ranked`` configurations.

    As many of the best-ranked configurations enter as the runs afford with one test seed each in the first
    round (at most ``max_candidates``) while the winner still ends with ``min_seeds`` seeds and
    ``winner_share`` of the runs (with fewer than ``race_from_runs`` runs, one enters); then the first round's seeds grow to the most that still fit, and
    what is left after that goes to the winner's last round.

    Args:
        ranked: Candidate ids, best tuning value first.
        runs: The held-out runs the stage may start (:func:`race_budget`).
        test_range: ``seeds.test`` (inclusive); the race takes its first seeds.
        env_steps: ``budget.env_steps`` of one run, for the message when the runs do not suffice.
        tuning_values: Each candidate's tuning value, to report beside its held-out one.
        min_seeds: The least test seeds the winner ends with (an interval needs 2; 6 by default).
        max_candidates: At most this many enter (None: as many as the runs afford).
        eta: The halving rate (2 keeps the better half each round).
        winner_share: The least share of the runs the winner ends with (rounded up).
        race_from_runs: With fewer runs, the best configuration by tuning value takes them all.
        score_range: The task's (lowest, highest) score, if known.
        tuning_seeds: Seeds the search trained with; a test seed among them is refused.

    Returns:
        The plan.

    Raises:
        SpecError: fewer runs than the winner's least seeds (``holdout.share``), more test seeds than
            ``seeds.test`` holds or a test seed the search trained with (``seeds.test``), a halving rate
            below 2 (``holdout.eta``), fewer than 2 least seeds (``holdout.min_seeds``), a cap below 1
            (``holdout.max_candidates``), a winner's share outside [0, 1] (``holdout.winner_share``).
        SweepError: no candidate to race.
    """
    from rlsweep.errors import Problem

    problems = []
    if eta < 2:
        problems.append(Problem("holdout.eta", f"must be >= 2 (the race keeps 1/eta of its candidates each round), got {eta}"))
    if min_seeds < 2:
        problems.append(Problem("holdout.min_seeds", f"must be >= 2 (an interval needs two values), got {min_seeds}"))
    if max_candidates is not None and max_candidates < 1:
        problems.append(Problem("holdout.max_candidates", f"must be >= 1, got {max_candidates}"))
    if not 0 <= winner_share <= 1:
        problems.append(Problem("holdout.winner_share", f"must be between 0 and 1, got {winner_share}"))
    if problems:
        raise SpecError(problems)
    if not ranked:
        raise SweepError("no trial finished with a value: there is no configuration to retrain on held-out seeds")
    if len(set(ranked)) != len(ranked):
        raise ValueError(f"candidates must be distinct, got {list(ranked)}")
    if runs < min_seeds:
        raise SpecError(
            f"affords {runs} runs of {env_steps} env steps; the held-out estimate needs at least {min_seeds}; "
            "raise holdout.share or budget.trials",
            "holdout.share",
        )
    most = len(ranked) if max_candidates is None else min(len(ranked), max_candidates)
    if runs < race_from_runs:
        most = 1
    least = max(min_seeds, math.ceil(round(winner_share * runs, 9)))
    entrants = max(k for k in range(1, most + 1) if _cost(_stages(k, 1, eta, least)) <= runs)
    first = 1
    while _cost(_stages(entrants, first + 1, eta, least)) <= runs:
        first += 1
    stages = _stages(entrants, first, eta, least)
    last = stages[-1]
    stages[-1] = Stage(1, last.seeds + runs - _cost(stages))
    low, high = test_range
    if stages[-1].seeds > high - low + 1:
        raise SpecError(
            f"the held-out race needs {stages[-1].seeds} test seeds; {list(test_range)} holds {high - low + 1}: widen it",
            "seeds.test",
        )
    seeds = tuple(range(low, low + stages[-1].seeds))
    if clash := sorted(set(seeds) & set(tuning_seeds)):
        raise SpecError(f"test seeds {clash} were training seeds of the search; move seeds.test clear of them", "seeds.test")
    chosen = tuple(ranked[:entrants])
    values = tuning_values or {}
    return RacePlan(
        candidates=chosen,
        tuning_values={c: float(values.get(c, math.nan)) for c in chosen},
        stages=tuple(stages),
        test_seeds=seeds,
        runs=runs,
        eta=eta,
        score_range=score_range,
    )


# -- the interval -----------------------------------------------------------------------------------------


def _iqm(values: np.ndarray, axis: int = -1) -> np.ndarray:
    from scipy.stats import trim_mean

    return np.asarray(trim_mean(values, 0.25, axis=axis))


def _percentile_bootstrap(values: np.ndarray, future_seeds: int, entrants: int) -> tuple[float, float]:
    """A percentile-bootstrap confidence interval of the IQM (as ``rlsweep confirm`` reports it)."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    draws = _iqm(values[rng.integers(len(values), size=(RESAMPLES, len(values)))], axis=1)
    tail = (1 - CONFIDENCE) / 2
    return float(np.quantile(draws, tail)), float(np.quantile(draws, 1 - tail))


def _t_prediction(values: np.ndarray, future_seeds: int, entrants: int) -> tuple[float, float]:
    """Student-t prediction interval of a future ``future_seeds``-seed mean:
    ``mean +- t(n-1, 0.975) * s * sqrt(1/n + 1/m)``."""
    from scipy.stats import t

    n = len(values)
    half = float(t.ppf(1 - (1 - CONFIDENCE) / 2, n - 1)) * float(np.std(values, ddof=1)) * math.sqrt(1 / n + 1 / future_seeds)
    mean = float(np.mean(values))
    return mean - half, mean + half


def _t_prediction_selected(values: np.ndarray, future_seeds: int, entrants: int) -> tuple[float, float]:
    """The t prediction interval at a Bonferroni level over the race's entrants (``1 - 0.05 / k``): the
    winner was chosen among ``k`` on the seeds it is scored on, so its values lean high."""
    from scipy.stats import t

    n = len(values)
    level = 1 - (1 - CONFIDENCE) / (2 * entrants)
    half = float(t.ppf(level, n - 1)) * float(np.std(values, ddof=1)) * math.sqrt(1 / n + 1 / future_seeds)
    mean = float(np.mean(values))
    return mean - half, mean + half


def _predictive_bootstrap(values: np.ndarray, future_seeds: int, entrants: int) -> tuple[float, float]:
    """A bootstrap prediction interval of a future ``future_seeds``-seed IQM: resample the seeds (the
    uncertainty about the configuration), then draw ``future_seeds`` values from that resample (the future
    seeds' own noise), and take the IQM's percentiles."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    n = len(values)
    population = values[rng.integers(n, size=(RESAMPLES, n))]
    future = np.take_along_axis(population, rng.integers(n, size=(RESAMPLES, future_seeds)), axis=1)
    draws = _iqm(future, axis=1)
    tail = (1 - CONFIDENCE) / 2
    return float(np.quantile(draws, tail)), float(np.quantile(draws, 1 - tail))


#: Interval methods by name: each takes the winner's values, the future seeds it predicts for and how many
#: entered the race, and returns (low, high) before clipping to the score range.
INTERVALS: Mapping[str, Callable[[np.ndarray, int, int], tuple[float, float]]] = {
    "bootstrap": _percentile_bootstrap,
    "t_prediction": _t_prediction,
    "t_prediction_selected": _t_prediction_selected,
    "predictive_bootstrap": _predictive_bootstrap,
}
#: The study's choice: among the four, the only one that covered the 10-seed test IQM in at least 0.89 of sweeps
#: on all three simulated tasks wherever the race had 10 runs or more.
DEFAULT_INTERVAL = "t_prediction_selected"


def holdout_interval(
    values: Sequence[float],
    *,
    method: str = DEFAULT_INTERVAL,
    future_seeds: int = DEFAULT_FUTURE_SEEDS,
    entrants: int = 1,
    score_range: tuple[float, float] | None = None,
    tuning_value: float | None = None,
) -> tuple[float, float]:
    """A 95% interval for the held-out score of a configuration from its values on test seeds.

    Args:
        values: Its final evaluation on each test seed (at least 2).
        method: One of :data:`INTERVALS`.
        future_seeds: The interval predicts the IQM (the mean, for the t methods) over this many fresh seeds.
        entrants: How many configurations it was chosen among, on these seeds.
        score_range: The task's (lowest, highest) score: the interval is clipped to it.
        tuning_value: Its value in the search. Where every test seed scored the same (four runs that all
            failed at a task's floor, say), their spread says nothing about other seeds': the interval then
            spans from that value to the tuning value, the one other run of it there is.

    Returns:
        (low, high); where every value is the same, that value to the tuning value (the value itself
        without one).

    Raises:
        ValueError: fewer than 2 values, a value that is not finite, or an unknown method.
    """
    if method not in INTERVALS:
        raise ValueError(f"unknown interval method {method!r}; expected one of {sorted(INTERVALS)}")
    data = np.asarray(values, dtype=float)
    if len(data) < 2 or not np.all(np.isfinite(data)):
        raise ValueError(f"an interval needs at least 2 finite values, got {list(values)}")
    if np.all(data == data[0]):
        other = tuning_value if tuning_value is not None and math.isfinite(tuning_value) else float(data[0])
        low, high = min(float(data[0]), other), max(float(data[0]), other)
    else:
        low, high = INTERVALS[method](data, future_seeds, entrants)
    if score_range is not None:
        low, high = min(max(low, score_range[0]), score_range[1]), max(min(high, score_range[1]), score_range[0])
    return float(low), float(high)


# -- the race ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One entrant's part in the race.

    Attributes:
        candidate: Its id.
        tuning_rank: 1 for the search's best.
        tuning_value: Its value in the search.
        values: Test seed -> its final evaluation there (None: the run failed), for the seeds it ran.
        dropped_in: The round (0 first) after which it left the race; None for the winner.
        scores: Its IQM over each round's seeds at that round's decision (a failed run counts as -inf).
    """

    candidate: str
    tuning_rank: int
    tuning_value: float
    values: Mapping[int, float | None]
    dropped_in: int | None
    scores: tuple[float, ...]


@dataclass(frozen=True)
class RaceResult:
    """What the race found.

    Attributes:
        winner: The configuration chosen by its held-out score.
        held_out_iqm: Its IQM over its test seeds (the held-out estimate).
        interval: The 95% interval of that estimate (:func:`holdout_interval`); NaN where fewer than 2 values.
        method: The interval's method.
        tuning_value: Its value in the search, beside the held-out estimate.
        seeds: Its test seeds.
        failed: Those of its seeds whose run failed.
        candidates: Every entrant, in tuning rank order.
        runs: The runs the race started.
    """

    winner: str
    held_out_iqm: float
    interval: tuple[float, float]
    method: str
    tuning_value: float
    seeds: tuple[int, ...]
    failed: tuple[int, ...]
    candidates: tuple[Candidate, ...]
    runs: int


def _value(done: Mapping[Run, float | None], run: Run) -> float | None:
    """A run's value; a NaN or infinite one (a diverged run) is a failed run."""
    value = done[run]
    return None if value is None or not math.isfinite(value) else float(value)


def outside_range(score_range: Sequence[float] | None, scores: Mapping[K, float | None]) -> list[tuple[K, float]]:
    """The finished scores that lie outside ``holdout.score_range`` (the task's lowest and highest score), in
    key order. Any one means the range does not hold for this task (a v0/v1 mix-up, a wrapper that rescales
    rewards): then no reader clips an interval to it or counts a failed run at its lowest score. A missing,
    NaN or infinite score is a failed run, not a score, and says nothing about the range."""
    if score_range is None:
        return []
    low, high = float(score_range[0]), float(score_range[1])
    return [(key, float(value)) for key, value in sorted(scores.items())
            if value is not None and math.isfinite(value) and not low <= value <= high]


def known_floor(score_range: Sequence[float] | None, scores: Mapping[Any, float | None]) -> float | None:
    """The score a failed run counts as beside finished ones: ``holdout.score_range``'s lowest score, where
    the range is given and holds for every finished score (:func:`outside_range`); otherwise None, and a
    failed run is left out."""
    if score_range is None or outside_range(score_range, scores):
        return None
    return float(score_range[0])


@dataclass(frozen=True)
class _State:
    stage: int
    active: tuple[str, ...]
    waiting: tuple[Run, ...]
    dropped: Mapping[str, int]
    scores: Mapping[str, tuple[float, ...]]


@dataclass(frozen=True)
class Race:
    """Successive halving over test seeds along a :class:`RacePlan`. It holds no results: each call replays
    the decisions from the results it is given, so the same results always give the same answer.

    A failed run (None, or a value that is not finite) counts as the worst value there is: it ranks its
    candidate below every finished run of the round on that seed's share of the IQM. For the winner's
    estimate it counts as the task's lowest score where the plan knows it, and is left out (and named in
    :attr:`RaceResult.failed`) where it does not.
    """

    plan: RacePlan
    method: str = DEFAULT_INTERVAL
    future_seeds: int = DEFAULT_FUTURE_SEEDS
    _rank: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.method not in INTERVALS:
            raise ValueError(f"unknown interval method {self.method!r}; expected one of {sorted(INTERVALS)}")
        object.__setattr__(self, "_rank", {c: i for i, c in enumerate(self.plan.candidates)})

    def _score(self, done: Mapping[Run, float | None], candidate: str, seeds: Sequence[int]) -> float:
        values = [_value(done, (candidate, s)) for s in seeds]
        return float(_iqm(np.array([-math.inf if v is None else v for v in values])))

    def _replay(self, done: Mapping[Run, float | None]) -> _State:
        active = self.plan.candidates
        dropped: dict[str, int] = {}
        scores: dict[str, tuple[float, ...]] = {c: () for c in active}
        stages = self.plan.stages

        def waiting(stage: Stage) -> tuple[Run, ...]:
            return tuple((c, s) for s in self.plan.test_seeds[: stage.seeds] for c in active if (c, s) not in done)

        for index, stage in enumerate(stages[:-1]):
            if runs := waiting(stage):
                return _State(index, active, runs, dropped, scores)
            seeds = self.plan.test_seeds[: stage.seeds]
            for c in active:
                scores[c] += (self._score(done, c, seeds),)
            order = sorted(active, key=lambda c: (-scores[c][-1], self._rank[c]))
            keep = set(order[: stages[index + 1].candidates])
            dropped.update({c: index for c in order if c not in keep})
            active = tuple(c for c in active if c in keep)
        return _State(len(stages) - 1, active, waiting(stages[-1]), dropped, scores)

    def next_runs(self, done: Mapping[Run, float | None], pending: Collection[Run] = ()) -> list[Run]:
        """The runs that may start now: the current round's runs that are neither done nor ``pending``.

        Args:
            done: (candidate, test seed) -> the run's final evaluation, None where it failed.
            pending: Runs started and not yet done.

        Returns:
            The runs to start, the round's first seed first and the better tuning rank first within a seed;
            empty while the round waits for results, and once the race is finished.
        """
        return [run for run in self._replay(done).waiting if run not in pending]

    def finished(self, done: Mapping[Run, float | None]) -> bool:
        """Whether every run of the winner's last round is done."""
        state = self._replay(done)
        return state.stage == len(self.plan.stages) - 1 and not state.waiting

    def result(self, done: Mapping[Run, float | None]) -> RaceResult:
        """The race's outcome.

        Raises:
            ValueError: the race is not finished.
        """
        state = self._replay(done)
        if state.waiting or state.stage != len(self.plan.stages) - 1:
            raise ValueError(f"the race is not finished: round {state.stage} waits for {len(state.waiting)} run(s)")
        (winner,) = state.active
        seeds = self.plan.test_seeds
        candidates = []
        runs = 0
        for c in self.plan.candidates:
            ran = seeds[: self.plan.stages[state.dropped[c]].seeds] if c in state.dropped else seeds
            runs += len(ran)
            candidates.append(Candidate(
                candidate=c,
                tuning_rank=self._rank[c] + 1,
                tuning_value=self.plan.tuning_values[c],
                values={s: _value(done, (c, s)) for s in ran},
                dropped_in=state.dropped.get(c),
                scores=state.scores[c],
            ))
        mine = [_value(done, (winner, s)) for s in seeds]
        failed = tuple(s for s, v in zip(seeds, mine) if v is None)
        floor = self.plan.score_range[0] if self.plan.score_range is not None else None
        # A known floor stands in for a failed run beside finished ones; with none finished there is no estimate.
        finished = [v for v in mine if v is not None]
        values = finished if floor is None or not finished else [floor if v is None else v for v in mine]
        estimate = float(_iqm(np.array(values))) if values else math.nan
        interval = (
            holdout_interval(values, method=self.method, future_seeds=self.future_seeds,
                             entrants=len(self.plan.candidates), score_range=self.plan.score_range,
                             tuning_value=self.plan.tuning_values[winner])
            if len(values) >= 2 else (math.nan, math.nan)
        )
        return RaceResult(
            winner=winner,
            held_out_iqm=estimate,
            interval=interval,
            method=self.method,
            tuning_value=self.plan.tuning_values[winner],
            seeds=seeds,
            failed=failed,
            candidates=tuple(candidates),
            runs=runs,
        )


__all__ = [
    "DEFAULT_ETA",
    "DEFAULT_FUTURE_SEEDS",
    "DEFAULT_INTERVAL",
    "DEFAULT_MAX_CANDIDATES",
    "DEFAULT_MIN_SEEDS",
    "affords_them",
    "least_share",
    "DEFAULT_RACE_FROM_RUNS",
    "DEFAULT_SHARE",
    "DEFAULT_WINNER_SHARE",
    "INTERVALS",
    "Candidate",
    "Race",
    "RacePlan",
    "RaceResult",
    "Stage",
    "holdout_interval",
    "known_floor",
    "outside_range",
    "plan_race",
    "race_budget",
]
