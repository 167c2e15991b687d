"""rlsweep's orchestration cost against hand-written Ray Tune, side by side in one run.

The same four PPO trials on CartPole-v1 (a grid over lr, 8,000 env steps each, 2 at a time, a checkpoint
at the end) run through ``rlsweep.run`` and through the ``tune.Tuner`` code one would write by hand, in
alternating order, on one shared Ray runtime. Prints each run's wall time and the ratio of the totals.

    .venv/bin/python benchmarks/overhead.py [--rounds 2] [--env-steps 8000]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

LRS = [1e-4, 3e-4, 1e-3, 3e-3]
BATCH, MINIBATCH, EPOCHS = 1000, 250, 2


def run_rlsweep(storage: Path, env_steps: int) -> float:
    import rlsweep

    spec = rlsweep.load_spec(
        {
            "name": "overhead",
            "algorithm": "PPO",
            "env": "CartPole-v1",
            "config": {
                "training.train_batch_size": BATCH,
                "training.minibatch_size": MINIBATCH,
                "training.num_epochs": EPOCHS,
            },
            "search_space": {"training.lr": {"grid": LRS}},
            "searcher": {"name": "grid"},
            "scheduler": {"name": "fifo"},
            "budget": {"env_steps": env_steps, "trials": len(LRS), "max_concurrent": 2},
            "checkpoint": {"keep": 1},
            "storage": str(storage),
            "mlflow": None,
        }
    )
    start = time.perf_counter()
    result = rlsweep.run(spec, verbose=0)
    elapsed = time.perf_counter() - start
    assert result.errored_trials == 0 and result.best is not None
    return elapsed


def run_raw_tune(storage: Path, env_steps: int) -> float:
    from ray import tune
    from ray.rllib.algorithms.ppo import PPOConfig

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
    start = time.perf_counter()
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

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
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


if __name__ == "__main__":
    main()
