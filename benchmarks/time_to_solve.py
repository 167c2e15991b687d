"""Time to solve a task: rlsweep, hand-written Ray Tune and rl-baselines3-zoo, side by side.

Three tasks: PPO on CartPole-v1 (solved at a mean of 475), SAC on Pendulum-v1 (solved at a mean of -200) and
PPO on Acrobot-v1 (solved at gymnasium's threshold, a mean of -100; held out from the project's tuning).
Every side searches the task's hyperparameters with the same work and resources, and is timed from the
launch of its own process (imports and start-up included: what a user waits for) until the first
deterministic evaluation whose mean return reaches the task's bar:

- ``rlsweep``: a spec with rlsweep's defaults (Optuna TPE + ASHA in env steps, one CPU per trial, trials
  packed to the machine) over rl-baselines3-zoo's space as mapped in ``examples/zoo_ppo_space.yaml`` or
  ``examples/zoo_sac_space.yaml``.
- ``raw-tune``: the same search as a competent user writes it after reading Tune's and RLlib's docs: a
  function trainable around ``PPOConfig()`` / ``SACConfig()`` ``.build_algo()`` with 0 remote env runners
  (1 CPU per trial, the same concurrency), ``OptunaSearch`` with the same seed, ASHA with ``time_attr`` on
  env steps and the same grace and reduction factor, the same space (choices of lists encoded as strings,
  which Optuna needs).
- ``zoo``: ``python -m rl_zoo3.train --algo ppo|sac --env ... -optimize`` as its README runs it (TPE +
  median pruner, its own space), in a venv of its own (``benchmarks/_zoo.py``).
- Levers, each rlsweep with one speed lever changed: ``rlsweep-1env`` (no vectorized envs),
  ``rlsweep-tpe10`` (Optuna's own 10 random startup trials, univariate TPE), ``rlsweep-noreuse`` (a new
  worker process per trial, Tune's default), ``rlsweep-zoo`` (warm start from rl-baselines3-zoo's published
  hyperparameters, ``searcher.warm_start: zoo``), ``rlsweep-warm`` (the memory reading kept from an
  earlier run of the same spec, as a user who ran it before has it; every other rlsweep side starts with
  none, as a new user's first sweep does).

Same on every side of a task: its trials, 2 at a time, its env steps per trial, 5 deterministic evaluation
episodes every so many env steps (``TASKS``). Sides alternate in order from seed to seed. Results go to
``benchmarks/results/time_to_solve-<task>-<date>.json`` with the commit measured, the machine and package versions.

    .venv/bin/python benchmarks/time_to_solve.py --task cartpole --seeds 0 1 2 3 4 [--sides rlsweep raw-tune zoo] [--cap-s 600]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CONCURRENCY, EVAL_EPISODES, REDUCTION = 2, 5, 3


@dataclass(frozen=True)
class Task:
    algorithm: str
    env: str
    space_file: str  # in examples/
    solved_at: float
    trials: int
    env_steps: int  # per trial
    eval_every: int  # env steps

    @property
    def grace(self) -> int:  # rlsweep's ASHA default: grace = max / reduction_factor^2
        return self.env_steps // REDUCTION**2


TASKS = {
    "cartpole": Task("PPO", "CartPole-v1", "zoo_ppo_space.yaml", 475.0, trials=20, env_steps=50_000, eval_every=10_000),
    # rl-zoo3's Pendulum-v1 SAC runs 20,000 env steps (hyperparams/sac.yml); RLlib's SAC updates about 6
    # times a second here (prioritized episode replay and connectors around each update), so fewer trials.
    # Acrobot-v1 with the same PPO space (rl-zoo3's PPO sampler does not depend on the env); its reward is -1
    # a step until the tip swings up, so an agent that has not learned scores -500.
    "acrobot": Task("PPO", "Acrobot-v1", "zoo_ppo_space.yaml", -100.0, trials=20, env_steps=50_000, eval_every=10_000),
    "pendulum": Task("SAC", "Pendulum-v1", "zoo_sac_space.yaml", -200.0, trials=10, env_steps=20_000, eval_every=2_000),
}
SIDES = ("rlsweep", "raw-tune", "zoo", "rlsweep-1env", "rlsweep-tpe10", "rlsweep-noreuse", "rlsweep-zoo", "rlsweep-warm")


def zoo_document(task: Task) -> dict[str, Any]:
    import yaml

    return yaml.safe_load((REPO / "examples" / task.space_file).read_text())


def zoo_space(task: Task) -> dict[str, Any]:
    return zoo_document(task)["search_space"]


def zoo_fixed(task: Task) -> dict[str, dict[str, Any]]:
    """The example's fixed ``config`` (SB3's defaults where RLlib's differ) as RLlib setter arguments, for
    hand-written Tune to set as rlsweep's side does: ``{"training": {"replay_buffer_config": {...}}, ...}``."""
    nested: dict[str, dict[str, Any]] = {}
    for path, value in zoo_document(task).get("config", {}).items():
        method, *keys = path.split(".")
        where = nested.setdefault(method, {})
        for key in keys[:-1]:
            where = where.setdefault(key, {})
        where[keys[-1]] = value
    return nested


# --- the sides, each run in a process of its own (``--run-side``) -------------------------------------


def _record(result_file: Path, launch: float, **fields: Any) -> None:
    result_file.write_text(json.dumps({"time_s": time.time() - launch, **fields}))


def solved_stopper(task: Task, launch: float, result_file: Path, evaluated: Any, marks: dict[str, float]) -> Any:
    """A Tune stopper that records every evaluation (``eval_return_mean`` in a result where ``evaluated``),
    writes the result file and ends the whole sweep at the first evaluation >= the task's bar. ``marks``: seconds
    from launch to the side's own start-up steps (imports done, spec checked), kept in the file."""
    from ray import tune

    class SolvedStopper(tune.Stopper):
        def __init__(self) -> None:
            self.solved = False
            self.steps: dict[str, int] = {}
            self.evaluations: list[dict[str, Any]] = []
            self.written = 0.0
            self.first_results: list[float] = []  # seconds from launch to each trial's first result
            self.setups: list[float] = []  # each trial's own start-up (setup_time_s): record and build
            self.first_iterations: list[float] = []  # each trial's first iteration (Tune's time_this_iter_s)
            self.marks = dict(marks)

        def __call__(self, trial_id: str, result: dict) -> bool:
            if trial_id not in self.steps:  # a trial's first result: start-up costs
                self.first_results.append(round(time.time() - launch, 2))
                self.setups.append(round(result.get("setup_time_s", math.nan), 2))
                self.first_iterations.append(round(result.get("time_this_iter_s", math.nan), 2))
            self.steps[trial_id] = int(result.get("env_steps", 0))
            if time.time() - self.written > 2 and not self.solved:  # progress, for a run ended at the cap
                self._write(False)
            if evaluated(result):
                mean = result["eval_return_mean"]
                self.evaluations.append({"t": time.time() - launch, "trial": trial_id, "env_steps": self.steps[trial_id], "mean": mean})
                if mean >= task.solved_at and not self.solved:
                    self.solved = True
                    self._write(True)
            return False

        def stop_all(self) -> bool:
            return self.solved

        def finish(self) -> None:
            if not self.solved:
                self._write(False)

        def _write(self, solved: bool) -> None:
            self.written = time.time()
            _record(result_file, launch, solved=solved, env_steps=sum(self.steps.values()), evaluations=self.evaluations,
                    startup={**self.marks, "first_result_s": self.first_results[:1], "trial_first_results_s": self.first_results,
                             "trial_setup_s": self.setups, "trial_first_iteration_s": self.first_iterations})

    return SolvedStopper()


def run_rlsweep(task: Task, seed: int, launch: float, result_file: Path, storage: Path, lever: str | None) -> None:
    import rlsweep

    marks = {"imported_s": round(time.time() - launch, 2)}

    searcher: dict[str, Any] = {"seed": seed}
    config: dict[str, Any] = dict(zoo_document(task).get("config", {}))
    if lever == "1env":
        config["env_runners.num_envs_per_env_runner"] = 1
    if lever == "tpe10":
        searcher.update(startup_trials=10, multivariate=False)
    if lever == "zoo":
        searcher["warm_start"] = "zoo"
    ray_section = {"reuse_actors": lever != "noreuse"}
    from rlsweep.api import load_beside_ray

    # As `rlsweep run` does: the pre-flight runs while Ray starts.
    spec = load_beside_ray(
        {
            "name": f"solve-{seed}",
            "algorithm": task.algorithm,
            "env": task.env,
            "config": config,
            "search_space": zoo_space(task),
            # The example's Q network (zoo_sac_space.yaml: SB3's critic); hand-written Tune keeps RLlib's.
            "critic": zoo_document(task).get("critic", "rllib"),
            # SB3's train_freq (zoo_sac_space.yaml): one update per env step, sampled in rounds of the trial's
            # rollout_fragment_length; hand-written Tune sets the same training_intensity by hand.
            "updates_per_env_step": zoo_document(task).get("updates_per_env_step"),
            "searcher": searcher,
            "budget": {"env_steps": task.env_steps, "trials": task.trials, "max_concurrent": CONCURRENCY},
            "evaluation": {"episodes": EVAL_EPISODES, "every_env_steps": task.eval_every},
            "storage": str(storage),
            "ray": ray_section,
            "mlflow": None,
        }
    )
    marks["spec_checked_s"] = round(time.time() - launch, 2)  # pre-flight and Ray's start, side by side
    # An evaluation ran after an iteration where eval_time_s > 0 (it is carried forward in between).
    stopper = solved_stopper(task, launch, result_file, evaluated=lambda result: result.get("eval_time_s", 0) > 0, marks=marks)
    rlsweep.run(spec, verbose=0, stopper=stopper)
    stopper.finish()


def run_raw_tune(task: Task, seed: int, launch: float, result_file: Path, storage: Path) -> None:
    import ray
    from ray import tune
    from ray.tune.registry import get_trainable_cls
    from ray.tune.schedulers import AsyncHyperBandScheduler
    from ray.tune.search.optuna import OptunaSearch

    marks = {"imported_s": round(time.time() - launch, 2)}
    space = zoo_space(task)
    hidden_key = "rl_module.model_config.fcnet_hiddens"
    hiddens = {str(h): h for h in space[hidden_key]["choice"]}

    def tune_domain(domain: dict[str, Any]) -> Any:
        (kind, args), = domain.items()
        if kind == "choice":
            return tune.choice([str(a) if isinstance(a, list) else a for a in args])
        if kind == "randint":  # the spec's bounds are inclusive, Tune's upper bound is not
            return tune.randint(args[0], args[1] + 1)
        return {"loguniform": tune.loguniform, "uniform": tune.uniform}[kind](*args)

    param_space = {path.split(".")[-1]: tune_domain(domain) for path, domain in space.items()}
    model_keys = {path.split(".")[-1] for path in space if path.startswith("rl_module.model_config.")}
    runner_keys = {path.split(".")[-1] for path in space if path.startswith("env_runners.")}
    fixed = zoo_fixed(task)  # the example's config, as rlsweep's side runs it
    # SB3's train_freq with gradient_steps = train_freq (zoo_sac_space.yaml): RLlib's training_intensity is
    # replayed env steps per sampled env step, so one update per env step is the trial's batch size.
    updates_per_env_step = zoo_document(task).get("updates_per_env_step")

    def trainable(config: dict[str, Any]) -> None:
        started = time.perf_counter()  # measured for the benchmark's start-up report, as rlsweep reports it
        training = {**fixed.get("training", {}),
                    **{k: v for k, v in config.items() if k not in model_keys and k not in runner_keys}}
        model_config = {**fixed.get("rl_module", {}).get("model_config", {}),
                        **{k: v for k, v in config.items() if k in model_keys}}
        model_config["fcnet_hiddens"] = hiddens[model_config["fcnet_hiddens"]]
        algo_config = (
            get_trainable_cls(task.algorithm).get_default_config()  # PPOConfig() / SACConfig()
            .environment(task.env)
            .env_runners(**{**fixed.get("env_runners", {}), **{k: v for k, v in config.items() if k in runner_keys},
                            "num_env_runners": 0})
            .training(**training)
            .rl_module(model_config=model_config)
            # Evaluated by hand every eval_every env steps; RLlib's own interval is in iterations.
            .evaluation(evaluation_interval=10**9, evaluation_duration=EVAL_EPISODES,
                        evaluation_duration_unit="episodes", evaluation_config={"explore": False})
        )
        if updates_per_env_step is not None:  # 0 env runners: replayed env steps per sampled one = the batch
            algo_config.training(training_intensity=updates_per_env_step * algo_config.total_train_batch_size)
        algo = algo_config.build_algo()
        setup_time_s = time.perf_counter() - started
        next_eval = task.eval_every
        while True:
            result = algo.train()
            env_steps = result["num_env_steps_sampled_lifetime"]
            report = {"env_steps": env_steps, "return_mean": result["env_runners"].get("episode_return_mean", math.nan),
                      "setup_time_s": setup_time_s}
            if env_steps >= next_eval:
                report["eval_return_mean"] = algo.evaluate()["env_runners"]["episode_return_mean"]
                next_eval += task.eval_every
            tune.report(report)
            if env_steps >= task.env_steps:
                break
        algo.stop()

    stopper = solved_stopper(task, launch, result_file, evaluated=lambda result: "eval_return_mean" in result, marks=marks)
    ray.init(address="local", num_cpus=CONCURRENCY, include_dashboard=False, log_to_driver=False)
    tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune.TuneConfig(
            metric="return_mean",
            mode="max",
            num_samples=task.trials,
            search_alg=OptunaSearch(seed=seed),
            scheduler=AsyncHyperBandScheduler(time_attr="env_steps", max_t=task.env_steps, grace_period=task.grace,
                                              reduction_factor=REDUCTION),
        ),
        run_config=tune.RunConfig(name=f"solve-raw-{seed}", storage_path=str(storage), stop=stopper, verbose=0),
    ).fit()
    stopper.finish()


def run_zoo(task: Task, seed: int, launch: float, result_file: Path, storage: Path, cap_s: float) -> None:
    sys.path.insert(0, str(HERE))
    import _zoo

    # The harness ends a side with SIGTERM at the cap: exit through run_zoo's cleanup, which stops rl_zoo3.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    python = _zoo.ensure_venv(HERE / ".zoo-venv")
    called = time.time()  # run_zoo times from its own launch of rl_zoo3, right after this
    outcome = _zoo.run_zoo(
        python, algo=task.algorithm.lower(), env=task.env, seed=seed, trials=task.trials, jobs=CONCURRENCY,
        env_steps=task.env_steps, eval_every=task.eval_every, eval_episodes=EVAL_EPISODES, solved_at=task.solved_at,
        cap_s=cap_s, workdir=storage,
    )
    result_file.write_text(json.dumps({
        "time_s": called - launch + outcome["time_s"] if outcome["solved"] else time.time() - launch,
        "solved": outcome["solved"], "env_steps": outcome["env_steps"],
        "evaluations": [{"t": e["time_s"], "trial": e["trial"], "env_steps": e["timesteps"], "mean": e["mean"]}
                        for e in outcome["evaluations"]],
    }, default=str))


# --- the harness ------------------------------------------------------------------------------------


class _CpuMeter:
    """CPU seconds a side's processes used, by kind, read from /proc once a second while the side runs:
    where the CPU goes (the side's own driver, the trial workers, Ray's own processes) and how much of the
    machine the side got beside other work. Each process counts at its last reading; one that lives less
    than a second can be missed."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, root: int) -> None:
        self.root, self.cpu = root, {root: 0.0}
        self.kinds: dict[int, tuple[str, str]] = {root: ("", "driver")}  # pid -> (its name then, its kind)

    @staticmethod
    def _kind(pid: int, comm: str) -> str:
        if comm.startswith("ray::"):  # Ray's worker processes name themselves after what they run
            return "Ray's own processes" if comm.startswith(("ray::Dashboard", "ray::RuntimeEnv")) else "trial workers"
        if comm in ("raylet", "gcs_server"):
            return "Ray's own processes"
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                return "Ray's own processes" if b"/ray/" in cmdline.read() else "other"
        except OSError:
            return "other"

    def poll(self) -> None:
        stats: dict[int, tuple[str, int, float]] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat") as stat:
                    text = stat.read()
            except OSError:
                continue
            fields = text[text.rindex(")") + 2:].split()
            stats[int(entry.name)] = (text[text.index("(") + 1:text.rindex(")")], int(fields[1]),
                                      (int(fields[11]) + int(fields[12])) / self.TICK)
        for pid, (comm, _, cpu) in stats.items():
            ancestor = pid
            while ancestor in stats and ancestor != self.root and ancestor > 1:
                ancestor = stats[ancestor][1]
            if ancestor != self.root:
                continue
            # Classified again when its name changes: a Ray worker starts as Ray's default_worker.py and
            # renames itself "ray::<what it runs>".
            if pid != self.root and self.kinds.get(pid, ("",))[0] != comm:
                self.kinds[pid] = (comm, self._kind(pid, comm))
            self.cpu[pid] = cpu

    def by_kind(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for pid, cpu in self.cpu.items():
            kind = self.kinds[pid][1]
            totals[kind] = round(totals.get(kind, 0.0) + cpu, 1)
        return totals


def one_run(task_name: str, side: str, seed: int, cap_s: float, scratch: Path) -> dict[str, Any]:
    result_file = scratch / f"{side}-{seed}.json"
    # rlsweep keeps a trial's memory reading between commands: each run starts with none (a new user's
    # first sweep), except ``rlsweep-warm``'s, which share one (a user who ran the spec before; its first
    # seed measures).
    readings = scratch / ("readings-warm" if side == "rlsweep-warm" else f"readings-{side}-{seed}")
    env = {**os.environ, "BENCH_LAUNCH": repr(time.time()), "RLSWEEP_CACHE_DIR": str(readings)}
    command = [sys.executable, str(Path(__file__).resolve()), "--task", task_name, "--run-side", side, "--seed", str(seed),
               "--result", str(result_file), "--storage", str(scratch / f"{side}-{seed}"), "--cap-s", str(cap_s)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    start = time.time()
    meter, last_poll = _CpuMeter(process.pid), 0.0
    while process.poll() is None:
        if time.time() - last_poll >= 1.0:
            meter.poll()
            last_poll = time.time()
        if result_file.exists() and json.loads(result_file.read_text() or "{}").get("solved"):
            # Solved: the side stops its sweep itself; give it a moment, then end what is left.
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            break
        # The Tune sides write their progress as they go and are ended here at the cap; rl-zoo3's side stops
        # its search at the cap itself and then writes what it saw, which takes a few seconds more.
        if time.time() - start > cap_s + (30 if side == "zoo" else 0):
            break
        time.sleep(0.2)
    meter.poll()
    wall_s = time.time() - start
    if process.poll() is None:
        # SIGTERM first: rl-zoo3's side then stops the rl_zoo3 process it started in a session of its own,
        # which a SIGKILL to the side's group would leave running (and taking CPU from the next sides).
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if not result_file.exists():
        return {"side": side, "seed": seed, "solved": False, "time_s": cap_s, "env_steps": None,
                "error": (process.stderr.read() or "")[-2000:]}
    run = {"side": side, "seed": seed, **json.loads(result_file.read_text()),
           "cpu_s": meter.by_kind(), "wall_s": round(wall_s, 1)}
    if not run["solved"]:
        run["time_s"] = max(run["time_s"], min(time.time() - start, cap_s))  # unsolved: the time it ran
    return run


def _startup_phases(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Median seconds of each step from launch to the first trial's first result: the side's imports, its
    own checks of the spec (rlsweep's pre-flight, with Ray's start beside it; none by hand), then until a
    trial starts (Ray's start where the side did not start it already, rlsweep's cluster and memory checks,
    Tune's scheduling, the trial process's start and imports: the rest), the trial's setup (its algorithm
    built) and its first iteration. From the marks each side's own process recorded. Both sides' trials are
    function trainables, whose function Tune starts in the first ``train()`` call: the first result's
    ``time_this_iter_s`` covers the setup too, so the first iteration is it less the setup. (Before
    2026-11-29 this subtracted the setup twice: the "until a trial starts" it printed was short by the
    setup, and its "first iteration" included it.)"""
    rows = []
    for run in runs:
        marks = run.get("startup", {})
        first = (marks.get("first_result_s") or [None])[0]
        setup = (marks.get("trial_setup_s") or [math.nan])[0]
        iteration = (marks.get("trial_first_iteration_s") or [math.nan])[0]
        if first is None or "imported_s" not in marks:
            continue
        checked = marks.get("spec_checked_s", marks["imported_s"])
        rows.append({"imports": marks["imported_s"], "spec checks": checked - marks["imported_s"],
                     "until a trial starts": first - checked - iteration, "trial setup": setup,
                     "first iteration": iteration - setup, "first result": first})
    if not rows:
        return {}
    return {name: round(statistics.median(r[name] for r in rows), 2) for name in rows[0]}


def commit() -> str:
    """The commit measured, ``+dirty`` where the work tree differs from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    return git("rev-parse", "HEAD") + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def versions() -> dict[str, str]:
    from importlib.metadata import version

    found = {name: version(name) for name in ("ray", "torch", "optuna", "gymnasium", "numpy")}
    zoo = (HERE / "zoo-requirements.txt").read_text().split()
    found.update({line.split("==")[0]: line.split("==")[1] for line in zoo if line.startswith(("rl_zoo3==", "stable_baselines3=="))})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=sorted(TASKS), default="cartpole")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=["rlsweep", "raw-tune", "zoo"])
    parser.add_argument("--cap-s", type=float, default=600.0)
    parser.add_argument("--condition", default="quiet",
                        help="what else ran on the machine, kept in the results file (e.g. 'busy loops: one nice 10 busy loop per core')")
    parser.add_argument("--run-side", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--storage", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    task = TASKS[args.task]
    if args.run_side:
        launch = float(os.environ["BENCH_LAUNCH"])
        if args.run_side.startswith("rlsweep"):
            lever = args.run_side.partition("-")[2] or None
            run_rlsweep(task, args.seed, launch, args.result, args.storage, lever)
        elif args.run_side == "raw-tune":
            run_raw_tune(task, args.seed, launch, args.result, args.storage)
        else:
            run_zoo(task, args.seed, launch, args.result, args.storage, args.cap_s)
        return

    measured = commit()  # at the start: the tree may change while the sides run
    load_before = os.getloadavg()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="time-to-solve-") as tmp:
        for index, seed in enumerate(args.seeds):
            order = args.sides[index % len(args.sides):] + args.sides[: index % len(args.sides)]
            for side in order:
                run = one_run(args.task, side, seed, args.cap_s, Path(tmp))
                runs.append(run)
                run["best_eval"] = max((e["mean"] for e in run.get("evaluations", [])), default=None)
                state = "solved" if run["solved"] else "NOT solved"
                print(f"seed {seed}: {side:14s} {state:10s} at {run['time_s']:7.1f} s, env steps {run['env_steps']}, "
                      f"best evaluation {run['best_eval']}", flush=True)

    summary = {}
    print(f"\n{task.algorithm} on {task.env}: {task.trials} trials, {CONCURRENCY} at a time, {task.env_steps} env steps each, "
          f"{EVAL_EPISODES} deterministic evaluation episodes every {task.eval_every}; solved at a mean >= {task.solved_at:g}; "
          f"unsolved runs count as the cap ({args.cap_s:.0f} s); seeds {args.seeds}")
    for side in args.sides:
        # Unsolved counts as the cap, as the header says, also for a sweep that ran out of trials before it.
        times = [r["time_s"] if r["solved"] else max(r["time_s"], args.cap_s) for r in runs if r["side"] == side]
        solved = sum(r["solved"] for r in runs if r["side"] == side)
        bests = [r["best_eval"] for r in runs if r["side"] == side and r["best_eval"] is not None]
        firsts = [r["startup"]["first_result_s"][0] for r in runs if r["side"] == side and r.get("startup", {}).get("first_result_s")]
        setups = [t for r in runs if r["side"] == side for t in r.get("startup", {}).get("trial_setup_s", []) if t == t]
        phases = _startup_phases([r for r in runs if r["side"] == side])
        metered = [r for r in runs if r["side"] == side and r.get("cpu_s") and r.get("wall_s")]
        kinds = sorted({k for r in metered for k in r["cpu_s"]})
        cpu = {"cores_used": round(statistics.median(sum(r["cpu_s"].values()) / r["wall_s"] for r in metered), 2),
               "share_by_kind": {k: round(statistics.median(r["cpu_s"].get(k, 0.0) / sum(r["cpu_s"].values()) for r in metered), 3)
                                 for k in kinds}} if metered else {}
        summary[side] = {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
                         "solved": solved, "runs": len(times),
                         "median_best_eval": statistics.median(bests) if bests else None,
                         "median_first_result_s": statistics.median(firsts) if firsts else None,
                         "median_trial_setup_s": statistics.median(setups) if setups else None,
                         "median_startup_phases_s": phases, "median_cpu": cpu}
        start_up = (f"  first result at {summary[side]['median_first_result_s']} s, a trial's setup {summary[side]['median_trial_setup_s']} s"
                    if firsts else "")
        print(f"{side:14s} median {summary[side]['median_s']:7.1f} s  (min {min(times):6.1f}, max {max(times):6.1f})  "
              f"solved {solved}/{len(times)}  median best evaluation {summary[side]['median_best_eval']}{start_up}")
        if cpu:
            print(f"{'':14s} CPU (medians): {cpu['cores_used']} cores of {os.cpu_count()}; "
                  + ", ".join(f"{k} {v:.0%}" for k, v in cpu["share_by_kind"].items()))
        if phases:
            print(f"{'':14s} start-up by phase (medians, s): " + ", ".join(f"{k} {v}" for k, v in phases.items()))
    if "rlsweep" in summary:
        for side in summary:
            if side != "rlsweep":
                print(f"rlsweep / {side}: {summary['rlsweep']['median_s'] / summary[side]['median_s']:.2f} (ratio of medians)")

    out = HERE / "results" / f"time_to_solve-{args.task}-{dt.datetime.now():%Y-%m-%dT%H%M}.json"  # one file per run
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "commit": measured,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "condition": args.condition, "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "versions": versions(),
        "setup": {"task": args.task, **asdict(task), "concurrency": CONCURRENCY, "eval_episodes": EVAL_EPISODES,
                  "cap_s": args.cap_s},
        "summary": summary,
        "runs": runs,
    }, indent=1, default=str))
    print(f"\nwritten to {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
