"""Plots of a sweep: learning curves, parameters against the score, parameter importance, and the
confirmation's intervals. Each is a matplotlib ``Figure`` built without pyplot (so a notebook shows it and
its backend is left alone); the PNGs on disk and on the MLflow parent run are the same figures saved."""

from __future__ import annotations

import json
import math
from pathlib import Path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    from rlsweep.analysis._view import SweepView

#: The files :func:`save_plots` writes, by name.
PLOTS = ("learning_curves.png", "parallel_coordinates.png", "param_importance.png")


#: What ``Sweep.plot(kind)`` and ``rlsweep plot --kind`` draw.
KINDS = ("curves", "parallel", "importance", "confirmation")


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    return path


def curves_figure(sweep: SweepView) -> Any:
    """The metric against env steps for every trial (a line labelled with its id); a trial that stopped
    before the budget (a scheduler's stop, or an error) ends in an x. Above :data:`MANY_CURVES` trials: the
    spread of every trial's curve as bands, and the best :data:`MANY_BEST` as lines (:func:`_many_curves`)."""
    from rlsweep.store import PENDING, RUNNING

    metric = sweep.spec.metric.name
    budget = sweep.spec.budget.env_steps
    figure = _figure(9, 5)
    axes = figure.subplots()
    curves = [(trial, steps, trial.values(metric)) for trial in sweep.trials if (steps := trial.steps())]
    many = len(curves) > MANY_CURVES
    shown = _many_curves(axes, curves, budget, sweep.spec.metric.mode) if many else curves
    for trial, steps, values in shown:
        (line,) = axes.plot(steps, values, linewidth=1.2, alpha=0.85, label=trial.trial_id)
        if steps[-1] < budget and trial.state not in (RUNNING, PENDING):
            axes.plot(steps[-1], values[-1], marker="x", markersize=8, color=line.get_color(), label=f"_stopped {trial.trial_id}")
    axes.set_xlabel("env steps")
    axes.set_ylabel(metric)
    if many:
        stopped = sum(steps[-1] < budget and trial.state not in (RUNNING, PENDING) for trial, steps, _ in curves)
        axes.set_title(f"{sweep.spec.name}: {metric} of {len(curves):,} trials ({stopped:,} stopped before the budget)\n"
                       f"bands: the middle 50% and 80% of the trials training at each step; lines: their median\n"
                       f"and the best {len(shown)} by the mean of their last {BEST_OF_LAST} results (x = stopped)", fontsize=8)
        axes.legend(fontsize=7, loc="best")
    else:
        axes.set_title(f"{sweep.spec.name}: {metric} per trial (x = stopped before the budget)", fontsize=10)
        if len(sweep.trials) <= 12:
            axes.legend(fontsize=7, loc="best")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    return figure


#: Above this many trials the curves are drawn as their spread (:func:`_many_curves`): a line each would take
#: seconds per thousand trials to draw and hide each other anyway.
MANY_CURVES = 200
#: How many of the best trials' curves a sweep of more than MANY_CURVES trials shows as lines, ranked by the
#: mean of their last BEST_OF_LAST results (the default rule, avg-last-3).
MANY_BEST, BEST_OF_LAST = 10, 3
#: The env-step points at which the spread of many trials' curves is taken, and the fewest trials a point of
#: the spread stands on (fewer: left out, not drawn as if it were the sweep's spread).
SPREAD_POINTS, MIN_SPREAD = 80, 5


def _many_curves(axes: Any, curves: list[tuple[Any, list[int], list[float]]], budget: int, mode: str) -> list[Any]:
    """Draw the spread of many curves and return the best MANY_BEST (for the caller to draw as lines).

    The env steps up to the budget (or the furthest result) are cut into SPREAD_POINTS equal spans. A trial's
    value at a span's end: its last result in the span, else its curve interpolated between its results, where
    the span lies between its first and last (never past its last). So every trial with a result counts,
    however rarely it reported. At each point, the 10-90% and 25-75% of the trials' values are drawn as bands
    and their median as a line, where MIN_SPREAD trials or more have a value there."""
    import warnings
    from itertools import chain

    import numpy as np

    # Every result of every trial in one array each (a trial's results in a row, as it reported them), the NaNs
    # left out: numpy calls per trial would take most of a second on 10,000 trials.
    lengths = [min(len(steps), len(values)) for _, steps, values in curves]
    x = np.fromiter(chain.from_iterable(steps[:n] for (_, steps, _), n in zip(curves, lengths)), dtype=float)
    y = np.fromiter(chain.from_iterable(values[:n] for (_, _, values), n in zip(curves, lengths)), dtype=float)
    owner = np.repeat(np.arange(len(curves)), lengths)
    finite = np.isfinite(y)
    x, y, owner = x[finite], y[finite], owner[finite]
    count = np.bincount(owner, minlength=len(curves))
    stop = np.cumsum(count)
    sums = np.concatenate([[0.0], np.cumsum(y)])
    last = np.minimum(count, BEST_OF_LAST)
    with np.errstate(invalid="ignore", divide="ignore"):  # a trial without a finite result: no score
        score = np.where(count > 0, (sums[stop] - sums[stop - last]) / last, np.nan)
    # In env-step order within each trial (PBT: one that took another's checkpoint may go back in env steps).
    order = np.lexsort((x, owner))
    x, y, owner = x[order], y[order], owner[order]
    end = max(float(budget), float(x.max()) if len(x) else 0.0)
    edges = np.linspace(0, end, SPREAD_POINTS + 1)
    grid = edges[1:]
    at = np.full((len(curves), len(grid)), np.nan)
    has = count > 0
    first, final = np.full(len(curves), np.inf), np.full(len(curves), -np.inf)
    first[has], final[has] = x[(stop - count)[has]], x[(stop - 1)[has]]
    # Between its first and last results, a trial's curve interpolated: one interpolation over every trial,
    # each shifted to its own stretch of the axis so that none reads another's results.
    shift = 2 * end + 1
    rows, points = np.nonzero((grid >= first[:, None]) & (grid <= final[:, None]))
    at[rows, points] = np.interp(rows * shift + grid[points], owner * shift + x, y)
    # Each result's span (edges[k], edges[k + 1]]: the last one in a span is the trial's value at its end.
    span = np.clip(np.searchsorted(edges, x, side="left") - 1, 0, len(grid) - 1)
    key = owner * len(grid) + span
    latest = np.append(key[1:] != key[:-1], True)
    at[owner[latest], span[latest]] = y[latest]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a point no trial reached: no spread there
        spread = np.nanpercentile(at, [10, 25, 50, 75, 90], axis=0)
    spread[:, (~np.isnan(at)).sum(axis=0) < MIN_SPREAD] = np.nan  # a gap in the bands and the median
    p10, p25, p50, p75, p90 = spread
    axes.fill_between(grid, p10, p90, color="tab:gray", alpha=0.2, linewidth=0, label="10-90%")
    axes.fill_between(grid, p25, p75, color="tab:gray", alpha=0.35, linewidth=0, label="25-75%")
    axes.plot(grid, p50, color="black", linewidth=1.5, label="median")
    ranked = [i for i in np.argsort(-score if mode == "max" else score, kind="stable") if np.isfinite(score[i])]
    return [curves[i] for i in ranked[:MANY_BEST]]


def learning_curves(sweep: SweepView, path: Path) -> Path:
    return _save(curves_figure(sweep), path)


def _param_frame(sweep: SweepView) -> tuple[Any, str]:
    """Trials x searched parameters (non-numeric values as text), and the score column's name."""
    import pandas as pd

    score = f"{sweep.spec.metric.name}_best"
    table = sweep.table()
    columns = [c for c in table.columns if c.startswith("config/")]
    frame = table[columns + [score]].copy()
    frame.index = table["trial_id"].astype(str)
    for column in columns:
        numeric = pd.to_numeric(frame[column], errors="coerce")
        if numeric.notna().sum() == frame[column].notna().sum():
            frame[column] = numeric
        else:
            frame[column] = frame[column].map(lambda v: json.dumps(v) if not isinstance(v, str) else v)
    frame = frame.rename(columns={c: c.removeprefix("config/") for c in columns})
    return frame[frame[score].map(lambda v: isinstance(v, (int, float)) and math.isfinite(v))], score


def parallel_figure(sweep: SweepView) -> Any:
    """One line per finished trial across its parameters (each axis scaled to its range, a line labelled
    with the trial's id), coloured by the score (viridis: yellow is the best)."""
    import matplotlib
    import numpy as np

    frame, score = _param_frame(sweep)
    params = [c for c in frame.columns if c != score]
    figure = _figure(max(6, 2.2 * (len(params) + 1)), 5)
    axes = figure.subplots()
    axis_names = [*params, score]
    scaled = {}
    for x, name in enumerate(axis_names):
        column = frame[name]
        if column.dtype.kind in "if" and len(column):
            low, high = float(column.min()), float(column.max())
            axes.annotate(f"{low:.3g}", (x, 0), xytext=(0, -14), textcoords="offset points", ha="center", fontsize=7)
            axes.annotate(f"{high:.3g}", (x, 1), xytext=(0, 6), textcoords="offset points", ha="center", fontsize=7)
            log = name in _log_params(sweep) and low > 0
            values = np.log10(column.astype(float)) if log else column.astype(float)
            lo, hi = (math.log10(low), math.log10(high)) if log else (low, high)
            scaled[name] = (values - lo) / (hi - lo) if hi > lo else values * 0 + 0.5
        else:
            levels = sorted(column.dropna().unique().tolist())
            scaled[name] = column.map(lambda v, levels=levels: (levels.index(v) + 0.5) / len(levels) if v in levels else np.nan)
    if len(frame):
        colours = matplotlib.colormaps["viridis"]
        # The colour's scale runs from the worst score (0) to the best (1) under the metric's mode.
        s = scaled[score].to_numpy(dtype=float)
        s = s if sweep.spec.metric.mode == "max" else 1 - s
        lines = np.column_stack([scaled[name].to_numpy(dtype=float) for name in axis_names])
        if len(frame) > MANY_CURVES:
            # One collection, the best drawn last (on top): a line and a label each take seconds a thousand.
            from matplotlib.collections import LineCollection

            order = np.argsort(s, kind="stable")
            xs = np.arange(len(axis_names))
            axes.add_collection(LineCollection([np.column_stack([xs, lines[i]]) for i in order],
                                               colors=colours(s[order]), linewidths=0.6, alpha=0.5))
            axes.set_xlim(-0.2, len(axis_names) - 0.8)
        else:
            for i in range(len(frame)):
                axes.plot(range(len(axis_names)), lines[i], color=colours(float(s[i])), alpha=0.8, label=str(frame.index[i]))
    axes.set_xticks(range(len(axis_names)))
    axes.set_xticklabels(axis_names, rotation=15, fontsize=8)
    axes.set_yticks([])
    axes.set_title(f"parameters against {score} (yellow = best)", fontsize=10)
    axes.set_ylim(-0.08, 1.08)
    figure.tight_layout()
    return figure


def parallel_coordinates(sweep: SweepView, path: Path) -> Path:
    return _save(parallel_figure(sweep), path)


def _log_params(sweep: SweepView) -> set[str]:
    return {p.path for p in sweep.spec.search_space if "log" in getattr(p.domain, "kind", "")}


def param_importance(sweep: SweepView) -> dict[str, float]:
    """Optuna's fANOVA importance of each searched parameter for the score, from the finished trials."""
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    frame, score = _param_frame(sweep)
    params = [c for c in frame.columns if c != score and frame[c].nunique(dropna=True) > 1]
    if len(frame) < 3 or not params or frame[score].nunique(dropna=True) < 2:
        return {}  # too few trials, nothing searched varied, or every trial scored the same: nothing to rank
    logs = _log_params(sweep)
    distributions: dict[str, Any] = {}
    for name in params:
        column = frame[name].dropna()
        if column.dtype.kind in "if":
            low, high = float(column.min()), float(column.max())
            distributions[name] = FloatDistribution(low, high, log=name in logs and low > 0)
        else:
            distributions[name] = CategoricalDistribution(sorted(column.unique().tolist()))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize" if sweep.spec.metric.mode == "max" else "minimize")
    for _, row in frame.iterrows():
        values = {n: (float(row[n]) if frame[n].dtype.kind in "if" else row[n]) for n in params if row[n] == row[n]}
        present = {n: distributions[n] for n in values}
        study.add_trial(optuna.trial.create_trial(params=values, distributions=present, value=float(row[score])))
    return dict(optuna.importance.get_param_importances(study, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0)))


def importance_figure(sweep: SweepView) -> Any:
    """One bar per searched parameter that varied: its fANOVA importance for the score."""
    importances = param_importance(sweep)
    figure = _figure(7, 0.5 * max(3, len(importances)) + 1.2)
    axes = figure.subplots()
    if importances:
        names = list(importances)[::-1]
        axes.barh(names, [importances[n] for n in names])
        axes.set_xlabel("fANOVA importance (Optuna), share of the score's variance")
    else:
        axes.text(0.5, 0.5, "needs 3+ finished trials and a parameter that varied", ha="center", va="center")
        axes.set_axis_off()
    axes.set_title(f"parameter importance for {sweep.spec.metric.name}_best")
    figure.tight_layout()
    return figure


def importance_plot(sweep: SweepView, path: Path) -> Path:
    return _save(importance_figure(sweep), path)


def save_plots(sweep: SweepView, directory: Path) -> list[Path]:
    """Write every plot into ``directory``; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    return [
        learning_curves(sweep, directory / PLOTS[0]),
        parallel_coordinates(sweep, directory / PLOTS[1]),
        importance_plot(sweep, directory / PLOTS[2]),
    ]


def confirmation_figure(result: Mapping[str, Any]) -> Any:
    """Each confirmed configuration's test-seed scores (dots), their IQM (a bar) and its 95% interval."""
    rows = result["configurations"]
    figure = _figure(max(5, 1.6 * len(rows) + 2), 4.5)
    axes = figure.subplots()
    for x, row in enumerate(rows):
        values = list(row["per_seed"].values())
        axes.scatter([x] * len(values), values, s=18, alpha=0.6, color="tab:blue", zorder=3)
        # An interval is drawn where it holds its IQM (a result read from disk may have lost it).
        if math.isfinite(row["iqm"]) and row["ci_low"] <= row["iqm"] <= row["ci_high"]:
            color = "tab:red" if row["trial_id"] == result["winner"] else "tab:orange" if row["tie_with_winner"] else "tab:gray"
            axes.errorbar(
                x, row["iqm"], yerr=[[row["iqm"] - row["ci_low"]], [row["ci_high"] - row["iqm"]]],
                fmt="_", markersize=22, capsize=6, color=color, zorder=4,
            )
    axes.set_xticks(range(len(rows)), [r["trial_id"] for r in rows], rotation=20, fontsize=8)
    axes.set_ylabel(f"{result['metric']} at the budget")
    axes.set_title(
        f"test seeds {result['test_seeds']}: IQM and 95% interval (red: winner, orange: tie)", fontsize=9
    )
    axes.grid(alpha=0.3, axis="y")
    figure.tight_layout()
    return figure


def confirmation_plot(result: Mapping[str, Any], path: Path) -> Path:
    return _save(confirmation_figure(result), path)


def figure(sweep: SweepView, kind: str) -> Any:
    """The ``kind`` of plot (:data:`KINDS`) of ``sweep``, as a matplotlib ``Figure``.

    Raises:
        UsageError: an unknown kind, or ``confirmation`` for a sweep not confirmed yet.
    """
    from rlsweep.errors import UsageError

    if kind == "confirmation":
        from rlsweep.analysis._confirm import no_confirmation

        result = sweep.confirmation()  # of the shape rlsweep writes: what is not was left out, and named
        if result is None:
            raise UsageError(no_confirmation(sweep.path), "--kind")
        return confirmation_figure(result)
    draw = {"curves": curves_figure, "parallel": parallel_figure, "importance": importance_figure}.get(kind)
    if draw is None:
        raise UsageError(f"unknown plot kind {kind!r}; expected one of {', '.join(KINDS)}", "--kind")
    if not any(trial.row_count for trial in sweep.trials):
        raise UsageError(f"{sweep.path} has no trial result yet: nothing to plot", "DIR")
    return draw(sweep)
