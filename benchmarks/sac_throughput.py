"""RLlib SAC's training throughput on Pendulum-v1, built the way rlsweep builds a trial's config.

One process, one torch thread, no env runner or learner actors (rlsweep's defaults), RLlib's SAC defaults
otherwise: each training step samples 1 env step and runs one update on a 256-transition batch (RLlib's
``training_intensity=None`` with ``rollout_fragment_length`` = ``n_step`` = 1), learning from env step 1,500
(``--learning-starts``).
Prints env steps per second over the steps after learning starts, and with ``--profile`` a cProfile summary
(top 25 by cumulative time) of those steps. ``--buffer`` picks the replay buffer: RLlib's default
(``prioritized``); RLlib's uniform ``EpisodeReplayBuffer`` with RLlib's learner connectors (``uniform``);
rlsweep's ``FastEpisodeReplayBuffer`` with RLlib's learner connectors (``sampler``); or a uniform buffer as
rlsweep builds it for a trial, the fast buffer handing the learner its columns (``fast``). A ``+concat``
suffix (``uniform+concat``) also sets the spec's ``critic: concat`` (Stable-Baselines3's Q network), and a
``/k`` suffix (``fast+concat/5``) samples k env steps a round and then runs k updates (SB3's ``train_freq=k``
with ``gradient_steps=k``: rollout_fragment_length k, ``updates_per_env_step: 1``). With
``--ab`` it alternates these variants in rounds and adds them to ``--out`` (default
``benchmarks/results/sac_throughput-<date>.json``; run it once per round: a round of three buffers takes
about 2.5 minutes).

    .venv/bin/python benchmarks/sac_throughput.py --buffer fast --env-steps 100 --learning-starts 300 --profile
    .venv/bin/python benchmarks/sac_throughput.py --ab prioritized,uniform,fast --rounds 1 --env-steps 60 --learning-starts 300
    .venv/bin/python benchmarks/sac_throughput.py --curve --buffer uniform --seed 1 --env-steps 500 --learning-starts 300
    .venv/bin/python benchmarks/sac_throughput.py --ab prioritized,prioritized+concat,fast+concat --rounds 3 --env-steps 100 --learning-starts 300

``--curve`` prints the learner's losses per iteration; RLlib's uniform buffer draws from an unseeded generator,
which is seeded here so that ``uniform`` and ``fast`` can be compared draw for draw.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import json
import logging
import platform
import pstats
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
LEARNING_STARTS = 1500
ITERATION = 50
LEARNER_KEYS = ("qf_loss", "policy_loss", "alpha_loss", "qf_mean", "alpha_value")

BUFFERS = {
    "prioritized": "PrioritizedEpisodeReplayBuffer",  # RLlib's SAC default
    "uniform": "EpisodeReplayBuffer",  # what SB3 samples (uniform), RLlib's class and learner connectors
    "sampler": "EpisodeReplayBuffer",  # rlsweep's FastEpisodeReplayBuffer, RLlib's learner connectors
    "fast": "EpisodeReplayBuffer",  # as rlsweep builds a uniform buffer: the fast buffer and its columns
}


def build(variant: str, seed: int, learning_starts: int) -> Any:
    variant, _, fragment = variant.partition("/")
    buffer, _, critic = variant.partition("+")
    import torch

    import rlsweep
    from rlsweep.trainables._config import build_config

    torch.set_num_threads(1)
    config: dict[str, Any] = {
        "debugging.seed": seed,
        "training.num_steps_sampled_before_learning_starts": learning_starts,
        # The same iteration for every variant, so they compare the same run (where iterations end changes a
        # seeded SAC run in RLlib).
        "reporting.min_sample_timesteps_per_iteration": ITERATION,
    }
    if buffer != "prioritized":
        config["training.replay_buffer_config"] = {"type": BUFFERS[buffer]}
    if fragment:  # SB3's train_freq: sample k env steps, then run k updates (the same updates per env step)
        config["env_runners.rollout_fragment_length"] = int(fragment)
    spec = rlsweep.load_spec(
        {
            "name": "sac-throughput",
            "algorithm": "SAC",
            "env": "Pendulum-v1",
            "config": config,
            "search_space": {},
            "budget": {"env_steps": 10_000},
            "storage": "/tmp/sac-throughput",
            "mlflow": None,
            "critic": critic or "rllib",
            "updates_per_env_step": 1 if fragment else None,
        }
    )
    config = build_config(spec, {})
    if buffer in ("uniform", "sampler"):
        # rlsweep puts its fast buffer and TransitionColumns into every uniform-buffer config: taken out again
        # here, to measure RLlib's own parts.
        from rlsweep.trainables._replay import install_fast_replay_buffer

        config.learners(learner_connector=None)
        kept = [c for c in config.callbacks_on_algorithm_init or [] if c is not install_fast_replay_buffer]
        config.callbacks(on_algorithm_init=kept or None)
    algo = config.build_algo()
    if buffer == "sampler":
        from rlsweep.trainables._replay import use_fast_replay_buffer

        use_fast_replay_buffer(algo, seed=seed)
    elif buffer == "uniform":
        # RLlib's buffer draws from an unseeded generator: seeded here so the uniform buffers can be compared
        # draw for draw.
        algo.local_replay_buffer.rng = np.random.default_rng(seed)
    return algo


def env_steps(result: dict[str, Any]) -> int:
    return int(result["env_runners"]["num_env_steps_sampled_lifetime"])


def measure(buffer: str, steps: int, seed: int, profile: bool, learning_starts: int) -> float:
    """Env steps per second over ``steps`` env steps after learning starts."""
    algo = build(buffer, seed, learning_starts)
    try:
        while env_steps(algo.train()) < learning_starts + ITERATION:  # past the start and the first updates
            pass
        done = env_steps(algo.train())
        profiler = cProfile.Profile() if profile else None
        start = time.perf_counter()
        if profiler:
            profiler.enable()
        while (now := env_steps(algo.train())) < done + steps:
            pass
        elapsed = time.perf_counter() - start
        if profiler:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
            profiler.dump_stats(f"/tmp/sac_throughput-{buffer}.prof")
        return (now - done) / elapsed
    finally:
        algo.stop()


def curve(buffer: str, seed: int, steps: int, learning_starts: int) -> list[dict[str, float]]:
    """Per iteration: env steps, the learner's losses and Q-values, the mean training episode return."""
    algo = build(buffer, seed, learning_starts)
    rows = []
    try:
        while True:
            result = algo.train()
            learner = result.get("learners", {}).get("default_policy", {})
            rows.append(
                {
                    "env_steps": env_steps(result),
                    "episode_return_mean": result["env_runners"].get("episode_return_mean"),
                    **{k: learner[k] for k in LEARNER_KEYS if k in learner},
                }
            )
            if rows[-1]["env_steps"] >= steps:
                return rows
    finally:
        algo.stop()


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("ray", "torch", "gymnasium", "numpy", "scipy"):
        out[package] = metadata.version(package)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buffer", choices=sorted(BUFFERS) + [f"{b}+concat" for b in sorted(BUFFERS)], default="prioritized")
    parser.add_argument("--env-steps", type=int, default=500, help="env steps measured, after learning starts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--ab", help="variants to alternate, comma-separated (writes the results file)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--curve", action="store_true", help="print losses per iteration as JSON lines")
    parser.add_argument("--learning-starts", type=int, default=LEARNING_STARTS)
    parser.add_argument("--out", help="results file (default benchmarks/results/sac_throughput-<date>.json)")
    args = parser.parse_args()
    logging.getLogger("ray").setLevel(logging.ERROR)

    import ray

    # A Ray of its own: never another job's running cluster.
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        if args.curve:
            for row in curve(args.buffer, args.seed, args.env_steps, args.learning_starts):
                print(json.dumps(row), flush=True)
        elif args.ab:
            names = args.ab.split(",")
            out = Path(args.out) if args.out else HERE / "results" / f"sac_throughput-{dt.date.today().isoformat()}.json"
            # Rounds add to the day's file, so each round can run as its own short process.
            earlier = json.loads(out.read_text()) if out.exists() else {}
            before = earlier.get("env_steps_per_s", {})
            rates: dict[str, list[float]] = {name: list(before.get(name, [])) for name in names}
            for round_ in range(args.rounds):
                for name in names:
                    rates[name].append(measure(name, args.env_steps, args.seed, False, args.learning_starts))
                    print(f"round {round_ + 1} {name}: {rates[name][-1]:.2f} env steps/s", flush=True)
            medians = {name: statistics.median(values) for name, values in rates.items()}
            base = medians[names[0]]
            for name in names:
                print(f"{name}: median {medians[name]:.2f} env steps/s over {len(rates[name])} runs, "
                      f"{medians[name] / base:.2f}x {names[0]}")
            git = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE)
            commit = git.stdout.strip()
            out.write_text(
                json.dumps(
                    {
                        **earlier,
                        "benchmark": "sac_throughput",
                        "setup": "SAC Pendulum-v1, 1 torch thread, 0 env runners/learners, 1 update of 256 per env "
                        f"step, measured over {args.env_steps} env steps after {args.learning_starts + 2 * ITERATION}, "
                        "variants alternated in each round",
                        "commit": commit,
                        "machine": {"cpus": __import__("os").cpu_count(), "platform": platform.platform(),
                                    "load_average": __import__("os").getloadavg()},
                        "versions": versions(),
                        "env_steps_per_s": rates,
                        "median": medians,
                        "ratio_to_first": {name: medians[name] / base for name in names},
                    },
                    indent=2,
                )
                + "\n"
            )
            print(f"wrote {out}")
        else:
            rate = measure(args.buffer, args.env_steps, args.seed, args.profile, args.learning_starts)
            print(f"{args.buffer}: {rate:.1f} env steps/s")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
