"""How long rlsweep's searchers take to suggest a trial as a sweep grows to 10,000 trials, without Ray.

Each searcher is built the way a sweep builds it: the spec (``--spec``, rl-baselines3-zoo's PPO space by
default) with the searcher section of the case, ``budget.trials`` set to ``--trials``, through
``rlsweep.schedulers.search_request`` and the registry entry's ``build`` (so the default's Optuna TPE sits
in ``ClusterLimiter``, the concurrency limit that follows the cluster, here a fixed ``--concurrency``).
Then it is driven the way Tune's controller drives it (Ray 2.60, ``tune.py`` and
``execution/tune_controller.py``): a ``Searcher`` inside Tune's ``SearchGenerator``, which gets
``add_configurations`` with the experiment; ``next_trial()`` (the searcher's ``suggest`` and the Trial
object Tune makes of it) until the limit says no; then the oldest running trial reports
``--iterations`` results, each but the last through ``on_trial_result``, and ends with
``on_trial_complete(trial_id, result=<its last flattened result>)``, as Tune does for a trial that reached
its stop condition. The objective is synthetic and cheap (a smooth function of the config with seeded
noise, rising over the iterations), so the time measured is the searcher's and Tune's bookkeeping only.
The Trial objects are dropped when they end (Tune's controller keeps them: not measured here), so the
process's resident memory is the searcher's state. Random search with a space without conditions is
Tune's own ``BasicVariantGenerator``: only ``next_trial()`` is timed there.

Recorded per case (each in a process of its own, one after the other): median and 95th percentile of
``suggest``, ``next_trial``, ``on_trial_result`` and ``on_trial_complete`` in the window of ``--window``
trials ending at each of ``--marks``; the process's resident memory and the size and time of a searcher
state save (Tune's ``save_to_dir``, which its experiment snapshots call) at each mark; the median
``suggest`` per block of 100 trials (the trend); the total time; where a case hits ``--cap-s`` first, the
trial it reached. With ``--profile N``, the functions taking most of N further suggestions after the last
trial. Goal (issue: sweeps of 10,000 trials): at most 100 ms a suggestion at 10,000 trials for the default.

    nice -n 10 .venv/bin/python benchmarks/suggest_latency.py --condition "busy: ..." [--cases optuna random]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime as dt
import io
import json
import math
import os
import platform
import pstats
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

#: case -> the spec's searcher section (its seed comes from --seed). "note" says what it stands for.
CASES: dict[str, dict[str, Any]] = {
    "optuna": {"searcher": {"name": "optuna"}, "note": "rlsweep's default: TPE, multivariate and grouped, constant liar"},
    "optuna-independent": {"searcher": {"name": "optuna", "multivariate": False},
                           "note": "TPE one parameter at a time (searcher.multivariate: false)"},
    "optuna-ungrouped": {"searcher": {"name": "optuna"}, "ungrouped": True,
                         "note": "TPE multivariate without group decomposition (not a spec option: the default's "
                                 "sampler with group=False; the same model where no parameter has a condition)"},
    "optuna-cmaes": {"searcher": {"name": "optuna", "sampler": "cmaes"}, "note": "Optuna's CMA-ES (searcher.sampler: cmaes)"},
    "optuna-qmc": {"searcher": {"name": "optuna", "sampler": "qmc"}, "note": "Optuna's scrambled Sobol points (searcher.sampler: qmc)"},
    "random": {"searcher": {"name": "random"}, "note": "Tune's BasicVariantGenerator (a space without conditions)"},
    "hyperopt": {"searcher": {"name": "hyperopt"}, "note": "HyperOpt's TPE"},
    "nevergrad": {"searcher": {"name": "nevergrad"}, "note": "nevergrad's NGOpt"},
}
DEFAULT_CASES = ("optuna", "optuna-ungrouped", "optuna-independent", "random", "hyperopt", "nevergrad", "optuna-cmaes")


def rss_mb() -> float:
    """This process's resident memory, from /proc."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def spread(values: list[float]) -> dict[str, float | int | None]:
    """Median, 95th percentile and maximum of ``values`` (seconds) in milliseconds."""
    if not values:
        return {"n": 0, "median_ms": None, "p95_ms": None, "max_ms": None}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return {"n": len(values), "median_ms": round(statistics.median(values) * 1e3, 3), "p95_ms": round(p95 * 1e3, 3),
            "max_ms": round(ordered[-1] * 1e3, 3)}


# --- the synthetic objective ------------------------------------------------------------------------


def score(config: dict[str, Any]) -> float:
    """A smooth, cheap stand-in for a PPO run's final return on CartPole (0 to 500): best near lr 3e-4,
    small entropy, gamma 0.99, a mid-sized network; the parameters it does not name barely matter."""
    lr = math.log10(float(config.get("training.lr", 3e-4)))
    entropy = math.log10(float(config.get("training.entropy_coeff", 1e-6)) + 1e-9)
    gamma = float(config.get("training.gamma", 0.99))
    epochs = float(config.get("training.num_epochs", 10))
    hidden = config.get("rl_module.model_config.fcnet_hiddens", [64, 64])
    width = sum(hidden) if isinstance(hidden, list) else 128
    value = math.exp(-((lr + 3.5) / 0.8) ** 2) * math.exp(-max(0.0, entropy + 3) ** 2)
    value *= 1 - min(1.0, abs(gamma - 0.99) * 8) * 0.5
    value *= 0.7 + 0.3 * min(1.0, epochs / 10) * (1 - abs(math.log2(max(width, 1) / 128)) / 6)
    return 500 * value


class Objective:
    """Each trial's results, one per iteration: the score rising towards its final value, with noise."""

    def __init__(self, metric: str, iterations: int, seed: int) -> None:
        import numpy as np

        self.metric, self.iterations = metric, iterations
        self.rng = np.random.default_rng(seed)

    def results(self, trial_id: str, config: dict[str, Any]) -> list[dict[str, Any]]:
        final = score(config)
        rows = []
        for iteration in range(1, self.iterations + 1):
            value = final * (1 - math.exp(-3 * iteration / self.iterations)) + float(self.rng.normal(0, 10))
            rows.append({
                # the keys a flattened rlsweep result carries besides RLlib's (which the searchers ignore)
                self.metric: value, "env_steps": 2048 * iteration, "training_iteration": iteration,
                "time_this_iter_s": 1.0, "time_total_s": float(iteration), "timesteps_total": 2048 * iteration,
                "episodes_total": 10 * iteration, "done": iteration == self.iterations, "trial_id": trial_id,
                "iterations_since_restore": iteration, "time_since_restore": float(iteration),
                "timestamp": int(time.time()), "pid": os.getpid(), "hostname": "bench", "node_ip": "127.0.0.1",
                **{f"config/{k}": v for k, v in config.items()},
            })
        return rows


# --- one case ----------------------------------------------------------------------------------------


def build(case: dict[str, Any], args: argparse.Namespace) -> tuple[Any, dict[str, Any], str, str]:
    """The Tune search algorithm for the case, as ``rlsweep.sweep`` builds it, and the param space, metric
    and mode it gets."""
    import yaml

    from rlsweep.schedulers import search_request
    from rlsweep.search_spaces import SEARCHERS
    from rlsweep.validate import load_spec

    document = yaml.safe_load(Path(args.spec).read_text())
    document["searcher"] = {**case["searcher"], "seed": args.seed}
    document["budget"] = {**document.get("budget", {}), "trials": args.trials}
    document.pop("storage", None)
    spec = load_spec(document, preflight=False)
    request = search_request(spec, capacity=lambda: args.concurrency)
    entry = SEARCHERS[str(spec.searcher.name)]
    if case.get("ungrouped"):
        import optuna

        from rlsweep.search_spaces import _optuna

        def ungrouped(request: Any) -> Any:
            sampler = original(request)
            sampler._group, sampler._group_decomposed_search_space = False, None
            return sampler

        original = _optuna._sampler
        _optuna._sampler = ungrouped
        try:
            search_alg, param_space, _ = entry.build(request)
        finally:
            _optuna._sampler = original
        assert isinstance(optuna_sampler(search_alg), optuna.samplers.TPESampler)
    else:
        search_alg, param_space, _ = entry.build(request)
    return search_alg, param_space, spec.metric.name, str(spec.metric.mode)


def optuna_sampler(search_alg: Any) -> Any:
    while hasattr(search_alg, "searcher"):
        search_alg = search_alg.searcher
    return search_alg._ot_study.sampler


def as_tune_drives(search_alg: Any, param_space: dict[str, Any], metric: str, mode: str, trials: int, storage: str) -> Any:
    """The search algorithm as ``tune.run`` hands it to the controller: a ``Searcher`` in a
    ``SearchGenerator``, told the search properties where there is a param space, given the experiment."""
    from ray.tune.experiment import Experiment
    from ray.tune.search import SearchGenerator, Searcher

    if isinstance(search_alg, Searcher):
        search_alg = SearchGenerator(search_alg)
    experiment = Experiment(name="suggest_latency", run=_trainable, config=param_space, num_samples=trials,
                            storage_path=storage)
    if param_space:
        search_alg.set_search_properties(metric, mode, param_space, **experiment.public_spec)
    search_alg.add_configurations([experiment])
    return search_alg


def _trainable(config: dict[str, Any]) -> None:  # never run: the trials' results are synthetic
    return None


class Timed:
    """Wraps a bound method of an instance, recording each call's wall-clock and CPU time (the CPU time is
    what a quiet machine would wait; on a busy one the wall clock is longer)."""

    def __init__(self, owner: Any, name: str) -> None:
        self.call: Callable[..., Any] = getattr(owner, name)
        self.times: list[float] = []
        self.cpu: list[float] = []
        setattr(owner, name, self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return self.call(*args, **kwargs)
        finally:
            self.times.append(time.perf_counter() - start)
            self.cpu.append(time.process_time() - cpu)


def save_state(search_alg: Any, into: Path) -> dict[str, float]:
    """What one of Tune's experiment snapshots spends on the searcher: ``save_to_dir`` and the bytes it wrote."""
    into.mkdir(parents=True, exist_ok=True)
    for old in into.iterdir():
        old.unlink()
    start = time.perf_counter()
    search_alg.save_to_dir(str(into), session_str="bench")
    seconds = time.perf_counter() - start
    return {"save_s": round(seconds, 4), "save_kb": round(sum(p.stat().st_size for p in into.iterdir()) / 1024, 1)}


def run_case(name: str, args: argparse.Namespace) -> dict[str, Any]:
    import shutil

    scratch = Path(tempfile.mkdtemp(prefix="rlsweep-suggest-"))
    try:
        return _run_case(name, args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # the searcher-state saves: up to 80 MB


def _run_case(name: str, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    import logging
    import warnings

    warnings.simplefilter("ignore")
    logging.getLogger("ray").setLevel(logging.ERROR)
    case = CASES[name]
    rss_start = rss_mb()
    search_alg, param_space, metric, mode = build(case, args)
    search_alg = as_tune_drives(search_alg, param_space, metric, mode, args.trials, str(scratch / "storage"))
    searcher = getattr(search_alg, "searcher", None)
    suggest = Timed(searcher, "suggest") if searcher is not None else None
    objective = Objective(metric, args.iterations, args.seed)
    marks = sorted(m for m in args.marks if m <= args.trials)
    cap_s = dict(args.case_cap).get(name, args.cap_s)

    next_trial_s: list[float] = []
    next_trial_cpu_s: list[float] = []
    result_s: dict[int, list[float]] = {}  # completion index -> its on_trial_result calls
    complete_s: list[float] = []
    at_marks: dict[int, dict[str, Any]] = {}
    live: deque[Any] = deque()
    suggested = completed = 0
    best = -math.inf
    start = time.perf_counter()
    capped = False
    while completed < args.trials:
        while suggested < args.trials and len(live) < args.concurrency:
            begin, cpu = time.perf_counter(), time.process_time()
            trial = search_alg.next_trial()
            elapsed, cpu = time.perf_counter() - begin, time.process_time() - cpu
            if trial is None:
                if suggest is not None and len(suggest.times) > suggested:
                    suggest.times.pop()  # the limiter said no: not a suggestion
                    suggest.cpu.pop()
                break
            next_trial_s.append(elapsed)
            next_trial_cpu_s.append(cpu)
            suggested += 1
            live.append(trial)
            if suggested in marks:
                at_marks[suggested] = {"rss_mb": round(rss_mb(), 1), "elapsed_s": round(time.perf_counter() - start, 1),
                                       **save_state(search_alg, scratch / "state")}
        if not live:
            break
        trial = live.popleft()
        rows = objective.results(trial.trial_id, dict(trial.config))
        calls = result_s.setdefault(completed + 1, [])
        for row in rows[:-1]:
            begin = time.perf_counter()
            search_alg.on_trial_result(trial.trial_id, row)
            calls.append(time.perf_counter() - begin)
        begin = time.perf_counter()
        search_alg.on_trial_complete(trial.trial_id, result=rows[-1])
        complete_s.append(time.perf_counter() - begin)
        completed += 1
        best = max(best, rows[-1][metric])
        if time.perf_counter() - start > cap_s and suggested < args.trials:
            capped = True
            break
    total_s = time.perf_counter() - start

    suggest_s = suggest.times if suggest is not None else next_trial_s
    suggest_cpu_s = suggest.cpu if suggest is not None else next_trial_cpu_s
    windows = {}
    for mark in sorted(set(marks) | ({suggested} if capped else set())):
        if mark > suggested:
            continue
        low = max(0, mark - args.window)
        windows[str(mark)] = {
            "suggest": spread(suggest_s[low:mark]),
            "suggest_cpu": spread(suggest_cpu_s[low:mark]),
            "next_trial": spread(next_trial_s[low:mark]),
            "on_trial_result": spread([t for i in range(low + 1, mark + 1) for t in result_s.get(i, [])]),
            "on_trial_complete": spread(complete_s[low:mark]),
            **at_marks.get(mark, {"rss_mb": round(rss_mb(), 1)}),
        }
    trend = [{"trials": i + 100, "suggest_median_ms": round(statistics.median(suggest_s[i:i + 100]) * 1e3, 3),
              "suggest_cpu_median_ms": round(statistics.median(suggest_cpu_s[i:i + 100]) * 1e3, 3)}
             for i in range(0, len(suggest_s) - 99, 100)]
    report: dict[str, Any] = {
        "case": name,
        "note": case["note"],
        "searcher_section": {**case["searcher"], "seed": args.seed},
        "search_alg": type(search_alg).__name__ + (f"({type(searcher).__name__}({type(getattr(searcher, 'searcher', None)).__name__}))" if searcher is not None else ""),
        "suggested": suggested,
        "completed": completed,
        "capped": capped,
        "cap_s": cap_s,
        "total_s": round(total_s, 1),
        "total_cpu_s": round(time.process_time(), 1),
        "rss_mb_at_start": round(rss_start, 1),
        "rss_mb_at_end": round(rss_mb(), 1),
        "best_value": round(best, 2),
        "windows": windows,
        "trend": trend,
    }
    if capped and len(trend) >= 4:
        # suggest's median per block of 100 fitted as a + b * trials over the later half of the blocks
        late = trend[len(trend) // 2:]
        projected = {"trials": args.trials, "fit": "linear in the trials, over the later half of the 100-trial blocks"}
        for key in ("suggest_median_ms", "suggest_cpu_median_ms"):
            slope, intercept = statistics.linear_regression([p["trials"] for p in late], [p[key] for p in late])
            projected[key] = round(intercept + slope * args.trials, 1)
        report["projected"] = projected
    if args.profile and searcher is not None and not capped:
        report["profile"] = profile(search_alg, objective, args.profile)
    return report


def profile(search_alg: Any, objective: Objective, n: int) -> dict[str, Any]:
    """Where ``n`` further suggestions spend their time (the searcher's ``suggest`` alone, under cProfile,
    which slows many small calls): the functions by cumulative time and by their own time."""
    from ray.tune.experiment import Trial

    profiler = cProfile.Profile()
    for i in range(n):
        trial_id = f"profile_{i:05d}_{Trial.generate_id()}"
        profiler.enable()
        config = search_alg.searcher.suggest(trial_id)
        profiler.disable()
        if not isinstance(config, dict):
            break
        rows = objective.results(trial_id, config)
        search_alg.on_trial_complete(trial_id, result=rows[-1])
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    rows = [
        {"function": f"{Path(filename).name}:{line}({function})", "calls_per_suggest": round(calls / n, 1),
         "cumulative_ms": round(cumulative / n * 1e3, 2), "own_ms": round(own / n * 1e3, 2)}
        for (filename, line, function), (_, calls, own, cumulative, _) in stats.stats.items()  # type: ignore[attr-defined]
    ]
    return {"suggestions": n, "by_cumulative": sorted(rows, key=lambda r: -r["cumulative_ms"])[:20],
            "by_own_time": sorted(rows, key=lambda r: -r["own_ms"])[:15]}


# --- the whole benchmark -----------------------------------------------------------------------------


def commit() -> dict[str, Any]:
    """The commit measured, and the tracked files that differ from it among those the measured path reads."""
    def git(*command: str) -> str:
        return subprocess.run(["git", *command], cwd=REPO, capture_output=True, text=True, check=True).stdout

    changed = git("status", "--porcelain", "--untracked-files=no", "--", "rlsweep", "benchmarks/suggest_latency.py")
    return {"commit": git("rev-parse", "HEAD").strip(), "dirty": bool(changed.strip()),
            "changed_files": [line[3:] for line in changed.splitlines() if line.strip()]}


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for package in ("optuna", "ray", "hyperopt", "numpy", "nevergrad", "cmaes", "scipy"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[package] = metadata.version(package)
    return found


def _case_cap(text: str) -> tuple[str, float]:
    name, _, seconds = text.partition("=")
    if name not in CASES or not seconds:
        raise argparse.ArgumentTypeError(f"expected CASE=SECONDS with CASE one of {sorted(CASES)}, got {text!r}")
    return name, float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(DEFAULT_CASES), choices=sorted(CASES))
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--marks", type=int, nargs="+", default=[100, 1_000, 10_000])
    parser.add_argument("--window", type=int, default=50, help="trials ending at each mark whose latencies are summarised")
    parser.add_argument("--concurrency", type=int, default=8, help="trials running at once (the cluster's capacity)")
    parser.add_argument("--iterations", type=int, default=20, help="results each trial reports")
    parser.add_argument("--cap-s", type=float, default=1200.0, help="stop a case after this many seconds (wall clock)")
    parser.add_argument("--case-cap", type=_case_cap, nargs="*", default=[], metavar="CASE=SECONDS",
                        help="another cap for a case, e.g. optuna=3600: the default must reach the last mark")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--spec", default=str(REPO / "examples" / "zoo_ppo_space.yaml"))
    parser.add_argument("--profile", type=int, default=20, help="suggestions profiled after the last trial (0: none)")
    parser.add_argument("--condition", default="quiet", help="what else ran on the machine, e.g. 'busy: ...'")
    parser.add_argument("--out", help="results file (default: benchmarks/results/suggest_latency-<date>.json)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # run one case in this process, print its JSON
    args = parser.parse_args()

    if args.one:
        print(json.dumps(run_case(args.one, args)))
        return

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run stops its case's process too
    started = dt.datetime.now()
    out_file = Path(args.out) if args.out else HERE / "results" / f"suggest_latency-{started:%Y-%m-%dT%H%M}.json"
    load_before = os.getloadavg()
    report: dict[str, Any] = {
        "benchmark": "suggest_latency",
        "started": started.isoformat(timespec="seconds"),
        **commit(),
        "settings": {k: v for k, v in vars(args).items() if k not in ("one", "out")},
        "windows_are": "the --window trials ending at each mark (and at the trial a capped case reached); latencies in "
                       "wall-clock ms, and suggest_cpu in this process's CPU ms (what a quiet machine would wait)",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "processor": platform.processor() or platform.machine(), "condition": args.condition,
                    "nice": os.nice(0), "load_average_before": [round(x, 2) for x in load_before]},
        "versions": versions(),
        "goal": "default searcher: at most 100 ms a suggestion at 10,000 trials",
        "cases": [],
    }
    for name in args.cases:
        command = [sys.executable, __file__, "--one", name, *sys.argv[1:]]
        print(f"{name} ...", file=sys.stderr, flush=True)
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
            try:
                stdout, stderr = child.communicate()
            except BaseException:
                child.terminate()  # stopped (Ctrl-C, kill): the case's process stops with it
                raise
        done = subprocess.CompletedProcess(command, child.returncode, stdout, stderr)
        if done.returncode != 0:
            report["cases"].append({"case": name, "error": done.stderr.strip().splitlines()[-20:]})
        else:
            report["cases"].append(json.loads(done.stdout.strip().splitlines()[-1]))
        last = report["cases"][-1]
        print(json.dumps({k: last.get(k) for k in ("case", "suggested", "capped", "total_s", "error")}), file=sys.stderr, flush=True)
        report["machine"]["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        out_file.write_text(json.dumps(report, indent=1) + "\n")  # each case as it ends: a long run keeps what it measured
    print(f"results: {out_file}")


if __name__ == "__main__":
    main()
