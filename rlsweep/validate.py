"""Loading a spec and checking all of it: its shape (:mod:`rlsweep.spec`), its strategy (the registry in
:mod:`rlsweep.schedulers`) and what needs RLlib (pre-flight in :mod:`rlsweep.trainables`), every problem
raised together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlsweep import warm_start
from rlsweep.errors import SpecError
from rlsweep.schedulers import resolve
from rlsweep.spec import SweepSpec, apply_overrides, parse_spec, read_document
from rlsweep.trainables import static_problems


def load_spec(
    source: str | Path | Mapping[str, Any],
    overrides: Sequence[str] = (),
    *,
    preflight: bool = True,
) -> SweepSpec:
    """Load and validate a spec from a YAML file or a dict.

    Args:
        source: A path to a YAML file, or the document as a mapping.
        overrides: ``key=value`` strings applied before validation (the CLI's ``--set``).
        preflight: Also check what needs RLlib: the algorithm, env, config paths and RLlib's own validation
            of the search space's corners. Off only for reading back a spec that already ran.

    Raises:
        SpecError: with every problem found, each naming its spec path.
    """
    document = apply_overrides(read_document(source), list(overrides))
    parsed, problems = parse_spec(document)
    if parsed is None:
        raise SpecError(problems)
    spec, problems = resolve(parsed)
    if spec is not None:
        problems += warm_start.problems(spec)
    if preflight:
        problems += static_problems(parsed)
    if spec is None or problems:
        raise SpecError(problems)
    return spec
