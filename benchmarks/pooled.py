"""Pool ``time_to_solve`` results files of one task and one condition, and say what the seeds can settle.

Five seeds per run do not settle a ratio of medians on these tasks: a sweep's time to solve depends on which
configs its searcher draws first, and on this machine sets of five from one condition have given ratios from
0.32 to 0.93 (CartPole, quiet) and 0.50, 0.56 and 5.78 (CartPole, beside busy loops). This script puts several runs'
seeds together and gives, for rlsweep against each other side:

- each side's median time to solve and how many runs solved;
- the ratio of the medians (rlsweep / side) and its 95% paired percentile-bootstrap interval
  (``scipy.stats.bootstrap``, seeds resampled with both sides' runs on them, 10,000 resamples, seeded);
- on how many seeds each side solved first, and a two-sided sign test on those (``scipy.stats.binomtest``;
  seeds where neither solved are ties and left out);
- for each bar given (``--bar 0.5`` for "at most half", ``--bar 1`` for "no later"): ``met`` where the whole
  interval lies under it, ``not met`` where the whole interval lies above it, ``unsettled`` otherwise (an
  interval that reaches the bar included: two medians at the cap make a ratio of exactly 1, which shows
  nothing);
- the same for launch to the first trial result, where both sides recorded it (the Tune sides; the ratio and
  its interval over the seeds that have it).

Runs pair by file and seed; a seed pools once (a file given twice, a seed in two files or a side twice on one
seed is refused), and a comparison needs at least ``MIN_SEEDS`` seeds. Every run is censored at the smallest cap among the files: an unsolved run, or a
run solved later than that cap, counts as that cap (``time_to_solve`` counts an unsolved run as its own cap;
a file with a longer cap would otherwise weigh its unsolved runs more). The files must measure the same task
with the same trials, env steps, evaluations and concurrency; which files pool is the caller's choice (a
file's ``machine.condition`` is not always right: two files carry a ``note`` that corrects it), so the
results file lists each file, its commit and its seeds.

    .venv/bin/python benchmarks/pooled.py --name cartpole-busy-loops benchmarks/results/time_to_solve-cartpole-2026-11-29T0118.json ...

Writes ``benchmarks/results/pooled-<name>-<date>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

#: What must match between pooled files: the work each side does and what counts as solved.
SAME_SETUP = ("task", "solved_at", "trials", "env_steps", "eval_every", "concurrency", "eval_episodes")
#: What each run of a results file must have.
RUN_FIELDS = frozenset({"side", "seed", "time_s", "solved"})
RESAMPLES = 10_000
#: Fewer seeds than this give an interval that means little (five is one time_to_solve run).
MIN_SEEDS = 5


class PoolError(ValueError):
    """Files that cannot be pooled, or a side with no seeds to compare."""


def load(paths: list[Path]) -> list[dict[str, Any]]:
    """The files, read; raises ``PoolError`` naming the file and the field where their setups differ."""
    if not paths:
        raise PoolError("no results files given")
    files = []
    seen: dict[int, str] = {}
    for path in paths:
        try:
            document = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise PoolError(f"{path}: not a readable results file ({exc})") from None
        if not isinstance(document, dict) or not isinstance(document.get("runs"), list) or "setup" not in document:
            raise PoolError(f"{path}: not a time_to_solve results file (no 'setup' and 'runs')")
        odd = next((run for run in document["runs"] if not isinstance(run, dict) or not RUN_FIELDS <= run.keys()), None)
        if odd is not None:
            raise PoolError(f"{path}: a run without {', '.join(sorted(RUN_FIELDS))}: {str(odd)[:80]}")
        document["_path"] = str(path)
        sides_on: dict[int, set[str]] = {}
        for run in document["runs"]:
            if run["side"] in sides_on.setdefault(run["seed"], set()):
                raise PoolError(f"{path}: side {run['side']!r} ran seed {run['seed']} twice")
            sides_on[run["seed"]].add(run["side"])
        for seed in sides_on:
            if seed in seen:
                raise PoolError(f"{path}: seed {seed} is also in {seen[seed]}; a seed pools once (a file given twice, "
                                "or the same seed run again, would count its draws twice)")
            seen[seed] = str(path)
        files.append(document)
    first = files[0]
    for other in files[1:]:
        for key in SAME_SETUP:
            if first["setup"].get(key) != other["setup"].get(key):
                raise PoolError(f"{other['_path']}: setup.{key} is {other['setup'].get(key)!r}, "
                                f"{first['_path']} has {first['setup'].get(key)!r}; runs of different work do not pool")
    return files


def common_cap(files: list[dict[str, Any]]) -> float:
    return min(float(f["setup"]["cap_s"]) for f in files)


def censored(run: dict[str, Any], cap: float) -> tuple[float, bool]:
    """A run's time and whether it solved, both at the common ``cap``."""
    solved = bool(run["solved"]) and float(run["time_s"]) <= cap
    return (float(run["time_s"]) if solved else cap), solved


def seeds(files: list[dict[str, Any]]) -> list[dict[str, dict[str, Any]]]:
    """Each (file, seed)'s runs by side, in file order and then seed order."""
    out = []
    for document in files:
        by_seed: dict[int, dict[str, dict[str, Any]]] = {}
        for run in document["runs"]:
            by_seed.setdefault(run["seed"], {})[run["side"]] = run
        out += [by_seed[seed] for seed in sorted(by_seed)]
    return out


def pairs(files: list[dict[str, Any]], side: str, against: str) -> list[tuple[float, float, bool, bool]]:
    """(rlsweep-side time, other time, solved, other solved) per (file, seed) both sides ran, censored alike."""
    cap = common_cap(files)
    out = []
    for runs in seeds(files):
        if side in runs and against in runs:
            (a, a_solved), (b, b_solved) = censored(runs[side], cap), censored(runs[against], cap)
            out.append((a, b, a_solved, b_solved))
    return out


def first_result(run: dict[str, Any]) -> float | None:
    """Launch to the run's first trial result (``time_to_solve``'s start-up marks; rl-baselines3-zoo has none)."""
    marks = (run.get("startup") or {}).get("first_result_s") or []
    return float(marks[0]) if marks else None


def first_result_pairs(files: list[dict[str, Any]], side: str, against: str) -> list[tuple[float, float]]:
    """(side's, against's) launch to first result per (file, seed) where both have one."""
    out = []
    for runs in seeds(files):
        a, b = (first_result(runs[s]) if s in runs else None for s in (side, against))
        if a is not None and b is not None:
            out.append((a, b))
    return out


def interval(a: Any, b: Any, resamples: int, seed: int) -> tuple[float, float]:
    """The 95% paired percentile-bootstrap interval of median(a) / median(b)."""
    import numpy as np
    from scipy.stats import bootstrap

    if np.ptp(a) == 0 and np.ptp(b) == 0:
        point = float(ratio_of_medians(a, b))
        return point, point  # nothing varies (every run at the cap, say): scipy refuses a degenerate sample
    found = bootstrap((a, b), ratio_of_medians, paired=True, vectorized=True, n_resamples=resamples,
                      method="percentile", confidence_level=0.95, random_state=np.random.default_rng(seed)).confidence_interval
    return float(found.low), float(found.high)


def ratio_of_medians(a: Any, b: Any, axis: int = -1) -> Any:
    import numpy as np

    return np.median(a, axis=axis) / np.median(b, axis=axis)


def verdict(low: float, high: float, bar: float) -> str:
    """A bar on the ratio ("at most ``bar``") against its interval: met, not met, or more seeds needed."""
    return "met" if high < bar else "not met" if low > bar else "unsettled"


def compare(files: list[dict[str, Any]], against: str, side: str = "rlsweep", bars: tuple[float, ...] = (),
            resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """rlsweep's ``side`` against ``against`` over every seed both ran (see the module's docstring)."""
    import numpy as np
    from scipy.stats import binomtest

    rows = pairs(files, side, against)
    if len(rows) < MIN_SEEDS:
        raise PoolError(f"{side} and {against} ran together on {len(rows)} seed(s) in these files; "
                        f"a pooled ratio needs {MIN_SEEDS} or more")
    a = np.array([r[0] for r in rows])
    b = np.array([r[1] for r in rows])
    point = float(ratio_of_medians(a, b))
    low, high = interval(a, b, resamples, seed)
    first = sum(1 for x, y, _, _ in rows if x < y)  # two runs unsolved both count as the cap: a tie
    later = sum(1 for x, y, _, _ in rows if x > y)
    sign_p = float(binomtest(first, first + later).pvalue) if first + later else 1.0
    return {
        "side": side, "against": against, "seeds": len(rows), "cap_s": common_cap(files),
        "median_s": {side: float(np.median(a)), against: float(np.median(b))},
        "solved": {side: sum(r[2] for r in rows), against: sum(r[3] for r in rows)},
        "ratio_of_medians": round(point, 4),
        "ratio_95_interval": [round(low, 4), round(high, 4)],
        "first_on": {side: first, against: later, "ties": len(rows) - first - later},
        "sign_test_p": sign_p,
        "bars": {f"{bar:g}": verdict(low, high, bar) for bar in bars},
        "first_result": first_results(files, side, against, bars, resamples, seed),
    }


def first_results(files: list[dict[str, Any]], side: str, against: str, bars: tuple[float, ...], resamples: int,
                  seed: int) -> dict[str, Any] | None:
    """Launch to first result, rlsweep's ``side`` against ``against``, where both sides have it on ``MIN_SEEDS`` or more seeds."""
    import numpy as np

    rows = first_result_pairs(files, side, against)
    if len(rows) < MIN_SEEDS:
        return None
    a, b = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    low, high = interval(a, b, resamples, seed)
    return {"seeds": len(rows), "median_s": {side: float(np.median(a)), against: float(np.median(b))},
            "ratio_of_medians": round(float(ratio_of_medians(a, b)), 4), "ratio_95_interval": [round(low, 4), round(high, 4)],
            "bars": {f"{bar:g}": verdict(low, high, bar) for bar in bars}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--name", required=True, help="names the output file, e.g. cartpole-busy-loops")
    parser.add_argument("--side", default="rlsweep")
    parser.add_argument("--against", nargs="+", default=["zoo", "raw-tune"])
    parser.add_argument("--bar", type=float, nargs="*", default=[0.5, 1.0])
    parser.add_argument("--out-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    try:
        files = load(args.files)
        comparisons = [compare(files, other, side=args.side, bars=tuple(args.bar)) for other in args.against]
    except PoolError as exc:
        print(f"pooled: {exc}", file=sys.stderr)
        return 2
    task = files[0]["setup"]["task"]
    print(f"{task}: {len(files)} files, censored at {common_cap(files):g} s")
    for c in comparisons:
        lo, hi = c["ratio_95_interval"]
        print(f"{c['side']} / {c['against']}: {c['ratio_of_medians']:.2f} over {c['seeds']} seeds (95% interval {lo:.3f}-{hi:.3f}); "
              f"medians {c['median_s'][c['side']]:.1f} s and {c['median_s'][c['against']]:.1f} s; solved "
              f"{c['solved'][c['side']]} and {c['solved'][c['against']]}; first on {c['first_on'][c['side']]} and "
              f"{c['first_on'][c['against']]} ({c['first_on']['ties']} ties, sign test p = {c['sign_test_p']:.3g}); "
              + ", ".join(f"at most {bar}: {v}" for bar, v in c["bars"].items()))
        if c["first_result"]:
            f = c["first_result"]
            print(f"  launch to first result: {f['median_s'][c['side']]:.2f} s and {f['median_s'][c['against']]:.2f} s, "
                  f"{f['ratio_of_medians']:.2f} over {f['seeds']} seeds (95% interval {f['ratio_95_interval'][0]:.3f}-"
                  f"{f['ratio_95_interval'][1]:.3f}); " + ", ".join(f"at most {bar}: {v}" for bar, v in f["bars"].items()))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / f"pooled-{args.name}-{dt.datetime.now():%Y-%m-%dT%H%M}.json"
    out.write_text(json.dumps({
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "task": task,
        "name": args.name,
        "files": [{"file": Path(f["_path"]).name, "commit": f.get("commit"), "seeds": sorted({r["seed"] for r in f["runs"]}),
                   "condition": (f.get("machine") or {}).get("condition"), "note": f.get("note")} for f in files],
        "resamples": RESAMPLES,
        "comparisons": comparisons,
    }, indent=1))
    try:
        shown = out.relative_to(REPO)
    except ValueError:
        shown = out
    print(f"written to {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
