"""MLflow logging cost: rlsweep's batched export and live logger against MLflow's and Ray's per-call logging.

Part 1, export: writes a 200-trial x 100-iteration experiment directory in Tune's layout (result rows with
rlsweep's metric names, values synthetic), then times ``rlsweep export`` into a fresh SQLite store against
logging the same rows with MLflow's per-call ``MlflowClient.log_metric``. Per-call logging of all 200 trials
takes too long to wait for, so it runs on ``--per-call-trials`` trials and is scaled linearly to 200 (the
cost per value does not fall with more runs); the script says so in its output.

Part 2, live logging: a function trainable that only reports (rlsweep's metric names, no RLlib), run
through Tune three ways in one process on one Ray runtime: no logger, Ray's ``MLflowLoggerCallback``, and
rlsweep's live logger. Prints results per second of each.

    .venv/bin/python benchmarks/export.py [--trials 200] [--iterations 100] [--per-call-trials 5]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import tempfile
import time
from pathlib import Path

import yaml

from rlsweep.metrics import NORMALIZED_METRICS


def _row(trial: int, i: int, start: float) -> dict:
    row = {name: math.sin(trial + i) * 100 + i for name in NORMALIZED_METRICS}
    row.update(env_steps=(i + 1) * 1000, iteration=i + 1, timestamp=int(start + i), episodes=10 * i)
    row["hp/training.lr"] = 1e-4 * (1 + trial % 7)
    return row


def write_experiment(root: Path, trials: int, iterations: int) -> Path:
    spec = {
        "name": "export-bench",
        "algorithm": "PPO",
        "env": "CartPole-v1",
        "search_space": {"training.lr": {"loguniform": [1.0e-5, 1.0e-2]}},
        "searcher": {"name": "random"},
        "scheduler": "fifo",
        "budget": {"env_steps": iterations * 1000, "trials": trials},
    }
    path = root / "export-bench"
    path.mkdir(parents=True)
    (path / "rlsweep_spec.yaml").write_text(yaml.safe_dump(spec))
    (path / "rlsweep.json").write_text(json.dumps({"sweep_id": "bench", "name": "export-bench"}))
    start = time.time() - 3600
    for t in range(trials):
        trial = path / f"train_abcd1234_{t:05d}_{t}_lr=x"
        trial.mkdir()
        (trial / "params.json").write_text(json.dumps({"training.lr": 1e-4 * (1 + t % 7)}))
        with (trial / "result.json").open("w") as out:
            for i in range(iterations):
                out.write(json.dumps({"trial_id": f"abcd1234_{t:05d}", **_row(t, i, start)}) + "\n")
    return path


def per_call(uri: str, path: Path, trials: int) -> tuple[float, int]:
    """MLflow's per-call logging of the first ``trials`` trials: one ``log_metric`` per value."""
    from mlflow import MlflowClient

    from rlsweep.analysis import load

    sweep = load(path)
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("per-call")
    values = 0
    start = time.perf_counter()
    for trial in sweep.trials[:trials]:
        run = client.create_run(experiment, run_name=trial.trial_id)
        for key, value in trial.config.items():
            client.log_param(run.info.run_id, key, value)
        for row in trial.rows:
            for name in [*NORMALIZED_METRICS, "hp/training.lr"]:
                if name in row:
                    client.log_metric(run.info.run_id, name, float(row[name]), step=int(row["env_steps"]))
                    values += 1
        client.set_terminated(run.info.run_id)
    return time.perf_counter() - start, values


def part_export(args: argparse.Namespace, root: Path) -> None:
    from rlsweep.analysis import load

    path = write_experiment(root, args.trials, args.iterations)
    sweep = load(path)
    uri = f"sqlite:///{root / 'export.db'}"
    start = time.perf_counter()
    sweep.to_mlflow(tracking_uri=uri, experiment="batched")
    batched = time.perf_counter() - start
    start = time.perf_counter()
    sweep.to_mlflow(tracking_uri=uri, experiment="batched")
    again = time.perf_counter() - start

    per_call_s, values = per_call(f"sqlite:///{root / 'per_call.db'}", path, args.per_call_trials)
    scaled = per_call_s * args.trials / args.per_call_trials
    print(f"export of {args.trials} trials x {args.iterations} iterations "
          f"({values // args.per_call_trials} values per trial):")
    print(f"  rlsweep export (log_batch):         {batched:8.1f} s   (again, nothing new: {again:.1f} s)")
    print(f"  MLflow log_metric per value:        {per_call_s:8.1f} s for {args.per_call_trials} trials "
          f"-> {scaled:.0f} s scaled to {args.trials}")
    print(f"  ratio rlsweep / per-call:           {batched / scaled:8.4f}  ({scaled / batched:.0f}x faster)")


def _reporter(config: dict) -> None:
    from ray import tune

    start = time.time()
    for i in range(config["iterations"]):
        row = _row(config["index"], i, start)
        row.pop("timestamp")
        tune.report(row)


def part_live(args: argparse.Namespace, root: Path) -> None:
    import ray
    from ray import tune
    from ray.air.integrations.mlflow import MLflowLoggerCallback

    import rlsweep
    from rlsweep.analysis._live import live_logger

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    trials, iterations = args.live_trials, args.live_iterations
    spec = rlsweep.load_spec(
        {
            "name": "live-bench",
            "algorithm": "PPO",
            "env": "CartPole-v1",
            "budget": {"env_steps": iterations * 1000, "trials": trials},
            "mlflow": {"tracking_uri": f"sqlite:///{root / 'live.db'}", "experiment": "rlsweep-live", "live": True},
        },
        preflight=False,
    )

    def run(name: str, callbacks: list) -> float:
        start = time.perf_counter()
        tune.Tuner(
            _reporter,
            param_space={"index": tune.grid_search(list(range(trials))), "iterations": iterations},
            run_config=tune.RunConfig(name=name, storage_path=str(root / "tune"), callbacks=callbacks, verbose=0),
        ).fit()
        return trials * iterations / (time.perf_counter() - start)

    rates = {
        "no logger": run("none", []),
        "Ray MLflowLoggerCallback": run(
            "ray", [MLflowLoggerCallback(tracking_uri=f"sqlite:///{root / 'ray.db'}", experiment_name="ray")]
        ),
        "rlsweep live logger": run("rlsweep", [live_logger(spec, root / "live-bench", "live-bench")]),
    }
    ray.shutdown()
    print(f"live logging, {trials} trials x {iterations} results of {len(NORMALIZED_METRICS) + 1} metrics:")
    for name, rate in rates.items():
        print(f"  {name:28s} {rate:8.1f} results/s   ({rate / rates['no logger']:.2f} of no logger)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--per-call-trials", type=int, default=5)
    parser.add_argument("--live-trials", type=int, default=4)
    parser.add_argument("--live-iterations", type=int, default=300)
    parser.add_argument("--skip-live", action="store_true")
    args = parser.parse_args()
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory() as directory:
        part_export(args, Path(directory))
        if not args.skip_live:
            part_live(args, Path(directory))


if __name__ == "__main__":
    main()
