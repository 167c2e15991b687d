"""CPU per env step of one PPO trial: RLlib as rlsweep builds it against Stable-Baselines3, the same work.

Why rl-baselines3-zoo wins beside busy neighbours (``time_to_solve.py`` with ``--condition``): there each side
gets about one core, so the time to solve follows the CPU each env step costs. This measures that cost on
identical work: CartPole-v1, 8 vectorized envs, the same env steps per update batch (``train_batch_size`` =
8 x ``n_steps``), minibatch, epochs and network, one torch thread, one process, no evaluation. The
settings come from rl-baselines3-zoo's PPO space (``examples/zoo_ppo_space.yaml``); the smallest
minibatches cost the most, since every minibatch is one update.

Sides, each measured in a process of its own and alternated in every round:

- ``rllib``: a trial's algorithm from ``rlsweep.trainables._config.build_config``, rlsweep's defaults
  (0 env runners, 0 remote learners, 8 envs per runner) over the zoo space as the time-to-solve benchmark
  runs it (RLlib's PPO defaults otherwise, a KL penalty among them);
- ``rllib-sb3``: the same with SB3's PPO, as ``rlsweep convert --from zoo`` writes it (no KL penalty, value
  loss unclamped);
- ``sb3``: ``stable_baselines3.PPO`` in rl-baselines3-zoo's venv (``benchmarks/_zoo.py``).

Settings the corner does not name keep each library's defaults (learning rate 3e-4 on both); SB3 clips the
gradient norm at 0.5 and RLlib clips none, so RLlib's side does a little less work than SB3's.

Each run trains one iteration to warm up, then ``--iterations`` more, timed by the process's own CPU clock.
Each side's wall time is also split into sampling and learning: the env runner's ``sample`` and the learner
group's ``update`` on the RLlib sides, ``collect_rollouts`` and ``train`` on the SB3 side (RLlib computes GAE
in the learner's update, SB3 at the end of its rollout); ``floor`` is the same number of updates done by a bare torch loop
(the two MLPs forward, PPO's clipped loss, backward, gradient clipping, an Adam step), what any library
must at least spend. Results go to ``benchmarks/results/step_cost-<date>.json``.

    .venv/bin/python benchmarks/step_cost.py [--rounds 3] [--iterations 4]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ENVS = 8
#: (name, minibatch, env steps per update batch, epochs, hidden layers), settings from the zoo's PPO space.
CORNERS = [
    ("mb8-512-e20-64x64", 8, 512, 20, [64, 64]),
    ("mb64-1024-e10-64x64", 64, 1024, 10, [64, 64]),
    ("mb256-2048-e20-64x64", 256, 2048, 20, [64, 64]),
    ("mb32-512-e5-256x256", 32, 512, 5, [256, 256]),
]
SIDES = ("rllib", "rllib-sb3", "sb3")


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(method: Any, spent: dict[str, float], key: str) -> Any:
    """``method``, adding the wall seconds of each call to ``spent[key]``."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            spent[key] += time.perf_counter() - t0
    return wrapper


def corner(name: str) -> tuple[int, int, int, list[int]]:
    (minibatch, batch, epochs, hiddens), = [c[1:] for c in CORNERS if c[0] == name]
    return minibatch, batch, epochs, hiddens


def measure_rllib(name: str, seed: int, iterations: int, sb3_behaviour: bool) -> dict[str, float]:
    import logging

    import ray
    import torch

    import rlsweep
    from rlsweep._zoo import SB3_BEHAVIOUR
    from rlsweep.trainables._config import build_config

    logging.getLogger("ray").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    minibatch, batch, epochs, hiddens = corner(name)
    config = {"debugging.seed": seed, **(SB3_BEHAVIOUR["PPO"] if sb3_behaviour else {})}
    spec = rlsweep.load_spec({"name": "step-cost", "algorithm": "PPO", "env": "CartPole-v1", "config": config,
                              "search_space": {}, "budget": {"env_steps": 10**6}, "storage": "/tmp/step-cost", "mlflow": None})
    sampled = {"training.minibatch_size": minibatch, "training.train_batch_size": batch, "training.num_epochs": epochs,
               "rl_module.model_config.fcnet_hiddens": hiddens, "training.lr": 3e-4}
    algo = build_config(spec, sampled).build_algo()
    spent = {"sample_s": 0.0, "learn_s": 0.0}
    try:
        before = algo.train()["num_env_steps_sampled_lifetime"]
        algo.env_runner.sample = timed(algo.env_runner.sample, spent, "sample_s")
        algo.learner_group.update = timed(algo.learner_group.update, spent, "learn_s")
        start = cpu_s()
        for _ in range(iterations):
            result = algo.train()
        cpu = cpu_s() - start
    finally:
        algo.stop()
        ray.shutdown()
    return {"cpu_s": cpu, "env_steps": result["num_env_steps_sampled_lifetime"] - before, **spent}


def measure_sb3(name: str, seed: int, iterations: int) -> dict[str, float]:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    minibatch, batch, epochs, hiddens = corner(name)
    env = make_vec_env("CartPole-v1", n_envs=ENVS, seed=seed)
    model = PPO("MlpPolicy", env, n_steps=batch // ENVS, batch_size=minibatch, n_epochs=epochs, seed=seed,
                policy_kwargs={"net_arch": hiddens}, device="cpu", verbose=0)
    spent = {"sample_s": 0.0, "learn_s": 0.0}
    model.learn(batch)  # warm-up: one update batch
    model.collect_rollouts = timed(model.collect_rollouts, spent, "sample_s")
    model.train = timed(model.train, spent, "learn_s")
    start = cpu_s()
    model.learn(iterations * batch, reset_num_timesteps=False)
    return {"cpu_s": cpu_s() - start, "env_steps": iterations * batch, **spent}


def floor_s(name: str, updates: int) -> float:
    """Seconds of CPU a bare torch loop spends on ``updates`` PPO updates of this corner's networks."""
    import torch
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    minibatch, _, _, hiddens = corner(name)

    def mlp(out: int) -> nn.Sequential:
        layers: list[nn.Module] = []
        width = 4
        for hidden in hiddens:
            layers += [nn.Linear(width, hidden), nn.Tanh()]
            width = hidden
        return nn.Sequential(*layers, nn.Linear(width, out))

    pi, vf = mlp(2), mlp(1)
    params = [*pi.parameters(), *vf.parameters()]
    optimizer = torch.optim.Adam(params, lr=3e-4)
    obs, actions = torch.randn(minibatch, 4), torch.randint(0, 2, (minibatch,))
    old_logp, advantages, targets = torch.randn(minibatch).clamp(-3, 0), torch.randn(minibatch), torch.randn(minibatch)
    start = cpu_s()
    for _ in range(updates):
        dist = torch.distributions.Categorical(logits=pi(obs))
        ratio = torch.exp(dist.log_prob(actions) - old_logp)
        surrogate = torch.min(advantages * ratio, advantages * ratio.clamp(0.8, 1.2))
        loss = -surrogate.mean() + 0.5 * ((vf(obs).squeeze(-1) - targets) ** 2).mean() - 0.01 * dist.entropy().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, 0.5)
        optimizer.step()
    return cpu_s() - start


def updates_for(name: str, iterations: int) -> int:
    minibatch, batch, epochs, _ = corner(name)
    return iterations * epochs * -(-batch // minibatch)


def run_side(side: str, name: str, seed: int, iterations: int) -> dict[str, float]:
    """One measurement in a fresh process (rl-baselines3-zoo's venv for ``sb3``)."""
    from _zoo import ensure_venv

    python = str(ensure_venv()) if side == "sb3" else sys.executable
    out = subprocess.run([python, __file__, "--measure", side, name, str(seed), str(iterations)],
                         capture_output=True, text=True, check=True, cwd=HERE.parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each alternates every side on every corner")
    parser.add_argument("--iterations", type=int, default=4, help="update batches timed per run, after one to warm up")
    parser.add_argument("--corners", nargs="+", choices=[c[0] for c in CORNERS], default=[c[0] for c in CORNERS])
    parser.add_argument("--measure", nargs=4, metavar=("SIDE", "CORNER", "SEED", "ITERATIONS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        side, name, seed, iterations = args.measure[0], args.measure[1], int(args.measure[2]), int(args.measure[3])
        if side == "floor":
            row = {"cpu_s": floor_s(name, updates_for(name, iterations))}
        elif side == "sb3":
            row = measure_sb3(name, seed, iterations)
        else:
            row = measure_rllib(name, seed, iterations, sb3_behaviour=side == "rllib-sb3")
        print(json.dumps(row))
        return

    from time_to_solve import commit, versions

    measured, load_before = commit(), os.getloadavg()
    runs: list[dict[str, Any]] = []
    for round_ in range(args.rounds):
        order = SIDES[round_ % len(SIDES):] + SIDES[:round_ % len(SIDES)]
        for name in args.corners:
            for side in (*order, "floor"):
                row = {"round": round_, "corner": name, "side": side, **run_side(side, name, round_, args.iterations)}
                if "env_steps" in row:
                    row["cpu_ms_per_env_step"] = row["cpu_s"] / row["env_steps"] * 1000
                runs.append(row)
                print(json.dumps(row), flush=True)
    summary: dict[str, Any] = {}
    for name in args.corners:
        def median(side: str, key: str, name: str = name) -> float:
            return statistics.median(r[key] for r in runs if r["corner"] == name and r["side"] == side)

        per_step = {side: median(side, "cpu_ms_per_env_step") for side in SIDES}
        summary[name] = {
            "updates_per_env_step": updates_for(name, 1) / corner(name)[1],
            "cpu_ms_per_env_step": {side: round(v, 3) for side, v in per_step.items()},
            "floor_cpu_ms_per_env_step": round(median("floor", "cpu_s") / (args.iterations * corner(name)[1]) * 1000, 3),
            "ratio_to_sb3": {side: round(per_step[side] / per_step["sb3"], 2) for side in SIDES[:2]},
            "median_split_s": {side: {"sample": round(median(side, "sample_s"), 2), "learn": round(median(side, "learn_s"), 2)}
                               for side in SIDES},
        }
        print(name, json.dumps(summary[name]), flush=True)
    out = HERE / "results" / f"step_cost-{dt.datetime.now().strftime('%Y-%m-%dT%H%M')}.json"
    out.write_text(json.dumps({
        "benchmark": "step_cost",
        "commit": measured,
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_average_before_after": [load_before, os.getloadavg()]},
        "versions": versions(),
        "setup": {"env": "CartPole-v1", "envs": ENVS, "iterations_timed": args.iterations, "rounds": args.rounds,
                  "torch_threads": 1, "corners": {c[0]: dict(zip(("minibatch", "batch", "epochs", "hiddens"), c[1:])) for c in CORNERS if c[0] in args.corners}},
        "summary": summary,
        "runs": runs,
    }, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
