"""Which interval, share, least winner seeds and race size the held-out stage should use by default: a Monte
Carlo study of whole sweeps, with no RL in it.

Each simulated sweep draws ``trials`` configurations; each configuration has a per-seed score distribution
shaped like a real task's (below). The search scores each configuration on one seed and ranks them by that
value (today's default, ``seeds.per_trial: 1``). The held-out stage then gets ``race_budget(share, trials,
1)`` runs and races the best configurations over test seeds with :mod:`rlsweep.holdout` exactly as
the sweep will (on any number of runs: the stage itself races from 10, and gives fewer to the top configuration,
which the ``max_candidates=1`` rows measure); the winner is then scored on 10 fresh seeds (its test IQM, what a user who retrains it sees).

Tasks (the score range is what "10% of the range" is measured against):

- ``acrobot``: bimodal, [-500, 0]. A configuration solves a seed with probability p ~ Beta(1, 1.5), at
  N(mu, 8) with mu ~ U(-110, -75); an unsolved seed scores -500 (80%) or U(-500, -200).
- ``cartpole``: [0, 500]. N(mu, sd) clipped to the range, mu ~ U(50, 650), sd ~ U(60, 160); with probability
  q ~ U(0, 0.3) a seed collapses to U(10, 150).
- ``pendulum``: continuous, [-1600, 0]. N(mu, 40 + 0.15 |mu|), mu ~ U(-1100, -150); with probability
  q ~ U(0, 0.25) a seed fails to U(-1500, -1000).

Per task and per (trials, share, the winner's least share of the runs, entrants; the winner's least seeds
the stage's default) it reports, over the sweeps:

- ``coverage``: per interval method, how often the reported 95% interval holds the winner's 10-seed test IQM
  (the goal is at least 0.9);
- ``median_gap_share``: the median of (held-out IQM - test IQM) / score range (the goal is at most 0.10), and
  the same for today's report (the best trial's own tuning value);
- ``true_mean``: the winner's true mean score (from 4,000 draws of its distribution) against the top
  configuration by tuning value alone, and how often the race picked the better one of the two.

Every value of a (sweep, configuration, seed) comes from its own seeded generator, so every setting sees the
same sweeps and the same seeds (common random numbers): the settings compare paired.

    .venv/bin/python benchmarks/holdout_calibration.py [--sweeps 100] [--seed 0]

A second part (``small_stage``) decides the winner's least seeds: the search's best of 16 configurations
alone on n = 3-8 test seeds (what a stage too small to race does), its interval's coverage of the 10-seed
test IQM per n, on each simulated task and on real scores (``real``: each configuration that
``seed_robustness.py`` retrained on 10 test seeds is a population to draw n stage seeds and 10 test seeds
from). ``--small-only`` runs only that part.

Writes ``benchmarks/results/holdout_calibration-<date>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy
from scipy.stats import trim_mean

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from rlsweep import holdout as _holdout  # noqa: E402

RANGES = {"acrobot": (-500.0, 0.0), "cartpole": (0.0, 500.0), "pendulum": (-1600.0, 0.0)}
TRIALS = (20, 50, 100)
SHARES = (0.2, 0.3)
MIN_SEEDS = _holdout.DEFAULT_MIN_SEEDS
WINNER_SHARES = (0.0, 0.5, 0.7)
ENTRANTS = (1, 2, 4, 8)
FUTURE_SEEDS = 10
TEST_LOW = 1000
FRESH_LOW = 100_000
#: Bootstrap resamples in the study (the stage itself uses the module's 10,000): the two bootstrap methods'
#: coverage moves by less than the study's own noise, and the run takes a minute or two instead of ten.
STUDY_RESAMPLES = 2_000


def draw_config(task: str, rng: np.random.Generator) -> tuple[float, ...]:
    """One configuration's score distribution, as its parameters."""
    if task == "acrobot":
        return (float(rng.beta(1.0, 1.5)), float(rng.uniform(-110, -75)))
    if task == "cartpole":
        return (float(rng.uniform(50, 650)), float(rng.uniform(60, 160)), float(rng.uniform(0, 0.3)))
    return (float(rng.uniform(-1100, -150)), float(rng.uniform(0, 0.25)))


def scores(task: str, params: tuple[float, ...], rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` seeds' final scores of a configuration."""
    low, high = RANGES[task]
    if task == "acrobot":
        p, mu = params
        solved = rng.random(size) < p
        failed = np.where(rng.random(size) < 0.8, -500.0, rng.uniform(-500, -200, size))
        return np.clip(np.where(solved, rng.normal(mu, 8, size), failed), low, high)
    if task == "cartpole":
        mu, sd, q = params
        return np.where(rng.random(size) < q, rng.uniform(10, 150, size), np.clip(rng.normal(mu, sd, size), low, high))
    mu, q = params
    return np.clip(np.where(rng.random(size) < q, rng.uniform(-1500, -1000, size), rng.normal(mu, 40 + 0.15 * abs(mu), size)), low, high)


def seed_score(task: str, params: tuple[float, ...], key: tuple[int, ...]) -> float:
    """The score of one (sweep, configuration, seed): its own generator, so every setting sees the same."""
    return float(scores(task, params, np.random.default_rng(key), 1)[0])


def simulate_sweep(task: str, master: int, sweep: int, trials: int) -> dict[str, Any]:
    """A search of ``trials`` configurations, each scored on one tuning seed, ranked best first."""
    task_id = sorted(RANGES).index(task)
    rng = np.random.default_rng([master, task_id, sweep])
    configs = [draw_config(task, rng) for _ in range(trials)]
    tuning = [seed_score(task, configs[i], (master, task_id, sweep, i, i)) for i in range(trials)]
    order = sorted(range(trials), key=lambda i: (-tuning[i], i))
    truth_rng = np.random.default_rng([master, task_id, sweep, 999_999])
    true_mean = [float(np.mean(scores(task, c, truth_rng, 4000))) for c in configs]
    return {"configs": configs, "tuning": tuning, "order": order, "true_mean": true_mean, "key": (master, task_id, sweep)}


def run_setting(task: str, sweep: dict[str, Any], share: float, winner_share: float, entrants: int) -> dict[str, Any]:
    """The held-out stage of one sweep under one setting, and the winner's 10-seed test IQM."""
    trials = len(sweep["configs"])
    runs = _holdout.race_budget(share, trials, 1)
    ranked = [str(i) for i in sweep["order"]]
    plan = _holdout.plan_race(
        ranked, runs, test_range=(TEST_LOW, TEST_LOW + 999), env_steps=1, min_seeds=MIN_SEEDS,
        max_candidates=entrants, winner_share=winner_share, race_from_runs=1, score_range=RANGES[task],
        tuning_values={str(i): sweep["tuning"][i] for i in range(trials)},
    )
    race = _holdout.Race(plan)
    done: dict[tuple[str, int], float | None] = {}
    while not race.finished(done):
        for candidate, seed in race.next_runs(done):
            done[(candidate, seed)] = seed_score(task, sweep["configs"][int(candidate)], (*sweep["key"], int(candidate), seed))
    result = race.result(done)
    winner = int(result.winner)
    fresh = [seed_score(task, sweep["configs"][winner], (*sweep["key"], winner, FRESH_LOW + k)) for k in range(FUTURE_SEEDS)]
    test_iqm = float(trim_mean(fresh, 0.25))
    values = [v for v in (done[(result.winner, s)] for s in result.seeds) if v is not None]
    top = sweep["order"][0]
    intervals = {
        method: _holdout.holdout_interval(values, method=method, future_seeds=FUTURE_SEEDS,
                                          entrants=len(plan.candidates), score_range=RANGES[task])
        for method in _holdout.INTERVALS
    }
    return {
        "runs": runs,
        "entered": len(plan.candidates),
        "winner_seeds": len(result.seeds),
        "estimate": result.held_out_iqm,
        "test_iqm": test_iqm,
        "covered": {m: low <= test_iqm <= high for m, (low, high) in intervals.items()},
        "width": {m: high - low for m, (low, high) in intervals.items()},
        "winner_true": sweep["true_mean"][winner],
        "top1_true": sweep["true_mean"][top],
        "best_true": max(sweep["true_mean"]),
        "tuning_gap": sweep["tuning"][top] - float(trim_mean(
            [seed_score(task, sweep["configs"][top], (*sweep["key"], top, FRESH_LOW + k)) for k in range(FUTURE_SEEDS)], 0.25)),
    }


def summarize(task: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    span = RANGES[task][1] - RANGES[task][0]
    gaps = np.array([(r["estimate"] - r["test_iqm"]) / span for r in rows])
    winner = np.array([r["winner_true"] for r in rows])
    top1 = np.array([r["top1_true"] for r in rows])
    return {
        "sweeps": len(rows),
        "runs": int(rows[0]["runs"]),
        "entered": int(rows[0]["entered"]),
        "winner_seeds_median": float(np.median([r["winner_seeds"] for r in rows])),
        "coverage": {m: round(float(np.mean([r["covered"][m] for r in rows])), 3) for m in _holdout.INTERVALS},
        "median_width_share": {m: round(float(np.median([r["width"][m] for r in rows])) / span, 3) for m in _holdout.INTERVALS},
        "median_gap_share": round(float(np.median(gaps)), 4),
        "median_abs_gap_share": round(float(np.median(np.abs(gaps))), 4),
        "today_median_gap_share": round(float(np.median([r["tuning_gap"] for r in rows])) / span, 4),
        "true_mean": {
            "winner": round(float(np.mean(winner)), 1),
            "top1_by_tuning": round(float(np.mean(top1)), 1),
            "best_of_sweep": round(float(np.mean([r["best_true"] for r in rows])), 1),
            "race_better": round(float(np.mean(winner > top1)), 3),
            "race_worse": round(float(np.mean(winner < top1)), 3),
        },
    }


#: Small stages: the search's best configuration alone (too few runs to race) on this many test seeds.
SMALL_SEEDS = (3, 4, 5, 6, 8)
SMALL_TRIALS = 16
SMALL_SWEEPS = 400


def small_stage(task: str, master: int, sweeps: int) -> dict[str, Any]:
    """How often the interval from the top configuration's n test seeds holds its 10-seed test IQM (the
    winner's least seeds decide it: below ``race_from_runs`` the stage is exactly this)."""
    span = RANGES[task][1] - RANGES[task][0]
    rows: dict[int, dict[str, list[float]]] = {n: {"covered": [], "width": [], "gap": []} for n in SMALL_SEEDS}
    for s in range(sweeps):
        sweep = simulate_sweep(task, master, s, SMALL_TRIALS)
        top = sweep["order"][0]
        fresh = [seed_score(task, sweep["configs"][top], (*sweep["key"], top, FRESH_LOW + k)) for k in range(FUTURE_SEEDS)]
        test_iqm = float(trim_mean(fresh, 0.25))
        for n in SMALL_SEEDS:
            values = [seed_score(task, sweep["configs"][top], (*sweep["key"], top, TEST_LOW + k)) for k in range(n)]
            low, high = _holdout.holdout_interval(values, future_seeds=FUTURE_SEEDS, score_range=RANGES[task],
                                                  tuning_value=sweep["tuning"][top])
            rows[n]["covered"].append(low <= test_iqm <= high)
            rows[n]["width"].append((high - low) / span)
            rows[n]["gap"].append(abs(float(trim_mean(values, 0.25)) - test_iqm) / span)
    return {str(n): {"coverage": round(float(np.mean(r["covered"])), 3),
                     "median_width_share": round(float(np.median(r["width"])), 3),
                     "median_abs_gap_share": round(float(np.median(r["gap"])), 4)} for n, r in rows.items()}


def small_stage_real(draws: int = 2000) -> dict[str, Any]:
    """The same on real scores: each configuration a seed_robustness run retrained on 10 test seeds is a
    population; n stage seeds and 10 test seeds are drawn from it with replacement."""
    populations, files = [], []
    for file in sorted((HERE / "results").glob("seed_robustness-*.json")):
        data = json.loads(file.read_text())
        if "pooled" in file.name or data.get("task") not in RANGES:
            continue  # a pooled file repeats its sources' runs
        span = RANGES[data["task"]][1] - RANGES[data["task"]][0]
        files.append(file.name)
        for run in data["runs"]:
            if len(run.get("per_test_seed") or {}) >= 10:
                populations.append((np.array(list(run["per_test_seed"].values()), float), span, run.get("tuning_value")))
    rng = np.random.default_rng(0)
    rows: dict[int, dict[str, list[float]]] = {n: {"covered": [], "width": [], "gap": []} for n in SMALL_SEEDS}
    for values, span, tuning in populations:
        for _ in range(draws // max(len(populations), 1) + 1):
            test_iqm = float(trim_mean(rng.choice(values, FUTURE_SEEDS), 0.25))
            for n in SMALL_SEEDS:
                drawn = rng.choice(values, n)
                low, high = _holdout.holdout_interval(drawn, future_seeds=FUTURE_SEEDS, tuning_value=tuning)
                rows[n]["covered"].append(low <= test_iqm <= high)
                rows[n]["width"].append((high - low) / span)
                rows[n]["gap"].append(abs(float(trim_mean(drawn, 0.25)) - test_iqm) / span)
    return {"populations": len(populations), "files": files,
            **{str(n): {"coverage": round(float(np.mean(r["covered"])), 3),
                        "median_width_share": round(float(np.median(r["width"])), 3),
                        "median_abs_gap_share": round(float(np.median(r["gap"])), 4)} for n, r in rows.items()}}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=100, help="simulated sweeps per task and setting")
    parser.add_argument("--seed", type=int, default=0, help="the study's master seed")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--small-only", action="store_true", help="only the small-stage part (a minute, not ten)")
    args = parser.parse_args(argv)
    _holdout.RESAMPLES = STUDY_RESAMPLES
    # the code measured is the code at the start: other commits may land while it runs
    commit = git("rev-parse", "HEAD") + ("+dirty" if git("status", "--porcelain", "--untracked-files=no", "--", "rlsweep/holdout.py", "benchmarks/holdout_calibration.py") else "")
    started = time.perf_counter()
    results: dict[str, Any] = {}
    small = {task: small_stage(task, args.seed, SMALL_SWEEPS) for task in RANGES}
    small["real"] = small_stage_real()
    for task, rows in small.items():
        print("small stage", task, json.dumps(rows), flush=True)
    for task in () if args.small_only else RANGES:
        for trials in TRIALS:
            sweeps = [simulate_sweep(task, args.seed, s, trials) for s in range(args.sweeps)]
            for share, winner_share, entrants in itertools.product(SHARES, WINNER_SHARES, ENTRANTS):
                if entrants == 1 and winner_share != _holdout.DEFAULT_WINNER_SHARE:
                    continue  # one entrant takes every run whatever its share
                key = f"trials={trials} share={share} winner_share={winner_share} max_candidates={entrants}"
                if _holdout.race_budget(share, trials, 1) < MIN_SEEDS:
                    continue  # the stage is skipped: fewer runs than the winner's least seeds
                rows = [run_setting(task, sweep, share, winner_share, entrants) for sweep in sweeps]
                results.setdefault(task, {})[key] = summary = summarize(task, rows)
                print(task, key, json.dumps({k: summary[k] for k in ("entered", "coverage", "median_gap_share", "true_mean")}), flush=True)
    document = {
        "benchmark": "holdout_calibration",
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "versions": {"numpy": np.__version__, "scipy": scipy.__version__, "python": platform.python_version()},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "seed": args.seed,
        "sweeps_per_setting": args.sweeps,
        "future_seeds": FUTURE_SEEDS,
        "min_seeds": MIN_SEEDS,
        "score_ranges": {k: list(v) for k, v in RANGES.items()},
        "resamples": STUDY_RESAMPLES,
        "seconds": round(time.perf_counter() - started, 1),
        "results": results,
        "small_stage": {"trials": SMALL_TRIALS, "sweeps": SMALL_SWEEPS, "interval": _holdout.DEFAULT_INTERVAL, **small},
    }
    out = args.out or HERE / "results" / f"holdout_calibration-{dt.datetime.now(dt.timezone.utc):%Y-%m-%dT%H%M}.json"
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {out} in {document['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
