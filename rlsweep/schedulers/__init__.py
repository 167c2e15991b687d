"""Schedulers in env steps, and the strategy registry: presets, defaults and pairing rules."""

from rlsweep.schedulers._base import EVERY_REPORT, TIME_ATTR, CheckpointRule, SchedulerEntry
from rlsweep.schedulers._registry import (
    DEFAULT_SCHEDULER,
    DEFAULT_SEARCHER,
    PRESETS,
    checkpoint_keep,
    pairs,
    resolve,
    restores_other_trials,
    search_request,
    spec_json_schema,
    with_searcher,
)
from rlsweep.schedulers._schedulers import SCHEDULERS
from rlsweep.search_spaces import SEARCHERS

__all__ = [
    "DEFAULT_SCHEDULER",
    "DEFAULT_SEARCHER",
    "EVERY_REPORT",
    "PRESETS",
    "SCHEDULERS",
    "SEARCHERS",
    "TIME_ATTR",
    "CheckpointRule",
    "SchedulerEntry",
    "checkpoint_keep",
    "pairs",
    "resolve",
    "restores_other_trials",
    "search_request",
    "spec_json_schema",
    "with_searcher",
]
