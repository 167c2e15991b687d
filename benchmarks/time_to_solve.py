"""Time to solve CartPole-v1 with PPO: rlsweep's defaults against hand-written Ray Tune, side by side.

Both sides search the same space (learning rate, epochs, batch size, discount; ``--space`` picks a narrow
or a wide one) over the same number of
trials and env steps per trial, on one shared 2-CPU Ray runtime, each sweep capped at 10 minutes:

- rlsweep: a spec naming only the algorithm, env, space and budget, so every default applies (Optuna's
  TPE, ASHA in env steps with grace budget/9, zero env runners, trials packed to the machine's CPUs).
- raw Tune, the way Ray's docs show it: ``tune.Tuner("PPO", param_space=PPOConfig()...)`` with random
  search (``BasicVariantGenerator``), FIFO, and RLlib's defaults with the one change needed to fit 2 CPUs
  (1 env runner instead of 2, so a trial asks for 2 CPUs).

A sweep counts as solved at the first report where some trial's mean return over its last 3 reports is
>= 475; the same Tune stopper ends either side there. Prints per-seed wall time and total env steps
sampled by all trials until then, the medians, and the ratio of medians. An unsolved sweep counts as the
cap (so a ratio against it is a bound, marked with '>=').

    .venv/bin/python benchmarks/time_to_solve.py [--space wide|narrow] [--seeds 0 1 2] [--cap-s 600]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

SOLVED, WINDOW = 475.0, 3
TRIALS, ENV_STEPS = 12, 150_000
#: Two spaces, each written once for rlsweep and once in Tune's domains. "narrow" is a practitioner's
#: first guess, where most draws learn; "wide" is the space one writes without prior knowledge, where
#: most draws do not (too small or too large a learning rate, too short a horizon).
SPACES = {
    "narrow": ((1.0e-5, 1.0e-2), (1, 20), (0.95, 0.999)),
    "wide": ((1.0e-6, 1.0e-1), (1, 30), (0.8, 0.999)),
}
BATCHES = [1000, 2000, 4000]


def rlsweep_space(name: str) -> dict[str, Any]:
    lr, epochs, gamma = SPACES[name]
    return {
        "training.lr": {"loguniform": list(lr)},
        "training.num_epochs": {"randint": list(epochs)},
        "training.train_batch_size": {"choice": BATCHES},
        "training.gamma": {"uniform": list(gamma)},
    }


def tune_space(name: str) -> dict[str, Any]:
    from ray import tune

    lr, epochs, gamma = SPACES[name]
    return {
        "lr": tune.loguniform(*lr),
        "num_epochs": tune.randint(epochs[0], epochs[1] + 1),  # Tune's upper bound is exclusive
        "train_batch_size": tune.choice(BATCHES),
        "gamma": tune.uniform(*gamma),
    }


def _lookup(result: dict, key: str) -> Any:
    if key in result:
        return result[key]
    value: Any = result
    for part in key.split("/"):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def make_stopper(metric: str, steps: str) -> Any:
    from ray.tune import Stopper

    class SolvedStopper(Stopper):
        """Ends the sweep at the first report where a trial's last-3 mean return is >= 475."""

        def __init__(self) -> None:
            self.start = time.perf_counter()
            self.recent: dict[str, deque] = defaultdict(lambda: deque(maxlen=WINDOW))
            self.steps: dict[str, int] = {}
            self.solved_at: tuple[float, int, str] | None = None

        def __call__(self, trial_id: str, result: dict) -> bool:
            value = _lookup(result, metric)
            self.steps[trial_id] = int(_lookup(result, steps) or 0)
            if isinstance(value, (int, float)) and value == value:
                self.recent[trial_id].append(float(value))
            window = self.recent[trial_id]
            if self.solved_at is None and len(window) == WINDOW and sum(window) / WINDOW >= SOLVED:
                self.solved_at = (time.perf_counter() - self.start, sum(self.steps.values()), trial_id)
            return False

        def stop_all(self) -> bool:
            return self.solved_at is not None

    return SolvedStopper()


def run_rlsweep(storage: Path, seed: int, cap_s: float, space: str) -> tuple[float, int, bool, float]:
    import rlsweep

    spec = rlsweep.load_spec(
        {
            "name": f"solve-rlsweep-{seed}",
            "algorithm": "PPO",
            "env": "CartPole-v1",
            "search_space": rlsweep_space(space),
            "searcher": {"seed": seed},
            "budget": {"env_steps": ENV_STEPS, "trials": TRIALS, "time_s": cap_s},
            "storage": str(storage),
            "mlflow": None,
        }
    )
    assert (spec.searcher.name, spec.scheduler.name) == ("optuna", "asha")
    stopper = make_stopper("return_mean", "env_steps")
    start = time.perf_counter()
    rlsweep.run(spec, verbose=0, stopper=stopper)
    return _outcome(stopper, time.perf_counter() - start, cap_s)


def run_raw_tune(storage: Path, seed: int, cap_s: float, space: str) -> tuple[float, int, bool, float]:
    from ray import tune
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.search import BasicVariantGenerator
    from ray.tune.stopper import CombinedStopper, FunctionStopper

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .training(**tune_space(space))
    )
    stopper = make_stopper("env_runners/episode_return_mean", "num_env_steps_sampled_lifetime")
    budget = FunctionStopper(lambda trial_id, result: (_lookup(result, "num_env_steps_sampled_lifetime") or 0) >= ENV_STEPS)
    tuner = tune.Tuner(
        "PPO",
        param_space=config,
        tune_config=tune.TuneConfig(
            metric="env_runners/episode_return_mean",
            mode="max",
            num_samples=TRIALS,
            search_alg=BasicVariantGenerator(random_state=seed),
            time_budget_s=cap_s,
        ),
        run_config=tune.RunConfig(
            name=f"solve-raw-{seed}",
            storage_path=str(storage),
            stop=CombinedStopper(budget, stopper),
            verbose=0,
        ),
    )
    start = time.perf_counter()
    tuner.fit()
    return _outcome(stopper, time.perf_counter() - start, cap_s)


def _outcome(stopper: Any, wall_s: float, cap_s: float) -> tuple[float, int, bool, float]:
    """(seconds to solve or the cap, env steps by then, solved, wall time of the whole call)."""
    if stopper.solved_at is None:
        return cap_s, sum(stopper.steps.values()), False, wall_s
    seconds, steps, _ = stopper.solved_at
    return seconds, steps, True, wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--cap-s", type=float, default=600.0)
    parser.add_argument("--space", choices=sorted(SPACES), default="wide")
    args = parser.parse_args()

    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    results: dict[str, list[tuple[float, int, bool, float]]] = {"rlsweep": [], "raw tune": []}
    with tempfile.TemporaryDirectory() as tmp:
        for index, seed in enumerate(args.seeds):
            # Alternate which side goes first so warm-up costs fall on both.
            order = ["rlsweep", "raw tune"] if index % 2 == 0 else ["raw tune", "rlsweep"]
            for side in order:
                runner = run_rlsweep if side == "rlsweep" else run_raw_tune
                outcome = runner(Path(tmp) / f"{side.replace(' ', '-')}-{seed}", seed, args.cap_s, args.space)
                results[side].append(outcome)
                seconds, steps, solved, wall = outcome
                state = "solved" if solved else "NOT solved"
                print(f"seed {seed}: {side:8s} {state:10s} at {seconds:7.1f} s, {steps:>8} env steps (call {wall:.1f} s)", flush=True)
    ray.shutdown()

    print(f"\nPPO on CartPole-v1, {args.space} space {SPACES[args.space]}, {TRIALS} trials x {ENV_STEPS} env steps, cap {args.cap_s:.0f} s, seeds {args.seeds}")
    medians = {}
    for side, outcomes in results.items():
        seconds = statistics.median(o[0] for o in outcomes)
        steps = statistics.median(o[1] for o in outcomes)
        medians[side] = (seconds, steps, all(o[2] for o in outcomes))
        print(f"{side:8s} median {seconds:7.1f} s, {steps:>10.0f} env steps, solved {sum(o[2] for o in outcomes)}/{len(outcomes)}")
    bound = "" if medians["raw tune"][2] else ">= "  # raw's unsolved sweeps count as the cap
    inverse = medians["raw tune"][0] / medians["rlsweep"][0]
    print(
        f"ratio of medians rlsweep / raw tune: time {medians['rlsweep'][0] / medians['raw tune'][0]:.3f}, "
        f"env steps {medians['rlsweep'][1] / medians['raw tune'][1]:.3f} (target time <= 0.333; raw takes {bound}{inverse:.1f}x as long)"
    )


if __name__ == "__main__":
    main()
