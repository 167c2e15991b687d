"""Plots of a sweep, saved as PNG files: learning curves, parameters against the score, parameter importance."""

from __future__ import annotations

import json
import math
from pathlib import Path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rlsweep.metrics import env_steps

if TYPE_CHECKING:
    from rlsweep.analysis._view import SweepView

#: The files :func:`save_plots` writes, by name.
PLOTS = ("learning_curves.png", "parallel_coordinates.png", "param_importance.png")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on a server
    import matplotlib.pyplot as plt

    return plt


def learning_curves(sweep: SweepView, path: Path) -> Path:
    """The metric against env steps for every trial; a trial that stopped before the budget ends in an x."""
    plt = _pyplot()
    metric = sweep.spec.metric.name
    figure, axes = plt.subplots(figsize=(9, 5))
    for trial in sweep.trials:
        steps = [env_steps(r) for r in trial.rows]  # the one reader of a row's env steps (0 if unreadable)
        values = trial.values(metric)
        if not steps:
            continue
        (line,) = axes.plot(steps, values, linewidth=1.2, alpha=0.85, label=trial.trial_id)
        if steps[-1] < sweep.spec.budget.env_steps:
            axes.plot(steps[-1], values[-1], marker="x", markersize=8, color=line.get_color())
    axes.set_xlabel("env steps")
    axes.set_ylabel(metric)
    axes.set_title(f"{sweep.spec.name}: {metric} per trial (x = stopped before the budget)", fontsize=10)
    axes.grid(alpha=0.3)
    if len(sweep.trials) <= 12:
        axes.legend(fontsize=7, loc="best")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def _param_frame(sweep: SweepView) -> tuple[Any, str]:
    """Trials x searched parameters (non-numeric values as text), and the score column's name."""
    import pandas as pd

    score = f"{sweep.spec.metric.name}_best"
    table = sweep.table()
    columns = [c for c in table.columns if c.startswith("config/")]
    frame = table[columns + [score]].copy()
    for column in columns:
        numeric = pd.to_numeric(frame[column], errors="coerce")
        if numeric.notna().sum() == frame[column].notna().sum():
            frame[column] = numeric
        else:
            frame[column] = frame[column].map(lambda v: json.dumps(v) if not isinstance(v, str) else v)
    frame = frame.rename(columns={c: c.removeprefix("config/") for c in columns})
    return frame[frame[score].map(lambda v: isinstance(v, (int, float)) and math.isfinite(v))], score


def parallel_coordinates(sweep: SweepView, path: Path) -> Path:
    """One line per trial across its parameters (each axis scaled to its range), coloured by the score."""
    import numpy as np

    plt = _pyplot()
    frame, score = _param_frame(sweep)
    params = [c for c in frame.columns if c != score]
    figure, axes = plt.subplots(figsize=(max(6, 2.2 * (len(params) + 1)), 5))
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
            scaled[name] = column.map(lambda v: (levels.index(v) + 0.5) / len(levels) if v in levels else np.nan)
    if len(frame):
        colours = plt.get_cmap("viridis")
        s = scaled[score]
        for i in range(len(frame)):
            ys = [scaled[name].iloc[i] for name in axis_names]
            axes.plot(range(len(axis_names)), ys, color=colours(float(s.iloc[i])), alpha=0.8)
    axes.set_xticks(range(len(axis_names)))
    axes.set_xticklabels(axis_names, rotation=15, fontsize=8)
    axes.set_yticks([])
    axes.set_title(f"parameters against {score} (yellow = best)", fontsize=10)
    axes.set_ylim(-0.08, 1.08)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


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


def importance_plot(sweep: SweepView, path: Path) -> Path:
    plt = _pyplot()
    importances = param_importance(sweep)
    figure, axes = plt.subplots(figsize=(7, 0.5 * max(3, len(importances)) + 1.2))
    if importances:
        names = list(importances)[::-1]
        axes.barh(names, [importances[n] for n in names])
        axes.set_xlabel("fANOVA importance (Optuna), share of the score's variance")
    else:
        axes.text(0.5, 0.5, "needs 3+ finished trials and a parameter that varied", ha="center", va="center")
        axes.set_axis_off()
    axes.set_title(f"parameter importance for {sweep.spec.metric.name}_best")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def save_plots(sweep: SweepView, directory: Path) -> list[Path]:
    """Write every plot into ``directory``; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    return [
        learning_curves(sweep, directory / PLOTS[0]),
        parallel_coordinates(sweep, directory / PLOTS[1]),
        importance_plot(sweep, directory / PLOTS[2]),
    ]


def confirmation_plot(result: Mapping[str, Any], path: Path) -> Path:
    """Each confirmed configuration's test-seed scores (dots), their IQM (a bar) and its 95% interval."""
    plt = _pyplot()
    rows = result["configurations"]
    figure, axes = plt.subplots(figsize=(max(5, 1.6 * len(rows) + 2), 4.5))
    for x, row in enumerate(rows):
        values = list(row["per_seed"].values())
        axes.scatter([x] * len(values), values, s=18, alpha=0.6, color="tab:blue", zorder=3)
        if not math.isnan(row["iqm"]):
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
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
