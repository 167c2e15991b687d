"""What every searcher and scheduler entry declares: its options, and how it is built."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rlsweep.errors import Problem

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec


@dataclass(frozen=True)
class Option:
    """One option a user may write under ``searcher:`` or ``scheduler:``.

    Attributes:
        types: Accepted Python types (``bool`` is never accepted as a number).
        default: Used when the option is absent; ``None`` means derived from the rest of the spec.
        minimum / exclusive_minimum / maximum: Bounds on numbers.
        doc: One line for the docs and error messages.
    """

    types: tuple[type, ...]
    default: Any = None
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    doc: str = ""

    def problem(self, value: Any) -> str | None:
        if isinstance(value, bool) and bool not in self.types:
            return f"must be {self._type_names()}, got {value!r}"
        if not isinstance(value, self.types):
            return f"must be {self._type_names()}, got {value!r}"
        if self.minimum is not None and value < self.minimum:
            return f"must be >= {self.minimum}, got {value}"
        if self.exclusive_minimum is not None and value <= self.exclusive_minimum:
            return f"must be > {self.exclusive_minimum}, got {value}"
        if self.maximum is not None and value > self.maximum:
            return f"must be <= {self.maximum}, got {value}"
        return None

    def _type_names(self) -> str:
        names = {int: "an integer", float: "a number", str: "a string", bool: "true/false", list: "a list"}
        return " or ".join(names[t] for t in self.types)


class Entry(abc.ABC):
    """A named searcher or scheduler. Subclasses declare :attr:`options` and implement :meth:`build`."""

    name: ClassVar[str]
    section: ClassVar[str]
    options: ClassVar[Mapping[str, Option]] = {}
    doc: ClassVar[str] = ""
    #: The names in the other table this entry can run with (None: any that accepts it), and why not others.
    partners: ClassVar[frozenset[str] | None] = None
    partners_reason: ClassVar[str] = ""

    def check_options(self, given: Mapping[str, Any]) -> list[Problem]:
        problems = []
        for key, value in given.items():
            path = f"{self.section}.{key}"
            if key not in self.options:
                allowed = sorted(self.options) or "none"
                problems.append(Problem(path, f"unknown option for {self.section} {self.name!r}; allowed: {allowed}"))
            elif (message := self.options[key].problem(value)) is not None:
                problems.append(Problem(path, message))
        return problems

    def resolved(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The options with defaults filled in (``None`` where the default is derived)."""
        return {key: given.get(key, option.default) for key, option in self.options.items()}

    def check(self, spec: SweepSpec) -> list[Problem]:
        """Checks that need the rest of the spec (pairings, budgets). Nothing by default."""
        return []

    @abc.abstractmethod
    def build(self, spec: SweepSpec, **context: Any) -> Any:
        """Build the Ray Tune object for this spec."""
