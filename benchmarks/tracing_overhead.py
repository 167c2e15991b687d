"""What tracing costs a trial: the same sweep with ``tracing`` off and on, side by side in one run.

Each round runs one sweep of PPO on CartPole-v1 (a grid of 2 learning rates, fixed training seeds, 2 at a
time, a checkpoint every 2,000 env steps) with tracing off and with ``tracing: {to: mlflow}`` into a real
``mlflow server`` on 127.0.0.1, in alternating order, on one shared Ray runtime. The unit compared is what
a trial spends per iteration (``iteration_time_s``, the interval the spans are made from) and the trial's
whole wall time; the result is the ratio on/off of the medians, per round and over all rounds.

    .venv/bin/python benchmarks/tracing_overhead.py [--rounds 3] [--env-steps 10000]

Results: ``benchmarks/results/tracing_overhead-<date>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
LRS = [3e-4, 1e-3]


def start_server(root: Path) -> tuple[subprocess.Popen, str]:
    """``rlsweep ui`` (an ``mlflow server``) on a fresh store; returns the process and its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "rlsweep.cli", "ui", "--tracking-uri", f"sqlite:///{root / 'store.db'}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if match := re.search(r"http://127\.0\.0\.1:\d+", line):
            return process, match.group(0)
    raise SystemExit("the MLflow server did not start")


def sweep(storage: Path, env_steps: int, tracing: dict | None, server: str, tag: str) -> dict:
    import rlsweep

    document = {
        "name": f"tracing-{tag}",
        "algorithm": "PPO",
        "env": "CartPole-v1",
        "config": {"training.train_batch_size": 1000, "training.minibatch_size": 250, "training.num_epochs": 2,
                   "debugging.seed": 0},
        "search_space": {"training.lr": {"grid": LRS}},
        "searcher": "grid",
        "scheduler": "fifo",
        "budget": {"env_steps": env_steps, "trials": len(LRS), "max_concurrent": 2},
        "checkpoint": {"every_env_steps": 2000, "keep": 1},
        "storage": str(storage),
        "mlflow": {"tracking_uri": server, "experiment": "tracing-overhead", "export": False},
    }
    if tracing is not None:
        document["tracing"] = tracing
    start = time.perf_counter()
    result = rlsweep.run(rlsweep.load_spec(document), verbose=0)
    wall = time.perf_counter() - start
    table = rlsweep.load(result.path)
    iterations = [r["iteration_time_s"] for t in table.trials for r in t.rows]
    trial_s = [t.rows[-1]["time_total_s"] for t in table.trials]
    return {"wall_s": wall, "iteration_s": iterations, "trial_s": trial_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--env-steps", type=int, default=10_000)
    args = parser.parse_args()

    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    started = dt.datetime.now()
    rounds = []
    with tempfile.TemporaryDirectory(prefix="rlsweep-tracing-") as scratch:
        server, url = start_server(Path(scratch))
        try:
            for index in range(args.rounds):
                order = ("off", "on") if index % 2 == 0 else ("on", "off")
                measured = {}
                for side in order:
                    tracing = {"to": "mlflow"} if side == "on" else None
                    measured[side] = sweep(Path(scratch) / "results", args.env_steps, tracing, url, f"{side}-{index}")
                ratio = statistics.median(measured["on"]["iteration_s"]) / statistics.median(measured["off"]["iteration_s"])
                trial_ratio = statistics.median(measured["on"]["trial_s"]) / statistics.median(measured["off"]["trial_s"])
                print(f"round {index}: median iteration on/off {ratio:.3f}, trial time on/off {trial_ratio:.3f}", flush=True)
                rounds.append({"order": order, **measured, "iteration_ratio": ratio, "trial_ratio": trial_ratio})
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)
    pooled = {side: [x for r in rounds for x in r[side]["iteration_s"]] for side in ("off", "on")}
    report = {
        "benchmark": "tracing_overhead",
        "started": started.isoformat(),
        "settings": vars(args),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "versions": {p: metadata.version(p) for p in ("ray", "torch", "mlflow", "opentelemetry-sdk")},
        "rounds": rounds,
        "median_iteration_s": {side: statistics.median(v) for side, v in pooled.items()},
        "iteration_ratio_median_of_rounds": statistics.median(r["iteration_ratio"] for r in rounds),
        "trial_ratio_median_of_rounds": statistics.median(r["trial_ratio"] for r in rounds),
    }
    out = HERE / "results" / f"tracing_overhead-{started:%Y-%m-%dT%H%M}.json"
    out.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: report[k] for k in ("median_iteration_s", "iteration_ratio_median_of_rounds", "trial_ratio_median_of_rounds")}))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
