"""How long ``rlsweep export`` takes for one long trial: a trial of ``--rows`` result rows (the issue's case: a
resumed sweep's closing export of a 30,002-row ``result.json``) into a new SQLite store, from the command's
launch to its exit, at two commits side by side.

Each commit runs from a checkout of its own (``--checkout NAME=PATH``, e.g. a ``git worktree`` of an older
commit), with ``PYTHONPATH`` at it, alternating A B A B on the same experiment directory, each into a store of
its own. Results go to ``benchmarks/results/export_long_trial-<date>.json`` with each checkout's commit.

    git worktree add /tmp/before be0b0f8
    .venv/bin/python benchmarks/export_long_trial.py --checkout before=/tmp/before --checkout after=. --runs 3
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
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from export import write_experiment  # noqa: E402
from time_to_solve import versions  # noqa: E402


def _commit(checkout: Path) -> str:
    git = lambda *a: subprocess.run(["git", *a], cwd=checkout, capture_output=True, text=True).stdout.strip()  # noqa: E731
    return git("rev-parse", "HEAD") + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", action="append", required=True, help="NAME=PATH of a checkout to time")
    parser.add_argument("--rows", type=int, default=30_002)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    checkouts = {name: Path(path).resolve() for name, _, path in (c.partition("=") for c in args.checkout)}
    runs = []
    with tempfile.TemporaryDirectory(prefix="export-long-") as tmp:
        experiment = write_experiment(Path(tmp), 1, args.rows)
        for index in range(args.runs):
            for name, checkout in checkouts.items():
                uri = f"sqlite:///{Path(tmp) / f'{name}-{index}.db'}"
                start = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-m", "rlsweep.cli", "export", str(experiment), "--tracking-uri", uri],
                    cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)}, capture_output=True, text=True,
                )
                seconds = time.perf_counter() - start
                runs.append({"side": name, "run": index, "seconds": round(seconds, 2), "exit": done.returncode,
                             "stderr_tail": done.stderr[-300:]})
                print(f"{name} run {index}: {seconds:.1f} s, exit {done.returncode}", flush=True)
    summary = {name: {"median_s": statistics.median(r["seconds"] for r in runs if r["side"] == name),
                      "runs_s": [r["seconds"] for r in runs if r["side"] == name]} for name in checkouts}
    out = HERE / "results" / f"export_long_trial-{dt.datetime.now():%Y-%m-%dT%H%M}.json"
    out.write_text(json.dumps({
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "what": f"rlsweep export of one trial of {args.rows:,} rows into a new SQLite store, launch to exit",
        "commits": {name: _commit(path) for name, path in checkouts.items()},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_average": os.getloadavg()},
        "versions": versions(),
        "summary": summary,
        "runs": runs,
    }, indent=1))
    print(json.dumps(summary), f"\nwritten to {out.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
