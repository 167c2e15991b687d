"""rlsweep: declarative hyperparameter sweeps of RLlib agents on Ray Tune, logged to MLflow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlsweep.errors import (
    ExportError,
    IncompatibleError,
    NonFiniteLossError,
    Problem,
    RlsweepError,
    SpecError,
    SweepError,
    TrialError,
    UsageError,
)
from rlsweep.spec import SweepSpec
from rlsweep.validate import load_spec

if TYPE_CHECKING:
    from rlsweep.analysis import Sweep
    from rlsweep.api import SweepResult
    from rlsweep.policy import Policy

__version__ = "0.1.0"

__all__ = [
    "ExportError",
    "IncompatibleError",
    "NonFiniteLossError",
    "Problem",
    "RlsweepError",
    "SpecError",
    "SweepError",
    "SweepSpec",
    "TrialError",
    "UsageError",
    "confirm",
    "load",
    "load_policy",
    "load_spec",
    "reproduce",
    "resume",
    "run",
    "sample",
    "schema",
    "__version__",
]


def run(spec: Any, **kwargs: Any) -> SweepResult:
    """Run a sweep (a :class:`SweepSpec`, or a spec file or document, checked while Ray starts), pick its
    best trial and log it to MLflow; see :func:`rlsweep.api.run`."""
    from rlsweep.api import run as _run

    return _run(spec, **kwargs)


def reproduce(path: Any, trial_id: str, **kwargs: Any) -> SweepResult:
    """Rerun one trial from its recorded config and seed; see :func:`rlsweep.api.reproduce`."""
    from rlsweep.api import reproduce as _reproduce

    return _reproduce(path, trial_id, **kwargs)


def resume(path: Any, **kwargs: Any) -> SweepResult:
    """Continue an interrupted sweep; see :func:`rlsweep.api.resume`."""
    from rlsweep.api import resume as _resume

    return _resume(path, **kwargs)


def sample(spec: SweepSpec, n: int, **kwargs: Any) -> list[dict[str, Any]]:
    """The first ``n`` configs the searcher would try; see :func:`rlsweep.api.sample`."""
    from rlsweep.api import sample as _sample

    return _sample(spec, n, **kwargs)


def load(path: Any) -> Sweep:
    """An experiment directory read back: tables, best trials, confirmation, export; see
    :func:`rlsweep.analysis.load` (through here, ``confirm()`` can retrain on Ray)."""
    from rlsweep.api import load as _load

    return _load(path)


def confirm(path: Any, top: int = 3, seeds: int = 5, **kwargs: Any) -> dict[str, Any]:
    """Retrain the top configurations on held-out seeds and measure them; see :func:`rlsweep.api.confirm`."""
    from rlsweep.api import confirm as _confirm

    return _confirm(path, top, seeds, **kwargs)


def load_policy(checkpoint: Any, policy_id: str | None = None) -> Policy:
    """A trained policy with ``act(obs, explore=False)``; see :func:`rlsweep.policy.load_policy`."""
    from rlsweep.policy import load_policy as _load_policy

    return _load_policy(checkpoint, policy_id)


def schema() -> dict[str, Any]:
    """The JSON Schema of a spec document (``rlsweep schema``), searcher and scheduler options included."""
    from rlsweep.schedulers import spec_json_schema

    return spec_json_schema()
