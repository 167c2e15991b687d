"""What several seeds per configuration buy: how far a sweep's reported best value is from what its chosen
configuration does on seeds the search never saw.

For each sweep seed, two sweeps run with the same total env steps:

- ``per1``: ``seeds.per_trial: 1``, 12 trials (the usual sweep: each configuration trained once);
- ``per3``: ``seeds.per_trial: 3`` with ``aggregate: iqm``, 4 trials (each configuration on 3 seeds).

Both use Optuna TPE with the sweep seed, FIFO (no pruning: the comparison is about seeds, not about early
stopping), and score a trial by its final greedy evaluation (``eval_return_mean`` at the budget, 10
episodes), the same measure the confirmation uses. Each sweep's best configuration (rule ``last``) is then
retrained by ``rlsweep confirm`` on 5 held-out test seeds. Reported per run: the sweep's value for its best
configuration, that configuration's test-seed IQM with its 95% interval, and the gap between the two (the
optimism of the sweep's answer); and per side, medians over sweep seeds. Sides alternate in order from
sweep seed to sweep seed. Results go to ``benchmarks/results/seed_robustness-<task>-<date>.json``.

Tasks: ``cartpole`` (PPO on CartPole-v1, 20,000 env steps per trial and seed) and ``acrobot`` (PPO on
Acrobot-v1, 30,000: a sparse-until-solved reward whose learning curves vary more from seed to seed, the
case where a single seed misleads most).

    .venv/bin/python benchmarks/seed_robustness.py --task cartpole --sweep-seeds 0 1 2
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

SPACE = {
    "training.lr": {"loguniform": [1.0e-5, 1.0e-2]},
    "training.entropy_coeff": {"loguniform": [1.0e-6, 0.1]},
    "training.num_epochs": {"choice": [1, 5, 10, 20]},
    "training.minibatch_size": {"choice": [32, 64, 128, 256]},
    "training.gamma": {"choice": [0.95, 0.98, 0.99, 0.999]},
    "rl_module.model_config.fcnet_hiddens": {"choice": [[64], [64, 64]]},
}
TASKS: dict[str, dict[str, Any]] = {
    "cartpole": {"env": "CartPole-v1", "env_steps": 20_000},
    "acrobot": {"env": "Acrobot-v1", "env_steps": 30_000},
}
SIDES = {"per1": {"per_trial": 1, "trials": 12}, "per3": {"per_trial": 3, "trials": 4}}
TEST_SEEDS, EPISODES = 5, 10


def document(task: str, side: str, sweep_seed: int, storage: Path) -> dict[str, Any]:
    setup, chosen = TASKS[task], SIDES[side]
    return {
        "name": f"{task}-{side}-s{sweep_seed}",
        "algorithm": "PPO",
        "env": setup["env"],
        "config": {"training.train_batch_size": 1000},
        "search_space": SPACE,
        "searcher": {"name": "optuna", "seed": sweep_seed},
        "scheduler": "fifo",
        "budget": {"env_steps": setup["env_steps"], "trials": chosen["trials"], "max_concurrent": 2},
        "seeds": {"per_trial": chosen["per_trial"], "aggregate": "iqm"},
        "evaluation": {"episodes": EPISODES},
        "metric": {"name": "eval_return_mean", "mode": "max"},
        "storage": str(storage),
        "mlflow": None,
    }


def one(task: str, side: str, sweep_seed: int, storage: Path) -> dict[str, Any]:
    import rlsweep

    spec = rlsweep.load_spec(document(task, side, sweep_seed, storage))
    start = time.perf_counter()
    path = rlsweep.run(spec, verbose=0).path
    swept_s = time.perf_counter() - start
    best = rlsweep.load(path).best("last")
    start = time.perf_counter()
    result = rlsweep.load(path).confirm(1, TEST_SEEDS, rule="last", verbose=0)
    confirm_s = time.perf_counter() - start
    (row,) = result["configurations"]
    return {
        "task": task,
        "side": side,
        "sweep_seed": sweep_seed,
        "best_trial": best.trial_id,
        "config": dict(best.config),
        "reported": best.value,
        "test_iqm": row["iqm"],
        "ci": [row["ci_low"], row["ci_high"]],
        "per_test_seed": row["per_seed"],
        "gap": best.value - row["iqm"],
        "sweep_s": swept_s,
        "confirm_s": confirm_s,
        "env_steps_swept": spec.budget.env_steps * spec.budget.trials * spec.seeds.per_trial,
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for side in SIDES:
        mine = [r for r in runs if r["side"] == side]
        if mine:
            out[side] = {
                "median_gap": statistics.median(r["gap"] for r in mine),
                "median_test_iqm": statistics.median(r["test_iqm"] for r in mine),
                "median_reported": statistics.median(r["reported"] for r in mine),
                "median_sweep_s": statistics.median(r["sweep_s"] for r in mine),
                "runs": len(mine),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(TASKS), default="cartpole")
    parser.add_argument("--sweep-seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sides", nargs="+", choices=sorted(SIDES), default=sorted(SIDES))
    args = parser.parse_args()
    from importlib import metadata

    runs: list[dict[str, Any]] = []
    started = dt.datetime.now()
    out = HERE / "results" / f"seed_robustness-{args.task}-{started:%Y-%m-%dT%H%M}.json"
    with tempfile.TemporaryDirectory(prefix="rlsweep-seeds-") as storage:
        for i, sweep_seed in enumerate(args.sweep_seeds):
            order = args.sides if i % 2 == 0 else list(reversed(args.sides))
            for side in order:
                run = one(args.task, side, sweep_seed, Path(storage))
                runs.append(run)
                print(f"sweep seed {sweep_seed} {side}: reported {run['reported']:.1f}, test IQM {run['test_iqm']:.1f} "
                      f"[{run['ci'][0]:.1f}, {run['ci'][1]:.1f}], gap {run['gap']:.1f} (sweep {run['sweep_s']:.0f} s, "
                      f"confirm {run['confirm_s']:.0f} s)", flush=True)
                out.write_text(json.dumps({
                    "benchmark": "seed_robustness",
                    "task": args.task,
                    "started": started.isoformat(),
                    "sides": SIDES,
                    "test_seeds": TEST_SEEDS,
                    "episodes": EPISODES,
                    "space": SPACE,
                    "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
                    "versions": {p: metadata.version(p) for p in ("ray", "torch", "optuna", "gymnasium")},
                    "runs": runs,
                    "summary": summary(runs),
                }, indent=1))
    print(json.dumps(summary(runs), indent=1))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
