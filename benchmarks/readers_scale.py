"""How long rlsweep's readers take on a sweep of thousands of trials: ``load()``, ``table()`` and ``best()`` in
Python, and ``rlsweep status``, ``rlsweep best`` and ``rlsweep plot`` as a user runs them (a fresh process each,
imports included).

The directories are made from a real sweep's trial folders (``--source``: any experiment folder a sweep wrote,
``./scripts/demo``'s for one), each trial's rows cycled to ``--iterations`` rows at growing env steps under new
trial ids (``scale.replicate``), so every row has the keys and size a real RLlib trial writes. Sizes: ``--trials``
(1,000 and 10,000 by default). Each timing is the median of ``--repeat`` runs, wall clock and CPU.

Goal: ``status``, ``best``, ``table()`` and ``plot`` on a 10,000-trial directory in at most 2 s each. The first
read of a directory (``first_load``) parses every trial's rows and writes the rows index (``.rlsweep_rows_index.json``
in the directory); the other timings are of later reads, which parse only the result files that changed.

    .venv/bin/python benchmarks/readers_scale.py --source rlsweep_results/<sweep folder> [--trials 1000 10000]

Results go to ``benchmarks/results/readers_scale-<date>.json`` with the commit measured.
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
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from scale import dir_size, replicate  # noqa: E402


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(call, repeat: int) -> dict[str, float]:
    """Median wall and CPU seconds of ``call`` (in this process)."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {"wall_s": round(statistics.median(walls), 3), "cpu_s": round(statistics.median(cpus), 3)}


def command(args: list[str], repeat: int) -> dict[str, Any]:
    """Median wall and CPU seconds of ``rlsweep ARGS`` in a fresh process, as a user runs it."""
    walls, cpus, code = [], [], 0
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), _children_cpu()
        done = subprocess.run([sys.executable, "-m", "rlsweep.cli", *args], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        walls.append(time.perf_counter() - wall)
        cpus.append(_children_cpu() - cpu)
        code = done.returncode
        if code != 0:
            raise SystemExit(f"rlsweep {' '.join(args)} exited {code}: {done.stderr[-2000:]}")
    return {"wall_s": round(statistics.median(walls), 3), "cpu_s": round(statistics.median(cpus), 3), "exit": code}


def measure(root: Path, repeat: int) -> dict[str, Any]:
    import rlsweep

    from rlsweep import store

    index = root / store.ROWS_INDEX

    def first_read() -> None:
        index.unlink(missing_ok=True)
        rlsweep.load(root)

    out: dict[str, Any] = {"size_mb": round(dir_size(root) / 2**20, 1)}
    # The first read parses every trial's rows and writes the rows index; every later one reads the index and
    # parses only the result files that changed since (none here).
    out["first_load"] = timed(first_read, repeat)
    out["index_mb"] = round(index.stat().st_size / 2**20, 1)
    out["load"] = timed(lambda: rlsweep.load(root), repeat)
    swept = rlsweep.load(root)
    out["table"] = timed(swept.table, repeat)
    out["best"] = timed(lambda: swept.best(rule="avg-last-3"), repeat)
    out["cli_version"] = command(["--version"], repeat)
    out["cli_status"] = command(["status", str(root)], repeat)
    out["cli_best"] = command(["best", str(root)], repeat)
    with tempfile.TemporaryDirectory() as scratch:
        out["cli_plot"] = command(["plot", str(root), "-o", str(Path(scratch) / "curves.png")], repeat)
    return out


def _source_setup(source: Path) -> dict[str, Any]:
    """What the source sweep trained, from the spec it kept: the rows' keys and sizes follow from it."""
    import yaml

    from rlsweep import store

    try:
        spec = yaml.safe_load((source / store.SPEC_FILE).read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return {"algorithm": spec.get("algorithm"), "env": spec.get("env")}


def _commit() -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="an experiment folder a sweep wrote")
    parser.add_argument("--trials", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scratch", type=Path, help="make the directories here (kept; reused when present)")
    parser.add_argument("--condition", default="quiet", help="what else the machine ran, for the record")
    args = parser.parse_args()
    from importlib import metadata

    started = dt.datetime.now()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="rlsweep-readers-") as temporary:
        scratch = args.scratch or Path(temporary)
        for trials in args.trials:
            root = scratch / f"readers-{trials}x{args.iterations}"
            if not root.exists():
                built = time.perf_counter()
                replicate(args.source, root, trials, args.iterations)
                print(f"made {root} in {time.perf_counter() - built:.0f} s", flush=True)
            results[str(trials)] = measure(root, args.repeat)
            print(trials, json.dumps(results[str(trials)]), flush=True)
    out = HERE / "results" / f"readers_scale-{started:%Y-%m-%dT%H%M}.json"
    out.write_text(json.dumps({
        "benchmark": "readers_scale",
        "started": started.isoformat(),
        **_commit(),
        "condition": args.condition,
        "source": {"path": str(args.source), **_source_setup(args.source)},
        "iterations": args.iterations,
        "repeat": args.repeat,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "versions": {p: metadata.version(p) for p in ("ray", "pandas", "matplotlib")},
        "goal_s": 2.0,
        "results": results,
    }, indent=1) + "\n")
    print(f"results: {out}")


if __name__ == "__main__":
    main()
