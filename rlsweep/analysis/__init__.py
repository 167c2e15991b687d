"""Analysis: an experiment directory read through the store; tables, selection rules, the best trial and
checkpoint, evaluation on fresh seeds, confirmation on held-out training seeds, plots, and the MLflow export (live and after the sweep)."""

from rlsweep.analysis._live import live_logger
from rlsweep.analysis._load import CheckpointRecord, Sweep, Trial, load
from rlsweep.analysis._mlflow import export, trace_target
from rlsweep.analysis._rules import DEFAULT_EVAL_SEEDS, DEFAULT_RULE, RULE_HELP, Best, SelectionRule

__all__ = [
    "trace_target",
    "DEFAULT_EVAL_SEEDS",
    "DEFAULT_RULE",
    "RULE_HELP",
    "Best",
    "CheckpointRecord",
    "SelectionRule",
    "Sweep",
    "Trial",
    "export",
    "live_logger",
    "load",
]
