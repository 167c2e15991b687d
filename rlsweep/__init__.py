"""rlsweep: declarative hyperparameter sweeps of RLlib agents on Ray Tune, logged to MLflow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlsweep.errors import IncompatibleError, Problem, RlsweepError, SpecError, SweepError
from rlsweep.spec import SweepSpec
from rlsweep.validate import load_spec

if TYPE_CHECKING:
    from rlsweep.policy import Policy
    from rlsweep.sweep import SweepResult

__version__ = "0.1.0"

__all__ = [
    "IncompatibleError",
    "Problem",
    "RlsweepError",
    "SpecError",
    "SweepError",
    "SweepSpec",
    "load_policy",
    "load_spec",
    "resume",
    "run",
    "sample",
    "__version__",
]


def run(spec: SweepSpec, **kwargs: Any) -> SweepResult:
    """Run a sweep; see :func:`rlsweep.sweep.run`."""
    from rlsweep.sweep import run as _run

    return _run(spec, **kwargs)


def sample(spec: SweepSpec, n: int, **kwargs: Any) -> list[dict[str, Any]]:
    """The first ``n`` configs the searcher would try; see :func:`rlsweep.sweep.sample`."""
    from rlsweep.sweep import sample as _sample

    return _sample(spec, n, **kwargs)


def load_policy(checkpoint: Any, policy_id: str | None = None) -> Policy:
    """A trained policy with ``act(obs, explore=False)``; see :func:`rlsweep.policy.load_policy`."""
    from rlsweep.policy import load_policy as _load_policy

    return _load_policy(checkpoint, policy_id)


def resume(path: Any, **kwargs: Any) -> SweepResult:
    """Continue an interrupted sweep; see :func:`rlsweep.sweep.resume`."""
    from rlsweep.sweep import resume as _resume

    return _resume(path, **kwargs)
