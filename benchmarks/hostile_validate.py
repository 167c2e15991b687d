"""How long a hostile or broken spec takes to be refused: in-process and from the command line.

Each hand-made spec of ``tests/test_hostile_specs.py`` (alias bombs, deep nesting, huge numbers, NaN bounds,
50,000 unknown keys, ...) plus one with bytes that are not UTF-8 is written to a file, then timed twice:

- the check itself: ``rlsweep.load_spec(path, preflight=False)`` in this process (what the tests time);
- what a user waits for: ``rlsweep validate --no-memory-check PATH`` from its launch to its exit 2
  (Python's start and the CLI's imports included; it starts no Ray), ``--rounds`` times each.

``rlsweep validate --help`` is timed as well: the floor of any command. Starts no Ray.

    .venv/bin/python benchmarks/hostile_validate.py [--rounds 2]

Results: ``benchmarks/results/hostile_validate-<date>.json``, with the commit, the machine, its load
average, and the versions.
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
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def git(*arguments: str) -> str:
    return subprocess.run(["git", *arguments], cwd=REPO, capture_output=True, text=True).stdout.strip()


def cli_seconds(*arguments: str, expect: int) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rlsweep.cli", *arguments], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), "RAY_ENABLE_AUTO_CONNECT": "0"}, timeout=300)
    elapsed = time.perf_counter() - start
    if done.returncode != expect or "Traceback" in done.stderr:
        raise SystemExit(f"rlsweep {' '.join(arguments)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from rlsweep import load_spec
    from rlsweep.errors import SpecError
    from tests.test_hostile_specs import HOSTILE, _base

    cases = {name: text.encode() for name, (text, _) in HOSTILE.items()}
    cases["bytes that are not UTF-8"] = _base().encode() + b"env_config: {x: \xff\xfe}\n"
    commit = git("rev-parse", "HEAD") + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    started, load_before = dt.datetime.now(), os.getloadavg()
    measured: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for index, (name, data) in enumerate(cases.items()):
            path = Path(scratch) / f"spec-{index}.yaml"
            path.write_bytes(data)
            start = time.perf_counter()
            try:
                load_spec(path, preflight=False)
            except SpecError:
                pass
            else:
                raise SystemExit(f"{name}: accepted")
            check_s = time.perf_counter() - start
            validate_s = [cli_seconds("validate", "--no-memory-check", str(path), expect=2) for _ in range(args.rounds)]
            measured[name] = {"check_s": check_s, "validate_s": validate_s}
            print(f"{name:45s} check {check_s:6.3f} s   validate {min(validate_s):5.2f}-{max(validate_s):5.2f} s", flush=True)
    help_s = [cli_seconds("validate", "--help", expect=0) for _ in range(args.rounds)]
    checks = [m["check_s"] for m in measured.values()]
    validates = [s for m in measured.values() for s in m["validate_s"]]  # type: ignore[union-attr]
    summary = {
        "check_s": {"median": statistics.median(checks), "max": max(checks)},
        "validate_s": {"median": statistics.median(validates), "min": min(validates), "max": max(validates)},
        "validate_help_s": {"min": min(help_s), "max": max(help_s)},
    }
    print(json.dumps(summary, indent=1))
    out = HERE / "results" / f"hostile_validate-{started:%Y-%m-%dT%H%M}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({
        "benchmark": "hostile_validate",
        "started": started.isoformat(timespec="seconds"),
        "commit": commit,
        "settings": vars(args),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "versions": {name: metadata.version(name) for name in ("pydantic", "PyYAML", "ray")},
        "summary": summary,
        "specs": measured,
    }, indent=1))
    print(f"written to {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
