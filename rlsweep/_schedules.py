"""Schedules: a setting whose value changes with the trial's env steps (docs/reference/spec.md, "Schedules").

Written in ``config`` or as a ``search_space`` value::

    {schedule: linear, from: X, to: Y}                      # X at env step 0, Y at budget.env_steps
    {schedule: piecewise, points: [[0, X], [N, Y], ...]}    # linear between points, the last value held

In ``search_space`` a number of a schedule (``from``, ``to``, a point's value) may be a domain: it is then an
ordinary parameter named ``<path>.from``, ``<path>.to`` or ``<path>.points.<i>``, so every searcher's
compiler handles it unchanged. A trial's numbers become RLlib's own schedule format, ``[[env_steps, value],
...]`` over its lifetime env steps (:func:`points`), and each row reports the value in force
(:func:`value_at`).

This module reads no Ray and no search-space code: the spec and the search space both parse through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlsweep.errors import shorten

#: The key that makes a mapping a schedule.
SCHEDULE_KEY = "schedule"
#: Schedule kind -> the keys it takes besides ``schedule``.
KINDS: dict[str, tuple[str, ...]] = {"linear": ("from", "to"), "piecewise": ("points",)}


@dataclass(frozen=True)
class Schedule:
    """One parsed schedule.

    Attributes:
        kind: ``linear`` or ``piecewise``.
        numbers: Each number's slot (``from``, ``to``, ``points.<i>``) -> its written value, or None where a
            search space searches it (the parameter ``<path>.<slot>``).
        steps: ``piecewise``: each point's env steps, in order.
    """

    kind: str
    numbers: tuple[tuple[str, float | None], ...]
    steps: tuple[int, ...] = ()

    @property
    def searched(self) -> tuple[str, ...]:
        """The slots a search space draws."""
        return tuple(slot for slot, value in self.numbers if value is None)


def is_schedule(value: Any) -> bool:
    """Whether a config or search-space value is written as a schedule."""
    return isinstance(value, Mapping) and SCHEDULE_KEY in value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse(value: Mapping[str, Any], *, searchable: bool) -> tuple[Schedule | None, dict[str, Any], list[tuple[str, str]]]:
    """Parse a schedule mapping.

    Args:
        value: The mapping as written (it has a ``schedule`` key).
        searchable: Whether a number may be a domain (in ``search_space``).

    Returns:
        The schedule (None when it has problems), each searched slot's domain as written, and every
        problem as (sub-path below the setting's path, message).
    """
    kind = value[SCHEDULE_KEY]
    if kind not in KINDS:
        return None, {}, [(SCHEDULE_KEY, f"unknown schedule {kind!r}; expected one of {sorted(KINDS)}")]
    problems: list[tuple[str, str]] = []
    allowed = (SCHEDULE_KEY, *KINDS[kind])
    for key in value:
        if key not in allowed:
            problems.append((str(key), f"a {kind} schedule takes no key {key!r}; it takes {list(KINDS[kind])}"))
    for key in KINDS[kind]:
        if key not in value:
            problems.append((key, f"is required by a {kind} schedule"))
    if problems:
        return None, {}, problems

    what = "a number or a domain (e.g. {loguniform: [1.0e-4, 1.0e-3]})" if searchable else "a number"
    numbers: list[tuple[str, float | None]] = []
    searched: dict[str, Any] = {}

    def number(slot: str, written: Any) -> None:
        if _is_number(written):
            numbers.append((slot, float(written)))
        elif searchable and isinstance(written, Mapping) and written:
            numbers.append((slot, None))
            searched[slot] = written
        else:
            hint = "" if searchable or not isinstance(written, Mapping) else "; search it in search_space"
            problems.append((slot, f"must be {what}, got {shorten(written)}{hint}"))

    steps: list[int] = []
    if kind == "linear":
        number("from", value["from"])
        number("to", value["to"])
    else:
        raw = value["points"]
        if not isinstance(raw, (list, tuple)) or len(raw) < 2:
            return None, {}, [("points", f"must be a list of at least two [env_steps, value] points (one value needs "
                                         f"no schedule: write the number), got {shorten(raw)}")]
        for i, point in enumerate(raw):
            if not isinstance(point, (list, tuple)) or len(point) != 2:
                problems.append((f"points.{i}", f"must be a point [env_steps, value], got {shorten(point)}"))
                continue
            start, written = point
            if not _is_whole(start) or start < 0:
                problems.append((f"points.{i}", f"starts with env steps, a whole number >= 0; got {shorten(start)}"))
            else:
                steps.append(start)
            number(f"points.{i}", written)
        if not problems:
            if steps[0] != 0:
                problems.append(("points", f"must start at 0 env steps (the value a trial starts with), got {steps[0]}"))
            if any(b <= a for a, b in zip(steps, steps[1:])):
                problems.append(("points", f"env steps must rise from point to point, got {steps}"))
    if problems:
        return None, {}, problems
    return Schedule(kind, tuple(numbers), tuple(steps)), searched, []


def budget_problems(schedule: Schedule, budget_env_steps: int) -> list[tuple[str, str]]:
    """A piecewise point past the trial's budget is never reached: refused, with what is allowed."""
    late = [(i, s) for i, s in enumerate(schedule.steps) if s > budget_env_steps]
    return [(f"points.{i}", f"is at {s} env steps, past budget.env_steps ({budget_env_steps}); a point's env steps "
                            f"are 0 to {budget_env_steps}") for i, s in late]


def points(schedule: Schedule, budget_env_steps: int, draws: Mapping[str, Any] | None = None) -> list[list[float | int]]:
    """RLlib's schedule format, ``[[env_steps, value], ...]`` from env step 0, for one trial.

    Args:
        budget_env_steps: The trial's ``budget.env_steps`` (where a linear schedule reaches ``to``).
        draws: Each searched slot -> its drawn number.
    """
    draws = draws or {}
    values = [float(draws[slot]) if value is None else value for slot, value in schedule.numbers]
    if schedule.kind == "linear":
        return [[0, values[0]], [int(budget_env_steps), values[1]]]
    return [[step, value] for step, value in zip(schedule.steps, values)]


def value_at(schedule_points: list[list[float | int]], env_steps: float) -> float:
    """The value in force at ``env_steps``: linear between points, the first value before the first point
    and the last one held after the last (as RLlib's ``PiecewiseSchedule`` with its last value outside)."""
    first_step, first_value = schedule_points[0]
    if env_steps <= first_step:
        return float(first_value)
    for (left, low), (right, high) in zip(schedule_points, schedule_points[1:]):
        if left <= env_steps < right:
            return float(low + (env_steps - left) / (right - left) * (high - low))
    return float(schedule_points[-1][1])
