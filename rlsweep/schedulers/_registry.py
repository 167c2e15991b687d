"""The strategy registry: presets, default searcher and scheduler, and pairing rules, resolved in one
place from what each entry declares (its options, the capabilities it provides and requires), never by
checking names elsewhere."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from rlsweep import warm_start
from rlsweep._entry import Entry
from rlsweep.errors import Problem
from rlsweep.schedulers._schedulers import SCHEDULERS
from rlsweep.search_spaces import SEARCHERS, Fixed, Grid, SearchRequest, SearchSpace
from rlsweep.spec import SchedulerSpec, SearcherSpec, SweepSpec, json_schema

log = logging.getLogger(__name__)

#: Named pairings a spec can ask for with ``preset: NAME``: the searcher and scheduler it fills in. A
#: spec's own ``searcher``/``scheduler`` sections add options on top; naming another entry is an error.
PRESETS: dict[str, dict[str, str]] = {
    # The default recommendation: TPE proposes, ASHA stops the trailing trials after budget/9 env steps.
    "optuna-asha": {"searcher": "optuna", "scheduler": "asha"},
    "hyperopt-asha": {"searcher": "hyperopt", "scheduler": "asha"},
    "random-asha": {"searcher": "random", "scheduler": "asha"},
    "random-hyperband": {"searcher": "random", "scheduler": "hyperband"},
    "bohb": {"searcher": "bohb", "scheduler": "bohb"},
    "pbt": {"searcher": "random", "scheduler": "pbt"},
    "pb2": {"searcher": "random", "scheduler": "pb2"},
}

#: What a spec that names neither gets: Optuna's TPE with ASHA (in the time-to-solve benchmark this
#: pairing solved CartPole sooner than random search run to the end).
DEFAULT_SEARCHER, DEFAULT_SCHEDULER = "optuna", "asha"


def _table(section: str) -> Mapping[str, Entry]:
    return SEARCHERS if section == "searcher" else SCHEDULERS


def pairs(searcher: Entry, scheduler: Entry) -> bool:
    """Whether each provides what the other requires."""
    return searcher.pairs_with(scheduler) and scheduler.pairs_with(searcher)


def _preferred_searcher(space: SearchSpace) -> str:
    searched = [p for p in space if not isinstance(p.domain, Fixed)]
    if not searched:
        return "random"
    if all(isinstance(p.domain, Grid) for p in searched):
        return "grid"
    return DEFAULT_SEARCHER


def _default(section: str, preferred: str, partner: Entry | None) -> str:
    """``preferred``, or else the first entry of ``section`` that pairs with ``partner``."""
    table = _table(section)
    if partner is None:
        return preferred
    for name in (preferred, *table):
        entry = table[name]
        if (pairs(entry, partner) if section == "searcher" else pairs(partner, entry)):
            return name
    return preferred


def _pairing_problems(searcher: Entry, scheduler: Entry) -> list[Problem]:
    problems = []
    for entry, other in ((scheduler, searcher), (searcher, scheduler)):
        if not entry.pairs_with(other):
            table = _table(other.section)
            partners = [name for name in table if entry.pairs_with(table[name])]
            problems.append(
                Problem(
                    f"{other.section}.name",
                    f"{entry.section} {entry.name!r} runs only with {other.section} "
                    f"{' or '.join(repr(n) for n in sorted(partners))}, got {other.name!r}: {entry.requires_reason}",
                )
            )
    return problems


def resolve(spec: SweepSpec) -> tuple[SweepSpec | None, list[Problem]]:
    """The spec with its preset applied and searcher and scheduler named, and every problem with them:
    names, options, pairing, and what each needs of the rest of the spec."""
    problems: list[Problem] = []
    names: dict[str, str | None] = {"searcher": spec.searcher.name, "scheduler": spec.scheduler.name}
    if spec.preset is not None:
        if spec.preset not in PRESETS:
            problems.append(Problem("preset", f"unknown preset {spec.preset!r}; expected one of {sorted(PRESETS)}"))
        else:
            for section, filled in PRESETS[spec.preset].items():
                if names[section] not in (None, filled):
                    problems.append(
                        Problem(
                            f"{section}.name",
                            f"preset {spec.preset!r} uses {section} {filled!r}, got {names[section]!r}; "
                            f"remove {section}.name or the preset",
                        )
                    )
                names[section] = filled

    def known(section: str) -> Entry | None:
        name = names[section]
        return _table(section)[name] if name in _table(section) else None

    if names["searcher"] is None:
        names["searcher"] = _default("searcher", _preferred_searcher(spec.search_space), known("scheduler"))
    if names["scheduler"] is None:
        names["scheduler"] = _default("scheduler", DEFAULT_SCHEDULER, known("searcher"))

    entries: dict[str, Entry] = {}
    options: dict[str, Any] = {}
    for section, given in (("searcher", spec.searcher.options), ("scheduler", spec.scheduler.options)):
        entry = known(section)
        if entry is None:
            table = _table(section)
            problems.append(Problem(f"{section}.name", f"unknown {section} {names[section]!r}; expected one of {sorted(table)}"))
            continue
        entries[section] = entry
        options[section], found = entry.parse_options(given)
        problems += found
    if len(entries) < 2:
        return None, problems
    searcher, scheduler = entries["searcher"], entries["scheduler"]
    pairing = _pairing_problems(searcher, scheduler)
    if pairing:
        # A searcher checked against a scheduler it cannot run with would only add noise.
        return None, problems + pairing
    resolved = spec.model_copy(
        update={
            "searcher": spec.searcher.model_copy(update={"name": searcher.name}),
            "scheduler": spec.scheduler.model_copy(update={"name": scheduler.name}),
        }
    )
    # Each entry checks the rest of the spec with its options, where those are valid.
    if options["searcher"] is not None:
        problems += searcher.check(spec.search_space, options["searcher"])  # type: ignore[attr-defined]
        problems += searcher.check_budget(spec.search_space, options["searcher"], spec.budget)  # type: ignore[attr-defined]
    if options["scheduler"] is not None:
        problems += scheduler.check(resolved, options["scheduler"])  # type: ignore[attr-defined]
    return (None if problems else resolved), problems


def search_request(spec: SweepSpec, *, capacity: Callable[[], int] | None = None) -> SearchRequest:
    """What the spec's searcher is built from, its warm start included (raises ``SpecError`` when the warm
    start cannot be made; :func:`rlsweep.validate.load_spec` reports that before). ``capacity`` says how
    many trials the cluster holds now: the searcher's concurrency follows it, capped by
    ``budget.max_concurrent``."""
    entry = SEARCHERS[str(spec.searcher.name)]
    warm = warm_start.plan(spec)
    for note in warm.notes:
        log.info("%s", note)
    return SearchRequest(
        warm_points=warm.points,
        evaluated=warm.evaluated,
        space=spec.search_space,
        metric=spec.metric.name,
        mode=spec.metric.mode,
        seed=spec.searcher.seed,
        options=entry.options(spec.searcher.options),
        trials=spec.budget.trials,
        max_concurrent=spec.budget.max_concurrent,
        capacity=capacity,
    )


def with_searcher(spec: SweepSpec, name: str) -> SweepSpec:
    """The spec with searcher ``name`` (its seed kept, no options) and a scheduler it pairs with (FIFO
    where it can): a scheduler does not change what a searcher draws (``rlsweep sample --searcher``)."""
    entry = SEARCHERS[name]
    scheduler = _default("scheduler", "fifo", entry)
    return spec.model_copy(
        update={"searcher": SearcherSpec(name=name, seed=spec.searcher.seed), "scheduler": SchedulerSpec(name=scheduler), "preset": None}
    )


def checkpoint_keep(spec: SweepSpec) -> int | None:
    """``checkpoint.keep``, or the scheduler's default when the spec leaves it out (None: keep all)."""
    if spec.checkpoint.keep is not None:
        return spec.checkpoint.keep
    return SCHEDULERS[str(spec.scheduler.name)].default_keep


def restores_other_trials(spec: SweepSpec) -> bool:
    return SCHEDULERS[str(spec.scheduler.name)].restores_other_trials


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema of a spec document, each searcher's and scheduler's options included, so an editor
    completes and checks them too."""
    schema = json_schema()
    for section in ("searcher", "scheduler"):
        table = _table(section)
        base = {"seed": schema["$defs"]["SearcherSpec"]["properties"]["seed"]} if section == "searcher" else {}
        variants: list[dict[str, Any]] = [{"type": "string", "enum": list(table)}]
        for name in table:
            entry = table[name]
            options = entry.Options.model_json_schema()
            variants.append(
                {
                    "type": "object",
                    "description": entry.doc,
                    "properties": {"name": {"const": name}, **base, **options.get("properties", {})},
                    "required": ["name"],
                    "additionalProperties": False,
                    **({"$defs": options["$defs"]} if "$defs" in options else {}),
                }
            )
        # A section without a name gets the registry's default; its options are then checked at validate.
        variants.append({"type": "object", "properties": {"seed": base["seed"]} if base else {}, "not": {"required": ["name"]}})
        variants.append({"type": "null"})
        schema["properties"][section] = {"description": schema["properties"][section].get("description", ""), "anyOf": variants}
    schema["properties"]["preset"] = {"anyOf": [{"enum": list(PRESETS)}, {"type": "null"}],
                                      "description": schema["properties"]["preset"].get("description", "")}
    return schema
