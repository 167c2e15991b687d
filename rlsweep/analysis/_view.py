"""What the export and the plots read of a loaded sweep: an interface :class:`~rlsweep.analysis.Sweep`
implements, so those modules need not import the loader (which imports them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from rlsweep.analysis._rules import Best
from rlsweep.spec import SweepSpec
from rlsweep.store import Trial


class SweepView(Protocol):
    path: Path
    spec: SweepSpec
    trials: list[Trial]

    @property
    def sweep_id(self) -> str: ...

    @property
    def searcher(self) -> str: ...

    @property
    def scheduler(self) -> str: ...

    def has_results(self) -> bool: ...

    def table(self) -> Any: ...

    def best(self) -> Best: ...

    def confirmation(self) -> dict[str, Any] | None: ...
