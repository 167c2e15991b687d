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
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlsweep import store
from rlsweep.errors import SweepError, UsageError, shorten
from rlsweep.holdout import known_floor
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
    sweep: Any, *, top: int = DEFAULT_TOP, seeds: int = DEFAULT_SEEDS, rule: Any = None, trials: Sequence[str] = (),
    spent: Collection[int] = (),
) -> ConfirmationPlan:
    """The top ``top`` finished trials of ``sweep`` (a loaded :class:`rlsweep.analysis.Sweep`) under ``rule`` (or the ``trials`` named), on the first ``seeds`` seeds
    of ``seeds.test`` that are not in ``spent``.

    Args:
        spent: Test seeds already used to choose the answer (the held-out stage's): a seed the winner was
            chosen on is no longer new to it, so a confirmation takes the next ones.

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
    spent = {s for s in spent if low <= s <= high}
    if seeds > high - low + 1 - len(spent):
        beside = f" beside the {len(spent)} the held-out stage chose the answer on" if spent else ""
        raise UsageError(f"{seeds} seeds do not fit in seeds.test {spec.seeds.test}{beside}; widen it in the spec", "--seeds")
    test = held_out_seeds(low, seeds + len(spent))
    test = [s for s in test if s not in spent][:seeds] if spent else test
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
    doc["holdout"] = None  # the retraining is itself held out: it has no stage of its own
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
    # One seed a trial: no aggregate to choose (lcb, which needs two seeds, would make the spec invalid).
    # Nor seeds to add (seeds.adaptive needs two too).
    doc["seeds"] = {**{k: v for k, v in (doc.get("seeds") or {}).items() if k not in ("aggregate", "adaptive", "contender_share")},
                    "per_trial": 1}
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


def _number(value: Any) -> float:
    """A number as :func:`summarize` writes it (NaN where there is none); anything else is NaN too."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return math.nan


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _confirmed_row(row: Any, index: int) -> tuple[dict[str, Any] | None, list[str]]:
    """One configuration of a confirmation's result, of the shape :func:`summarize` writes; what is of
    another shape is dropped (a row without a trial id altogether) and named."""
    where = f"configurations[{index}]"
    if not isinstance(row, Mapping):
        return None, [f"{where} is {shorten(row)}, not a configuration"]
    trial_id = row.get("trial_id")
    if not isinstance(trial_id, str) or not trial_id:
        return None, [f"{where} has trial_id {shorten(trial_id)}, not a trial's id"]
    problems = []
    numbers = {}
    for key in ("iqm", "ci_low", "ci_high", "tuning_value"):
        if not _is_number(row.get(key)):
            problems.append(f"{where}.{key} is {shorten(row.get(key))}, not a number")
        numbers[key] = _number(row.get(key))
    if not numbers["ci_low"] <= numbers["iqm"] <= numbers["ci_high"] and not math.isnan(numbers["iqm"]):
        problems.append(f"{where}: the interval [{numbers['ci_low']}, {numbers['ci_high']}] does not hold the IQM "
                        f"{numbers['iqm']}; the interval is left out")
        numbers["ci_low"] = numbers["ci_high"] = math.nan

    def mapping(key: str, keep: Any) -> dict[str, Any]:
        found = row.get(key, {})
        if not isinstance(found, Mapping):
            problems.append(f"{where}.{key} is {shorten(found)}, not a mapping")
            return {}
        kept = {str(k): v for k, v in found.items() if keep(k, v)}
        if len(kept) < len(found):
            problems.append(f"{where}.{key}: {len(found) - len(kept)} entr(ies) of the wrong kind left out")
        return kept

    def seed_value(seed: Any, value: Any) -> bool:
        # 0-9 only: '²'.isdigit() is true, and int('²') fails where the seed is read back
        return (isinstance(seed, str) and seed.lstrip("-").isascii() and seed.lstrip("-").isdigit()
                and not math.isnan(_number(value)))

    missing = row.get("missing", [])
    if not isinstance(missing, list) or not all(isinstance(m, str) for m in missing):
        problems.append(f"{where}.missing is {shorten(missing)}, not a list of texts")
        missing = [str(m) for m in missing] if isinstance(missing, list) else [f"unreadable: {shorten(missing)}"]
    seeds = row.get("tuning_seeds", [])
    rank = row.get("rank")
    return {
        "trial_id": trial_id,
        "config": mapping("config", lambda k, v: True),
        **numbers,
        "tuning_seeds": [s for s in seeds if isinstance(s, int) and not isinstance(s, bool)] if isinstance(seeds, list) else [],
        "per_seed": {k: _number(v) for k, v in mapping("per_seed", seed_value).items()},
        "missing": missing,
        "p_beats": {k: _number(v) for k, v in mapping("p_beats", lambda k, v: not math.isnan(_number(v))).items()},
        "rank": rank if isinstance(rank, int) and not isinstance(rank, bool) else index + 1,
        "tie_with_winner": row.get("tie_with_winner") is True,
    }, problems


def read_confirmation(root: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """The confirmation's result stored in the sweep at ``root``, of the shape :func:`summarize` writes, and
    what in the file is of another shape (each naming the file): a configuration of the wrong shape is
    left out, a value of the wrong type dropped. None where there is no result, or none that can be read
    (not JSON, not an object, no list of configurations)."""
    where = root / store.CONFIRMATION_FILE
    try:
        found = store.read_confirmation(root)
    except SweepError as exc:
        return None, [f"{exc}: not a confirmation rlsweep can read"]
    if found is None:
        return None, []
    if not isinstance(found, Mapping) or not isinstance(found.get("configurations"), list):
        what = "no list of configurations" if isinstance(found, Mapping) else f"{shorten(found)}, not an object"
        return None, [f"{where}: holds {what}; not a confirmation rlsweep can read"]
    problems = []
    rows = []
    for index, row in enumerate(found["configurations"]):
        clean, wrong = _confirmed_row(row, index)
        problems += wrong
        if clean is not None:
            rows.append(clean)
    metric = found.get("metric")
    if not isinstance(metric, str):
        problems.append(f"metric is {shorten(metric)}, not a name; read as {CONFIRM_METRIC}")
        metric = CONFIRM_METRIC
    ids = {r["trial_id"] for r in rows}
    winner = found.get("winner")
    if winner is not None and (not isinstance(winner, str) or winner not in ids):
        problems.append(f"winner {shorten(winner)} is none of its configurations")
        winner = None
    ties = found.get("ties", [])
    if not isinstance(ties, list):
        problems.append(f"ties is {shorten(ties)}, not a list of trial ids; read as none")
        ties = []
    elif strays := [t for t in ties if not isinstance(t, str) or t not in ids]:
        problems.append(f"ties {shorten(strays)} are none of its configurations; dropped")
    test_seeds = found.get("test_seeds", [])
    if not isinstance(test_seeds, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in test_seeds):
        problems.append(f"test_seeds is {shorten(test_seeds)}, not a list of seeds")
        test_seeds = [s for s in test_seeds if isinstance(s, int) and not isinstance(s, bool)] if isinstance(test_seeds, list) else []
    created = found.get("created", 0)
    result = {
        **found,
        "metric": metric,
        "winner": winner,
        "ties": [t for t in ties if isinstance(t, str) and t in ids],
        "test_seeds": test_seeds,
        "created": created if _is_number(created) and created is not None and math.isfinite(created) else 0,
        "configurations": rows,
    }
    return result, [p if p.startswith(str(where)) else f"{where}: {p}" for p in problems]


def no_confirmation(path: Path) -> str:
    """Why the sweep at ``path`` has no confirmation to use: never confirmed, or its file cannot be read
    (what is wrong with it was named in a warning)."""
    if store.has_confirmation(path):
        return (f"{path / store.CONFIRMATION_FILE} holds no confirmation rlsweep can read (see the warning above); "
                f"run `rlsweep confirm {path}` again to redo it")
    return f"{path} has no confirmation yet; run `rlsweep confirm {path}` first"


def unusable_confirmation(path: Path, result: Mapping[str, Any], trial_ids: set[str], problems: Sequence[str]) -> str:
    """Why the confirmation stored in the sweep at ``path`` (read as ``result``, with ``problems`` found in
    its file) ranks none of the sweep's trials: what is wrong with the file, named, not the sweep's trials."""
    where = path / store.CONFIRMATION_FILE
    rows = result.get("configurations", [])
    if not rows:
        why = "holds no configuration rlsweep can read"
    elif not any(row["trial_id"] in trial_ids for row in rows):
        why = f"confirms {shorten([row['trial_id'] for row in rows])}, none of which is a trial of this sweep"
    else:
        mine = [p.removeprefix(f"{where}: ") for p in problems]
        why = ("has no IQM rlsweep can read for any of its configurations" + (f" ({'; '.join(mine[:3])})" if mine else
               " (none finished on two test seeds)"))
    return f"{where}: {why}; run `rlsweep confirm {path}` again to redo it"


def final_score(trial: store.Trial, budget: int) -> float | None:
    """A retraining run's score (a confirmation's, the held-out stage's): its last greedy evaluation, where it
    finished at the budget without an error or a divergence (its last row may reach the budget, but an
    earlier evaluation is no final score); None otherwise."""
    values = [v for v in trial.values(CONFIRM_METRIC) if not math.isnan(v)]
    if trial.state == store.ERROR or trial.diverged or trial.env_steps < budget or not values:
        return None
    return values[-1]


def scores_from(
    trials: Sequence[store.Trial], plan: ConfirmationPlan, budget: int, score_range: Sequence[float] | None = None,
) -> tuple[dict[str, dict[int, float]], dict[str, list[str]]]:
    """Each confirmation run's final evaluation, by configuration and test seed, and what is missing.

    ``score_range``: the task's (lowest, highest) score (``holdout.score_range``): a run that failed (errored,
    diverged, or ended short of the budget) of a configuration with a finished one then scores the lowest, as
    in the held-out stage's answer, and its line in ``missing`` says so. Not where a finished run scored
    outside the range (it does not hold for the task), nor for a run that is still to finish or never started.
    """
    scores: dict[str, dict[int, float]] = {c: {} for c in plan.candidates}
    missing: dict[str, list[str]] = {c: [] for c in plan.candidates}
    failed: list[tuple[str, int, int]] = []  # candidate, seed, its line in missing
    seen = set()
    for trial in trials:
        candidate, seed = trial.config.get(store.CANDIDATE_KEY), trial.config.get(store.TEST_SEED_KEY)
        if candidate not in scores:
            continue
        seen.add((candidate, seed))
        if (score := final_score(trial, budget)) is not None:
            scores[candidate][int(seed)] = score
            continue
        if trial.state == store.ERROR:
            missing[candidate].append(f"seed {seed}: errored ({trial.path / store.ERROR_FILE})")
        elif trial.diverged:
            missing[candidate].append(f"seed {seed}: diverged at {trial.env_steps} env steps ({trial.diverged})")
        else:
            missing[candidate].append(f"seed {seed}: {trial.state} at {trial.env_steps} env steps")
        if trial.state in (store.ERROR, store.TERMINATED):
            failed.append((candidate, int(seed), len(missing[candidate]) - 1))
    if (floor := known_floor(score_range, {(c, s): v for c, by_seed in scores.items() for s, v in by_seed.items()})) is not None:
        for candidate, seed, line in failed:
            if scores[candidate]:
                scores[candidate][seed] = floor
                missing[candidate][line] += f"; counted as the lowest score, {floor:g} (holdout.score_range)"
    for candidate in plan.candidates:
        missing[candidate] += [f"seed {s}: never started" for s in plan.test_seeds if (candidate, s) not in seen]
    return scores, missing


__all__ = [
    "CONFIRM_METRIC",
    "ConfirmationPlan",
    "confirmation_document",
    "final_score",
    "iqm_interval",
    "plan_confirmation",
    "probability_of_improvement",
    "read_confirmation",
    "scores_from",
    "summarize",
    "unusable_confirmation",
]
