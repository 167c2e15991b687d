"""Time to solve CartPole-v1 with PPO: rlsweep, hand-written Ray Tune and rl-baselines3-zoo, side by side.

Every side searches PPO hyperparameters with the same work and resources, and is timed from the launch of
its own process (imports and start-up included: what a user waits for) until the first deterministic
evaluation whose mean return is >= 475:

- ``rlsweep``: a spec with rlsweep's defaults (Optuna TPE + ASHA in env steps, one CPU per trial, trials
  packed to the machine) over rl-baselines3-zoo's PPO space as mapped in ``examples/zoo_ppo_space.yaml``.
- ``raw-tune``: the same search as a competent user writes it after reading Tune's and RLlib's docs: a
  function trainable around ``PPOConfig().build_algo()`` with 0 remote env runners (1 CPU per trial, the
  same concurrency), ``OptunaSearch`` with the same seed, ASHA with ``time_attr`` on env steps and the same
  grace and reduction factor, the same space (choices of lists encoded as strings, which Optuna needs).
- ``zoo``: ``python -m rl_zoo3.train --algo ppo --env CartPole-v1 -optimize`` as its README runs it (TPE +
  median pruner, its own space), in a venv of its own (``benchmarks/_zoo.py``).
- Levers, each rlsweep with one speed lever off: ``rlsweep-1env`` (no vectorized envs),
  ``rlsweep-tpe10`` (Optuna's own 10 random startup trials, univariate TPE).

Same on every side: 20 trials, 2 at a time, 50,000 env steps per trial, 5 deterministic evaluation episodes
every 10,000 env steps. Sides alternate in order from seed to seed. Results go to
``benchmarks/results/time_to_solve-<date>.json`` with the machine and package versions.

    .venv/bin/python benchmarks/time_to_solve.py --seeds 0 1 2 3 4 [--sides rlsweep raw-tune zoo] [--cap-s 600]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SOLVED_AT = 475.0
TRIALS, CONCURRENCY, ENV_STEPS = 20, 2, 50_000
EVAL_EVERY, EVAL_EPISODES = 10_000, 5
GRACE, REDUCTION = ENV_STEPS // 9, 3  # rlsweep's ASHA defaults: grace = max / reduction_factor^2
SIDES = ("rlsweep", "raw-tune", "zoo", "rlsweep-1env", "rlsweep-tpe10")


def zoo_space() -> dict[str, Any]:
    import yaml

    return yaml.safe_load((REPO / "examples" / "zoo_ppo_space.yaml").read_text())["search_space"]


# --- the sides, each run in a process of its own (``--run-side``) -------------------------------------


def _record(result_file: Path, launch: float, **fields: Any) -> None:
    result_file.write_text(json.dumps({"time_s": time.time() - launch, **fields}))


def solved_stopper(launch: float, result_file: Path, evaluated: Any) -> Any:
    """A Tune stopper that records every evaluation (``eval_return_mean`` in a result where ``evaluated``),
    writes the result file and ends the whole sweep at the first evaluation >= SOLVED_AT."""
    from ray import tune

    class SolvedStopper(tune.Stopper):
        def __init__(self) -> None:
            self.solved = False
            self.steps: dict[str, int] = {}
            self.evaluations: list[dict[str, Any]] = []

        def __call__(self, trial_id: str, result: dict) -> bool:
            self.steps[trial_id] = int(result.get("env_steps", 0))
            if evaluated(result):
                mean = result["eval_return_mean"]
                self.evaluations.append({"t": time.time() - launch, "trial": trial_id, "env_steps": self.steps[trial_id], "mean": mean})
                if mean >= SOLVED_AT and not self.solved:
                    self.solved = True
                    self._write(True)
            return False

        def stop_all(self) -> bool:
            return self.solved

        def finish(self) -> None:
            if not self.solved:
                self._write(False)

        def _write(self, solved: bool) -> None:
            _record(result_file, launch, solved=solved, env_steps=sum(self.steps.values()), evaluations=self.evaluations)

    return SolvedStopper()


def run_rlsweep(seed: int, launch: float, result_file: Path, storage: Path, lever: str | None) -> None:
    import rlsweep

    searcher: dict[str, Any] = {"seed": seed}
    config: dict[str, Any] = {}
    if lever == "1env":
        config["env_runners.num_envs_per_env_runner"] = 1
    if lever == "tpe10":
        searcher.update(startup_trials=10, multivariate=False)
    spec = rlsweep.load_spec(
        {
            "name": f"solve-{seed}",
            "algorithm": "PPO",
            "env": "CartPole-v1",
            "config": config,
            "search_space": zoo_space(),
            "searcher": searcher,
            "budget": {"env_steps": ENV_STEPS, "trials": TRIALS, "max_concurrent": CONCURRENCY},
            "evaluation": {"episodes": EVAL_EPISODES, "every_env_steps": EVAL_EVERY},
            "storage": str(storage),
            "mlflow": None,
        }
    )
    # An evaluation ran after an iteration where eval_time_s > 0 (it is carried forward in between).
    stopper = solved_stopper(launch, result_file, evaluated=lambda result: result.get("eval_time_s", 0) > 0)
    rlsweep.run(spec, verbose=0, stopper=stopper)
    stopper.finish()


def run_raw_tune(seed: int, launch: float, result_file: Path, storage: Path) -> None:
    import ray
    from ray import tune
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.schedulers import AsyncHyperBandScheduler
    from ray.tune.search.optuna import OptunaSearch

    space = zoo_space()
    hiddens = {str(h): h for h in space["rl_module.model_config.fcnet_hiddens"]["choice"]}

    def tune_domain(domain: dict[str, Any]) -> Any:
        (kind, args), = domain.items()
        if kind == "choice":
            return tune.choice([str(a) if isinstance(a, list) else a for a in args])
        return {"loguniform": tune.loguniform, "uniform": tune.uniform}[kind](*args)

    param_space = {path.split(".")[-1]: tune_domain(domain) for path, domain in space.items()}

    def trainable(config: dict[str, Any]) -> None:
        training = {k: v for k, v in config.items() if k not in ("fcnet_hiddens", "fcnet_activation")}
        algo = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=0)
            .training(**training)
            .rl_module(model_config={"fcnet_hiddens": hiddens[config["fcnet_hiddens"]],
                                     "fcnet_activation": config["fcnet_activation"]})
            # Evaluated by hand every EVAL_EVERY env steps; RLlib's own interval is in iterations.
            .evaluation(evaluation_interval=10**9, evaluation_duration=EVAL_EPISODES,
                        evaluation_duration_unit="episodes", evaluation_config={"explore": False})
            .build_algo()
        )
        next_eval = EVAL_EVERY
        while True:
            result = algo.train()
            env_steps = result["num_env_steps_sampled_lifetime"]
            report = {"env_steps": env_steps, "return_mean": result["env_runners"].get("episode_return_mean", math.nan)}
            if env_steps >= next_eval:
                report["eval_return_mean"] = algo.evaluate()["env_runners"]["episode_return_mean"]
                next_eval += EVAL_EVERY
            tune.report(report)
            if env_steps >= ENV_STEPS:
                break
        algo.stop()

    stopper = solved_stopper(launch, result_file, evaluated=lambda result: "eval_return_mean" in result)
    ray.init(num_cpus=CONCURRENCY, include_dashboard=False, log_to_driver=False)
    tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune.TuneConfig(
            metric="return_mean",
            mode="max",
            num_samples=TRIALS,
            search_alg=OptunaSearch(seed=seed),
            scheduler=AsyncHyperBandScheduler(time_attr="env_steps", max_t=ENV_STEPS, grace_period=GRACE,
                                              reduction_factor=REDUCTION),
        ),
        run_config=tune.RunConfig(name=f"solve-raw-{seed}", storage_path=str(storage), stop=stopper, verbose=0),
    ).fit()
    stopper.finish()


def run_zoo(seed: int, launch: float, result_file: Path, storage: Path, cap_s: float) -> None:
    sys.path.insert(0, str(HERE))
    import _zoo

    python = _zoo.ensure_venv(HERE / ".zoo-venv")
    called = time.time()  # run_zoo times from its own launch of rl_zoo3, right after this
    outcome = _zoo.run_zoo(
        python, algo="ppo", env="CartPole-v1", seed=seed, trials=TRIALS, jobs=CONCURRENCY, env_steps=ENV_STEPS,
        eval_every=EVAL_EVERY, eval_episodes=EVAL_EPISODES, solved_at=SOLVED_AT, cap_s=cap_s, workdir=storage,
    )
    result_file.write_text(json.dumps({
        "time_s": called - launch + outcome["time_s"] if outcome["solved"] else time.time() - launch,
        "solved": outcome["solved"], "env_steps": outcome["env_steps"],
        "evaluations": [{"t": e["time_s"], "trial": e["trial"], "env_steps": e["timesteps"], "mean": e["mean"]}
                        for e in outcome["evaluations"]],
    }, default=str))


# --- the harness ------------------------------------------------------------------------------------


def one_run(side: str, seed: int, cap_s: float, scratch: Path) -> dict[str, Any]:
    result_file = scratch / f"{side}-{seed}.json"
    env = {**os.environ, "BENCH_LAUNCH": repr(time.time())}
    command = [sys.executable, str(Path(__file__).resolve()), "--run-side", side, "--seed", str(seed),
               "--result", str(result_file), "--storage", str(scratch / f"{side}-{seed}"), "--cap-s", str(cap_s)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    start = time.time()
    while process.poll() is None:
        if result_file.exists() and json.loads(result_file.read_text() or "{}").get("solved"):
            # Solved: the side stops its sweep itself; give it a moment, then end what is left.
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            break
        if time.time() - start > cap_s:
            break
        time.sleep(0.2)
    if process.poll() is None:
        os.killpg(process.pid, 9)
        process.wait()
    if not result_file.exists():
        return {"side": side, "seed": seed, "solved": False, "time_s": cap_s, "env_steps": None,
                "error": (process.stderr.read() or "")[-2000:]}
    return {"side": side, "seed": seed, **json.loads(result_file.read_text())}


def versions() -> dict[str, str]:
    from importlib.metadata import version

    found = {name: version(name) for name in ("ray", "torch", "optuna", "gymnasium", "numpy")}
    zoo = (HERE / "zoo-requirements.txt").read_text().split()
    found.update({line.split("==")[0]: line.split("==")[1] for line in zoo if line.startswith(("rl_zoo3==", "stable_baselines3=="))})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=["rlsweep", "raw-tune", "zoo"])
    parser.add_argument("--cap-s", type=float, default=600.0)
    parser.add_argument("--run-side", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--storage", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.run_side:
        launch = float(os.environ["BENCH_LAUNCH"])
        if args.run_side.startswith("rlsweep"):
            lever = args.run_side.partition("-")[2] or None
            run_rlsweep(args.seed, launch, args.result, args.storage, lever)
        elif args.run_side == "raw-tune":
            run_raw_tune(args.seed, launch, args.result, args.storage)
        else:
            run_zoo(args.seed, launch, args.result, args.storage, args.cap_s)
        return

    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="time-to-solve-") as tmp:
        for index, seed in enumerate(args.seeds):
            order = args.sides[index % len(args.sides):] + args.sides[: index % len(args.sides)]
            for side in order:
                run = one_run(side, seed, args.cap_s, Path(tmp))
                runs.append(run)
                state = "solved" if run["solved"] else "NOT solved"
                print(f"seed {seed}: {side:14s} {state:10s} at {run['time_s']:7.1f} s, env steps {run['env_steps']}", flush=True)

    summary = {}
    print(f"\nPPO on CartPole-v1: {TRIALS} trials, {CONCURRENCY} at a time, {ENV_STEPS} env steps each, "
          f"{EVAL_EPISODES} deterministic evaluation episodes every {EVAL_EVERY}; solved at a mean >= {SOLVED_AT:g}; "
          f"unsolved runs count as the cap ({args.cap_s:.0f} s); seeds {args.seeds}")
    for side in args.sides:
        times = [r["time_s"] for r in runs if r["side"] == side]
        solved = sum(r["solved"] for r in runs if r["side"] == side)
        summary[side] = {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
                         "solved": solved, "runs": len(times)}
        print(f"{side:14s} median {summary[side]['median_s']:7.1f} s  (min {min(times):6.1f}, max {max(times):6.1f})  solved {solved}/{len(times)}")
    if "rlsweep" in summary:
        for side in summary:
            if side != "rlsweep":
                print(f"rlsweep / {side}: {summary['rlsweep']['median_s'] / summary[side]['median_s']:.2f} (ratio of medians)")

    out = HERE / "results" / f"time_to_solve-{dt.datetime.now():%Y-%m-%dT%H%M}.json"  # one file per run
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "versions": versions(),
        "setup": {"task": "PPO CartPole-v1", "trials": TRIALS, "concurrency": CONCURRENCY, "env_steps": ENV_STEPS,
                  "eval_every": EVAL_EVERY, "eval_episodes": EVAL_EPISODES, "solved_at": SOLVED_AT, "cap_s": args.cap_s},
        "summary": summary,
        "runs": runs,
    }, indent=1, default=str))
    print(f"\nwritten to {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
