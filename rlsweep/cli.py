"""The ``rlsweep`` command: a thin layer over the Python API. Exit codes: 0 success, 2 invalid input, 1 other
(a sweep interrupted before it finished among them)."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlsweep.errors import RlsweepError, SpecError, SweepError, UsageError

EXIT_OK, EXIT_ERROR, EXIT_INVALID = 0, 1, 2
#: The most configs ``rlsweep sample`` draws: model-based searchers fit a model per draw.
MAX_SAMPLES = 10_000
#: Interrupted (Ctrl-C, SIGTERM) before the work was done: not a success, not invalid input.
EXIT_INTERRUPTED = EXIT_ERROR


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(EXIT_INVALID)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _print_best(best: Any) -> None:
    print(f"best trial:  {best.trial_id}")
    print(f"{best.metric} ({best.rule}, {best.mode}): {best.value:.6g} at {best.env_steps} env steps")
    print("config:")
    for key, value in best.config.items():
        print(f"  {key}: {json.dumps(value)}")
    if best.checkpoint is not None:
        detail = f" ({best.metric} {best.checkpoint_value:.6g} at {best.checkpoint_env_steps} env steps)" if best.checkpoint_value is not None else ""
        print(f"checkpoint:  {best.checkpoint}{detail}")
    else:
        print("checkpoint:  none kept for this trial")


def _validate(args: argparse.Namespace) -> int:
    from rlsweep import load_spec

    spec = load_spec(args.spec, args.set)
    measure = spec.ray.memory_check and not args.no_memory_check
    print(f"{args.spec}: valid ({spec.algorithm} on {spec.env}, {len(spec.search_space)} parameters, "
          f"searcher {spec.searcher.name}, scheduler {spec.scheduler.name})"
          + ("; measuring one trial's memory at the space's hungriest corner..." if measure else ""), flush=True)
    if not measure:
        why = "ray.memory_check is false" if not spec.ray.memory_check else "--no-memory-check"
        print(f"memory: not measured ({why})")
        return EXIT_OK
    from rlsweep.api import check_memory

    found = check_memory(spec, address=args.address)
    for line in found.lines() if found is not None else []:
        print(line)
    return EXIT_OK


def _convert(args: argparse.Namespace) -> int:
    import yaml

    from rlsweep import load_spec
    from rlsweep.convert import convert, header
    from rlsweep.spec import read_document

    spec, unmapped = convert(read_document(args.file), args.experiment)
    text = header(args.file, unmapped) + yaml.safe_dump(spec, sort_keys=False)
    if args.output:
        Path(args.output).write_text(text)
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
    print(f"{where}: valid ({len(unmapped)} old key(s) not carried over, listed above)", file=sys.stderr)
    return EXIT_OK


def _sample(args: argparse.Namespace) -> int:
    from rlsweep import load_spec, sample

    if not 1 <= args.n <= MAX_SAMPLES:
        raise UsageError(f"must be in [1, {MAX_SAMPLES:,}] (a dry run of a sweep's first configs), got {args.n}", "-n")
    spec = load_spec(args.spec, args.set, preflight=False)
    configs = sample(spec, args.n, searcher=args.searcher)
    if args.json:
        print(json.dumps(_json_safe(configs)))
    else:
        for i, config in enumerate(configs):
            print(f"{i}: " + ", ".join(f"{k}={json.dumps(v)}" for k, v in config.items()))
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    from rlsweep import load_spec
    from rlsweep.api import run

    spec = load_spec(args.spec, args.set)
    mode = "none" if args.quiet else args.progress
    result = run(spec, storage=args.storage, address=args.address, verbose=0 if args.quiet else 1, progress=mode)
    return _report(result, spec.mlflow)


def _report(result: Any, mlflow: Any) -> int:
    print(f"\nexperiment:  {result.path}")
    if result.errored_trials:
        print(f"failed trials: {result.errored_trials} (see `rlsweep status {result.path}`)")
    if result.best is None:
        print("no trial reported a result", file=sys.stderr)
        if result.interrupted:
            print(f"interrupted: continue the sweep with `rlsweep resume {result.path}`", file=sys.stderr)
            return EXIT_INTERRUPTED
        return EXIT_ERROR
    if result.interrupted:
        print(f"interrupted: {len(result.unfinished_trials)} trial(s) did not finish; continue the sweep with "
              f"`rlsweep resume {result.path}`", file=sys.stderr)
        print("best so far (the sweep is not finished):")
    _print_best(result.best)
    if result.export_error:
        print(f"mlflow export failed: {result.export_error}", file=sys.stderr)
    if result.mlflow_run_id and mlflow is not None:
        print(f"mlflow:      {mlflow.tracking_uri} experiment {mlflow.experiment!r}, run {result.mlflow_run_id}")
    return EXIT_INTERRUPTED if result.interrupted else EXIT_OK


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
        raise UsageError(
            "cannot resume safely: " + "; ".join(problems) + ". The trials' results and checkpoints are intact: "
            "`rlsweep status`, `best` and `export` still read them; start a new sweep to go on", "DIR")
    result = resume(root, spec_path=args.spec, address=args.address)
    return _report(result, _load(str(result.path)).spec.mlflow)


def _load(directory: str) -> Any:
    """An experiment directory named on the command line; a wrong one is invalid input (exit 2)."""
    from rlsweep.analysis import load

    try:
        return load(directory)
    except SweepError as exc:
        raise UsageError(str(exc).removeprefix(f"{Path(directory).expanduser().resolve()}: "), "DIR") from None


def _rule(text: str) -> Any:
    from rlsweep.analysis import SelectionRule

    return SelectionRule.parse(text)


def _best(args: argparse.Namespace) -> int:
    best = _load(args.dir).best(rule=_rule(args.rule))
    if args.json:
        print(json.dumps(_json_safe(best.to_dict())))
    else:
        _print_best(best)
    return EXIT_OK


def _plot(args: argparse.Namespace) -> int:
    sweep = _load(args.dir)
    out = Path(args.output) if args.output else sweep.path / "plots" / f"{args.kind}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    figure = sweep.plot(args.kind)
    figure.savefig(out, dpi=args.dpi)
    print(out)
    return EXIT_OK


def _status(args: argparse.Namespace) -> int:
    import pandas as pd

    sweep = _load(args.dir)
    table = sweep.table()
    if args.json:
        print(table.to_json(orient="records"))
        return EXIT_OK
    if not len(table):
        print(f"{sweep.path}: no trial has started yet")
        return EXIT_OK
    counts = table["state"].value_counts().to_dict()
    print(f"{sweep.path}: {len(table)} trials " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    with pd.option_context("display.max_columns", None, "display.width", 200):
        print(table.drop(columns=["error"]).to_string(index=False))
    for _, row in table[table["error"].notna()].iterrows():
        print(f"\n[{row['trial_id']}] error:\n{row['error'].splitlines()[-1] if row['error'] else ''}")
    if sweep.has_results():
        print()
        _print_best(sweep.best())
    return EXIT_OK


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
    import importlib

    importlib.import_module("rlsweep.api")  # on import, it hands the analysis the sweep stage's retrainer
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


def _export(args: argparse.Namespace) -> int:
    sweep = _load(args.dir)
    run_id = sweep.to_mlflow(tracking_uri=args.tracking_uri, experiment=args.experiment)
    print(f"exported {len(sweep.trials)} trials; parent run {run_id}")
    return EXIT_OK


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


def build_parser() -> argparse.ArgumentParser:
    from rlsweep.analysis import DEFAULT_EVAL_SEEDS, DEFAULT_RULE, RULE_HELP
    from rlsweep.search_spaces import SEARCHERS
    from rlsweep.spec import DEFAULT_TRACKING_URI

    parser = _Parser(prog="rlsweep", description="Hyperparameter sweeps of RLlib agents on Ray Tune.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def with_set(p: argparse.ArgumentParser) -> None:
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override a spec value, e.g. budget.trials=4 or config.training.lr=0.001")

    p = commands.add_parser("validate", help="check a spec and measure one trial's memory; exit 2 listing every problem")
    p.add_argument("spec")
    p.add_argument("--address", help="check against this Ray cluster: 'auto' or 'ray://host:port' (default: the spec's ray.address, else a local runtime)")
    p.add_argument("--no-memory-check", action="store_true",
                   help="check the spec without Ray: skip measuring one trial's memory at the space's hungriest corner")
    with_set(p)
    p.set_defaults(handler=_validate)

    p = commands.add_parser("convert", help="an experiment YAML of RLlib's old API (rllib train -f) as an rlsweep spec")
    p.add_argument("file")
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
    p.add_argument("--address", help="join a Ray cluster: 'auto' or 'ray://host:port'")
    p.add_argument("--quiet", action="store_true", help="no progress: only failed trials and the result")
    p.add_argument("--progress", choices=["bar", "lines", "results", "none"],
                   help="bar: a live view (default on a terminal); lines: a summary line at most every 10 s and a "
                        "line per ended trial (default otherwise); results: a line per result of every trial; "
                        "none: only failed trials")
    with_set(p)
    p.set_defaults(handler=_run)

    p = commands.add_parser("resume", help="continue an interrupted sweep; finished trials are not rerun")
    p.add_argument("dir")
    p.add_argument("--spec", help="the spec file you mean to resume with: refused, with the differences, if edited")
    p.add_argument("--address", help="join a Ray cluster: 'auto' or 'ray://host:port'")
    p.set_defaults(handler=_resume)

    p = commands.add_parser("reproduce", help="rerun one trial from its recorded config and seed, into a new directory")
    p.add_argument("dir", help="the sweep's experiment directory")
    p.add_argument("trial", help="the trial's id (or a unique prefix of it), as `rlsweep status` lists it")
    p.add_argument("--storage", help="where the new experiment directory goes (default: the spec's storage)")
    p.set_defaults(handler=_reproduce)

    p = commands.add_parser(
        "confirm", help="retrain the top configurations on held-out test seeds: IQM, 95%% interval, ties"
    )
    p.add_argument("dir", help="the sweep's experiment directory")
    p.add_argument("--top", type=int, default=3, help="how many configurations, best first under --rule (default 3)")
    p.add_argument("--seeds", type=int, default=5, help="test seeds per configuration, the first of seeds.test (default 5)")
    p.add_argument("--rule", default=str(DEFAULT_RULE), help=RULE_HELP)
    p.add_argument("--trial", action="append", help="confirm this trial (repeatable) instead of the top ones")
    p.add_argument("--address", help="join this Ray cluster instead of starting a local runtime")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_confirm)

    p = commands.add_parser("status", help="trials, states and the best so far")
    p.add_argument("dir")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_status)

    p = commands.add_parser("best", help="the best trial: config, metric value, checkpoint")
    p.add_argument("dir")
    p.add_argument("--rule", default=str(DEFAULT_RULE), help=RULE_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_best)

    p = commands.add_parser("plot", help="a picture of the sweep as a PNG (or SVG, PDF by the file's extension)")
    p.add_argument("dir")
    p.add_argument("--kind", default="curves", choices=["curves", "parallel", "importance", "confirmation"],
                   help="curves: the metric against env steps per trial (default); parallel: parameters against the "
                        "score; importance: fANOVA importance; confirmation: held-out seeds' intervals")
    p.add_argument("-o", "--output", help="the file to write (default: DIR/plots/KIND.png)")
    p.add_argument("--dpi", type=int, default=100)
    p.set_defaults(handler=_plot)

    p = commands.add_parser("evaluate", help="re-run the top checkpoints greedily on fresh seeds: mean and spread")
    p.add_argument("dir")
    p.add_argument("--top", type=int, default=3, help="how many trials, best first under --rule (default 3)")
    p.add_argument("--episodes", type=int, default=10, help="episodes per seed (default 10)")
    p.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_EVAL_SEEDS), help="env seeds")
    p.add_argument("--rule", default=str(DEFAULT_RULE), help=RULE_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_evaluate)

    p = commands.add_parser("ui", help="start the MLflow UI for a sweep's store on 127.0.0.1 and print its address")
    p.add_argument("dir", nargs="?", help="an experiment directory: use its spec's tracking URI and experiment")
    p.add_argument("--tracking-uri", help=f"the store (default: the spec's, else {DEFAULT_TRACKING_URI})")
    p.add_argument("--experiment", help="open this experiment's runs page")
    p.add_argument("--port", type=int, help="default: a free port")
    p.set_defaults(handler=_ui)

    p = commands.add_parser("export", help="log the sweep to MLflow (idempotent)")
    p.add_argument("dir")
    p.add_argument("--tracking-uri")
    p.add_argument("--experiment")
    p.set_defaults(handler=_export)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
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
