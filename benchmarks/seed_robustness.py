"""Whether the value a sweep reports for its winner holds on seeds the search never saw, side by side at equal
total env steps.

Each side spends the same number of training runs (a run: one configuration on one seed for the trial
budget), so the same env steps:

- ``per1``: ``seeds.per_trial: 1``, 20 trials (the usual sweep; its answer is the best trial's own value);
- ``per3``: ``seeds.per_trial: 3`` with ``aggregate: iqm``, 7 trials (21 runs: one more than the others);
- ``lcb``: as ``per3`` with ``aggregate: lcb`` (each trial scored by its seeds' mean less one standard error,
  so a configuration that scored well on one lucky seed ranks below a steady one);
- ``holdout``: ``seeds.per_trial: 1``, 14 trials, then the held-out stage with its default least seeds (6)
  and ``holdout: {share: 0.43}``: floor(0.43 x 14) = 6 runs, the least the stage takes, here all on the
  search's best configuration, since a race needs 10; its answer is the stage's winner, its held-out IQM and
  95% interval. (At the default share of 0.3 a sweep takes the stage from 20 trials; 14 + 6 keeps the
  sides' runs equal.)

- ``holdout_entry`` and ``per1_entry``: ``holdout`` and ``per1`` over rl-baselines3-zoo's entry for the task
  instead of the task's fixed settings: the entry (``ZOO_ENTRIES``, as rl-zoo3 2.9.2's ``ppo.yml`` has it)
  converted by rlsweep's own ``convert --from zoo``, so observation normalization, its envs and batch, its
  GAE lambda and SB3's initialization and clipping, with the same space searched over it (the space's keys
  replace the entry's). They ask whether the base the space is searched over, not the search, decides a
  side's score. ``holdout_entry_batch`` also searches the env steps per update
  (``train_batch_size_per_learner``: 512 to 4,096, rl-zoo3's ``n_steps`` 32 to 256 over the entry's 16 envs),
  which rl-zoo3's space searches and the task's space fixes; ``per1_entry_batch`` and ``per3_entry_batch``
  are ``per1`` and ``per3`` over the same base and space, so the held-out stage meets today's default and
  three seeds a trial where the space can learn. ``adaptive_entry_batch`` is ``per3_entry_batch`` with
  ``seeds.adaptive`` (a trial adds its 2nd and 3rd seeds only while a contender) over 11 trials, about as
  many runs as the others by design; on Acrobot it spent about 16, so ``adaptive14_entry_batch`` runs 14
  trials (about 20 runs). Each sweep records the runs it spent.

- ``zoo``: rl-baselines3-zoo's own search, as its README runs it (``python -m rl_zoo3.train --algo ppo --env
  ... -optimize --n-trials 20 --n-jobs 2 --sampler tpe --pruner median``, its own space, in its own venv:
  ``benchmarks/_zoo.py``), 20 trials of the same env steps, each evaluated once at the end on 10 episodes
  (``--n-evaluations 1 --eval-episodes 10``: at this budget rl-zoo3's default is one evaluation too, on 5);
  its answer is its best trial's value, ``study.best_trial``. That configuration (rl-zoo3's own conversion
  of the trial's parameters, over the env's entry in its ``hyperparams/ALGO.yml``) is then retrained by
  ``rl_zoo3.train`` on each of the 10 test seeds (``--seed``), as a zoo user retrains a tuned configuration,
  and scored by its deterministic evaluation at the budget (10 episodes), so the test IQM is the zoo's own
  config trained by the zoo. Every zoo run gets one torch thread (``--num-threads 1``), two at a time.

The rlsweep sides use Optuna TPE with the sweep seed and FIFO (no pruning: the comparison is about seeds, not about early
stopping), score a trial by its greedy evaluation (``eval_return_mean``, 10 episodes) and choose by the
default rule (``avg-last-3``), as a sweep does. Each side's answer is then retrained by ``rlsweep confirm``
on 10 test seeds no part of its sweep used (100 greedy episodes in all; after the held-out stage's seeds
where there was one). Reported per run: the answer, its reported value (and interval, where the side
reports one), the test IQM, the gap reported - test, and whether the interval covers the test IQM; per
side, medians over sweep seeds, the gap as a share of the task's score range, and the coverage count.
Sides alternate in order from sweep seed to sweep seed. Results go to
``benchmarks/results/seed_robustness-<task>-<date>.json`` with the commit measured.

Tasks: ``acrobot`` (PPO on Acrobot-v1, 30,000 env steps per run: -1 a step until the tip swings up, so a
run that has not learned scores -500 and learning curves vary most from seed to seed), ``cartpole`` (PPO
on CartPole-v1, 20,000) and ``pendulum`` (SAC on Pendulum-v1, 10,000, rl-zoo3's SAC space from
``examples/zoo_sac_space.yaml``; about 10 times as slow per env step).

    .venv/bin/python benchmarks/seed_robustness.py --task acrobot --sweep-seeds 0 1 2 3 4

``--pool FILE ...`` joins one task's results files; ``--across FILE:A:B ...`` pairs two sides over several
tasks, each sweep's difference as a share of its task's score range.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

PPO_SPACE = {
    "training.lr": {"loguniform": [1.0e-5, 1.0e-2]},
    "training.entropy_coeff": {"loguniform": [1.0e-6, 0.1]},
    "training.num_epochs": {"choice": [1, 5, 10, 20]},
    "training.minibatch_size": {"choice": [32, 64, 128, 256]},
    "training.gamma": {"choice": [0.95, 0.98, 0.99, 0.999]},
    "rl_module.model_config.fcnet_hiddens": {"choice": [[64], [64, 64]]},
}


def _zoo_sac() -> dict[str, Any]:
    return yaml.safe_load((REPO / "examples" / "zoo_sac_space.yaml").read_text())


TASKS: dict[str, dict[str, Any]] = {
    "acrobot": {"algorithm": "PPO", "env": "Acrobot-v1", "env_steps": 30_000, "range": [-500.0, 0.0],
                "config": {"training.train_batch_size": 1000}, "space": PPO_SPACE},
    "cartpole": {"algorithm": "PPO", "env": "CartPole-v1", "env_steps": 20_000, "range": [0.0, 500.0],
                 "config": {"training.train_batch_size": 1000}, "space": PPO_SPACE},
    "pendulum": {"algorithm": "SAC", "env": "Pendulum-v1", "env_steps": 10_000, "range": [-1600.0, 0.0],
                 "config": None, "space": None},  # from examples/zoo_sac_space.yaml
}
#: rl-zoo3's ``hyperparams/ppo.yml`` entries (rl-zoo3 2.9.2) the ``*_entry`` sides search over, converted by
#: ``rlsweep convert --from zoo``.
ZOO_ENTRIES: dict[str, dict[str, Any]] = {
    "acrobot": {"Acrobot-v1": {"normalize": True, "n_envs": 16, "n_timesteps": 1e6, "policy": "MlpPolicy", "n_steps": 256,
                               "gae_lambda": 0.94, "gamma": 0.99, "n_epochs": 4, "ent_coef": 0.0}},
    "cartpole": {"CartPole-v1": {"n_envs": 8, "n_timesteps": 1e5, "policy": "MlpPolicy", "n_steps": 32, "batch_size": 256,
                                 "gae_lambda": 0.8, "gamma": 0.98, "n_epochs": 20, "ent_coef": 0.0,
                                 "learning_rate": "lin_0.001", "clip_range": "lin_0.2"}},
}
#: Each side's trials and seeds per trial: 20 runs each (per3: 21), the held-out side's 14 with its stage's 6.
SIDES: dict[str, dict[str, Any]] = {
    "per1": {"per_trial": 1, "trials": 20, "holdout": None},
    "per3": {"per_trial": 3, "trials": 7, "holdout": None},
    "lcb": {"per_trial": 3, "trials": 7, "holdout": None, "aggregate": "lcb"},
    "holdout": {"per_trial": 1, "trials": 14, "holdout": {"share": 0.43}},
    "zoo": {"per_trial": 1, "trials": 20, "holdout": None},
    "per1_entry": {"per_trial": 1, "trials": 20, "holdout": None, "base": "zoo entry"},
    "holdout_entry": {"per_trial": 1, "trials": 14, "holdout": {"share": 0.43}, "base": "zoo entry"},
    "holdout_entry_batch": {"per_trial": 1, "trials": 14, "holdout": {"share": 0.43}, "base": "zoo entry",
                            "space": {"training.train_batch_size_per_learner": {"choice": [512, 1024, 2048, 4096]}}},
    "per1_entry_batch": {"per_trial": 1, "trials": 20, "holdout": None, "base": "zoo entry",
                         "space": {"training.train_batch_size_per_learner": {"choice": [512, 1024, 2048, 4096]}}},
    "per3_entry_batch": {"per_trial": 3, "trials": 7, "holdout": None, "base": "zoo entry",
                         "space": {"training.train_batch_size_per_learner": {"choice": [512, 1024, 2048, 4096]}}},
    # Up to 3 seeds, added only while a contender (seeds.adaptive, contender_share 0.5): 11 trials average
    # about 21 runs (each trial 1, half add a 2nd at a third of the budget, half of those a 3rd at two thirds,
    # a few more as the first trials at each check add one); the runs it spent are recorded per sweep.
    "adaptive_entry_batch": {"per_trial": 3, "adaptive": True, "trials": 11, "holdout": None, "base": "zoo entry",
                             "space": {"training.train_batch_size_per_learner": {"choice": [512, 1024, 2048, 4096]}}},
    # The same with 14 trials: on Acrobot the 11-trial side spent a median 16 runs (15-17), as runs stuck at
    # -500 at a check tie and add no seed; 14 trials spend about 20, the other sides' runs.
    "adaptive14_entry_batch": {"per_trial": 3, "adaptive": True, "trials": 14, "holdout": None, "base": "zoo entry",
                               "space": {"training.train_batch_size_per_learner": {"choice": [512, 1024, 2048, 4096]}}},
}
#: rl-zoo3's algorithm and env id for each task (the zoo side).
ZOO_TASKS = {"acrobot": ("ppo", "Acrobot-v1"), "cartpole": ("ppo", "CartPole-v1"), "pendulum": ("sac", "Pendulum-v1")}

#: Run in rl-zoo3's venv after its search: the best trial's value and parameters, and a config file for
#: ``rl_zoo3.train --conf-file`` holding the env's entry in rl-zoo3's ALGO.yml updated with that trial's
#: hyperparameters, converted by rl-zoo3's own converter (as its objective updates them).
_ZOO_BEST = '''
import collections, glob, json, pickle, sys
from pathlib import Path

import yaml
import rl_zoo3
from rl_zoo3.hyperparams_opt import HYPERPARAMS_CONVERTER

algo, env, logs, conf = sys.argv[1:5]
(report,) = glob.glob(f"{logs}/{algo}/report_{env}_*.pkl")
with open(report, "rb") as f:
    study = pickle.load(f)
best = study.best_trial
hyperparams = HYPERPARAMS_CONVERTER[algo](dict(best.params))


def python(value):
    # policy_kwargs as rl-zoo3's yml files write it: a Python expression its ExperimentManager evaluates.
    if isinstance(value, dict):
        return "dict(" + ", ".join(f"{k}={python(v)}" for k, v in value.items()) + ")"
    if isinstance(value, type):
        return f"nn.{value.__name__}"
    return repr(value)


if "policy_kwargs" in hyperparams:
    hyperparams["policy_kwargs"] = python(hyperparams["policy_kwargs"])
defaults = yaml.safe_load((Path(rl_zoo3.__file__).parent / "hyperparams" / f"{algo}.yml").read_text())[env]
Path(conf).write_text(yaml.safe_dump({env: {**defaults, **hyperparams}}))
print(json.dumps({"value": best.value, "number": best.number, "params": best.params,
                  "hyperparams": {k: v if isinstance(v, (int, float, str)) else repr(v) for k, v in hyperparams.items()},
                  "states": dict(collections.Counter(t.state.name for t in study.trials))}))
'''
TEST_SEEDS, EPISODES = 10, 10


def _entry_base(task: str, space: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bool] | None]:
    """The task's rl-zoo3 entry as rlsweep's converter maps it: its fixed settings less the keys the space
    searches, and its normalization."""
    from rlsweep._zoo import convert_zoo

    if task not in ZOO_ENTRIES:
        raise SystemExit(f"the *_entry sides need an rl-zoo3 entry for {task}; there are {sorted(ZOO_ENTRIES)}")
    converted, _ = convert_zoo(ZOO_ENTRIES[task], TASKS[task]["env"], algorithm=TASKS[task]["algorithm"], source="ZOO_ENTRIES")
    config = {k: v for k, v in converted["config"].items() if k not in space}
    return config, converted.get("normalize")


def document(task: str, side: str, sweep_seed: int, storage: Path) -> dict[str, Any]:
    setup, chosen = TASKS[task], SIDES[side]
    config, space = setup["config"], setup["space"]
    normalize = None
    if space is None:
        zoo = _zoo_sac()
        config, space = zoo.get("config", {}), zoo["search_space"]
    space = {**space, **chosen.get("space", {})}
    if chosen.get("base") == "zoo entry":
        config, normalize = _entry_base(task, space)
    return {
        "name": f"{task}-{side}-s{sweep_seed}",
        "algorithm": setup["algorithm"],
        "env": setup["env"],
        "config": dict(config),
        "search_space": space,
        "searcher": {"name": "optuna", "seed": sweep_seed},
        "scheduler": "fifo",
        "budget": {"env_steps": setup["env_steps"], "trials": chosen["trials"], "max_concurrent": 2},
        "seeds": {"per_trial": chosen["per_trial"], "aggregate": chosen.get("aggregate", "iqm"),
                  **({"adaptive": True} if chosen.get("adaptive") else {})},
        "evaluation": {"episodes": EPISODES},
        "metric": {"name": "eval_return_mean", "mode": "max"},
        "holdout": chosen["holdout"],
        **({"normalize": normalize} if normalize else {}),
        "storage": str(storage),
        "mlflow": None,
    }


def one(task: str, side: str, sweep_seed: int, storage: Path) -> dict[str, Any]:
    import rlsweep

    spec = rlsweep.load_spec(document(task, side, sweep_seed, storage))
    start = time.perf_counter()
    result = rlsweep.run(spec, verbose=0)
    swept_s = time.perf_counter() - start
    if result.interrupted:  # Ctrl-C: run() returns the sweep as it stood; retraining its answer would measure nothing
        raise SystemExit(f"{spec.name}: interrupted; the runs before it are in the results file")
    stage = result.held_out
    if spec.holdout is not None:
        if not stage or "winner" not in stage:
            raise SystemExit(f"{spec.name}: the held-out stage gave no winner: {stage}")
        chosen, reported, interval = stage["winner"], stage["held_out_iqm"], list(stage["interval"])
        held_out_runs, tuning = stage["runs"], stage["tuning_value"]
    else:
        chosen, reported, interval, held_out_runs = result.best.trial_id, result.best.value, None, 0
        tuning = result.best.value
    start = time.perf_counter()
    confirmed = rlsweep.load(result.path).confirm(1, TEST_SEEDS, trials=[chosen], verbose=0)
    confirm_s = time.perf_counter() - start
    (row,) = confirmed["configurations"]
    test = row["iqm"]
    # Each trial ran its seeds for its env steps (FIFO: the budget); with seeds.adaptive their number varies.
    trained = sum(len(t.seeds) or spec.seeds.per_trial for t in rlsweep.load(result.path).trials)
    return {
        "task": task,
        "side": side,
        "sweep_seed": sweep_seed,
        "chosen_trial": chosen,
        "config": dict(row.get("config") or {}),
        "reported": reported,
        "reported_interval": interval,
        "tuning_value": tuning,
        "test_iqm": test,
        "test_ci": [row["ci_low"], row["ci_high"]],
        "test_seeds": confirmed["test_seeds"],
        "per_test_seed": row["per_seed"],
        "gap": reported - test,
        "covers": None if interval is None else bool(interval[0] <= test <= interval[1]),
        "runs": trained + held_out_runs,
        "env_steps": (trained + held_out_runs) * spec.budget.env_steps,
        "sweep_s": swept_s,
        "confirm_s": confirm_s,
    }


def _zoo_retrain(python: Path, algo: str, env: str, conf: Path, seed: int, env_steps: int, workdir: Path) -> subprocess.Popen:
    """rl-zoo3 trains ``conf`` on ``seed`` for ``env_steps`` and evaluates it there (deterministic, EPISODES)."""
    workdir.mkdir(parents=True)
    cmd = [str(python), "-m", "rl_zoo3.train", "--algo", algo, "--env", env, "--conf-file", str(conf),
           "-n", str(env_steps), "--seed", str(seed), "--eval-freq", str(env_steps), "--eval-episodes", str(EPISODES),
           "-f", str(workdir / "logs"), "--num-threads", "1"]
    with open(workdir / "train.log", "wb") as log:
        return subprocess.Popen(cmd, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _zoo_score(workdir: Path, algo: str, env: str, env_steps: int) -> float:
    """The retrained run's mean return over its evaluation's episodes at ``env_steps``."""
    import numpy as np

    (npz,) = (workdir / "logs" / algo).glob(f"{env}_*/evaluations.npz")
    with np.load(npz) as data:
        steps, results = [int(t) for t in data["timesteps"]], data["results"]
    if env_steps not in steps:
        raise SystemExit(f"{npz}: no evaluation at {env_steps} env steps ({steps})")
    return float(np.mean(results[steps.index(env_steps)]))


def one_zoo(task: str, sweep_seed: int, storage: Path) -> dict[str, Any]:
    """The ``zoo`` side: rl-zoo3's search, its best trial's value, and that configuration retrained by rl-zoo3."""
    import _zoo

    from rlsweep.analysis._confirm import iqm_interval
    from rlsweep.seeds import held_out_seeds, interquartile_mean

    setup, (algo, env) = TASKS[task], ZOO_TASKS[task]
    env_steps, trials = setup["env_steps"], SIDES["zoo"]["trials"]
    python = _zoo.ensure_venv()
    workdir = storage / f"{task}-zoo-s{sweep_seed}"
    workdir.mkdir(parents=True)
    start = time.perf_counter()
    # One torch thread per trial: two trials at a time on two cores. At torch's default (a thread per core
    # each) the two contend, and a run of the small-batch configurations rl-zoo3's space holds (batch_size 4)
    # took 30 min here instead of a few. Only the time changes; these sides are compared on scores.
    search = subprocess.run(
        [*_zoo.zoo_command(python, algo=algo, env=env, seed=sweep_seed, trials=trials, jobs=2, env_steps=env_steps,
                           eval_every=env_steps, eval_episodes=EPISODES, workdir=workdir), "--num-threads", "1"],
        cwd=workdir, capture_output=True, text=True)
    swept_s = time.perf_counter() - start
    if search.returncode != 0:
        raise SystemExit(f"rl-zoo3's search failed ({search.returncode}): {search.stderr[-2000:]}")
    conf = workdir / "best.yml"
    best = json.loads(subprocess.run([str(python), "-c", _ZOO_BEST, algo, env, str(workdir / "logs"), str(conf)],
                                     check=True, capture_output=True, text=True).stdout)
    seeds = held_out_seeds(1000, TEST_SEEDS)  # the test seeds rlsweep confirm gives the per1 side
    start = time.perf_counter()
    scores: dict[int, float] = {}
    waiting = list(seeds)
    running: dict[int, subprocess.Popen] = {}
    while waiting or running:
        while waiting and len(running) < 2:  # two at a time, as the search ran its trials
            seed = waiting.pop(0)
            running[seed] = _zoo_retrain(python, algo, env, conf, seed, env_steps, workdir / f"test-{seed}")
        for seed, proc in list(running.items()):
            if proc.poll() is not None:
                del running[seed]
                if proc.returncode != 0:
                    raise SystemExit(f"rl-zoo3's retraining on seed {seed} failed: see {workdir / f'test-{seed}' / 'train.log'}")
                scores[seed] = _zoo_score(workdir / f"test-{seed}", algo, env, env_steps)
        time.sleep(0.5)
    confirm_s = time.perf_counter() - start
    values = [scores[s] for s in seeds]
    test = interquartile_mean(values)
    low, high = iqm_interval(values)
    reported = float(best["value"])
    return {
        "task": task,
        "side": "zoo",
        "sweep_seed": sweep_seed,
        "chosen_trial": f"trial_{best['number']}",
        "config": best["hyperparams"],
        "zoo_params": best["params"],
        "zoo_trial_states": best["states"],
        "reported": reported,
        "reported_interval": None,
        "tuning_value": reported,
        "test_iqm": test,
        "test_ci": [low, high],
        "test_seeds": seeds,
        "per_test_seed": {str(s): scores[s] for s in seeds},
        "gap": reported - test,
        "covers": None,
        "runs": trials,
        "env_steps": trials * env_steps,
        "sweep_s": swept_s,
        "confirm_s": confirm_s,
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for side in SIDES:
        mine = [r for r in runs if r["side"] == side]
        if not mine:
            continue
        low, high = TASKS[mine[0]["task"]]["range"]
        intervals = [r for r in mine if r["covers"] is not None]
        out[side] = {
            "sweeps": len(mine),
            "median_reported": statistics.median(r["reported"] for r in mine),
            "median_test_iqm": statistics.median(r["test_iqm"] for r in mine),
            "median_gap": statistics.median(r["gap"] for r in mine),
            "median_gap_share_of_range": statistics.median(abs(r["gap"]) for r in mine) / (high - low),
            "covered": f"{sum(r['covers'] for r in intervals)} of {len(intervals)}" if intervals else "no interval reported",
            "median_runs": statistics.median(r["runs"] for r in mine),
            "median_sweep_s": statistics.median(r["sweep_s"] for r in mine),
        }
    return out


#: The fewest paired sweeps a comparison says "better" or "worse" from.
MIN_SWEEPS_FOR_VERDICT = 5


def paired(runs: list[dict[str, Any]], a: str, b: str) -> dict[str, Any] | None:
    """Test IQM of side ``a`` minus side ``b``, paired by sweep seed, with a 95% bootstrap interval of the mean
    difference (scipy's BCa; percentile where BCa cannot be computed)."""
    import numpy as np
    from scipy.stats import bootstrap

    by = {(r["side"], r["sweep_seed"]): r["test_iqm"] for r in runs}
    diffs = [by[(a, s)] - by[(b, s)] for (side, s) in by if side == a and (b, s) in by]
    if len(diffs) < 2:
        return None
    if len(set(diffs)) == 1:
        low = high = diffs[0]
    else:
        ci = bootstrap((np.asarray(diffs),), np.mean, confidence_level=0.95, n_resamples=10_000,
                       random_state=0, method="BCa").confidence_interval
        low, high = float(ci.low), float(ci.high)
        if not (np.isfinite(low) and np.isfinite(high)):
            ci = bootstrap((np.asarray(diffs),), np.mean, confidence_level=0.95, n_resamples=10_000,
                           random_state=0, method="percentile").confidence_interval
            low, high = float(ci.low), float(ci.high)
    # A bootstrap interval of a mean from fewer than 5 values covers far less often than it says: no verdict.
    verdict = "unsettled" if len(diffs) < MIN_SWEEPS_FOR_VERDICT else "better" if low > 0 else "worse" if high < 0 else "unsettled"
    return {"sweeps": len(diffs), "differences": diffs, "mean": float(np.mean(diffs)), "ci95": [low, high],
            "verdict": verdict}


#: The paired comparisons of test IQM every results file holds (where both sides ran), ``a_minus_b``.
PAIRS = [("holdout", "per1"), ("holdout", "per3"), ("per3", "per1"), ("lcb", "per1"), ("lcb", "per3"), ("holdout", "lcb"),
         ("holdout", "zoo"), ("per1", "zoo"), ("holdout_entry", "zoo"), ("holdout_entry", "holdout"),
         ("per1_entry", "per1"), ("per1_entry", "zoo"),
         ("holdout_entry_batch", "zoo"), ("holdout_entry_batch", "holdout_entry"), ("holdout_entry_batch", "holdout"),
         ("holdout_entry_batch", "per1_entry_batch"), ("holdout_entry_batch", "per3_entry_batch"),
         ("per3_entry_batch", "per1_entry_batch"), ("per1_entry_batch", "zoo"),
         ("adaptive_entry_batch", "per1_entry_batch"), ("adaptive_entry_batch", "per3_entry_batch"),
         ("holdout_entry_batch", "adaptive_entry_batch"), ("adaptive14_entry_batch", "per1_entry_batch"),
         ("adaptive14_entry_batch", "per3_entry_batch"), ("holdout_entry_batch", "adaptive14_entry_batch")]


def comparisons(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {f"{a}_minus_{b}": paired(runs, a, b) for a, b in PAIRS}


def _commit() -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def pool(files: list[Path]) -> Path:
    """One summary over the runs of several results files of one task (a run split across sessions, or sides
    added later), each run keeping the commit its file measured."""
    runs: list[dict[str, Any]] = []
    sources, tasks = [], set()
    for file in files:
        data = json.loads(file.read_text())
        tasks.add(data["task"])
        sources.append({"file": file.name, "commit": data.get("commit"), "dirty": data.get("dirty"), "runs": len(data["runs"])})
        runs += [{**run, "commit": data.get("commit")} for run in data["runs"]]
    if len(tasks) != 1:
        raise SystemExit(f"pool files of one task, got {sorted(tasks)}")
    (task,) = tasks
    out = HERE / "results" / f"seed_robustness-{task}-pooled-{dt.datetime.now():%Y-%m-%dT%H%M}.json"
    out.write_text(json.dumps({
        "benchmark": "seed_robustness", "task": task, "pooled_from": sources, "sides": SIDES, "setup": TASKS[task],
        "test_seeds": TEST_SEEDS, "episodes": EPISODES, "runs": runs, "summary": summary(runs),
        **comparisons(runs),
    }, indent=1))
    return out


def across(parts: list[str]) -> Path:
    """One paired comparison over several tasks: each part ``FILE:A:B`` (a results file, pooled or not, and two
    of its sides) gives each sweep seed's test-IQM difference A - B as a share of that task's score range;
    the mean over every sweep of every part, with a 95% bootstrap interval, says whether A's answers beat B's
    across the tasks (a task's own comparison may be too noisy to). Written to
    ``seed_robustness-across-<date>.json``, each part naming its file and the commits it measured."""
    import numpy as np
    from scipy.stats import bootstrap

    shares: list[float] = []
    described = []
    for part in parts:
        name, a, b = part.rsplit(":", 2)
        path = Path(name) if Path(name).exists() else HERE / "results" / name
        data = json.loads(path.read_text())
        low, high = data["setup"]["range"]
        versus = paired(data["runs"], a, b)
        if versus is None:
            raise SystemExit(f"{path.name}: no sweep seed ran both {a} and {b}")
        part_shares = [d / (high - low) for d in versus["differences"]]
        shares += part_shares
        commits = sorted({s.get("commit") for s in data.get("pooled_from", [])} - {None}) or [data.get("commit")]
        described.append({"file": path.name, "task": data["task"], "a": a, "b": b, "sweeps": versus["sweeps"],
                          "mean_share_of_range": float(np.mean(part_shares)), "commits": commits})
    if len(shares) < 2:
        raise SystemExit("an interval needs two paired sweeps or more")
    ci = bootstrap((np.asarray(shares),), np.mean, confidence_level=0.95, n_resamples=10_000, random_state=0,
                   method="percentile").confidence_interval
    low, high = float(ci.low), float(ci.high)
    verdict = ("unsettled" if len(shares) < MIN_SWEEPS_FOR_VERDICT else "better" if low > 0 else "worse" if high < 0
               else "unsettled")
    out = HERE / "results" / f"seed_robustness-across-{dt.datetime.now():%Y-%m-%dT%H%M}.json"
    out.write_text(json.dumps({
        "benchmark": "seed_robustness_across", "parts": described, "sweeps": len(shares),
        "mean_share_of_range": float(np.mean(shares)), "ci95_share_of_range": [low, high], "verdict": verdict,
    }, indent=1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=Path, nargs="+", help="summarize these results files' runs together instead of running")
    parser.add_argument("--across", nargs="+", metavar="FILE:A:B",
                        help="pair sides A and B of each results file (a task each) as shares of its score range, "
                             "pooled over every sweep of every file, instead of running")
    parser.add_argument("--task", choices=sorted(TASKS), default="acrobot")
    parser.add_argument("--sweep-seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--sides", nargs="+", choices=sorted(SIDES), default=sorted(s for s, side in SIDES.items() if s != "zoo" and "base" not in side),
                        help="zoo needs rl-zoo3's venv, made once (benchmarks/_zoo.py)")
    args = parser.parse_args()
    if args.across:
        out = across(args.across)
        print(out.read_text())
        print(f"results: {out}")
        return
    if args.pool:
        out = pool(args.pool)
        print(json.dumps(json.loads(out.read_text())["summary"], indent=1))
        print(f"results: {out}")
        return
    from importlib import metadata

    commit = _commit()
    runs: list[dict[str, Any]] = []
    started = dt.datetime.now()
    out = HERE / "results" / f"seed_robustness-{args.task}-{started:%Y-%m-%dT%H%M}.json"
    with tempfile.TemporaryDirectory(prefix="rlsweep-seeds-") as storage:
        for i, sweep_seed in enumerate(args.sweep_seeds):
            order = args.sides if i % 2 == 0 else list(reversed(args.sides))
            for side in order:
                run = one_zoo(args.task, sweep_seed, Path(storage)) if side == "zoo" else one(args.task, side, sweep_seed, Path(storage))
                runs.append(run)
                shown = "" if run["reported_interval"] is None else " [{:.1f}, {:.1f}]".format(*run["reported_interval"])
                print(f"sweep seed {sweep_seed} {side}: reported {run['reported']:.1f}{shown}, test IQM "
                      f"{run['test_iqm']:.1f}, gap {run['gap']:.1f} ({run['runs']} runs; sweep {run['sweep_s']:.0f} s, "
                      f"test {run['confirm_s']:.0f} s)", flush=True)
                out.write_text(json.dumps({
                    "benchmark": "seed_robustness",
                    "task": args.task,
                    "started": started.isoformat(),
                    **commit,
                    "sides": SIDES,
                    "setup": TASKS[args.task],
                    "test_seeds": TEST_SEEDS,
                    "episodes": EPISODES,
                    "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
                    "versions": {p: metadata.version(p) for p in ("ray", "torch", "optuna", "gymnasium", "numpy")},
                    "runs": runs,
                    "summary": summary(runs),
                    **comparisons(runs),
                }, indent=1))
    print(json.dumps(summary(runs), indent=1))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
