"""Searchers and schedulers: name tables, option checks, pairing rules, presets, budgets in env steps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlsweep.errors import Problem
from rlsweep.schedulers._base import Entry, Option
from rlsweep.schedulers._schedulers import SCHEDULERS, TIME_ATTR, CheckpointRule, Scheduler
from rlsweep.schedulers._searchers import SEARCHERS, Searcher

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

__all__ = [
    "PRESETS",
    "SCHEDULERS",
    "SEARCHERS",
    "TIME_ATTR",
    "CheckpointRule",
    "Entry",
    "Option",
    "Scheduler",
    "Searcher",
    "check_spec",
    "checkpoint_keep",
]

#: Named pairings a spec can ask for with ``preset: NAME``: the searcher and scheduler (with options) it
#: fills in. A spec's own ``searcher``/``scheduler`` sections add options on top; naming another entry is
#: an error. README "Presets" says when to use which.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    # The default recommendation: TPE proposes, ASHA stops the trailing trials after budget/9 env steps.
    "optuna-asha": {"searcher": {"name": "optuna"}, "scheduler": {"name": "asha"}},
    "hyperopt-asha": {"searcher": {"name": "hyperopt"}, "scheduler": {"name": "asha"}},
    "random-asha": {"searcher": {"name": "random"}, "scheduler": {"name": "asha"}},
    "random-hyperband": {"searcher": {"name": "random"}, "scheduler": {"name": "hyperband"}},
    "bohb": {"searcher": {"name": "bohb"}, "scheduler": {"name": "bohb"}},
    "pbt": {"searcher": {"name": "random"}, "scheduler": {"name": "pbt"}},
    "pb2": {"searcher": {"name": "random"}, "scheduler": {"name": "pb2"}},
}


def check_spec(spec: SweepSpec) -> list[Problem]:
    """Every problem with the spec's searcher and scheduler: names, options, pairings."""
    problems: list[Problem] = []
    entries: dict[str, Entry] = {}
    for section, table, chosen in (
        ("searcher", SEARCHERS, spec.searcher),
        ("scheduler", SCHEDULERS, spec.scheduler),
    ):
        entry = table.get(chosen.name)
        if entry is None:
            problems.append(Problem(f"{section}.name", f"unknown {section} {chosen.name!r}; expected one of {sorted(table)}"))
            continue
        entries[section] = entry
        problems += entry.check_options(chosen.options)
    pairing = _pairing_problems(entries["searcher"], entries["scheduler"]) if len(entries) == 2 else []
    problems += pairing
    if not pairing:
        # A searcher checked against a scheduler it cannot run with would only add noise.
        for entry in entries.values():
            problems += entry.check(spec)
    return problems


def _pairing_problems(searcher: Entry, scheduler: Entry) -> list[Problem]:
    problems = []
    for entry, other in ((scheduler, searcher), (searcher, scheduler)):
        if entry.partners is not None and other.name not in entry.partners:
            problems.append(
                Problem(
                    f"{other.section}.name",
                    f"{entry.section} {entry.name!r} runs only with {other.section} "
                    f"{' or '.join(repr(n) for n in sorted(entry.partners))}, got {other.name!r}: {entry.partners_reason}",
                )
            )
    return problems


def checkpoint_keep(spec: SweepSpec) -> int | None:
    """``checkpoint.keep``, or the scheduler's default when the spec leaves it out (None: keep all)."""
    if spec.checkpoint.keep is not None:
        return spec.checkpoint.keep
    scheduler = SCHEDULERS.get(spec.scheduler.name)
    return scheduler.default_keep if scheduler is not None else Scheduler.default_keep
