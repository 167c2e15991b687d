"""Confirmation on held-out seeds: which configurations to retrain, on which test seeds, and what their
scores say once retrained.

A sweep's "best" value is the best of many noisy draws, so it overstates what its configuration does on a
seed the search never saw. ``rlsweep confirm`` retrains the top configurations from scratch, for the full
budget, on test seeds from ``seeds.test`` (a range disjoint from the tuning seeds), and scores each run by
its final greedy evaluation (``eval_return_mean`` at the budget). Per configuration it reports the
interquartile mean (IQM) over the test seeds, a 95% bootstrap confidence interval of that IQM, each seed's
value, and the probability that a run of it beats a run of each other configuration (Agarwal et al.,
"Deep RL at the Edge of the Statistical Precipice", NeurIPS 2021: IQM, stratified bootstrap and
probability of improvement; with one task, stratifying by task is the plain bootstrap over seeds).

This module plans and summarizes; the retraining itself is the sweep stage's (:mod:`rlsweep.sweep`), and
:func:`rlsweep.confirm` puts the two together.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlsweep import store
from rlsweep.errors import UsageError
from rlsweep.seeds import SEED_PATH, held_out_seeds, interquartile_mean

#: What a confirmation run is scored by: its final greedy evaluation, at the budget.
CONFIRM_METRIC = "eval_return_mean"
#: Greedy episodes of that evaluation where the sweep's spec has no ``evaluation`` section.
DEFAULT_EPISODES = 10
DEFAULT_TOP = 3
DEFAULT_SEEDS = 5
CONFIDENCE = 0.95
#: Bootstrap resamples and the generator seed: the same values always give the same interval.
RESAMPLES = 10_000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class ConfirmationPlan:
    """Which configurations (tuning trials, best first under ``rule``) retrain on which test seeds."""

    candidates: tuple[str, ...]
    configs: Mapping[str, dict[str, Any]]
    tuning_values: Mapping[str, float]
    tuning_seeds: Mapping[str, list[int]]
    test_seeds: tuple[int, ...]
    rule: str
    metric: str
    episodes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidates": list(self.candidates),
            "configs": {k: dict(v) for k, v in self.configs.items()},
            "tuning_values": dict(self.tuning_values),
            "tuning_seeds": {k: list(v) for k, v in self.tuning_seeds.items()},
            "test_seeds": list(self.test_seeds),
            "rule": self.rule,
            "metric": self.metric,
            "episodes": self.episodes,
        }


def plan_confirmation(
    sweep: Any, *, top: int = DEFAULT_TOP, seeds: int = DEFAULT_SEEDS, rule: Any = None, trials: Sequence[str] = ()
) -> ConfirmationPlan:
    """The top ``top`` finished trials of ``sweep`` (a loaded :class:`rlsweep.analysis.Sweep`) under ``rule`` (or the ``trials`` named), on the first ``seeds`` seeds
    of ``seeds.test``.

    Raises:
        UsageError: no finished trial, ``top`` larger than the finished trials, a named trial that errored or
            did not finish, fewer than 2 test seeds (an interval needs two), more than the test range holds,
            or a test seed some trial trained with.
    """
    from rlsweep.analysis._rules import DEFAULT_RULE

    rule = rule or DEFAULT_RULE
    spec = sweep.spec
    low, high = spec.seeds.test
    if seeds < 2:
        raise UsageError(f"must be >= 2 (a confidence interval needs two values), got {seeds}", "--seeds")
    if seeds > high - low + 1:
        raise UsageError(f"{seeds} seeds do not fit in seeds.test {spec.seeds.test}; widen it in the spec", "--seeds")
    test = held_out_seeds(low, seeds)
    used = {s: t.trial_id for t in sweep.trials for s in t.seeds}
    if clash := sorted(set(test) & set(used)):
        raise UsageError(
            f"test seeds {clash} were training seeds of trial(s) {sorted({used[s] for s in clash})}; a configuration is "
            "confirmed on seeds no trial used: move seeds.test clear of them", "--seeds"
        )
    finished = {t.trial_id: t for t in sweep.trials if t.state == store.TERMINATED}
    ranked = [b for b in sweep.ranked(rule) if b.trial_id in finished]
    values = {b.trial_id: b.value for b in ranked}
    if trials:
        chosen = []
        for name in trials:
            matches = store.matching_trials(sweep.trials, name)
            if len(matches) != 1:
                raise UsageError(f"{name!r} {'matches several trials' if matches else 'is not a trial of this sweep'}", "--trial")
            (trial,) = matches
            if trial.state == store.ERROR:
                raise UsageError(f"trial {trial.trial_id} ended in an error; confirm a trial that finished", "--trial")
            if trial.state != store.TERMINATED:
                raise UsageError(f"trial {trial.trial_id} is {trial.state}, not finished; resume the sweep first", "--trial")
            chosen.append(trial.trial_id)
    else:
        if not ranked:
            raise UsageError(
                f"no trial of this sweep finished with a value of {spec.metric.name!r}: nothing to confirm "
                "(resume the sweep, or run it with a larger budget)", "DIR"
            )
        if top < 1 or top > len(ranked):
            raise UsageError(f"must be between 1 and the {len(ranked)} finished trial(s), got {top}", "--top")
        chosen = [b.trial_id for b in ranked[:top]]
    configs = {}
    for trial_id in chosen:
        recorded = (finished[trial_id].settings or {}).get("config")
        if not isinstance(recorded, Mapping):
            raise UsageError(f"trial {trial_id} recorded no settings (it ran before rlsweep recorded them)", "DIR")
        configs[trial_id] = {k: v for k, v in recorded.items() if k != SEED_PATH}
    return ConfirmationPlan(
        candidates=tuple(chosen),
        configs=configs,
        tuning_values={c: float(values.get(c, math.nan)) for c in chosen},
        tuning_seeds={c: finished[c].seeds for c in chosen},
        test_seeds=tuple(test),
        rule=str(rule),
        metric=spec.metric.name,
        episodes=spec.evaluation.episodes if spec.evaluation is not None else DEFAULT_EPISODES,
    )


def confirmation_document(document: Mapping[str, Any], plan: ConfirmationPlan) -> dict[str, Any]:
    """The spec the retraining runs: the sweep's, with each configuration's full budget, no early stop, one
    seed per trial (the test seed), a greedy evaluation at the budget, and no searching or logging of its own."""
    doc = copy.deepcopy(dict(document))
    doc.pop("preset", None)
    config = {k: v for k, v in (doc.get("config") or {}).items() if k != SEED_PATH}
    space = {k: v for k, v in (doc.get("search_space") or {}).items() if k != SEED_PATH}
    episodes = plan.episodes
    trials = len(plan.candidates) * len(plan.test_seeds)
    doc.update(
        name=f"{doc.get('name') or 'sweep'}-confirm",
        config=config,
        search_space=space,
        searcher="random",
        scheduler="fifo",
        stop={},
        metric={"name": CONFIRM_METRIC, "mode": "max"},
        evaluation={"episodes": episodes},
        mlflow=None,
    )
    doc["seeds"] = {**(doc.get("seeds") or {}), "per_trial": 1}
    doc["budget"] = {**doc["budget"], "trials": trials}
    doc["budget"].pop("time_s", None)
    return doc


def probability_of_improvement(a: Sequence[float], b: Sequence[float]) -> float:
    """P(a run of A scores higher than a run of B), ties counted half: the Mann-Whitney U statistic over
    every pair of test seeds' values."""
    x, y = np.asarray(a, dtype=float)[:, None], np.asarray(b, dtype=float)[None, :]
    return float(np.mean((x > y) + 0.5 * (x == y)))


def iqm_interval(values: Sequence[float]) -> tuple[float, float]:
    """A 95% percentile-bootstrap interval of the IQM of ``values`` (``scipy.stats.bootstrap``)."""
    from scipy.stats import bootstrap, trim_mean

    data = np.asarray(values, dtype=float)
    if np.all(data == data[0]):
        return float(data[0]), float(data[0])  # nothing varies: scipy refuses a degenerate sample
    result = bootstrap(
        (data,),
        lambda sample, axis: trim_mean(sample, 0.25, axis=axis),
        confidence_level=CONFIDENCE,
        n_resamples=RESAMPLES,
        method="percentile",
        random_state=np.random.default_rng(BOOTSTRAP_SEED),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def summarize(plan: ConfirmationPlan, scores: Mapping[str, Mapping[int, float]], *, missing: Mapping[str, list[str]]) -> dict[str, Any]:
    """The confirmation's result from each configuration's final evaluation per test seed.

    Args:
        scores: candidate -> test seed -> final ``eval_return_mean`` (only runs that reached the budget).
        missing: candidate -> why some of its runs have no score (errored, unfinished).
    """
    rows = []
    for candidate in plan.candidates:
        per_seed = {int(s): float(v) for s, v in scores.get(candidate, {}).items()}
        values = [per_seed[s] for s in plan.test_seeds if s in per_seed]
        row: dict[str, Any] = {
            "trial_id": candidate,
            "config": dict(plan.configs[candidate]),
            "tuning_value": plan.tuning_values[candidate],
            "tuning_seeds": list(plan.tuning_seeds[candidate]),
            "per_seed": {str(s): per_seed[s] for s in plan.test_seeds if s in per_seed},
            "missing": list(missing.get(candidate, [])),
        }
        if len(values) >= 2:
            low, high = iqm_interval(values)
            row.update(iqm=interquartile_mean(values), ci_low=low, ci_high=high)
        else:
            row.update(iqm=math.nan, ci_low=math.nan, ci_high=math.nan)
        rows.append(row)
    rows.sort(key=lambda r: -r["iqm"] if not math.isnan(r["iqm"]) else math.inf)
    for row in rows:
        mine = [row["per_seed"][k] for k in row["per_seed"]]
        row["p_beats"] = {
            other["trial_id"]: probability_of_improvement(mine, list(other["per_seed"].values()))
            for other in rows
            if other is not row and mine and other["per_seed"]
        }
    scored = [r for r in rows if not math.isnan(r["iqm"])]
    winner = scored[0] if scored else None
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
        row["tie_with_winner"] = bool(
            winner is not None and row is not winner and not math.isnan(row["iqm"])
            and row["ci_high"] >= winner["ci_low"] and row["ci_low"] <= winner["ci_high"]
        )
    return {
        "metric": CONFIRM_METRIC,
        "tuning_metric": plan.metric,
        "rule": plan.rule,
        "episodes": plan.episodes,
        "test_seeds": list(plan.test_seeds),
        "confidence": CONFIDENCE,
        "interval": f"percentile bootstrap of the IQM over test seeds, {RESAMPLES} resamples",
        "winner": winner["trial_id"] if winner else None,
        "ties": [r["trial_id"] for r in rows if r["tie_with_winner"]],
        "configurations": rows,
    }


def scores_from(trials: Sequence[store.Trial], plan: ConfirmationPlan, budget: int) -> tuple[dict[str, dict[int, float]], dict[str, list[str]]]:
    """Each confirmation run's final evaluation, by configuration and test seed, and what is missing."""
    scores: dict[str, dict[int, float]] = {c: {} for c in plan.candidates}
    missing: dict[str, list[str]] = {c: [] for c in plan.candidates}
    seen = set()
    for trial in trials:
        candidate, seed = trial.config.get(store.CANDIDATE_KEY), trial.config.get(store.TEST_SEED_KEY)
        if candidate not in scores:
            continue
        seen.add((candidate, seed))
        values = [v for v in trial.values(CONFIRM_METRIC) if not math.isnan(v)]
        if trial.state == store.ERROR:
            missing[candidate].append(f"seed {seed}: errored ({trial.path / store.ERROR_FILE})")
        elif trial.env_steps < budget or not values:
            missing[candidate].append(f"seed {seed}: {trial.state} at {trial.env_steps} env steps")
        else:
            scores[candidate][int(seed)] = values[-1]
    for candidate in plan.candidates:
        missing[candidate] += [f"seed {s}: never started" for s in plan.test_seeds if (candidate, s) not in seen]
    return scores, missing


__all__ = [
    "CONFIRM_METRIC",
    "ConfirmationPlan",
    "confirmation_document",
    "iqm_interval",
    "plan_confirmation",
    "probability_of_improvement",
    "scores_from",
    "summarize",
]
