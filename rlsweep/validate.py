"""Loading a spec and checking all of it: its shape (:mod:`rlsweep.spec`), its strategy (the registry in
:mod:`rlsweep.schedulers`) and what needs RLlib (pre-flight in :mod:`rlsweep.trainables`), every problem
raised together."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
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
    beside: Callable[[SweepSpec], Any] | None = None,
) -> SweepSpec:
    """Load and validate a spec from a YAML file or a dict.

    Args:
        source: A path to a YAML file, or the document as a mapping.
        overrides: ``key=value`` strings applied before validation (the CLI's ``--set``).
        preflight: Also check what needs RLlib: the algorithm, env, config paths and RLlib's own validation
            of the search space's corners. Off only for reading back a spec that already ran.
        beside: Called with the spec once its shape and strategy pass, while the pre-flight (about 2 s,
            most of it importing RLlib) runs in a thread beside it: ``rlsweep run`` starts Ray there, which
            the sweep needs next and which takes as long again. Its error is raised only if the pre-flight
            finds nothing, so a spec's problems come first; undoing what it did when the spec is refused
            is the caller's.

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
    if preflight and beside is not None and spec is not None and not problems:
        problems += _preflight_beside(parsed, lambda: beside(spec))
    elif preflight:
        problems += static_problems(parsed)
    if spec is None or problems:
        raise SpecError(problems)
    return spec


def _preflight_beside(parsed: SweepSpec, start: Callable[[], Any]) -> list[Any]:
    """The pre-flight's problems, found in a thread while ``start`` runs in this one (Ray's start sets its
    signal handlers, which only the main thread may)."""
    with ThreadPoolExecutor(1, thread_name_prefix="rlsweep-preflight") as pool:
        checking = pool.submit(static_problems, parsed)
        try:
            start()
        except BaseException:
            if found := checking.result():
                raise SpecError(found) from None
            raise
        return checking.result()
