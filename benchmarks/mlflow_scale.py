"""What a sweep of thousands of trials costs in MLflow: ``rlsweep export`` into SQLite and into an MLflow
server, ``mlflow.search_runs`` on the experiment, and the MLflow UI's experiment and parent-run pages in
headless Chromium.

The directories are made as ``readers_scale.py`` makes them (``--source``: any experiment folder a sweep
wrote, each trial's rows cycled to ``--iterations`` rows under new trial ids). Each export goes into a fresh
store, then runs again (nothing new to write: what a re-export after a crash or a later ``rlsweep export``
costs). The export gives child runs to the best ``mlflow.trial_runs`` trials (200 by default; ``--trial-runs``)
and every trial a row of the parent run's ``trials.csv``. The server is ``rlsweep ui``'s (``mlflow server`` on
127.0.0.1 over a SQLite store). A page counts as open when its text shows the sweep's parent run (the
experiment page) or the run's ``trials.csv`` artifact (the run's artifacts page).

Goals (issue: 10,000-trial scale): each export at most 60 s, ``search_runs`` in seconds, each page open in
at most 3 s.

    .venv/bin/python benchmarks/mlflow_scale.py --source rlsweep_results/<sweep folder> [--trials 10000]

Results go to ``benchmarks/results/mlflow_scale-<date>.json`` with the commit measured.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from readers_scale import _commit, _source_setup  # noqa: E402
from scale import replicate  # noqa: E402

EXPERIMENT = "scale"


def export(root: Path, uri: str, trial_runs: str | None) -> dict[str, Any]:
    """``rlsweep export`` in a fresh process, as a user runs it: wall seconds and its last line."""
    extra = ["--trial-runs", trial_runs] if trial_runs else []
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rlsweep.cli", "export", str(root), "--tracking-uri", uri,
                           "--experiment", EXPERIMENT, *extra], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"rlsweep export exited {done.returncode}: {done.stderr[-2000:]}")
    return {"wall_s": round(wall, 2), "said": done.stdout.strip().splitlines()[-1]}


def search(uri: str) -> dict[str, Any]:
    """``mlflow.search_runs`` of the experiment (every run, as a DataFrame), in this process."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    start = time.perf_counter()
    frame = mlflow.search_runs(experiment_names=[EXPERIMENT])
    return {"wall_s": round(time.perf_counter() - start, 2), "runs": len(frame)}


def start_server(store: Path) -> tuple[subprocess.Popen, str]:
    from rlsweep.analysis._ui import free_port

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "rlsweep.cli", "ui", "--tracking-uri", f"sqlite:///{store}", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    deadline, line = time.monotonic() + 180, ""
    while time.monotonic() < deadline and "MLflow UI" not in line:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            raise SystemExit("rlsweep ui exited before printing its address")
    found = re.search(r"http://127\.0\.0\.1:\d+", line)
    if found is None:
        raise SystemExit(f"no address in {line!r}")
    return process, found.group(0)


def pages(server: str, name: str) -> dict[str, Any]:
    """Seconds until the experiment page shows the sweep's run, and until the parent run's artifacts page
    shows its trials.csv; each opened twice (a cold and a warm browser cache)."""
    import shutil

    from mlflow import MlflowClient
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    client = MlflowClient(tracking_uri=server)
    experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
    (parent,) = client.search_runs([experiment], "tags.`rlsweep.kind` = 'sweep'")
    options = Options()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1600,1000"):
        options.add_argument(argument)
    options.binary_location = shutil.which("chromium")
    browser = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    body = lambda b: b.find_element(By.TAG_NAME, "body").text  # noqa: E731
    out: dict[str, Any] = {}
    try:
        for key, url, shown in (
            ("experiment_page", f"{server}/#/experiments/{experiment}/runs", lambda b: name in body(b)),
            ("run_page", f"{server}/#/experiments/{experiment}/runs/{parent.info.run_id}/artifacts",
             lambda b: "trials.csv" in body(b)),
        ):
            times = []
            for _ in range(2):
                browser.get("about:blank")
                start = time.perf_counter()
                browser.get(url)
                WebDriverWait(browser, 120, poll_frequency=0.05).until(shown)
                times.append(round(time.perf_counter() - start, 2))
            out[key] = {"cold_s": times[0], "warm_s": times[1]}
    finally:
        browser.quit()
    return out


def measure(root: Path, scratch: Path, trial_runs: str | None) -> dict[str, Any]:
    import rlsweep

    name = rlsweep.load(root).spec.name  # also writes the rows index, as any first read does
    out: dict[str, Any] = {}
    sqlite = f"sqlite:///{scratch / 'export.db'}"
    out["sqlite_export"] = export(root, sqlite, trial_runs)
    out["sqlite_export_again"] = export(root, sqlite, trial_runs)
    out["sqlite_search_runs"] = search(sqlite)
    print(json.dumps(out), flush=True)
    process, server = start_server(scratch / "server.db")
    try:
        out["server_export"] = export(root, server, trial_runs)
        out["server_export_again"] = export(root, server, trial_runs)
        out["server_search_runs"] = search(server)
        out.update(pages(server, name))
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="an experiment folder a sweep wrote")
    parser.add_argument("--trials", type=int, nargs="+", default=[10_000])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--trial-runs", help="passed to rlsweep export (default: the spec's, 200)")
    parser.add_argument("--scratch", type=Path, help="make the directories here (kept; reused when present)")
    parser.add_argument("--condition", default="quiet", help="what else the machine ran, for the record")
    args = parser.parse_args()
    from importlib import metadata

    started = dt.datetime.now()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="rlsweep-mlflow-") as temporary:
        scratch = args.scratch or Path(temporary)
        for trials in args.trials:
            root = scratch / f"readers-{trials}x{args.iterations}"
            if not root.exists():
                replicate(args.source, root, trials, args.iterations)
            stores = Path(tempfile.mkdtemp(prefix=f"stores-{trials}-", dir=temporary))
            results[str(trials)] = measure(root, stores, args.trial_runs)
            print(trials, json.dumps(results[str(trials)]), flush=True)
    out = HERE / "results" / f"mlflow_scale-{started:%Y-%m-%dT%H%M}.json"
    out.write_text(json.dumps({
        "benchmark": "mlflow_scale",
        "started": started.isoformat(),
        **_commit(),
        "condition": args.condition,
        "source": {"path": str(args.source), **_source_setup(args.source)},
        "iterations": args.iterations,
        "trial_runs": args.trial_runs or "spec default (200)",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "versions": {p: metadata.version(p) for p in ("mlflow", "ray", "pandas")},
        "goals": {"export_s": 60, "page_s": 3},
        "results": results,
    }, indent=1) + "\n")
    print(f"results: {out}")


if __name__ == "__main__":
    main()
