"""A sweep of many short real RLlib trials: does anything grow that should not?

One sweep of up to ``--trials`` PPO-on-CartPole trials (``--iterations`` iterations of ``--batch`` env steps
each, random search over the learning rate, FIFO, 2 at a time, one checkpoint per trial at its end), capped
at ``--cap-s`` seconds of wall clock (``budget.time_s``: the sweep starts no trial after it), then the
readers on the directory it wrote. Recorded:

- while it runs, every ``--sample-s`` seconds: the driver's resident memory (Ray issue #64231 reports
  Tune's driver growing linearly with trials), the trials started, the experiment directory's size;
- the size of each trial's files, per kind (``result.json`` per iteration, Tune's CSV and TensorBoard logs,
  checkpoints) and of Tune's experiment state;
- the time of ``load(DIR)``, ``.table()`` and ``.best()`` (median of 3), and of a full MLflow export into a
  fresh SQLite store, then of a second, idempotent export;
- the same reads and export at the goals' size, 1,000 trials x 20 iterations, on a directory made from
  this sweep's real rows (``replicate``), whatever number of trials fitted in the time cap.

Goals (issue: scale): driver memory at most +10% from trial 100 to the end; ``table()`` under 2 s and an
export of 1,000 trials x 20 iterations under 60 s. Results go to ``benchmarks/results/scale-<date>.json``.

    .venv/bin/python benchmarks/scale.py [--trials 1000] [--iterations 20] [--cap-s 1800]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))


def rss_mb(pid: int | str = "self") -> float:
    """Resident memory of a process, from /proc."""
    pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def dir_size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def document(args: argparse.Namespace, storage: Path) -> dict[str, Any]:
    return {
        "name": "scale",
        "algorithm": "PPO",
        "env": "CartPole-v1",
        "config": {
            "training.train_batch_size": args.batch,
            "training.minibatch_size": args.batch // 2,
            "training.num_epochs": 1,
            "env_runners.num_envs_per_env_runner": 1,
            "rl_module.model_config.fcnet_hiddens": [16],
        },
        "search_space": {"training.lr": {"loguniform": [1.0e-4, 1.0e-2]}},
        "searcher": {"name": "random", "seed": 0},
        "scheduler": "fifo",
        "budget": {
            "env_steps": args.batch * args.iterations,
            "trials": args.trials,
            "max_concurrent": 2,
            "time_s": args.cap_s,
        },
        "checkpoint": {"every_env_steps": args.batch * args.iterations, "keep": 1},
        "metric": {"name": "return_mean", "mode": "max"},
        "storage": str(storage),
        "mlflow": None,
        **({"report": {"rllib_keys": args.rllib_keys}} if args.rllib_keys is not None else {}),
    }


class Sampler(threading.Thread):
    """Samples the driver's memory, the trials started and the directory's size while the sweep runs."""

    def __init__(self, storage: Path, every_s: float) -> None:
        super().__init__(daemon=True)
        self.storage, self.every_s = storage, every_s
        self.samples: list[dict[str, float]] = []
        self.start_time = time.monotonic()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.every_s):
            experiments = [p for p in self.storage.iterdir() if p.is_dir()] if self.storage.exists() else []
            trials = sum(1 for e in experiments for p in e.iterdir() if p.name.startswith("train_"))
            self.samples.append({
                "t_s": round(time.monotonic() - self.start_time, 1),
                "driver_rss_mb": round(rss_mb(), 1),
                "trials_started": trials,
                "dir_mb": round(sum(dir_size(e) for e in experiments) / 2**20, 2),
            })


def file_kinds(root: Path) -> dict[str, dict[str, float]]:
    """Bytes per kind of file across the trials, and per trial."""
    sizes: dict[str, list[int]] = defaultdict(list)
    rows_per_trial = []
    trials = [p for p in root.iterdir() if p.is_dir() and p.name.startswith("train_")]
    for trial in trials:
        per: dict[str, int] = defaultdict(int)
        for path in trial.rglob("*"):
            if not path.is_file():
                continue
            if "checkpoint_" in str(path.relative_to(trial)):
                kind = "checkpoints"
            elif path.name.startswith("events.out.tfevents"):
                kind = "tensorboard"
            else:
                kind = path.name
            per[kind] += path.stat().st_size
        for kind, size in per.items():
            sizes[kind].append(size)
        result = trial / "result.json"
        if result.exists():
            rows_per_trial.append(sum(1 for _ in result.open()))
    out = {
        kind: {"total_mb": round(sum(v) / 2**20, 2), "median_per_trial_kb": round(statistics.median(v) / 1024, 1)}
        for kind, v in sorted(sizes.items())
    }
    rows = sum(rows_per_trial)
    if rows and "result.json" in sizes:
        out["result.json"]["bytes_per_row"] = round(sum(sizes["result.json"]) / rows)
    states = sorted(root.glob("experiment_state-*.json"))
    out["experiment_state"] = {"total_mb": round(sum(p.stat().st_size for p in states) / 2**20, 2)}
    return out


def replicate(root: Path, into: Path, trials: int, iterations: int) -> Path:
    """An experiment directory of ``trials`` x ``iterations`` made from the real sweep's rows (its trials
    cycled under new ids, each trial's rows cycled to ``iterations`` at growing env steps): the size the
    goals name, with the rows and settings a real trial writes."""
    import shutil

    from rlsweep import store

    into.mkdir(parents=True)
    for name in (store.SPEC_FILE, store.SWEEP_FILE):
        shutil.copy(root / name, into / name)
    sources = sorted(p for p in root.iterdir() if p.is_dir() and (p / store.RESULT_FILE).exists())
    for index in range(trials):
        source = sources[index % len(sources)]
        rows = [json.loads(line) for line in (source / store.RESULT_FILE).read_text().splitlines() if line.strip()]
        step = rows[0]["env_steps"]
        trial_id = f"{index:08x}"
        target = into / f"train_{trial_id}_{index:05d}_copy"
        target.mkdir()
        for name in (store.PARAMS_FILE, store.TRIAL_FILE):
            if (source / name).exists():
                shutil.copy(source / name, target / name)
        with (target / store.RESULT_FILE).open("w") as out:
            for i in range(iterations):
                row = dict(rows[i % len(rows)], trial_id=trial_id, env_steps=step * (i + 1), iteration=i + 1)
                out.write(json.dumps(row) + "\n")
    return into


def timed(call, repeat: int = 3) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--batch", type=int, default=100, help="env steps per iteration")
    parser.add_argument("--cap-s", type=float, default=1800.0)
    parser.add_argument("--sample-s", type=float, default=5.0)
    parser.add_argument("--rllib-keys", nargs="*", help="report.rllib_keys (default: the spec's default)")
    parser.add_argument("--goal-trials", type=int, default=1000, help="size of the replicated directory")
    parser.add_argument("--goal-iterations", type=int, default=20)
    parser.add_argument("--keep", help="keep the experiment directory here instead of a temporary folder")
    args = parser.parse_args()

    import rlsweep
    from importlib import metadata

    started = dt.datetime.now()
    out_file = HERE / "results" / f"scale-{started:%Y-%m-%dT%H%M}.json"
    with tempfile.TemporaryDirectory(prefix="rlsweep-scale-") as scratch:
        storage = Path(args.keep or scratch) / "results"
        spec = rlsweep.load_spec(document(args, storage))
        sampler = Sampler(storage, args.sample_s)
        sampler.start()
        start = time.perf_counter()
        result = rlsweep.run(spec, verbose=0)
        sweep_s = time.perf_counter() - start
        sampler.done.set()
        sampler.join()
        root = result.path

        load_s, swept = timed(lambda: rlsweep.load(root))
        table_s, table = timed(swept.table)
        best_s, _ = timed(swept.best)
        trials = len(table)
        iterations = int(table["iterations"].sum())

        from rlsweep.analysis import load

        tracking = f"sqlite:///{Path(scratch) / 'mlflow.db'}"
        start = time.perf_counter()
        load(root).to_mlflow(tracking_uri=tracking, experiment="scale")
        export_s = time.perf_counter() - start
        start = time.perf_counter()
        load(root).to_mlflow(tracking_uri=tracking, experiment="scale")
        export_again_s = time.perf_counter() - start

        # The goals' size, 1,000 trials x 20 iterations, from this sweep's real rows (--goal-trials 0: skip).
        big_load_s = big_table_s = big_best_s = big_export_s = math.nan
        if args.goal_trials:
            big = replicate(root, Path(scratch) / "replicated" / "scale", args.goal_trials, args.goal_iterations)
            big_load_s, big_sweep = timed(lambda: load(big))
            big_table_s, _ = timed(big_sweep.table)
            big_best_s, _ = timed(big_sweep.best)
            start = time.perf_counter()
            load(big).to_mlflow(tracking_uri=f"sqlite:///{Path(scratch) / 'big.db'}", experiment="scale")
            big_export_s = time.perf_counter() - start

        samples = sampler.samples
        at_100 = next((s for s in samples if s["trials_started"] >= 100), None)
        end = samples[-1] if samples else None
        growth = (end["driver_rss_mb"] / at_100["driver_rss_mb"] - 1) if at_100 and end else None
        per_trial_kb = None
        if at_100 and end and end["trials_started"] > at_100["trials_started"]:
            per_trial_kb = (end["driver_rss_mb"] - at_100["driver_rss_mb"]) * 1024 / (end["trials_started"] - at_100["trials_started"])
        report = {
            "benchmark": "scale",
            "started": started.isoformat(),
            "settings": vars(args),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "versions": {p: metadata.version(p) for p in ("ray", "torch", "mlflow", "pandas")},
            "trials": trials,
            "iterations": iterations,
            "sweep_s": round(sweep_s, 1),
            "trials_per_min": round(trials / sweep_s * 60, 1),
            "driver_rss_mb": {
                "at_trial_100": at_100["driver_rss_mb"] if at_100 else None,
                "end": end["driver_rss_mb"] if end else None,
                "growth_from_trial_100": round(growth, 3) if growth is not None else None,
                "kb_per_trial_after_100": round(per_trial_kb, 1) if per_trial_kb is not None else None,
                "max": max(s["driver_rss_mb"] for s in samples) if samples else None,
            },
            "experiment_dir_mb": round(dir_size(root) / 2**20, 1),
            "files": file_kinds(root),
            "load_s": round(load_s, 3),
            "table_s": round(table_s, 3),
            "best_s": round(best_s, 3),
            "export_s": round(export_s, 1),
            "export_again_s": round(export_again_s, 1),
            "goal_size": {
                "trials": args.goal_trials,
                "iterations": args.goal_iterations,
                "load_s": round(big_load_s, 3),
                "table_s": round(big_table_s, 3),
                "load_and_table_s": round(big_load_s + big_table_s, 3),
                "best_s": round(big_best_s, 3),
                "export_s": round(big_export_s, 1),
            },
            "samples": samples,
        }
    out_file.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}, indent=1))
    print(f"results: {out_file}")


if __name__ == "__main__":
    main()
