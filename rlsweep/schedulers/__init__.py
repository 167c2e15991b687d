"""Searchers and schedulers: name tables, option checks, pairing rules, budgets in env steps."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlsweep.errors import Problem
from rlsweep.schedulers._base import Entry, Option
from rlsweep.schedulers._schedulers import SCHEDULERS, TIME_ATTR, Scheduler
from rlsweep.schedulers._searchers import SEARCHERS, Searcher

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

__all__ = ["SCHEDULERS", "SEARCHERS", "TIME_ATTR", "Entry", "Option", "Scheduler", "Searcher", "check_spec"]


def check_spec(spec: SweepSpec) -> list[Problem]:
    """Every problem with the spec's searcher and scheduler: names, options, pairings."""
    problems: list[Problem] = []
    for section, table, chosen in (
        ("searcher", SEARCHERS, spec.searcher),
        ("scheduler", SCHEDULERS, spec.scheduler),
    ):
        entry = table.get(chosen.name)
        if entry is None:
            problems.append(Problem(f"{section}.name", f"unknown {section} {chosen.name!r}; expected one of {sorted(table)}"))
            continue
        problems += entry.check_options(chosen.options)
        problems += entry.check(spec)
    return problems
