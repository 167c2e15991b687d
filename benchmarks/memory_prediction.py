"""How well the pre-flight memory check predicts a trial's peak: predicted against measured, per trial.

Each case is one sweep of 2 trials at one corner (the memory-relevant settings fixed, the learning rate
drawn), with ``ray.memory_check`` on: the prediction is the pre-flight reading (``rlsweep.json``), made by
training one trial at that corner for 2 iterations before launch; the measurement is each real trial's
``peak_memory_mb`` over its whole budget (the kernel's peak resident set, ``VmHWM``, of the trial's process
plus each of its remote env runners). Cases: PPO on CartPole, SAC on Pendulum and the league example
(multi-agent PPO, one trained policy and N frozen opponents), each at a small and a large size (network
width, env runners, batch, opponents). The error is (predicted - measured) / measured: negative means the
check under-predicted, the direction that can run a node out of memory; each trial reserves the prediction
plus ``MemoryReading.HEADROOM``.

    .venv/bin/python benchmarks/memory_prediction.py [--cases ppo-small,sac-large,...]

Results: ``benchmarks/results/memory_prediction-<date>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import tempfile
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
LEAGUE_ENV = "ray.rllib.examples.envs.classes.multi_agent:MultiAgentCartPole"


def _ppo(hidden: list[int], runners: int, batch: int, minibatch: int, env_steps: int) -> dict:
    return {
        "algorithm": "PPO",
        "env": "CartPole-v1",
        "config": {"training.train_batch_size_per_learner": batch, "training.minibatch_size": minibatch,
                   "training.num_epochs": 4, "env_runners.num_env_runners": runners,
                   "rl_module.model_config": {"fcnet_hiddens": hidden}},
        "search_space": {"training.lr": {"loguniform": [1.0e-4, 1.0e-3]}},
        "budget": {"env_steps": env_steps, "trials": 2},
    }


def _sac(hidden: list[int], runners: int, env_steps: int) -> dict:
    return {
        "algorithm": "SAC",
        "env": "Pendulum-v1",
        "config": {"training.num_steps_sampled_before_learning_starts": 500, "env_runners.num_env_runners": runners,
                   "rl_module.model_config": {"fcnet_hiddens": hidden}},
        "search_space": {"training.actor_lr": {"loguniform": [1.0e-4, 1.0e-3]}},
        "budget": {"env_steps": env_steps, "trials": 2},
    }


def _league(opponents: int, runners: int, env_steps: int) -> dict:
    """examples/league.yaml at a size: one trained policy against ``opponents`` frozen ones."""
    names = {"0": "main", **{str(i): f"opponent{i}" for i in range(1, opponents + 1)}}
    return {
        "algorithm": "PPO",
        "env": LEAGUE_ENV,
        "env_config": {"num_agents": opponents + 1},
        "config": {"training.train_batch_size_per_learner": 2000, "training.minibatch_size": 250,
                   "training.num_epochs": 4, "env_runners.num_env_runners": runners,
                   "rl_module.model_config": {"fcnet_hiddens": [256, 256]}},
        "policies": {"map": names, "train": ["main"]},
        "search_space": {"training.lr": {"loguniform": [1.0e-4, 1.0e-3]}},
        "budget": {"env_steps": env_steps, "trials": 2},
    }


CASES = {
    "ppo-small": _ppo([64, 64], runners=0, batch=1000, minibatch=250, env_steps=10_000),
    "ppo-large": _ppo([512, 512], runners=1, batch=4000, minibatch=500, env_steps=16_000),
    "sac-small": _sac([64, 64], runners=0, env_steps=2000),
    "sac-large": _sac([512, 512], runners=1, env_steps=2000),
    "league-small": _league(opponents=2, runners=0, env_steps=8000),
    "league-large": _league(opponents=6, runners=1, env_steps=8000),
}


def run_case(name: str, storage: Path) -> dict:
    import rlsweep
    from rlsweep import store
    from rlsweep.trainables import MemoryReading

    document = {"name": name, **CASES[name], "searcher": {"name": "random", "seed": 0}, "scheduler": "fifo",
                "storage": str(storage), "mlflow": None, "ray": {"memory_check": True}}
    start = time.perf_counter()
    result = rlsweep.run(rlsweep.load_spec(document), verbose=0)
    wall = time.perf_counter() - start
    reading = MemoryReading.from_dict(store.read_sweep_info(result.path)["memory"])
    trials = rlsweep.load(result.path).trials
    measured = [max(r["peak_memory_mb"] for r in t.rows) for t in trials]
    errors = [(reading.predicted_mb - m) / m for m in measured]
    return {
        "case": name, "document": document, "wall_s": wall,
        "predicted_mb": reading.predicted_mb, "reserved_mb": reading.trial_mb, "reading": reading.as_dict(),
        "measured_mb": measured, "env_steps": [t.rows[-1]["env_steps"] for t in trials],
        "policy_memory_mb": [t.rows[-1].get("policy_memory_mb") for t in trials],
        "errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {sorted(CASES)}")
    args = parser.parse_args()

    import logging

    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    started = dt.datetime.now()
    results = []
    with tempfile.TemporaryDirectory(prefix="rlsweep-memory-") as scratch:
        for name in args.cases.split(","):
            found = run_case(name, Path(scratch))
            results.append(found)
            print(f"{name}: predicted {found['predicted_mb']:,.0f} MB, measured "
                  f"{', '.join(f'{m:,.0f}' for m in found['measured_mb'])} MB, errors "
                  f"{', '.join(f'{e:+.1%}' for e in found['errors'])} ({found['wall_s']:.0f} s)", flush=True)
    errors = [e for r in results for e in r["errors"]]
    report = {
        "benchmark": "memory_prediction",
        "started": started.isoformat(),
        "settings": vars(args),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "versions": {p: metadata.version(p) for p in ("ray", "torch")},
        "cases": results,
        "median_abs_error": statistics.median(abs(e) for e in errors),
        "largest_under_prediction": min(errors),
        "largest_over_prediction": max(errors),
    }
    out = HERE / "results" / f"memory_prediction-{started:%Y-%m-%dT%H%M}.json"
    out.write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps({k: report[k] for k in ("median_abs_error", "largest_under_prediction", "largest_over_prediction")}))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
