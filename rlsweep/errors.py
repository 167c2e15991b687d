"""The one exception hierarchy of rlsweep.

Every error rlsweep raises on purpose derives from :class:`RlsweepError`:

- :class:`SpecError`: something in a spec is wrong; carries every :class:`Problem` found, each with its
  location in the document, so all of them can be fixed in one go. :class:`IncompatibleError` is the kind
  where each part is valid but they cannot be used together (a searcher that cannot express a domain, a
  trial larger than the cluster it is run on).
- :class:`UsageError`: a bad command-line argument or a path that is not what it should be (not a spec
  problem; the CLI exits 2 for it as for a spec error).
- :class:`SweepError`: a sweep could not be run, resumed or read; :class:`ExportError` an MLflow export
  that stopped part-way.
- :class:`TrialError`: raised inside a trial (:class:`NonFiniteLossError` is no longer raised: a trial
  whose config diverges ends with a last row saying so, ``metrics.DIVERGED``).
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from dataclasses import dataclass

#: The longest a problem's path or message gets when printed, and how many problems a message lists:
#: a value quoted in full (a list of 10^8 numbers, 50,000 unknown keys) must not flood a terminal.
MAX_PROBLEM_CHARS, MAX_PROBLEMS_SHOWN = 600, 50

class _ShortRepr(reprlib.Repr):
    def repr_int(self, value: int, level: int) -> str:
        # Python refuses str() of an int over 4,300 digits; its size says enough.
        return super().repr_int(value, level) if value.bit_length() <= 1024 else f"<an integer of {value.bit_length():,} bits>"


_short_repr = _ShortRepr()
_short_repr.maxstring = _short_repr.maxother = 80
_short_repr.maxlist = _short_repr.maxtuple = _short_repr.maxdict = _short_repr.maxset = 8
_short_repr.maxlevel = 3
_short_repr.maxlong = 40


def shorten(value: object) -> str:
    """``repr(value)``, shortened for a message: long strings and big or deep containers are cut with
    ``...``, so a message quoting a value stays a line, whatever the value's size."""
    return _short_repr.repr(value)


def _clip(text: str, limit: int = MAX_PROBLEM_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", _clip(str(self.path), 200))
        object.__setattr__(self, "message", _clip(str(self.message)))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class SpecError(RlsweepError, ValueError):
    """A spec is invalid. Holds every problem found, so a user sees them all at once."""

    def __init__(self, problems: Iterable[Problem] | str, path: str = "") -> None:
        if isinstance(problems, str):
            problems = [Problem(path, problems)]
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(self.lines()))

    def lines(self, limit: int = MAX_PROBLEMS_SHOWN) -> list[str]:
        """The problems as lines to print, the first ``limit`` of them and a count of the rest."""
        shown = [str(p) for p in self.problems[:limit]]
        if len(self.problems) > limit:
            shown.append(f"... and {len(self.problems) - limit} more problems")
        return shown


class IncompatibleError(SpecError):
    """Parts that are each valid cannot be used together: a searcher or scheduler that cannot express a
    domain exactly, a searcher and scheduler that do not pair, a trial larger than the Ray cluster."""


class UsageError(RlsweepError, ValueError):
    """A command-line argument or a path given to a command is wrong (exit 2, like a spec error).

    Attributes:
        argument: The argument as the user wrote it (``--rule``, ``DIR``).
    """

    def __init__(self, message: str, argument: str = "") -> None:
        self.argument = argument
        super().__init__(f"{argument}: {message}" if argument else message)


class SweepError(RlsweepError):
    """A sweep could not be run, resumed or read (not the user's spec: the experiment directory, Ray)."""


class ExportError(SweepError):
    """An MLflow export that stopped part-way; what it wrote stays, and rerunning it completes the job."""


class TrialError(RlsweepError):
    """Raised inside a trial: Tune records it in the trial's ``error.txt`` and retries from a checkpoint
    while ``failure.max_retries`` allows."""


class NonFiniteLossError(TrialError):
    """A learner reported a NaN or infinite loss. Kept for code that catches it; rlsweep no longer raises
    it, since a diverging config is the config's result, not a fault to retry: its trial ends at a row
    with ``diverged`` naming the losses (:data:`rlsweep.metrics.DIVERGED`)."""


__all__ = [
    "MAX_PROBLEMS_SHOWN",
    "ExportError",
    "IncompatibleError",
    "NonFiniteLossError",
    "Problem",
    "RlsweepError",
    "SpecError",
    "SweepError",
    "TrialError",
    "UsageError",
    "shorten",
]
