"""rlsweep's orchestration cost against hand-written Ray Tune, side by side in one run.

The same four PPO trials on CartPole-v1 (a grid over lr, 8,000 env steps each, 2 at a time, a checkpoint
at the end) run through ``rlsweep.run`` and through the ``tune.Tuner`` code one would write by hand, in
alternating order, on one shared Ray runtime. Prints each run's wall time and the ratio of the totals, and
writes them to ``benchmarks/results/overhead-<date>.json`` with the commit, the machine and the versions.
Both sides do the same RLlib work: one env per env runner (rlsweep's default of 8 vectorized envs is a
speed-up of its own, measured in ``time_to_solve.py``'s ``rlsweep-1env`` lever, not orchestration) and one
checkpoint per trial, at the end.

    .venv/bin/python benchmarks/overhead.py [--rounds 2] [--env-steps 8000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import platform
import statistics
import subprocess
import tempfile
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent

LRS = [1e-4, 3e-4, 1e-3, 3e-3]
BATCH, MINIBATCH, EPOCHS = 1000, 250, 2


def run_rlsweep(storage: Path, env_steps: int) -> float:
    import rlsweep

    start = time.perf_counter()  # the spec's checks (rlsweep's pre-flight) are part of what a user waits for
    spec = rlsweep.load_spec(
        {
            "name": "overhead",
            "algorithm": "PPO",
            "env": "CartPole-v1",
            "config": {
                "training.train_batch_size": BATCH,
                "training.minibatch_size": MINIBATCH,
                "training.num_epochs": EPOCHS,
                "env_runners.num_envs_per_env_runner": 1,  # raw Tune's (RLlib's) default: the same sampling
            },
            "search_space": {"training.lr": {"grid": LRS}},
            "searcher": {"name": "grid"},
            "scheduler": {"name": "fifo"},
            "budget": {"env_steps": env_steps, "trials": len(LRS), "max_concurrent": 2},
            "checkpoint": {"every_env_steps": env_steps, "keep": 1},  # once, at the end, as raw Tune's
            "storage": str(storage),
            "mlflow": None,
        }
    )
    result = rlsweep.run(spec, verbose=0)
    elapsed = time.perf_counter() - start
    assert result.errored_trials == 0 and result.best is not None
    return elapsed


def run_raw_tune(storage: Path, env_steps: int) -> float:
    from ray import tune
    from ray.rllib.algorithms.ppo import PPOConfig

    start = time.perf_counter()
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=BATCH, minibatch_size=MINIBATCH, num_epochs=EPOCHS, lr=tune.grid_search(LRS))
    )
    tuner = tune.Tuner(
        "PPO",
        param_space=config,
        tune_config=tune.TuneConfig(metric="env_runners/episode_return_mean", mode="max", max_concurrent_trials=2),
        run_config=tune.RunConfig(
            name="overhead-raw",
            storage_path=str(storage),
            stop={"num_env_steps_sampled_lifetime": env_steps},
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True, num_to_keep=1),
            verbose=0,
        ),
    )
    grid = tuner.fit()
    elapsed = time.perf_counter() - start
    assert not grid.errors and len(grid) == len(LRS)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--env-steps", type=int, default=8000)
    args = parser.parse_args()

    import ray

    def git(*arguments: str) -> str:
        return subprocess.run(["git", *arguments], cwd=HERE, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "HEAD") + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    started = dt.datetime.now()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    times: dict[str, list[float]] = {"raw tune": [], "rlsweep": []}
    with tempfile.TemporaryDirectory() as tmp:
        for round_index in range(args.rounds):
            # Alternate which side goes first so warm-up costs fall on both.
            order = ["raw tune", "rlsweep"] if round_index % 2 == 0 else ["rlsweep", "raw tune"]
            for side in order:
                storage = Path(tmp) / f"{side.replace(' ', '-')}-{round_index}"
                elapsed = (run_raw_tune if side == "raw tune" else run_rlsweep)(storage, args.env_steps)
                times[side].append(elapsed)
                print(f"round {round_index}: {side:8s} {elapsed:7.2f} s", flush=True)
    ray.shutdown()

    raw, ours = sum(times["raw tune"]), sum(times["rlsweep"])
    print(f"\n{len(LRS)} PPO trials x {args.env_steps} env steps, {args.rounds} rounds")
    print(f"raw tune total {raw:.2f} s (median {statistics.median(times['raw tune']):.2f} s)")
    print(f"rlsweep  total {ours:.2f} s (median {statistics.median(times['rlsweep']):.2f} s)")
    print(f"ratio rlsweep / raw tune: {ours / raw:.3f}  (target <= 1.05)")
    out = HERE / "results" / f"overhead-{started:%Y-%m-%dT%H%M}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({
        "benchmark": "overhead",
        "started": started.isoformat(timespec="seconds"),
        "commit": commit,  # at the start: the tree may change while the sides run
        "settings": {"rounds": args.rounds, "env_steps": args.env_steps, "trials": len(LRS), "max_concurrent": 2,
                     "train_batch_size": BATCH, "minibatch_size": MINIBATCH, "num_epochs": EPOCHS},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "versions": {name: metadata.version(name) for name in ("ray", "torch", "gymnasium", "numpy")},
        "times_s": times,
        "ratio_of_totals": ours / raw,
    }, indent=1))
    print(f"written to {out.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
