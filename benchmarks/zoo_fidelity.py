"""Does an rl-baselines3-zoo entry, converted by ``rlsweep convert --from zoo``, score in rlsweep what
rl-baselines3-zoo publishes for it?

For each entry: the entry is read from the hyperparameter file of the pinned rl-zoo3 (the benchmark's own
venv, ``benchmarks/zoo-requirements.txt``) and converted exactly as ``rlsweep convert --from zoo FILE --env
ID`` converts it (the same function). The converted spec is run as it is, with three changes that only
say how many times: ``budget.trials`` (one trial per training seed: the space is empty, so every trial
trains the entry's config, each on its own seed from ``seeds.tuning``), ``budget.max_concurrent`` and
``searcher.seed`` (the seeds drawn repeat). Each trial's last checkpoint (at the entry's ``n_timesteps``) is
then evaluated greedily by rlsweep's own ``evaluate`` (``--episodes`` per env seed, on ``--eval-seeds``
fresh env seeds, the observation filter restored from the checkpoint).

The published score is rl-baselines3-zoo's ``benchmark.md``: one trained agent per entry, its
deterministic policy run for 150,000 env steps (``python -m rl_zoo3.benchmark``, ``enjoy.py -n 150000``),
mean and population standard deviation of the episodes' returns. A training seed **reaches** the
published score when its evaluation mean is at least the published mean minus one published standard
deviation (within its published spread); an entry holds when every training seed reaches it. That spread
is of one agent's episodes, not across seeds: strict where it is 0 (CartPole: every episode at 500), loose
where episodes differ much (Pendulum); ``--zoo-side`` adds rl-zoo3's own training on the same seeds.

A sweep already in ``--storage`` under the entry's name is evaluated, not trained again, when its recorded
spec is the one this script would run (a run interrupted by hand can be finished with ``rlsweep resume``);
any other sweep there is an error. Results go to ``benchmarks/results/zoo_fidelity-<date>.json`` with the
commit and versions.

    .venv/bin/python benchmarks/zoo_fidelity.py --entries ppo:CartPole-v1 --storage /tmp/zoo-fidelity
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
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

#: rl-baselines3-zoo's ``benchmark.md`` (last changed in 61a0d13, 2023-04-11; read at 22e3ff2, 2026-04-23):
#: mean, std of the returns, the training budget, and the episodes its 150,000 evaluation env steps held.
PUBLISHED: dict[str, dict[str, Any]] = {
    "ppo:CartPole-v1": {"mean": 500.000, "std": 0.000, "n_timesteps": 100_000, "eval_episodes": 300},
    "ppo:Acrobot-v1": {"mean": -73.506, "std": 18.201, "n_timesteps": 1_000_000, "eval_episodes": 2013},
    "sac:Pendulum-v1": {"mean": -156.995, "std": 88.714, "n_timesteps": 20_000, "eval_episodes": 750},
    "dqn:CartPole-v1": {"mean": 500.000, "std": 0.000, "n_timesteps": 50_000, "eval_episodes": 300},
    "dqn:Acrobot-v1": {"mean": -76.639, "std": 11.752, "n_timesteps": 100_000, "eval_episodes": 1932},
    "ppo:MountainCarContinuous-v0": {"mean": 88.343, "std": 2.572, "n_timesteps": 20_000, "eval_episodes": 633},
}
PUBLISHED_FROM = ("rl-baselines3-zoo benchmark.md (DLR-RM/rl-baselines3-zoo, last changed in 61a0d13; read at 22e3ff2): "
                  "one agent per entry, deterministic policy, 150,000 env steps, seed 0; mean and population std")


def zoo_file(algo: str) -> Path:
    """The pinned rl-zoo3's hyperparameter file for ``algo`` (its venv is made once)."""
    import _zoo

    python = _zoo.ensure_venv()
    found = subprocess.run([str(python), "-c", "import rl_zoo3, os; print(os.path.dirname(rl_zoo3.__file__))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    return Path(found) / "hyperparams" / f"{algo}.yml"


def document(entry: str, path: Path, *, seeds: int, max_concurrent: int, searcher_seed: int) -> tuple[dict[str, Any], list[str]]:
    """The converted spec as it runs here, and what the conversion did not carry (``convert --from zoo``'s list)."""
    from rlsweep._zoo import algorithm_of_file, convert_zoo, read_file

    algo, env = entry.split(":", 1)
    spec, mapping = convert_zoo(read_file(str(path)), env, algorithm=algorithm_of_file(algo, str(path)), source=str(path))
    spec["searcher"] = {"name": "random", "seed": searcher_seed}
    spec["budget"] = {**spec["budget"], "trials": seeds, "max_concurrent": max_concurrent}
    return spec, [str(item) for item in mapping.unmapped]


def reaches(mean: float, published: dict[str, Any]) -> bool:
    """A training seed's evaluation mean is within the published spread, or above it."""
    return mean >= published["mean"] - published["std"]


def scored(mean: float, std: float, episodes: int, published: dict[str, Any]) -> dict[str, Any]:
    """One training seed's greedy evaluation, and whether it reaches the published score (either side)."""
    return {"eval_return_mean": mean, "eval_return_std": std, "episodes": episodes, "reaches": reaches(mean, published)}


def summary(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    """A side's seeds: each seed's record, the mean of their means, how many reach, and whether all of 3+ do."""
    means = [run["eval_return_mean"] for run in per_seed]
    return {
        "per_seed": per_seed,
        "mean_of_seeds": statistics.fmean(means) if means else None,
        "seeds_reaching": sum(run["reaches"] for run in per_seed),
        "holds": len(per_seed) >= 3 and all(run["reaches"] for run in per_seed),
    }


def train(spec: dict[str, Any], storage: Path, address: str | None = None) -> tuple[Path, float | None]:
    """Run the spec with the CLI, as a user would, unless the same spec already ran there."""
    import yaml

    path = storage / spec["name"]
    recorded = path / "rlsweep.json"
    if recorded.exists():
        ran = json.loads(recorded.read_text())["spec"]

        def trained(document: dict[str, Any]) -> dict[str, Any]:  # how many trials ran at once changes no trial
            return {**document, "budget": {k: v for k, v in document["budget"].items() if k != "max_concurrent"}}

        if trained(ran) != trained(spec):
            raise SystemExit(f"{path} holds another spec than this entry's; give another --storage")
        spec["budget"]["max_concurrent"] = ran["budget"].get("max_concurrent")  # recorded as it ran
        print(f"{spec['name']}: already trained in {path}; evaluating it", flush=True)
        return path, None
    storage.mkdir(parents=True, exist_ok=True)
    spec_file = storage / f"{spec['name']}.yaml"
    spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    start = time.perf_counter()
    subprocess.run([str(Path(sys.executable).parent / "rlsweep"), "run", str(spec_file), "--storage", str(storage),
                    "--progress", "lines", *(["--address", address] if address else [])], check=True, cwd=storage)
    return path, time.perf_counter() - start


def evaluate(path: Path, published: dict[str, Any], *, episodes: int, eval_seeds: list[int]) -> dict[str, Any]:
    """Each trial's last checkpoint (a sweep always keeps the latest), greedily, by rlsweep's own evaluation."""
    import dataclasses

    import rlsweep
    from rlsweep.analysis._evaluate import evaluate_checkpoint

    sweep = rlsweep.load(path)
    budget = sweep.spec.budget
    seeds = [trial.seed for trial in sweep.trials]
    # Only a whole run is scored: every trial trained to the budget.
    if len(sweep.trials) != budget.trials:
        raise SystemExit(f"{path}: {len(sweep.trials)} trials on seeds {seeds}; expected {budget.trials} "
                         "(finish the sweep with rlsweep resume)")
    # The random searcher can draw a seed twice (20 draws of 100 seeds do more often than not): each seed
    # counts once, by its first trial.
    first = {}
    for trial in sweep.trials:
        first.setdefault(trial.seed, trial)
    if len(first) < len(seeds):
        print(f"  seeds drawn twice, each scored once (its first trial): {sorted({s for s in seeds if seeds.count(s) > 1})}",
              flush=True)
    ranked = {best.trial_id: best for best in sweep.ranked("last")}
    per_seed = []
    for trial in first.values():
        last = trial.latest_checkpoint
        if trial.state != "TERMINATED" or last is None or last.env_steps < budget.env_steps or trial.trial_id not in ranked:
            raise SystemExit(f"trial {trial.trial_id} of {path} did not train to the budget ({trial.state}, last checkpoint "
                             f"{last.env_steps if last else None} of {budget.env_steps} env steps); finish it with rlsweep resume")
        best = dataclasses.replace(ranked[trial.trial_id], checkpoint=last.path, checkpoint_env_steps=last.env_steps)
        row = evaluate_checkpoint(sweep.spec, best, episodes=episodes, seeds=eval_seeds)
        per_seed.append({
            "trial_id": trial.trial_id,
            "training_seed": trial.seed,
            "state": trial.state,
            "checkpoint_env_steps": row["checkpoint_env_steps"],
            "trial_time_s": trial.rows[-1].get("time_total_s") if trial.rows else None,  # the trial's own training time
            **scored(row["eval_return_mean"], row["eval_return_std"], row["episodes"], published),
        })
        print(f"  {trial.trial_id} (seed {trial.seed}, {trial.state}): checkpoint at {last.env_steps:,} env steps, "
              f"greedy {row['eval_return_mean']:.1f} +- {row['eval_return_std']:.1f} over {row['episodes']} episodes", flush=True)
    return summary(per_seed)


#: Run by the zoo venv's python: train one entry with rl-zoo3 as its docs train a published agent
#: (``python -m rl_zoo3.train --algo ALGO --env ENV --seed S``: the entry's hyperparameters, schedules,
#: normalization and n_timesteps), then play its final model greedily (``deterministic=True``, as rl-zoo3's
#: benchmark) on the same env seeds and episodes as rlsweep's side, observations normalized by the saved
#: ``VecNormalize`` statistics where the entry normalizes.
ZOO_SIDE = r"""
import json, pickle, subprocess, sys, time
from pathlib import Path
import gymnasium as gym
import numpy as np
from stable_baselines3 import DQN, PPO, SAC

algo, env_id, seed, folder, episodes = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5])
eval_seeds = json.loads(sys.argv[6])
start = time.perf_counter()
subprocess.run([sys.executable, "-m", "rl_zoo3.train", "--algo", algo, "--env", env_id, "--seed", str(seed),
                "-f", str(folder), "--eval-freq", "-1", "--log-interval", "-1"], check=True, stdout=subprocess.DEVNULL)
trained_s = time.perf_counter() - start
(run,) = sorted((folder / algo).glob(f"{env_id}_*"))
model = {"ppo": PPO, "sac": SAC, "dqn": DQN}[algo].load(run / f"{env_id}.zip", device="cpu")
stats = run / env_id / "vecnormalize.pkl"
normalize = pickle.load(open(stats, "rb")) if stats.exists() else None
def observe(obs):
    if normalize is None or not normalize.norm_obs:
        return obs
    return np.clip((obs - normalize.obs_rms.mean) / np.sqrt(normalize.obs_rms.var + normalize.epsilon),
                   -normalize.clip_obs, normalize.clip_obs)
returns = []
for eval_seed in eval_seeds:
    env = gym.make(env_id)
    for episode in range(episodes):
        obs, _ = env.reset(seed=eval_seed if episode == 0 else None)
        done, total = False, 0.0
        while not done:
            action, _ = model.predict(observe(obs), deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
print(json.dumps({"returns": returns, "trained_s": trained_s}))
"""


def zoo_side(entry: str, seeds: list[int], storage: Path, published: dict[str, Any], *, episodes: int,
             eval_seeds: list[int]) -> dict[str, Any]:
    """rl-baselines3-zoo's own training of the entry on the same seeds as rlsweep's trials, scored the same way."""
    import _zoo

    python = _zoo.ensure_venv()
    algo, env = entry.split(":", 1)
    per_seed = []
    for seed in seeds:
        folder = storage / f"zoo-side-{algo}-{env}-seed{seed}"
        done = subprocess.run([str(python), "-c", ZOO_SIDE, algo, env, str(seed), str(folder), str(episodes), json.dumps(eval_seeds)],
                              capture_output=True, text=True, check=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
        found = json.loads(done.stdout.strip().splitlines()[-1])
        returns = found["returns"]
        per_seed.append({"training_seed": seed, "trained_s": found["trained_s"],
                         **scored(statistics.fmean(returns), statistics.pstdev(returns), len(returns), published)})
        print(f"  rl-zoo3 seed {seed}: greedy {per_seed[-1]['eval_return_mean']:.1f} +- {per_seed[-1]['eval_return_std']:.1f} "
              f"over {len(returns)} episodes (trained in {found['trained_s']:.0f} s)", flush=True)
    return summary(per_seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", nargs="+", choices=sorted(PUBLISHED),
                        default=["ppo:CartPole-v1", "ppo:Acrobot-v1", "sac:Pendulum-v1"])
    parser.add_argument("--seeds", type=int, default=3, help="training seeds per entry (one trial each)")
    parser.add_argument("--max-concurrent", type=int, default=2)
    parser.add_argument("--searcher-seed", type=int, default=0)
    parser.add_argument("--episodes", type=int, default=10, help="greedy episodes per evaluation env seed")
    parser.add_argument("--eval-seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--storage", type=Path, required=True)
    parser.add_argument("--address", help="join this Ray runtime ('auto': the one running here) instead of starting one")
    parser.add_argument("--zoo-side", action="store_true",
                        help="also train each entry with rl-zoo3 itself on the same seeds and score it the same way")
    args = parser.parse_args()
    from time_to_solve import commit, versions

    started = dt.datetime.now()
    out = HERE / "results" / f"zoo_fidelity-{started:%Y-%m-%dT%H%M}.json"
    entries: dict[str, Any] = {}
    for entry in args.entries:
        algo = entry.split(":", 1)[0]
        path = zoo_file(algo)
        spec, unmapped = document(entry, path, seeds=args.seeds, max_concurrent=args.max_concurrent,
                                  searcher_seed=args.searcher_seed)
        sweep_path, trained_s = train(spec, args.storage.resolve(), args.address)
        result = evaluate(sweep_path, PUBLISHED[entry], episodes=args.episodes, eval_seeds=args.eval_seeds)
        entries[entry] = {"published": PUBLISHED[entry], "spec": spec, "not_carried_over": unmapped,
                          "sweep": str(sweep_path), "train_s": trained_s, **result}
        if args.zoo_side:
            seeds = [run["training_seed"] for run in result["per_seed"]]
            entries[entry]["rl_zoo3"] = zoo_side(entry, seeds, args.storage.resolve(), PUBLISHED[entry],
                                                 episodes=args.episodes, eval_seeds=args.eval_seeds)
        shown = ", ".join(f"{run['eval_return_mean']:.1f}" for run in result["per_seed"])
        print(f"{entry}: published {PUBLISHED[entry]['mean']:.1f} +- {PUBLISHED[entry]['std']:.1f}; rlsweep per seed {shown}; "
              f"{result['seeds_reaching']} of {len(result['per_seed'])} seeds reach it", flush=True)
        out.write_text(json.dumps({
            "benchmark": "zoo_fidelity",
            "started": started.isoformat(),
            "commit": commit(),
            "versions": versions(),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "published_from": PUBLISHED_FROM,
            "evaluation": {"episodes_per_seed": args.episodes, "env_seeds": args.eval_seeds, "policy": "greedy",
                           "checkpoint": "each trial's last (rule last)"},
            "entries": entries,
        }, indent=1, default=str))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
