"""The exception hierarchy of rlsweep.

Every error a user can cause by what they wrote derives from :class:`RlsweepError`. Errors about the spec
carry each problem with its location in the document, so all of them can be fixed in one go.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


class RlsweepError(Exception):
    """Base class of every error rlsweep raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec.

    Attributes:
        path: Where it is in the spec, dotted (``search_space.training.lr``).
        message: The rule that was broken and the value that broke it.
    """

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class SpecError(RlsweepError, ValueError):
    """A spec (or a command-line argument standing for part of one) is invalid.

    Holds every problem found, so a user sees them all at once.
    """

    def __init__(self, problems: Iterable[Problem] | str, path: str = "") -> None:
        if isinstance(problems, str):
            problems = [Problem(path, problems)]
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class IncompatibleError(SpecError):
    """Parts of a spec that are each valid cannot be used together (a searcher that cannot express a
    domain, a scheduler that needs another searcher)."""


class SweepError(RlsweepError):
    """A sweep could not be run, resumed or read (not the user's spec: the experiment directory, Ray)."""


class ProblemCollector:
    """Collects problems while a document is checked, then raises them together."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def extend(self, problems: Iterable[Problem]) -> None:
        self.problems.extend(problems)

    def __bool__(self) -> bool:
        return bool(self.problems)

    def raise_if_any(self, error: type[SpecError] = SpecError) -> None:
        if self.problems:
            raise error(self.problems)
