"""The ``rlsweep`` command: a thin layer over the Python API. Exit codes: 0 success, 2 invalid input, 1 other
(a sweep interrupted before it finished among them)."""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import io
import json
import math
import os
import secrets
import shlex
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TextIO

from rlsweep.errors import RlsweepError, SpecError, SweepError, UsageError, shorten

EXIT_OK, EXIT_ERROR, EXIT_INVALID = 0, 1, 2
#: ``rlsweep plot --dpi``: from a thumbnail to print quality (a 9 x 5 inch figure at 2400 dpi is 21,600 x
#: 12,000 pixels, ~20 s and 1.4 GB to render here).
DPI_RANGE = (10, 2400)
#: The largest raster image ``rlsweep plot`` renders: matplotlib's limit a side, and ~1.4 GB in all.
MAX_SIDE_PIXELS, MAX_PIXELS = 2**16 - 1, 2**28
#: Formats matplotlib draws as vectors: ``--dpi`` does not size them.
VECTOR_FORMATS = frozenset({"pdf", "svg", "svgz", "eps", "ps", "pgf"})
#: Interrupted (Ctrl-C, SIGTERM) before the work was done: not a success, not invalid input.
EXIT_INTERRUPTED = EXIT_ERROR


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(EXIT_INVALID)


class OutputError(RlsweepError):
    """A file a command was asked to write could not be written (exit 1); no partial file is left."""


class _Stream:
    """``sys.stdout`` or ``sys.stderr`` while a command runs: writes through to the real stream, remembers
    the first write that failed (a closed pipe, a full disk) so :func:`main` reports it once for every
    command, and writes what the stream's encoding cannot hold as escapes instead of failing."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.failed: OSError | None = None

    def write(self, text: str) -> int:
        try:
            try:
                return self.stream.write(text)
            except UnicodeEncodeError:
                encoding = getattr(self.stream, "encoding", None) or "utf-8"
                return self.stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
        except OSError as exc:
            self.failed = self.failed or exc
            raise

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as exc:
            self.failed = self.failed or exc
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class _Closed(io.TextIOBase):
    """What a standard stream closed before the command started (``>&-``) is: Python makes it None, and
    print() to None writes nothing without a word."""

    def __init__(self, name: str) -> None:
        self.name = name

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, f"{self.name} is closed")


def _silence(stream: TextIO) -> None:
    """Point a failed standard stream's file at /dev/null, so the interpreter's flush at exit does not
    fail on it again (what Python's docs on SIGPIPE recommend)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def _output_path(value: str, argument: str = "-o") -> Path:
    """A file a command is asked to write, checked before any work: an existing folder, a path ending in a
    separator or in a missing folder is a usage error naming ``argument``."""
    if not value or value.endswith(("/", os.sep)):
        raise UsageError(f"must name a file, got {value!r}", argument)
    path = Path(value).expanduser()
    try:
        if path.is_dir():
            raise UsageError(f"{value} is a folder; name a file in it", argument)
        if not path.parent.is_dir():
            missing = "does not exist" if not path.parent.exists() else "is not a folder"
            raise UsageError(f"the folder {path.parent} {missing}, so {value} cannot be written there", argument)
    except OSError as exc:  # a name too long, a loop of symlinks
        raise UsageError(f"cannot write {value}: {exc.strerror or exc}", argument) from None
    return path


def _write_file(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Write ``path`` whole or not at all: into a new file in its folder, renamed over ``path`` only once
    complete, so a failed write (no permission, a full disk) leaves neither a partial file nor a changed
    old one. A path that exists and is not a regular file (``/dev/full``, a FIFO) is written directly,
    since a rename would replace it. A symlink's target is written.

    Raises:
        OutputError: the write failed, naming the path and why.
    """
    try:
        if path.exists() and not path.is_file():
            with open(path, "wb") as out:
                write(out)
            return
        target = Path(os.path.realpath(path)) if path.is_symlink() else path
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666  # the umask applies to 0o666
        temp = target.with_name(f".{target.name[:100]}.{secrets.token_hex(4)}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            with os.fdopen(fd, "wb") as out:
                write(out)
                out.flush()
                os.fsync(out.fileno())
            if target.exists():
                os.chmod(temp, mode)
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


#: From this many trials, validate says which searchers keep up (benchmarks/suggest_latency.py: Optuna's TPE
#: passes 100 ms a suggestion near trial 6,500, HyperOpt's near 8,000; nevergrad's driver memory reaches 840 MB).
LARGE_SWEEP_TRIALS = 5_000


def large_sweep_line(spec: Any) -> str | None:
    """For a sweep of :data:`LARGE_SWEEP_TRIALS` trials or more on a searcher whose cost grows with the
    trials, which searcher to use instead; None where the searcher keeps up."""
    if spec.budget.trials < LARGE_SWEEP_TRIALS:
        return None
    name, sampler = spec.searcher.name, getattr(spec.searcher, "sampler", None)
    if name == "optuna" and sampler in ("tpe", "gp", None):
        slow = f"optuna's {sampler or 'tpe'} sampler takes longer per suggestion as trials accumulate (TPE passes 100 ms near trial 6,500)"
    elif name in ("hyperopt", "bohb", "bayesopt", "ax"):
        slow = f"{name} takes longer per suggestion as trials accumulate (hyperopt passes 100 ms near trial 8,000)"
    elif name == "nevergrad":
        slow = "nevergrad holds every trial in the driver's memory (about 840 MB at 10,000 trials)"
    else:
        return None
    return (f"searcher: {slow}; for {spec.budget.trials:,} trials, searcher random, or optuna with sampler: qmc, "
            "keep each suggestion under 5 ms")


#: From this many trials, validate says what Tune's forced saves of its experiment state will cost (benchmarks/
#: scale.py --replay: one forced save a trial took the driver's CPU per trial from 108 to 527 ms over 1,000 trials).
LARGE_CHECKPOINT_TRIALS = 1_000


def large_checkpoint_line(spec: Any) -> str | None:
    """For a sweep of :data:`LARGE_CHECKPOINT_TRIALS` trials or more whose trials make ``checkpoint.keep``
    checkpoints or more each: Ray Tune then saves its whole experiment state every ``keep`` checkpoints of any
    trial, a save that grows with the trials, and what to set instead; None where it does not."""
    from rlsweep.schedulers import checkpoint_keep
    from rlsweep.trainables import plan_for

    keep = checkpoint_keep(spec)
    if spec.budget.trials < LARGE_CHECKPOINT_TRIALS or keep is None:
        return None
    made = max(1, spec.budget.env_steps // plan_for(spec, None).checkpoint_every)
    if made < keep:
        return None
    saves = made // keep * spec.budget.trials
    return (f"checkpoint: each trial checkpoints about {made} time(s) and Ray Tune saves its whole experiment state "
            f"(every trial's entry) each time a trial has made checkpoint.keep ({keep}) more: about {saves:,} saves over "
            f"{spec.budget.trials:,} trials, each longer as trials accumulate (one a trial took the driver from 108 to "
            f"527 ms of CPU a trial over 1,000 trials); checkpoint.every_env_steps: {spec.budget.env_steps} (one "
            f"checkpoint, at the budget) or checkpoint.keep: {made + 1} avoids them")


def seeds_plan_line(spec: Any) -> str | None:
    """With several seeds a trial: how a trial trains them and what that costs, as validate says it."""
    from rlsweep.seeds import check_points

    seeds = spec.seeds
    if seeds.per_trial < 2:
        return None
    if not seeds.adaptive:
        return (f"seeds: each trial trains its configuration on {seeds.per_trial} seeds in lockstep; the searcher and the "
                f"scheduler see their {seeds.aggregate}; {seeds.per_trial} x {spec.budget.env_steps:,} env steps a trial")
    at = ", ".join(f"{steps:,}" for steps in check_points(spec.budget.env_steps, seeds.per_trial))
    budgets = sum(seeds.contenders ** k for k in range(seeds.per_trial))
    return (f"seeds: each trial starts on 1 seed and adds the next, up to {seeds.per_trial}, at {at} env steps while its "
            f"{seeds.aggregate} ranks in the best {seeds.contenders:.0%} of those handed in at that check; about "
            f"{budgets:.2f} x {spec.budget.env_steps:,} env steps a trial (a little more: the first trials at a check add one), "
            f"{seeds.per_trial} x at most")


def held_out_plan_line(spec: Any) -> str:
    """What the held-out stage will do after the search, and what it costs, as validate says it."""
    from rlsweep.holdout import DEFAULT_RACE_FROM_RUNS, affords_them, race_budget

    if spec.holdout is None:
        return "held-out stage: off (holdout: null); the answer will be the best trial's own value on its tuning seed(s)"
    settings = spec.holdout
    runs = race_budget(settings.share, spec.budget.trials, spec.seeds.per_trial, settings.max_runs)
    if runs < settings.min_seeds:
        fits = affords_them(settings.share, spec.budget.trials, spec.seeds.per_trial, settings.min_seeds)
        return (f"held-out stage: skipped: holdout.share {settings.share} affords {runs} run(s), fewer than the "
                f"{settings.min_seeds} its winner needs ({fits}); the answer will be the "
                "best trial's own value on its tuning seed(s)")
    how = (f"up to {settings.candidates} of the best configurations race over test seeds"
           if runs >= DEFAULT_RACE_FROM_RUNS and settings.candidates > 1 else "the best configuration is retrained on them")
    return (f"held-out stage: {runs} runs of {spec.budget.env_steps:,} env steps after the search ({runs / (spec.budget.trials * spec.seeds.per_trial):.0%} "
            f"more env steps): {how}; the answer will be the winner's IQM on test seeds the search never used, with "
            "a 95% interval")


def held_out_lines(stage: Mapping[str, Any], path: Path) -> list[str]:
    """What the held-out stage found, said beside the tuning value, each named for what it is."""
    if stage.get("skipped"):
        return [f"held-out:    none ({stage['skipped']})"]
    if stage.get("not_run"):
        return [f"held-out:    not run ({stage['not_run']}); the value above is the best trial's own, on its tuning seed(s)"]
    if stage.get("interrupted"):
        return [f"held-out:    interrupted after {stage.get('runs_done', 0)} run(s); `rlsweep resume {path}` continues it"]
    low, high = stage["interval"]
    seeds, failed = stage["seeds"], stage.get("failed") or []
    # A known range: a failed run counted as its lowest score (unless a finished run's score showed it wrong).
    floor = None if stage.get("score_range_ignored") else (stage.get("score_range") or [None])[0]
    scored = len(seeds) - (len(failed) if floor is None else 0)
    interval = (f"95% interval {low:.6g} to {high:.6g} for its IQM on {stage['future_seeds']} new seeds"
                if math.isfinite(low) and math.isfinite(high) else "no interval (fewer than 2 scored runs)")
    lines = [
        f"held-out:    {stage['held_out_iqm']:.6g} ({stage['metric']}, IQM over {scored} test seed(s) the search never used) "
        f"for trial {stage['winner']}; {interval}",
        f"tuning:      {stage['tuning_value']:.6g} ({stage['tuning_metric']}, {stage.get('tuning_rule', 'its rule')}, in the "
        "search on its own training seed(s): optimistic, as a search's best values are)",
    ]
    entrants = stage.get("candidates") or []
    if len(entrants) > 1:
        lines.append(f"             {len(entrants)} configurations raced over the test seeds; the winner above was chosen by its held-out score")
    if stage.get("score_range_ignored"):
        lines.append(f"             {stage['score_range_ignored']}")
    if failed:
        counted = "" if floor is None else f", each counted as the lowest score, {floor:.6g} (holdout.score_range)"
        lines.append(f"             {len(failed)} of its {len(seeds)} test runs failed (seeds {', '.join(map(str, failed))}){counted}")
    return lines


def _print_best(best: Any) -> None:
    print(f"best trial:  {best.trial_id}")
    print(f"{best.metric} ({best.rule}, {best.mode}): {best.value:.6g} at {best.env_steps} env steps")
    print("config:")
    for key, value in best.config.items():
        print(f"  {key}: {json.dumps(value)}")
    if best.checkpoint is not None:
        # Under held-out and confirmed, the checkpoint was scored in the search, by the search's metric and rule.
        label = "in the search" if best.rule in ("held-out", "confirmed") else best.metric
        detail = f" ({label} {best.checkpoint_value:.6g} at {best.checkpoint_env_steps} env steps)" if best.checkpoint_value is not None else ""
        print(f"checkpoint:  {best.checkpoint}{detail}")
    else:
        print("checkpoint:  none kept for this trial")


def _validate(args: argparse.Namespace) -> int:
    from rlsweep import load_spec
    from rlsweep.trainables import replay_buffer_line

    spec = load_spec(args.spec, args.set)
    measure = spec.ray.memory_check and not args.no_memory_check
    valid = (f"{args.spec}: valid ({spec.algorithm} on {spec.env}, {len(spec.search_space)} parameters, "
             f"searcher {spec.searcher.name}, scheduler {spec.scheduler.name})")
    if (buffer := replay_buffer_line(spec)) is not None:
        valid += "\n" + buffer
    if (seeds := seeds_plan_line(spec)) is not None:
        valid += "\n" + seeds
    valid += "\n" + held_out_plan_line(spec)
    for large in (large_sweep_line(spec), large_checkpoint_line(spec)):
        if large is not None:
            valid += "\n" + large
    if not measure:
        why = "ray.memory_check is false" if not spec.ray.memory_check else "--no-memory-check"
        print(valid)
        print(f"memory: not measured ({why})")
        return EXIT_OK
    from rlsweep.api import check_memory

    # "valid" only once the last check that can refuse the spec (the measured trial) has passed.
    print(f"{args.spec}: the spec, its env and RLlib's config pass; checking one trial's memory at the space's "
          "hungriest corner...", flush=True)
    found = check_memory(spec, address=args.address)
    print(valid)
    for line in found.lines() if found is not None else []:
        print(line)
    return EXIT_OK


#: What ``rlsweep convert --from`` reads.
CONVERT_FORMATS = ("rllib", "zoo")


def _convert(args: argparse.Namespace) -> int:
    import yaml

    from rlsweep import load_spec
    from rlsweep.convert import convert, header
    from rlsweep.spec import read_document

    zoo = args.source_format == "zoo"
    if zoo and args.env is None:
        raise UsageError("--from zoo needs the entry to convert: its env id, e.g. --env CartPole-v1", "--env")
    if not zoo and args.env is not None:
        raise UsageError("only with --from zoo (an old RLlib experiment names its own env)", "--env")
    if zoo and args.experiment is not None:
        raise UsageError("only for an old RLlib experiment YAML; a zoo file's entry is chosen with --env", "--experiment")
    if not zoo and args.algo is not None:
        raise UsageError("only with --from zoo (an old RLlib experiment names its own algorithm, as run:)", "--algo")
    out = _output_path(args.output) if args.output else None
    with contextlib.suppress(OSError):
        if out is not None and out.exists() and os.path.samefile(out, args.file):
            raise UsageError(f"{args.output} is the file being converted; write the spec to another file", "-o")
    if zoo:
        from rlsweep._zoo import algorithm_named, algorithm_of_file, convert_zoo, read_file
        from rlsweep._zoo import header as zoo_header

        # --algo decides, as in rl-zoo3's `--algo ppo -conf FILE`; else the file's name (ppo.yml)
        algorithm = algorithm_named(args.algo) if args.algo is not None else algorithm_of_file(Path(args.file).stem, args.file)
        spec, mapping = convert_zoo(read_file(args.file), args.env, algorithm=algorithm, source=args.file)
        unmapped = list(mapping.unmapped)
        text = zoo_header(args.file, mapping) + yaml.safe_dump(spec, sort_keys=False)
    else:
        spec, unmapped = convert(read_document(args.file), args.experiment, source=args.file)
        text = header(args.file, unmapped) + yaml.safe_dump(spec, sort_keys=False)
    if out is not None:
        _write_file(out, lambda file: file.write(text.encode("utf-8")))
    else:
        print(text, end="")
    for item in unmapped:
        print(f"not converted: {item}", file=sys.stderr)
    where = args.output or "the converted spec"
    try:
        load_spec(spec)
    except SpecError as exc:
        print(f"{where} does not validate yet; fix these and run `rlsweep validate`:", file=sys.stderr)
        raise exc from None
    kind = "zoo setting(s)" if zoo else "old key(s)"
    print(f"{where}: valid ({len(unmapped)} {kind} not carried over, listed above)", file=sys.stderr)
    return EXIT_OK


def _sample(args: argparse.Namespace) -> int:
    from rlsweep import load_spec, sample
    from rlsweep.search_spaces import SEARCHERS

    if args.n < 1:
        raise UsageError(f"must be >= 1 (a dry run of a sweep's first configs), got {shorten(args.n)}", "-n")
    spec = load_spec(args.spec, args.set, preflight=False)
    if (problem := SEARCHERS[args.searcher or str(spec.searcher.name)].samples_problem(args.n)) is not None:
        raise UsageError(problem, "-n")
    configs = sample(spec, args.n, searcher=args.searcher)
    if args.json:
        print(json.dumps(_json_safe(configs)))
    else:
        for i, config in enumerate(configs):
            print(f"{i}: " + ", ".join(f"{k}={json.dumps(v)}" for k, v in config.items()))
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    from rlsweep.api import check_storage, load_beside_ray, run

    check_storage(args.storage)  # before Ray starts: refusing it needs no runtime
    spec = load_beside_ray(args.spec, args.set, address=args.address)
    mode = "none" if args.quiet else args.progress
    result = run(spec, storage=args.storage, address=args.address, verbose=0 if args.quiet else 1, progress=mode)
    return _report(result, spec.mlflow)


def _report(result: Any, mlflow: Any) -> int:
    print(f"\nexperiment:  {result.path}")
    if result.errored_trials:
        print(f"failed trials: {result.errored_trials} (see `rlsweep status {result.path}`)")
    if result.best is None:
        print(f"no answer: {result.no_best or 'no trial reported a result'}", file=sys.stderr)
        if result.interrupted:
            print(f"interrupted: continue the sweep with `rlsweep resume {result.path}`", file=sys.stderr)
            return EXIT_INTERRUPTED
        return EXIT_ERROR
    if result.interrupted:
        print(f"interrupted: {len(result.unfinished_trials)} trial(s) did not finish; continue the sweep with "
              f"`rlsweep resume {result.path}`", file=sys.stderr)
        print("best so far (the sweep is not finished):")
    _print_best(result.best)
    if result.held_out is not None:
        for line in held_out_lines(result.held_out, result.path):
            print(line)
    if result.export_error:
        print(f"mlflow export failed: {result.export_error}", file=sys.stderr)
    if result.mlflow_run_id and mlflow is not None:
        print(f"mlflow:      {_mlflow_line(result.path, mlflow, result.mlflow_run_id)}")
    held_out_interrupted = result.held_out is not None and result.held_out.get("interrupted")
    return EXIT_INTERRUPTED if result.interrupted or held_out_interrupted else EXIT_OK


def _resume(args: argparse.Namespace) -> int:
    from rlsweep import store
    from rlsweep.api import resume

    root = Path(args.dir).expanduser().resolve()
    try:
        store.read_sweep_info(root)
    except SweepError as exc:
        raise UsageError(str(exc).removeprefix(f"{root}: "), "DIR") from None
    if not store.has_tune_state(root):
        raise UsageError("no Tune experiment state to resume from (the sweep never started a trial)", "DIR")
    if problems := store.resume_problems(root):
        shown = problems[: store.MAX_WARNINGS] + ([f"and {len(problems) - store.MAX_WARNINGS} more"] if len(problems) > store.MAX_WARNINGS else [])
        raise UsageError(
            "cannot resume safely: " + "; ".join(shown) + ". Nothing was changed: `rlsweep status`, `best` and "
            "`export` still read what is intact; repair what is named, or start a new sweep to go on", "DIR")
    result = resume(root, spec_path=args.spec, address=args.address)
    return _report(result, _load(str(result.path)).spec.mlflow)


#: What every command that reads an experiment takes as DIR.
DIR_HELP = ("the experiment's folder, or the name of its sweep: the newest folder of that name in ./rlsweep_results "
            "(the default storage)")


def _experiment_dir(text: str) -> str:
    """DIR as the user gave it: an experiment's folder, or, where no such file or folder exists, an
    experiment's name: the folder of its newest sweep under the default storage (said on stderr). A name
    with no folder there, or whose newest folders started at the same time (copies of one sweep), is
    invalid input (exit 2) naming what was looked for and where."""
    from rlsweep import store
    from rlsweep.spec import DEFAULT_STORAGE

    try:
        found = store.experiment_by_name(text, DEFAULT_STORAGE)
    except store.NoSuchExperiment as exc:
        raise UsageError(str(exc), "DIR") from None
    if found is None:
        return text  # a path: the command reads it, and says what is wrong with it
    chosen, said = found
    print(said, file=sys.stderr)
    return str(chosen)


def _load(directory: str, *, freeze: bool = False) -> Any:
    """An experiment directory named on the command line; a wrong one is invalid input (exit 2).

    ``freeze``: for a command that reads the sweep and ends (status, best, plot, export), keep what was read
    out of the cyclic collector's sight until the command ends: its full collections would walk every row of
    every trial again (a quarter second on 10,000 trials, and once more on the way out). Refcounting still
    frees what is in no reference cycle; :func:`main` hands the rest back to a caller that lives on."""
    from rlsweep.analysis import load

    try:
        sweep = load(directory)
    except SweepError as exc:
        raise UsageError(str(exc).removeprefix(f"{Path(directory).expanduser().resolve()}: "), "DIR") from None
    global _FROZE
    if freeze and not gc.get_freeze_count():  # (a program that freezes objects of its own is left to do so)
        _FROZE = True
        gc.freeze()
    return sweep


#: Whether this command froze what it read (:func:`_load`).
_FROZE = False


def _answered(sweep: Any) -> int:
    """The exit code of a command that read ``sweep``: 1 where something of it could not be read (a trial's
    folder gone, a file that is a folder or a FIFO; each named in a warning as it was read), so a script
    knows the answer is incomplete; else 0."""
    if not sweep.damage:
        return EXIT_OK
    print(f"incomplete: {len(sweep.damage)} thing(s) in {sweep.path} could not be read (named above); the answer "
          "covers the rest", file=sys.stderr)
    return EXIT_ERROR


def _rule(text: str) -> Any:
    from rlsweep.analysis import SelectionRule

    return SelectionRule.parse(text)


def _best(args: argparse.Namespace) -> int:
    sweep = _load(args.dir, freeze=True)
    best = sweep.best(rule=None if args.rule is None else _rule(args.rule))
    stage = sweep.held_out()
    if args.json:
        print(json.dumps(_json_safe({**best.to_dict(), **({"held_out": stage} if stage is not None else {})})))
    else:
        _print_best(best)
        for line in held_out_lines(stage, sweep.path) if stage is not None else []:
            print(line)
    return _answered(sweep)


def _plot_format(value: str) -> str:
    """The format ``-o`` names by its extension (none: PNG), if matplotlib can write it."""
    from matplotlib.backend_bases import FigureCanvasBase

    extension = Path(value).suffix.lower().removeprefix(".")
    if not extension:
        return "png"
    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    if extension not in formats:
        raise UsageError(f"matplotlib cannot write .{extension} files; name one of {', '.join('.' + f for f in formats)}, "
                         f"got {value}", "-o")
    return extension


def _check_pixels(figure: Any, dpi: int, fmt: str) -> None:
    """A raster image must fit matplotlib's limit and memory; a vector format has no pixel size."""
    if fmt in VECTOR_FORMATS:
        return
    width, height = (float(v) for v in figure.get_size_inches())
    most = min(MAX_SIDE_PIXELS / max(width, height), math.sqrt(MAX_PIXELS / (width * height)))
    if dpi > most:
        raise UsageError(
            f"this figure is {width:.3g} x {height:.3g} inches: at {dpi} dpi that is {round(width * dpi):,} x "
            f"{round(height * dpi):,} pixels, over the {MAX_SIDE_PIXELS:,} a side and {MAX_PIXELS:,} in all a "
            f"{fmt.upper()} may have here; use --dpi {math.floor(most)} or less, or a vector format (.svg, .pdf)", "--dpi")


def _plot(args: argparse.Namespace) -> int:
    low, high = DPI_RANGE
    if not low <= args.dpi <= high:
        raise UsageError(f"must be in [{low}, {high}] dots per inch, got {shorten(args.dpi)}", "--dpi")
    out = _output_path(args.output) if args.output else None
    fmt = _plot_format(args.output) if args.output else "png"
    sweep = _load(args.dir, freeze=True)
    if out is None:
        out = sweep.path / "plots" / f"{args.kind}.png"
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot write {out}: {exc.strerror or exc}") from None
    figure = sweep.plot(args.kind)
    _check_pixels(figure, args.dpi, fmt)

    def save(file: IO[bytes]) -> None:
        try:
            figure.savefig(file, format=fmt, dpi=args.dpi)
        except (RuntimeError, ValueError) as exc:  # a backend's missing tool (pgf needs LaTeX)
            raise OutputError(f"cannot write {out} as {fmt}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None

    _write_file(out, save)
    print(out)
    return _answered(sweep)


def _status(args: argparse.Namespace) -> int:
    import pandas as pd

    sweep = _load(args.dir, freeze=True)
    table = sweep.table()
    if args.json:
        print(table.to_json(orient="records"))
        return _answered(sweep)
    if not len(table):
        print(f"{sweep.path}: no trial has started yet")
        return _answered(sweep)
    counts = table["state"].value_counts().to_dict()
    print(f"{sweep.path}: {len(table)} trials " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    shown = _status_rows(table, sweep.spec.metric.name, sweep.spec.metric.mode)
    with pd.option_context("display.max_columns", None, "display.width", 200):
        print(shown.drop(columns=["error"]).to_string(index=False))
    if len(shown) < len(table):
        print(f"... and {len(table) - len(shown):,} more trial(s) not shown: `rlsweep status --json` lists every trial")
    for _, row in shown[shown["error"].notna()].iterrows():
        print(f"\n[{row['trial_id']}] error:\n{row['error'].splitlines()[-1] if row['error'] else ''}")
    if sweep.has_results():
        print()
        _print_best(sweep.best())
    return _answered(sweep)


#: Above this many trials ``rlsweep status`` shows the best :data:`STATUS_BEST` by the metric and the ones not
#: finished (up to :data:`STATUS_ROWS` in all), not a table of thousands of lines.
STATUS_ROWS, STATUS_BEST = 200, 20


def _status_rows(table: Any, metric: str, mode: str) -> Any:
    """The rows of the status table a terminal shows: all, where there are at most STATUS_ROWS; else the
    best STATUS_BEST by the metric's best value, then the trials not terminated, in the table's order."""
    if len(table) <= STATUS_ROWS:
        return table
    column = f"{metric}_best"
    best = table[column].sort_values(ascending=mode == "min", na_position="last", kind="stable").index[:STATUS_BEST]
    others = table.index[table["state"] != "TERMINATED"].difference(best)[: STATUS_ROWS - len(best)]
    return table.loc[[*best, *others]]


def _evaluate(args: argparse.Namespace) -> int:
    import pandas as pd

    if args.top < 1:
        raise UsageError(f"must be >= 1, got {args.top}", "--top")
    if args.episodes < 1:
        raise UsageError(f"must be >= 1, got {args.episodes}", "--episodes")
    if bad := [s for s in args.seeds if not 0 <= s < 2**32]:
        raise UsageError(f"env seeds must be in [0, 2**32), got {bad[0]}", "--seeds")
    rule = _rule(args.rule)
    sweep = _load(args.dir)
    table = sweep.evaluate(args.top, episodes=args.episodes, seeds=args.seeds, rule=rule)
    if args.json:
        print(table.to_json(orient="records"))
        return EXIT_OK
    if table.empty:
        print("no checkpoint to evaluate", file=sys.stderr)
        return EXIT_ERROR
    print(f"top {args.top} trials by {sweep.spec.metric.name} ({rule}), their best checkpoints, "
          f"{args.episodes} greedy episodes on each of seeds {list(args.seeds)}:")
    shown = table.drop(columns=["checkpoint"])
    with pd.option_context("display.max_columns", None, "display.width", 200, "display.float_format", "{:.4g}".format):
        print(shown.to_string(index=False))
    for _, row in table.iterrows():
        print(f"{row['trial_id']}: {row['checkpoint']}")
    return EXIT_OK


def _confirm(args: argparse.Namespace) -> int:
    rule = _rule(args.rule)
    swept = _load(args.dir)  # a clear error for a directory that holds no sweep
    # With --json, stdout holds the JSON alone: what Tune prints while training goes to stderr.
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        result = swept.confirm(
            args.top, args.seeds, rule=rule, trials=tuple(args.trial or ()), address=args.address, verbose=0 if args.json else 1
        )
    incomplete = any(row["missing"] for row in result["configurations"])
    if args.json:
        print(json.dumps(_json_safe(result)))
        return EXIT_ERROR if incomplete else EXIT_OK
    print(f"\n{result['metric']} at the budget ({result['episodes']} greedy episodes), on test seeds "
          f"{result['test_seeds']}; IQM with a {result['confidence']:.0%} bootstrap interval:")
    for row in result["configurations"]:
        mark = "  winner" if row["trial_id"] == result["winner"] else "  tie: interval overlaps the winner's" if row["tie_with_winner"] else ""
        print(f"{row['rank']}. {row['trial_id']}  IQM {row['iqm']:.4g}  [{row['ci_low']:.4g}, {row['ci_high']:.4g}]  "
              f"(tuning: {row['tuning_value']:.4g}){mark}")
        print("   per seed: " + ", ".join(f"{seed}: {value:.4g}" for seed, value in row["per_seed"].items()))
        if row["p_beats"]:
            print("   P(beats): " + ", ".join(f"{other} {p:.2f}" for other, p in row["p_beats"].items()))
        for why in row["missing"]:
            print(f"   missing {why}", file=sys.stderr)
    print(f"\nstored in {Path(args.dir).expanduser().resolve()}; `rlsweep best {args.dir} --rule confirmed` uses it")
    return EXIT_ERROR if incomplete else EXIT_OK


def _reproduce(args: argparse.Namespace) -> int:
    import rlsweep

    _load(args.dir)  # a clear error for a directory that holds no sweep
    result = rlsweep.reproduce(args.dir, args.trial, storage=args.storage)
    print(f"reran trial {args.trial} into {result.path}")
    if result.best is not None:
        _print_best(result.best)
    return EXIT_OK if not result.errored_trials else EXIT_ERROR


def _trial_runs(text: str) -> int | str:
    if text == "all":
        return text
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"a count of trials (0 or more) or all, got {text!r}")
    return value


def _export(args: argparse.Namespace) -> int:
    from rlsweep.analysis._mlflow import trial_runs_of

    sweep = _load(args.dir, freeze=True)
    run_id = sweep.to_mlflow(tracking_uri=args.tracking_uri, experiment=args.experiment, trial_runs=args.trial_runs)
    print(f"exported {len(sweep.trials)} trials: {_mlflow_line(sweep.path, sweep.spec.mlflow, run_id, args.tracking_uri, args.experiment)}")
    limit = trial_runs_of(sweep, args.trial_runs)
    if limit != "all" and len(sweep.trials) > limit:
        print(f"child runs for the best {limit:,} trials by {sweep.spec.metric.name}; every trial is in the parent run's "
              f"trials.csv (`--trial-runs all` gives each trial a run)")
    return _answered(sweep)


def _mlflow_line(path: Path, mlflow: Any, run_id: str, uri: str | None = None, experiment: str | None = None) -> str:
    """The one line that says where a sweep's MLflow runs are and how to browse them (MLflow's own "View run"
    lines, one per run, are off)."""
    from rlsweep.spec import DEFAULT_TRACKING_URI, MlflowSpec

    settings = mlflow or MlflowSpec()
    browse = ["rlsweep", "ui", str(path)]
    browse += ["--tracking-uri", uri] if uri else []
    browse += ["--experiment", experiment] if experiment else []
    shown_uri = uri or settings.tracking_uri or DEFAULT_TRACKING_URI
    return (f"parent run {run_id} in experiment {experiment or settings.experiment!r} of {shown_uri}; "
            f"browse it with `{shlex.join(browse)}`")


def _ui(args: argparse.Namespace) -> int:
    from rlsweep.analysis._ui import experiment_url, start_server, stop_server
    from rlsweep.spec import DEFAULT_TRACKING_URI

    experiment = args.experiment
    uri = args.tracking_uri
    if args.dir is not None:
        spec = _load(args.dir).spec
        if spec.mlflow is not None:
            uri = uri or spec.mlflow.tracking_uri
            experiment = experiment or spec.mlflow.experiment
    uri = uri or DEFAULT_TRACKING_URI
    if uri.startswith(("http://", "https://")):
        print(f"{uri} is already an MLflow server: open it in a browser")
        return EXIT_OK
    if args.port is not None and not 1 <= args.port <= 65535:
        raise UsageError(f"must be a TCP port in [1, 65535], got {args.port}", "--port")

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    # The server runs in its own process group: a SIGTERM to this command, also while the server starts,
    # must end it as Ctrl-C does (start_server ends it when interrupted).
    signal.signal(signal.SIGTERM, stop)
    try:
        process, url = start_server(uri, args.port)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    try:
        print(f"MLflow UI for {uri}: {experiment_url(url, uri, experiment)}", flush=True)
        print("(Ctrl-C stops it)", flush=True)
        return int(process.wait())
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        stop_server(process)


def _schema(args: argparse.Namespace) -> int:
    from rlsweep import schema

    print(json.dumps(schema(), indent=2 if args.indent else None))
    return EXIT_OK


def _address(text: str) -> str:
    """``--address``: a usage error (exit 2) for a control character or whitespace, as in ``ray.address``."""
    from rlsweep._host import url_text_problem

    if problem := url_text_problem(text):
        raise argparse.ArgumentTypeError(problem)
    return text


def _tracking_uri(text: str) -> str:
    """``--tracking-uri``: a usage error (exit 2) for a character ``mlflow.tracking_uri`` may not hold."""
    from urllib.parse import urlsplit

    from rlsweep._host import is_local_store, url_text_problem

    try:
        local = is_local_store(urlsplit(text).scheme)
    except ValueError:  # the store's own check names what is wrong with it
        local = False
    if problem := url_text_problem(text, local_path=local):
        raise argparse.ArgumentTypeError(problem)
    return text


def build_parser() -> argparse.ArgumentParser:
    from rlsweep import __version__
    from rlsweep._zoo import ALGORITHMS as ZOO_ALGORITHMS
    from rlsweep.analysis import DEFAULT_EVAL_SEEDS, DEFAULT_RULE, RULE_HELP
    from rlsweep.search_spaces import SEARCHERS
    from rlsweep.spec import DEFAULT_TRACKING_URI

    parser = _Parser(prog="rlsweep", description="Hyperparameter sweeps of RLlib agents on Ray Tune.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def with_set(p: argparse.ArgumentParser) -> None:
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override a spec value, e.g. budget.trials=4 or config.training.lr=0.001")

    p = commands.add_parser("validate", help="check a spec and what one trial's memory needs; exit 2 listing every problem")
    p.add_argument("spec")
    p.add_argument("--address", type=_address, help="check against this Ray cluster: 'auto' or 'ray://host:port' (default: the spec's ray.address, else a local runtime)")
    p.add_argument("--no-memory-check", action="store_true",
                   help="check the spec without Ray: skip checking one trial's memory at the space's hungriest corner")
    with_set(p)
    p.set_defaults(handler=_validate)

    p = commands.add_parser("convert", help="an experiment YAML of RLlib's old API (rllib train -f), or one entry of an "
                                            "rl-baselines3-zoo hyperparameter file (--from zoo), as an rlsweep spec")
    p.add_argument("file")
    p.add_argument("--from", dest="source_format", choices=CONVERT_FORMATS, default="rllib",
                   help="rllib: an old RLlib experiment YAML (default); zoo: an rl-zoo3 hyperparameters file (ppo.yml, sac.yml, dqn.yml)")
    p.add_argument("--env", help="with --from zoo: the entry to convert, by its env id (e.g. CartPole-v1)")
    p.add_argument("--algo", help=f"with --from zoo: the algorithm of the file's entries, as rl-zoo3's --algo takes it "
                                  f"({', '.join(ZOO_ALGORITHMS)}; default: from the file's name, ppo.yml)")
    p.add_argument("-o", "--output", help="write the spec here (default: print it)")
    p.add_argument("--experiment", help="which experiment, where the file holds several")
    p.set_defaults(handler=_convert)

    p = commands.add_parser("schema", help="print the JSON Schema of a spec (for an editor to complete and check specs)")
    p.add_argument("--indent", action="store_true", help="pretty-print")
    p.set_defaults(handler=_schema)

    p = commands.add_parser("sample", help="dry run: the first N configs the searcher would try")
    p.add_argument("spec")
    p.add_argument("-n", type=int, default=5)
    p.add_argument("--searcher", choices=sorted(SEARCHERS))
    p.add_argument("--json", action="store_true")
    with_set(p)
    p.set_defaults(handler=_sample)

    p = commands.add_parser("run", help="run a sweep, print the best trial, export to MLflow")
    p.add_argument("spec")
    p.add_argument("--storage")
    p.add_argument("--address", type=_address, help="join a Ray cluster: 'auto' or 'ray://host:port'")
    p.add_argument("--quiet", action="store_true", help="no progress: only failed trials and the result")
    p.add_argument("--progress", choices=["bar", "lines", "results", "none"],
                   help="bar: a live view (default on a terminal); lines: a summary line at most every 10 s and a "
                        "line per ended trial (default otherwise); results: a line per result of every trial; "
                        "none: only failed trials")
    with_set(p)
    p.set_defaults(handler=_run)

    p = commands.add_parser("resume", help="continue an interrupted sweep; finished trials are not rerun")
    p.add_argument("dir", help=DIR_HELP)
    p.add_argument("--spec", help="the spec file you mean to resume with: refused, with the differences, if edited")
    p.add_argument("--address", type=_address, help="join a Ray cluster: 'auto' or 'ray://host:port'")
    p.set_defaults(handler=_resume)

    p = commands.add_parser("reproduce", help="rerun one trial from its recorded config and seed, into a new directory")
    p.add_argument("dir", help=DIR_HELP)
    p.add_argument("trial", help="the trial's id (or a unique prefix of it), as `rlsweep status` lists it")
    p.add_argument("--storage", help="where the new experiment directory goes (default: the spec's storage)")
    p.set_defaults(handler=_reproduce)

    p = commands.add_parser(
        "confirm", help="retrain the top configurations on held-out test seeds: IQM, 95%% interval, ties"
    )
    p.add_argument("dir", help=DIR_HELP)
    p.add_argument("--top", type=int, default=3, help="how many configurations, best first under --rule (default 3)")
    p.add_argument("--seeds", type=int, default=5, help="test seeds per configuration, the first of seeds.test (default 5)")
    p.add_argument("--rule", default=str(DEFAULT_RULE), help=RULE_HELP)
    p.add_argument("--trial", action="append", help="confirm this trial (repeatable) instead of the top ones")
    p.add_argument("--address", type=_address, help="join this Ray cluster instead of starting a local runtime")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_confirm)

    p = commands.add_parser("status", help="trials, states and the best so far")
    p.add_argument("dir", help=DIR_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_status)

    p = commands.add_parser("best", help="the best trial: config, metric value, checkpoint")
    p.add_argument("dir", help=DIR_HELP)
    p.add_argument("--rule", default=None, help=RULE_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_best)

    p = commands.add_parser("plot", help="a picture of the sweep as a PNG (or SVG, PDF by the file's extension)")
    p.add_argument("dir", help=DIR_HELP)
    p.add_argument("--kind", default="curves", choices=["curves", "parallel", "importance", "confirmation"],
                   help="curves: the metric against env steps per trial (default); parallel: parameters against the "
                        "score; importance: fANOVA importance; confirmation: held-out seeds' intervals")
    p.add_argument("-o", "--output", help="the file to write, in the format its extension names (png, svg, pdf, ...; "
                   "default: DIR/plots/KIND.png); its folder must exist")
    p.add_argument("--dpi", type=int, default=100,
                   help=f"dots per inch of a raster image, {DPI_RANGE[0]}..{DPI_RANGE[1]} (default 100)")
    p.set_defaults(handler=_plot)

    p = commands.add_parser("evaluate", help="re-run the top checkpoints greedily on fresh seeds: mean and spread")
    p.add_argument("dir", help=DIR_HELP)
    p.add_argument("--top", type=int, default=3, help="how many trials, best first under --rule (default 3)")
    p.add_argument("--episodes", type=int, default=10, help="episodes per seed (default 10)")
    p.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_EVAL_SEEDS), help="env seeds")
    p.add_argument("--rule", default=str(DEFAULT_RULE), help=RULE_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_evaluate)

    p = commands.add_parser("ui", help="start the MLflow UI for a sweep's store on 127.0.0.1 and print its address")
    p.add_argument("dir", nargs="?", help=DIR_HELP + "; use its spec's tracking URI and experiment")
    p.add_argument("--tracking-uri", type=_tracking_uri, help=f"the store (default: the spec's, else {DEFAULT_TRACKING_URI})")
    p.add_argument("--experiment", help="open this experiment's runs page")
    p.add_argument("--port", type=int, help="default: a free port")
    p.set_defaults(handler=_ui)

    p = commands.add_parser("export", help="log the sweep to MLflow (idempotent)")
    p.add_argument("dir", help=DIR_HELP)
    p.add_argument("--tracking-uri", type=_tracking_uri)
    p.add_argument("--experiment")
    p.add_argument("--trial-runs", type=_trial_runs, metavar="N|all",
                   help="at most this many trials get a child run, the best by the metric where there are more (default: "
                        "the spec's mlflow.trial_runs, 200); every trial goes to the parent run's trials.csv")
    p.set_defaults(handler=_export)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code. Whatever a command prints goes through one guard: a closed
    pipe (``| head``) ends the command quietly, a failed write (``> /dev/full``) is one line on stderr, and
    both exit 1; argparse's own exits (``--help``, a usage error) are raised as ``SystemExit``."""
    saved = sys.stdout, sys.stderr
    out = _Stream(sys.stdout if sys.stdout is not None else _Closed("standard output"))  # type: ignore[arg-type]
    err = _Stream(sys.stderr) if sys.stderr is not None else None
    sys.stdout, sys.stderr = out, err or sys.stderr  # type: ignore[assignment]
    exit_: SystemExit | None = None
    global _FROZE
    try:
        try:
            code = _command(argv)
        except SystemExit as exc:  # argparse: --help, --version, a bad argument
            exit_, code = exc, EXIT_OK
        except OSError:
            if not (out.failed or (err and err.failed)):
                raise
            code = EXIT_ERROR
        for stream in (out, err):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.flush()
    finally:
        sys.stdout, sys.stderr = saved
        if _FROZE and argv is not None:
            # A caller that passes the arguments (a test, a script) lives on: what was read goes back to the
            # collector. The process's own command line (argv None) ends here, and a frozen read is not
            # walked once more on the way out.
            gc.unfreeze()
        _FROZE = False
    if out.failed is not None:
        _silence(out.stream)
        if out.failed.errno != errno.EPIPE:  # a reader that closed the pipe wants no more: no message
            with contextlib.suppress(OSError, ValueError):
                print(f"error: cannot write output: {out.failed.strerror or out.failed}", file=sys.stderr, flush=True)
        return EXIT_ERROR
    if err is not None and err.failed is not None:
        _silence(err.stream)  # nowhere left to say it
        return EXIT_ERROR
    if exit_ is not None:
        raise exit_
    return code


def _command(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "dir", None) is not None:
            args.dir = _experiment_dir(args.dir)
        return int(args.handler(args))
    except SpecError as exc:
        for line in exc.lines():
            print(line, file=sys.stderr)
        return EXIT_INVALID
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_INVALID
    except RlsweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
