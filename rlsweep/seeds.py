"""Training seeds: which seeds each trial trains with, derived from the spec so a sweep reruns the same way,
and how the values of a trial's seeds combine into the one value the searcher and the scheduler see.

A trial's seeds follow from the sweep's seed base and the trial's index (the order in which the searcher
suggested it): with ``searcher.seed`` set, the base is that seed, so the same spec run twice gives its k-th
trial the same config and the same training seeds. Without it, the base comes from the sweep's id, stable
across a resume. Seeds are drawn from ``seeds.tuning`` (inclusive); RLlib's ``debugging.seed`` seeds
torch, numpy and Python's ``random`` in the trial and each env (env seeds derive from it and the env's
index). Confirmation runs on test seeds from ``seeds.test``, a range that must not overlap the tuning one.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

#: The RLlib setting a trial's seed goes to.
SEED_PATH = "debugging.seed"

#: How a trial's per-seed values become the one value it reports (``seeds.aggregate``).
AGGREGATES = ("mean", "median", "iqm", "min", "lcb")


def seed_base(searcher_seed: int | None, sweep_id: str) -> int:
    """The sweep's seed base: ``searcher.seed`` when set, else a number from the sweep's id."""
    return int(searcher_seed) if searcher_seed is not None else zlib.crc32(sweep_id.encode())


def trial_seed(base: int, index: int, low: int, high: int) -> int:
    """The training seed of the trial suggested ``index``-th, drawn from ``low..high`` (inclusive)."""
    draw = np.random.SeedSequence([base, index]).generate_state(1, dtype=np.uint64)[0]
    return low + int(draw % (high - low + 1))


def trial_seeds(base: int, index: int, low: int, high: int, n: int) -> list[int]:
    """The ``n`` distinct training seeds of the trial suggested ``index``-th; the first is
    :func:`trial_seed`'s, so a sweep with one seed per trial draws what it always drew."""
    if n > high - low + 1:
        raise ValueError(f"{n} distinct seeds do not fit in {low}..{high}")
    seeds = [trial_seed(base, index, low, high)]
    extra = 1
    while len(seeds) < n:
        draw = np.random.SeedSequence([base, index, extra]).generate_state(1, dtype=np.uint64)[0]
        seed = low + int(draw % (high - low + 1))
        if seed not in seeds:
            seeds.append(seed)
        extra += 1
    return seeds


#: With ``seeds.adaptive``: the share of trials that add a seed at a check unless ``seeds.contender_share`` says.
DEFAULT_CONTENDER_SHARE = 0.5


def check_points(env_steps: int, per_trial: int) -> list[int]:
    """With ``seeds.adaptive``: the env steps of a trial's checks, ``k * env_steps // per_trial`` for
    k = 1 .. per_trial - 1. At check k a trial on k seeds adds seed k+1 if it is a contender."""
    return [k * env_steps // per_trial for k in range(1, per_trial)]


class SeedRace:
    """Who is a contender at each check of an adaptive-seeds sweep (``seeds.adaptive``).

    Each trial hands in its aggregate at check k (the first row at or past the check's env steps with a
    value); it is a contender when fewer than ``ceil(share * n)`` of the n values handed in at check k so
    far (its own among the n) are other trials' values as good as or better than its own under ``mode``. Trials that reach a check early, with few
    others to rank against, are contenders, as in asynchronous successive halving. A trial that hands in
    again at a check it passed (a retry from an earlier checkpoint, a resumed sweep) gets the decision it
    got the first time, and its first value stays. The sweep keeps one in a Ray actor its trials call
    (:mod:`rlsweep.runtime`); this class holds no Ray.

    Args:
        share: ``seeds.contender_share``.
        mode: ``metric.mode``.
        known: What trials handed in before (a resumed sweep's, :func:`race_record`): check -> trial id ->
            ``{"value": float, "contender": bool}``.
    """

    def __init__(self, share: float, mode: str, known: Mapping[int, Mapping[str, Mapping[str, Any]]] | None = None) -> None:
        if not 0 < share < 1:
            raise ValueError(f"share must be strictly between 0 and 1, got {share}")
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
        self.share, self.mode = share, mode
        self.values: dict[int, dict[str, float]] = {}
        self.decisions: dict[int, dict[str, bool]] = {}
        for k, trials in (known or {}).items():
            for trial_id, handed in trials.items():
                self.values.setdefault(int(k), {})[trial_id] = float(handed["value"])
                self.decisions.setdefault(int(k), {})[trial_id] = bool(handed["contender"])

    def check(self, k: int, trial_id: str, value: float) -> bool:
        """Record ``trial_id``'s ``value`` at check ``k``; whether it is a contender there."""
        if trial_id in self.decisions.get(int(k), {}):
            return self.decisions[int(k)][trial_id]
        if math.isnan(value):
            raise ValueError(f"trial {trial_id} has no value at check {k} to rank (NaN)")
        values = self.values.setdefault(int(k), {})
        values[trial_id] = float(value)
        # Another trial's equal value counts as better: trials that tie (Acrobot's runs all at -500 before
        # they learn) do not all add seeds; the first of them to hand it in does.
        at_least = sum(1 for t, v in values.items() if t != trial_id and (v >= value if self.mode == "max" else v <= value))
        contender = at_least < math.ceil(self.share * len(values))
        self.decisions.setdefault(int(k), {})[trial_id] = contender
        return contender

    def record(self) -> dict[int, dict[str, dict[str, Any]]]:
        return {k: {t: {"value": v, "contender": self.decisions[k][t]} for t, v in values.items()}
                for k, values in self.values.items()}


def race_record(trials: Iterable[tuple[str, Mapping[str, Any] | None]]) -> dict[int, dict[str, dict[str, Any]]]:
    """What an adaptive-seeds sweep's trials handed in at each check and what the race said, as each
    recorded it (``seed_checks`` in its settings file): a resumed sweep's race starts from it.
    ``trials``: (trial id, its recorded settings) pairs; a record that is not a check's is skipped."""
    known: dict[int, dict[str, dict[str, Any]]] = {}
    for trial_id, settings in trials:
        checks = (settings or {}).get("seed_checks")
        for k, handed in (checks.items() if isinstance(checks, Mapping) else ()):
            if (str(k).isdigit() and isinstance(handed, Mapping) and isinstance(handed.get("contender"), bool)
                    and isinstance(handed.get("value"), (int, float)) and not isinstance(handed.get("value"), bool)
                    and math.isfinite(handed["value"])):
                known.setdefault(int(k), {})[trial_id] = {"value": float(handed["value"]), "contender": handed["contender"]}
    return known


def held_out_seeds(low: int, n: int) -> list[int]:
    """The first ``n`` seeds of the test range: confirmation on N seeds uses ``low .. low+n-1``."""
    return list(range(low, low + n))


def interquartile_mean(values: Sequence[float]) -> float:
    """The interquartile mean (Agarwal et al., "Deep RL at the Edge of the Statistical Precipice", 2021):
    ``scipy.stats.trim_mean(values, 0.25)``. With n values the lowest and the highest ``n // 4`` whole
    values are dropped and the rest averaged; where n is not a multiple of 4 that keeps a little more than
    the middle half (5 values: the middle 3), with no fractional weighting of the values at the quartiles."""
    from scipy.stats import trim_mean

    return float(trim_mean(np.asarray(values, dtype=float), 0.25))


def lower_confidence_bound(values: Sequence[float], mode: str) -> float:
    """The mean less one standard error (``std(ddof=1) / sqrt(n)``), towards the worse side under ``mode``:
    a configuration whose seeds agree keeps nearly its mean, one that scored well on one lucky seed of several
    loses the most. With one value there is no spread to count: the value itself."""
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean
    error = float(np.std(values, ddof=1)) / math.sqrt(len(values))
    return mean - error if mode == "max" else mean + error


def aggregate(values: Sequence[float], how: str, mode: str) -> float:
    """One value from the values of a trial's seeds. ``min`` is the worst seed under ``mode`` (the lowest
    when higher is better). NaN while any seed has no value yet (no episode ended), which every Tune
    scheduler treats as "no decision yet"."""
    if not values or any(math.isnan(v) for v in values):
        return math.nan
    if how == "mean":
        return float(np.mean(values))
    if how == "median":
        return float(np.median(values))
    if how == "iqm":
        return interquartile_mean(values)
    if how == "min":
        return float(min(values) if mode == "max" else max(values))
    if how == "lcb":
        return lower_confidence_bound(values, mode)
    raise ValueError(f"unknown aggregate {how!r}; expected one of {AGGREGATES}")


__all__ = [
    "AGGREGATES",
    "DEFAULT_CONTENDER_SHARE",
    "SEED_PATH",
    "SeedRace",
    "aggregate",
    "check_points",
    "held_out_seeds",
    "interquartile_mean",
    "lower_confidence_bound",
    "race_record",
    "seed_base",
    "trial_seed",
    "trial_seeds",
]
