"""What every registry entry (a searcher, a scheduler) declares: its name, its options as a schema, and
the capabilities it provides to and requires of its partner. The strategy registry
(:mod:`rlsweep.schedulers`) pairs entries by these declarations, never by their names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rlsweep._schema import Section, check_model
from rlsweep.errors import Problem


class NoOptions(Section):
    """An entry that takes no options."""


class Entry:
    """A named searcher or scheduler.

    Attributes:
        name: What a spec writes.
        section: ``searcher`` or ``scheduler``.
        Options: The schema of the options a spec may give it (each field's type, default and doc).
        provides: Capabilities this entry offers its partner (the other section's entry).
        requires: Capabilities its partner must provide, and :attr:`requires_reason` says why.
    """

    name: ClassVar[str]
    section: ClassVar[str]
    doc: ClassVar[str] = ""
    Options: ClassVar[type[Section]] = NoOptions
    provides: ClassVar[frozenset[str]] = frozenset()
    requires: ClassVar[frozenset[str]] = frozenset()
    requires_reason: ClassVar[str] = ""

    def parse_options(self, given: Mapping[str, Any]) -> tuple[Any, list[Problem]]:
        """The options as a validated :attr:`Options` value (None if invalid) and every problem."""
        options, problems = check_model(self.Options, dict(given), self.section)
        allowed = sorted(self.Options.model_fields) or "none"
        return options, [
            Problem(p.path, f"unknown option for {self.section} {self.name!r}; allowed: {allowed}")
            if p.message.startswith("unknown key")
            else p
            for p in problems
        ]

    def options(self, given: Mapping[str, Any]) -> Any:
        """The options with defaults filled in (already checked)."""
        return self.Options.model_validate(dict(given))

    def pairs_with(self, other: Entry) -> bool:
        return self.requires <= other.provides
