"""Loading a spec and checking all of it, each stage adding its problems, raised together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlsweep.errors import SpecError
from rlsweep.spec import SweepSpec, apply_overrides, parse_spec, read_document


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
            of the search space's extremes. Off only for reading back a spec that already ran.

    Raises:
        SpecError: with every problem found, each naming its spec path.
    """
    from rlsweep.schedulers import check_spec

    document = apply_overrides(read_document(source), list(overrides))
    spec, problems = parse_spec(document)
    if spec is None:
        raise SpecError(problems)
    problems = check_spec(spec)
    if preflight:
        from rlsweep.trainables import static_problems

        problems += static_problems(spec)
    if problems:
        raise SpecError(problems)
    return spec
