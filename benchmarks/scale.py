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

``--replay``: 10,000 trials through the same driver path, replayed (issue: 10,000-trial scale). Real PPO trials
are too slow for 10,000 of them on a small machine, so this mode sweeps with a stand-in trainable: it takes
template rows from a real sweep (``--replay-from DIR``, any experiment folder a sweep wrote; without it, a small
real sweep first, ``--template-trials`` PPO trials of ``--iterations`` iterations, into a scratch folder), then
runs ``rlsweep.run(spec)`` on that sweep's spec (its env-step budget, metric, checkpoint and report settings;
searcher ``--replay-searcher``, FIFO, no held-out stage, ``budget.trials = --trials``, ``budget.max_concurrent
= --replay-concurrent``) with ``rlsweep.sweep._trainable`` monkeypatched in this process: each trial reports the
rows of template trial ``index % templates`` in order, with the keys a real trial reports (Tune's own keys left
for Tune to add, ``hp/<path>`` set to the trial's draw, ``node_id`` its node), writes the
``rlsweep_trial.json`` a real trial writes, and checkpoints when the real one would (``checkpoint.every_env_steps``
and at its budget) with the template trial's RLlib checkpoint files and a fresh ``rlsweep_checkpoint.json``.
Each trial asks for a placement group of ``--replay-cpus`` CPUs, so several run at once and the sweep is
bound by the driver (Tune's controller, the searcher, rlsweep's callbacks, result.json writes, experiment
state saves), which is what the mode measures. Its limits: no RLlib learning, no env stepping and no trial
start-up cost (an RLlib trial's build is seconds); rows and checkpoints are copies, so file sizes are real but
the values repeat; trials are far faster than real ones, so the driver sees more results a second than a real
sweep of this size would give it (a harder test of per-trial driver cost, a weaker one of memory held for
long-running trials).

Recorded besides the samples (which add the driver's CPU seconds and leave out the directory's size, too slow
to walk every few seconds at 10,000 trials): the driver's memory at trial ``--rss-from`` (1,000) and at the
end of the fit, growth and kB per trial after it; per ``--window`` trials started (500): trials a minute,
driver CPU per trial, memory, and Tune's experiment-state saves (count, mean and longest time, state size);
each state save (instrumented by wrapping ``TuneController.save_to_dir`` in this process); the size of Tune's
``experiment_state-*.json`` at the end; then ``load()`` on the experiment folder (first, without the rows index,
and again), ``.table()``, and ``rlsweep status DIR`` as a fresh process. Goals (issue): driver memory at most
+10% from trial 1,000 to 10,000, and no per-trial driver step that grows with the trial count (trials a
minute and CPU per trial flat across windows). Results go to ``benchmarks/results/scale_replay-<date>.json``
(not ``scale-*``, which ``benchmarks/report.py`` reads as the real-trial sweep); ``--out`` writes elsewhere.
Needs Ray for the whole run: on a shared machine wrap it in ``flock /tmp/rlsweep-ray.lock``. On 2 cores the
check below takes about 2 min. With ``checkpoint.keep: 1`` and one checkpoint a trial, Tune saves its whole
experiment state at every trial's checkpoint, so the time per trial grows with the trials started: 1,000 took
4.5 min (10,000 would take hours); with ``--checkpoint-keep 2`` it saves every 10 s or more, and 1,000 took 1 min.
``--driver-memory rows`` (no hand-back of freed heap) and ``none`` (nor the trim of finished trials' rows), and
``--trim-every-s``, replay the same sweep without the driver's memory callbacks, for an A/B of what each saves
and costs; run the sides back to back on a quiet machine (``--trials 3000`` takes 4-5 min a side), as this
machine's speed drifts by a fifth between sittings.

    .venv/bin/python benchmarks/scale.py --replay --trials 200 --rss-from 50 --window 50 --sample-s 1   # a check
    .venv/bin/python benchmarks/scale.py --replay --trials 10000 [--replay-from DIR] [--replay-concurrent 8]
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

    def __init__(self, storage: Path, every_s: float, measure_dir: bool = True) -> None:
        super().__init__(daemon=True)
        self.storage, self.every_s, self.measure_dir = storage, every_s, measure_dir
        self.samples: list[dict[str, float]] = []
        self.start_time = time.monotonic()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.every_s):
            experiments = [p for p in self.storage.iterdir() if p.is_dir()] if self.storage.exists() else []
            trials = 0
            for experiment in experiments:
                with os.scandir(experiment) as entries:
                    trials += sum(1 for entry in entries if entry.name.startswith("train_"))
            sample = {
                "t_s": round(time.monotonic() - self.start_time, 1),
                "driver_rss_mb": round(rss_mb(), 1),
                "trials_started": trials,
            }
            if self.measure_dir:
                sample["dir_mb"] = round(sum(dir_size(e) for e in experiments) / 2**20, 2)
            else:  # --replay: the driver's CPU seconds (this process's, the sampler's few included)
                sample["driver_cpu_s"] = round(time.process_time(), 2)
            self.samples.append(sample)


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
    goals name, with the rows and settings a real trial writes, and its checkpoints as a reader sees them
    (each one's rlsweep metadata and its learner folder, without the weights: a reader opens no more)."""
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
        for checkpoint in sorted(source.glob(store.CHECKPOINT_GLOB)):
            if (checkpoint / store.CHECKPOINT_META).is_file():
                (target / checkpoint.name / store.ALGORITHM_STATE).mkdir(parents=True)
                shutil.copy(checkpoint / store.CHECKPOINT_META, target / checkpoint.name / store.CHECKPOINT_META)
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


# --- --replay: many trials through the same driver path, each replaying a real trial's rows ---------------

#: What Tune adds to every result itself (``ray.tune.result.AUTO_RESULT_KEYS`` and the few it sets beside
#: them): left out of a template row, for Tune to add again. ``time_total_s`` is rlsweep's own key too, kept.
TUNE_KEYS = frozenset({
    "training_iteration", "episodes_total", "timesteps_total", "node_ip", "hostname", "pid", "time_this_iter_s",
    "timestamp", "date", "time_since_restore", "timesteps_since_restore", "iterations_since_restore", "config",
    "checkpoint_dir_name", "should_checkpoint", "done", "trial_id", "experiment_tag",
})


def _commit() -> dict[str, Any]:
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def _trial_index(folder: Path) -> int:
    """A trial folder's creation index: ``train_<id>_<index>_<tag...>`` (``_compat.trial_index``)."""
    parts = folder.name.split("_")
    return int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else 0


def templates_from(root: Path) -> list[dict[str, Any]]:
    """Each trial of the real sweep at ``root``, in its creation order: its rows without Tune's keys, its last
    checkpoint (a folder, or None) and that checkpoint's ``carried`` state."""
    from rlsweep import store

    out = []
    trials = sorted((p for p in root.iterdir() if p.is_dir() and p.name.startswith("train_")), key=_trial_index)
    for trial in trials:
        result = trial / store.RESULT_FILE
        if not result.exists():
            continue
        rows = [{k: v for k, v in json.loads(line).items() if k not in TUNE_KEYS}
                for line in result.read_text().splitlines() if line.strip()]
        if not rows:
            continue
        checkpoints = sorted(p for p in trial.glob("checkpoint_*") if (p / store.CHECKPOINT_META).exists())
        carried: dict[str, Any] = {}
        if checkpoints:
            meta = json.loads((checkpoints[-1] / store.CHECKPOINT_META).read_text())
            carried = meta.get("carried") or {}
        out.append({"trial": trial.name, "rows": rows, "checkpoint": str(checkpoints[-1]) if checkpoints else None,
                    "carried": carried})
    if not out:
        raise SystemExit(f"{root}: no trial folder with result rows to replay")
    return out


def train(sampled: dict[str, Any], spec: Any, plan: Any, templates: list[dict[str, Any]]) -> None:
    """The replayed trial (named ``train`` as the real trainable is, so its folders are ``train_*``): the rows
    of template trial ``index % len(templates)``, reported in order as the real ``TrialLoop`` reports its own,
    until the env-step budget; its settings file first, its checkpoints when the real trial's would be due."""
    import shutil

    import ray
    from ray import tune

    from rlsweep import _compat, metrics, store
    from rlsweep.trainables import settings_for
    from rlsweep.trainables._loop import with_seeds

    index = _compat.trial_index()
    template = templates[index % len(templates)]
    sampled, seeds = with_seeds(spec, sampled, plan, index)
    store.write_trial_settings(_compat.write_trial_file, {
        "settings": settings_for(spec, sampled), "config": sampled, "seeds": seeds, "ray": ray.__version__,
        "replayed_from": template["trial"],
    })
    node_id = ray.get_runtime_context().get_node_id()
    drawn = {metrics.HP_PREFIX + path: value for path, value in sampled.items()
             if isinstance(value, (int, float)) and not isinstance(value, bool)}
    next_checkpoint = plan.checkpoint_every
    rows = template["rows"]
    for number, template_row in enumerate(rows):
        row = {**template_row, **{k: v for k, v in drawn.items() if k in template_row}, metrics.NODE_ID: node_id}
        env_steps = metrics.env_steps(row)
        done = env_steps >= spec.budget.env_steps or number == len(rows) - 1
        if not (env_steps >= next_checkpoint or done):
            tune.report(row)
        else:
            next_checkpoint = (env_steps // plan.checkpoint_every + 1) * plan.checkpoint_every
            with tempfile.TemporaryDirectory(prefix="rlsweep-ckpt-") as directory:
                if template["checkpoint"] is not None:
                    shutil.copytree(template["checkpoint"], directory, dirs_exist_ok=True,
                                    ignore=shutil.ignore_patterns(store.CHECKPOINT_META))
                store.write_checkpoint_meta(directory, {
                    "metrics": {k: v for k, v in row.items() if k in metrics.NORMALIZED_METRICS},
                    "carried": template["carried"], "carried_by_seed": [template["carried"]], "seeds": seeds,
                    "config": sampled, "rule_env_steps": env_steps,
                })
                tune.report(row, checkpoint=tune.Checkpoint.from_directory(directory))
        if done:
            return


def replayed_trainable(templates: list[dict[str, Any]], cpus: float):
    """A stand-in for ``rlsweep.sweep._trainable``: the trial plan as the real one makes it, the replayed
    trial, and one bundle of ``cpus`` CPUs per trial (a placement group, as a real trial's)."""
    from ray import tune

    from rlsweep.schedulers import SCHEDULERS
    from rlsweep.seeds import seed_base
    from rlsweep.trainables import plan_for

    def _trainable(spec: Any, sweep_id: str, trace: Any = None, memory: Any = None) -> Any:
        rule = SCHEDULERS[str(spec.scheduler.name)].checkpoint_rule(spec)
        plan = plan_for(spec, rule, seed_base(spec.searcher.seed, sweep_id), trace)
        trainable = tune.with_parameters(train, spec=spec, plan=plan, templates=templates)
        return tune.with_resources(trainable, tune.PlacementGroupFactory([{"CPU": cpus}]))

    return _trainable


class StateSaves:
    """Times each save of Tune's experiment state (``TuneController.save_to_dir``, wrapped in this process):
    when, how long, how many trials the controller held, and the state file's size."""

    def __init__(self, start_time: float) -> None:
        self.start_time = start_time
        self.saves: list[dict[str, float]] = []

    def install(self) -> None:
        from ray.tune.execution.tune_controller import TuneController

        original = TuneController.save_to_dir
        saves, start_time = self.saves, self.start_time

        def save_to_dir(controller: Any) -> None:
            began = time.monotonic()
            original(controller)
            took = time.monotonic() - began
            try:
                size = Path(controller._storage.experiment_driver_staging_path,
                            controller.experiment_state_file_name).stat().st_size
            except (OSError, AttributeError):
                size = -1
            saves.append({"t_s": round(began - start_time, 2), "s": round(took, 4),
                          "trials": len(controller.get_trials()), "state_kb": round(size / 1024, 1)})

        TuneController.save_to_dir = save_to_dir


def _at(samples: list[dict[str, float]], trials: int, key: str) -> float | None:
    """``key`` when the sweep had started ``trials`` trials, between the samples either side (linear)."""
    before = None
    for sample in samples:
        if sample["trials_started"] >= trials:
            if before is None or sample["trials_started"] == before["trials_started"]:
                return sample[key]
            share = (trials - before["trials_started"]) / (sample["trials_started"] - before["trials_started"])
            return before[key] + share * (sample[key] - before[key])
        before = sample
    return None


def windows(samples: list[dict[str, float]], saves: list[dict[str, float]], size: int) -> list[dict[str, Any]]:
    """Per ``size`` trials started: trials a minute, the driver's CPU seconds per trial, its memory at the
    window's end, and the experiment-state saves in the window. The first window includes the sweep's start
    (Ray, the pre-flight)."""
    if not samples:
        return []
    start = {"t_s": 0.0, "trials_started": 0, "driver_cpu_s": samples[0]["driver_cpu_s"],
             "driver_rss_mb": samples[0]["driver_rss_mb"]}
    points = [start, *samples]
    out = []
    low = 0
    while low + size <= samples[-1]["trials_started"]:
        high = low + size
        t0, t1 = _at(points, low, "t_s"), _at(points, high, "t_s")
        c0, c1 = _at(points, low, "driver_cpu_s"), _at(points, high, "driver_cpu_s")
        inside = [s for s in saves if t0 <= s["t_s"] < t1]
        out.append({
            "trials": f"{low}-{high}",
            "minutes": round((t1 - t0) / 60, 2),
            "trials_per_min": round(size / max(t1 - t0, 1e-9) * 60, 1),
            "driver_cpu_ms_per_trial": round((c1 - c0) * 1000 / size, 1),
            "driver_rss_mb": round(_at(points, high, "driver_rss_mb"), 1),
            "state_saves": len(inside),
            "state_save_mean_s": round(statistics.mean(s["s"] for s in inside), 3) if inside else None,
            "state_save_max_s": round(max(s["s"] for s in inside), 3) if inside else None,
            "state_kb": inside[-1]["state_kb"] if inside else None,
        })
        low = high
    return out


def driver_memory_callbacks(real: Any, which: str, trim_every_s: float | None) -> Any:
    """``rlsweep.sweep._logger_callbacks`` for an A/B of the driver's memory callbacks: ``rlsweep`` as the
    sweep has them; ``rows`` without handing freed heap back (``ReturnFreedMemory``); ``none`` without that
    and with finished trials' rows kept whole but for their metric's statistics (before the trim of
    ``rllib/`` diagnostics). ``trim_every_s``: hand freed heap back at most this often instead."""
    from rlsweep import _compat, runtime

    def callbacks(spec: Any) -> list[Any]:
        kept = []
        for callback in real(spec):
            name = type(callback).__name__
            if name == "ReturnFreedMemory":
                if which != "rlsweep":
                    continue
                if trim_every_s is not None:
                    callback = runtime.freed_memory_callback_class()(trim_every_s)
            elif name == "ForgetFinishedTrials" and which == "none":
                callback = _compat.forget_finished_trials_class()(spec.metric.name)
            kept.append(callback)
        return kept

    return callbacks if which != "rlsweep" or trim_every_s is not None else real


def replay_document(template_root: Path, args: argparse.Namespace, storage: Path) -> dict[str, Any]:
    """The template sweep's own spec, as it ran, for ``--trials`` replayed trials: its budget of env steps,
    metric, checkpoint and report settings; FIFO, the searcher asked for, no held-out stage, no MLflow."""
    from rlsweep import store

    document = dict(store.read_sweep_info(template_root)["spec"])
    for key in ("holdout", "tracing"):
        document.pop(key, None)
    searcher = {"name": "random", "seed": 0} if args.replay_searcher == "random" else None
    document.pop("searcher", None)
    if args.checkpoint_keep is not None:
        document["checkpoint"] = {**(document.get("checkpoint") or {}), "keep": args.checkpoint_keep}
    budget = {**document["budget"], "trials": args.trials, "max_concurrent": args.replay_concurrent}
    budget.pop("time_s", None)
    if args.cap_s is not None:
        budget["time_s"] = args.cap_s
    return {
        **document,
        "name": "scale-replay",
        **({"searcher": searcher} if searcher else {}),
        "scheduler": "fifo",
        "budget": budget,
        "holdout": None,
        "storage": str(storage),
        "mlflow": None,
    }


def replay(args: argparse.Namespace) -> None:
    import subprocess
    from importlib import metadata

    import rlsweep
    import rlsweep.sweep as sweep_module
    from rlsweep import store

    started = dt.datetime.now()
    out_file = Path(args.out) if args.out else HERE / "results" / f"scale_replay-{started:%Y-%m-%dT%H%M}.json"
    with tempfile.TemporaryDirectory(prefix="rlsweep-scale-replay-") as scratch:
        base = Path(args.keep or scratch)
        template_s = None
        if args.replay_from:
            template_root = Path(args.replay_from).resolve()
        else:
            # A small real sweep first: its rows are the templates.
            real = argparse.Namespace(**{**vars(args), "trials": args.template_trials, "cap_s": None})
            document_ = {**document(real, base / "template"), "name": "scale-template", "holdout": None}
            document_["budget"].pop("time_s")
            begun = time.perf_counter()
            template_root = rlsweep.run(rlsweep.load_spec(document_), verbose=0).path
            template_s = round(time.perf_counter() - begun, 1)
        templates = templates_from(template_root)
        print(f"templates: {len(templates)} trials of {template_root}", flush=True)

        storage = base / "replay"
        if storage.exists() and any(storage.iterdir()):
            # The sampler counts the trial folders of every experiment in it.
            raise SystemExit(f"{storage} is not empty: --keep a fresh folder")
        spec = rlsweep.load_spec(replay_document(template_root, args, storage))
        sweep_module._trainable = replayed_trainable(templates, args.replay_cpus)
        sweep_module._logger_callbacks = driver_memory_callbacks(sweep_module._logger_callbacks, args.driver_memory,
                                                                 args.trim_every_s)
        sampler = Sampler(storage, args.sample_s, measure_dir=False)
        saves = StateSaves(sampler.start_time)
        saves.install()
        fit: dict[str, float] = {}
        real_sweep_run = sweep_module.run

        def timed_sweep_run(*a: Any, **k: Any) -> Any:
            # The fit's end, before rlsweep.run reads the sweep back to pick the best trial.
            fit["start_s"] = time.monotonic() - sampler.start_time
            fit["cpu_start_s"] = time.process_time()
            value = real_sweep_run(*a, **k)
            fit["end_s"] = time.monotonic() - sampler.start_time
            fit["rss_mb"] = rss_mb()
            fit["cpu_s"] = time.process_time()
            return value

        sweep_module.run = timed_sweep_run
        sampler.start()
        start = time.perf_counter()
        try:
            result = rlsweep.run(spec, verbose=0)
        finally:
            sweep_module.run = real_sweep_run
        run_s = time.perf_counter() - start
        sampler.done.set()
        sampler.join()
        root = result.path

        state_files = sorted(root.glob(store.STATE_GLOB))
        index = root / store.ROWS_INDEX
        index.unlink(missing_ok=True)
        load_first_s, _ = timed(lambda: rlsweep.load(root), repeat=1)
        load_s, swept = timed(lambda: rlsweep.load(root), repeat=1)
        table_s, table = timed(swept.table, repeat=1)
        status_s: float | None = None
        status_exit: int | str | None = None
        cli = Path(sys.executable).parent / "rlsweep"
        if cli.exists() and not args.no_status:
            begun = time.perf_counter()
            try:
                done = subprocess.run([str(cli), "status", str(root)], capture_output=True, text=True, timeout=1800)
                status_exit = done.returncode
            except subprocess.TimeoutExpired:
                status_exit = "timed out after 1800 s"
            status_s = round(time.perf_counter() - begun, 2)

        samples = [s for s in sampler.samples if s["t_s"] <= fit.get("end_s", math.inf)]
        trials = len(table)
        at_from = next((s for s in samples if s["trials_started"] >= args.rss_from), None)
        end_rss = fit.get("rss_mb")
        growth = per_trial_kb = None
        if at_from and end_rss is not None and trials > at_from["trials_started"]:
            growth = end_rss / at_from["driver_rss_mb"] - 1
            per_trial_kb = (end_rss - at_from["driver_rss_mb"]) * 1024 / (trials - at_from["trials_started"])
        fit_s = fit["end_s"] - fit["start_s"]
        last_save = saves.saves[-1] if saves.saves else None
        big = [s for s in saves.saves if s["state_kb"] >= 1024]
        report = {
            "benchmark": "scale_replay",
            "mode": "replay",
            "started": started.isoformat(),
            **_commit(),
            "settings": vars(args),
            "notes": [
                "trials are replayed, not trained: rlsweep.sweep._trainable is monkeypatched in the benchmark process "
                "with a trainable that reports a real sweep's rows (template trial = trial index % templates) through "
                "rlsweep.run's driver path (Tune's controller, the searcher, rlsweep's callbacks, result.json writes, "
                "checkpoints and experiment-state saves); no RLlib learning, env stepping or trial build",
                "TuneController.save_to_dir is wrapped in this process to time each experiment-state save",
                "driver_rss_mb.end is read when rlsweep.sweep.run returns (the end of the fit), before rlsweep.run "
                "reads the sweep back to pick its best trial; samples after it are left out",
                f"each trial asks for {args.replay_cpus} CPU (one bundle); budget.max_concurrent {args.replay_concurrent}",
            ],
            "template": {"path": str(template_root), "trials": len(templates),
                         "rows_per_trial": [len(t["rows"]) for t in templates],
                         "checkpoints": sum(t["checkpoint"] is not None for t in templates),
                         "sweep_s": template_s},
            "spec": {k: spec.document.get(k) for k in ("algorithm", "env", "searcher", "scheduler", "budget", "checkpoint")},
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "versions": {p: metadata.version(p) for p in ("ray", "torch", "mlflow", "pandas")},
            "trials": trials,
            "errored_trials": result.errored_trials,
            "iterations": int(table["iterations"].sum()),
            "fit_s": round(fit_s, 1),
            "run_s": round(run_s, 1),
            "trials_per_min": round(trials / fit_s * 60, 1),
            "driver_cpu_s": round(fit["cpu_s"] - fit["cpu_start_s"], 1),
            "driver_rss_mb": {
                "rss_from_trial": args.rss_from,
                "at_rss_from": at_from["driver_rss_mb"] if at_from else None,
                "end": round(end_rss, 1) if end_rss is not None else None,
                "growth_from_rss_from": round(growth, 3) if growth is not None else None,
                "kb_per_trial_after_rss_from": round(per_trial_kb, 1) if per_trial_kb is not None else None,
                "max": max(s["driver_rss_mb"] for s in samples) if samples else None,
            },
            "windows": windows(samples, saves.saves, args.window),
            "state_saves": {
                "count": len(saves.saves),
                "total_s": round(sum(s["s"] for s in saves.saves), 1),
                "last_s": saves.saves[-1]["s"] if saves.saves else None,
                "last_state_kb": last_save["state_kb"] if last_save else None,
                # What one more trial adds to the state, and what a save takes per MB of it (saves of 1 MB or more).
                "state_kb_per_trial": round(last_save["state_kb"] / max(last_save["trials"], 1), 1) if last_save else None,
                "ms_per_state_mb": round(statistics.median(s["s"] * 1000 / (s["state_kb"] / 1024) for s in big), 1)
                if big else None,
            },
            "experiment_state_mb": round(sum(p.stat().st_size for p in state_files) / 2**20, 2),
            "experiment_dir_mb": round(dir_size(root) / 2**20, 1),
            "files": file_kinds(root),
            "load_first_s": round(load_first_s, 2),
            "load_s": round(load_s, 2),
            "table_s": round(table_s, 2),
            "cli_status_s": status_s,
            "cli_status_exit": status_exit,
            "samples": samples,
            "saves": saves.saves,
        }
    out_file.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k not in ("samples", "saves")}, indent=1))
    print(f"results: {out_file}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--batch", type=int, default=100, help="env steps per iteration")
    parser.add_argument("--cap-s", type=float, help="budget.time_s (default 1800; --replay: none)")
    parser.add_argument("--sample-s", type=float, default=5.0)
    parser.add_argument("--rllib-keys", nargs="*", help="report.rllib_keys (default: the spec's default)")
    parser.add_argument("--goal-trials", type=int, default=1000, help="size of the replicated directory")
    parser.add_argument("--goal-iterations", type=int, default=20)
    parser.add_argument("--keep", help="keep the experiment directory here instead of a temporary folder")
    replayed = parser.add_argument_group("--replay: trials that replay a real sweep's rows through the same driver path")
    replayed.add_argument("--replay", action="store_true", help="replay mode (see the module's docstring)")
    replayed.add_argument("--replay-from", help="the real sweep whose rows are replayed (default: a small one, run first)")
    replayed.add_argument("--template-trials", type=int, default=4, help="trials of that small real sweep")
    replayed.add_argument("--replay-searcher", choices=("random", "default"), default="random")
    replayed.add_argument("--replay-cpus", type=float, default=0.25, help="CPUs each replayed trial asks for")
    replayed.add_argument("--replay-concurrent", type=int, default=8, help="budget.max_concurrent")
    replayed.add_argument("--rss-from", type=int, default=1000, help="driver memory growth is from this trial")
    replayed.add_argument("--window", type=int, default=500, help="trials per window of the rate over time")
    replayed.add_argument("--checkpoint-keep", type=int, help="checkpoint.keep (default: the template sweep's; Tune forces "
                          "an experiment-state save every keep checkpoints of a trial)")
    replayed.add_argument("--no-status", action="store_true", help="skip timing `rlsweep status`")
    replayed.add_argument("--driver-memory", choices=("rlsweep", "rows", "none"), default="rlsweep",
                          help="an A/B of the driver's memory callbacks (rows: no heap hand-back; none: neither it nor "
                               "the trim of finished trials' rows)")
    replayed.add_argument("--trim-every-s", type=float, help="hand freed heap back at most this often (default: rlsweep's)")
    replayed.add_argument("--out", help="write the results here (default: benchmarks/results/scale_replay-<date>.json)")
    args = parser.parse_args()
    if args.trim_every_s is not None and args.driver_memory != "rlsweep":
        parser.error(f"--trim-every-s sets how often the heap is handed back: --driver-memory {args.driver_memory} has no hand-back")
    if args.replay:
        replay(args)
        return
    if args.cap_s is None:
        args.cap_s = 1800.0

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
            **_commit(),
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
