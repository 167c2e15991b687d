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
- :class:`TrialError`: raised inside a trial; :class:`NonFiniteLossError` a loss that went NaN or infinite.
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
    """A spec is invalid. Holds every problem found, so a user sees them all at once."""

    def __init__(self, problems: Iterable[Problem] | str, path: str = "") -> None:
        if isinstance(problems, str):
            problems = [Problem(path, problems)]
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


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
    """A learner reported a NaN or infinite loss."""


__all__ = [
    "ExportError",
    "IncompatibleError",
    "NonFiniteLossError",
    "Problem",
    "RlsweepError",
    "SpecError",
    "SweepError",
    "TrialError",
    "UsageError",
]
