"""Canonical parameter domains: what a user can write in ``search_space``, independent of any searcher.

A domain is a frozen value. Parsing goes through one table (:data:`DOMAIN_PARSERS`), keyed by the name the
user writes, so the documentation, the validator and every compiler agree on the set of kinds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rlsweep import _schedules
from rlsweep.errors import Problem, shorten


@dataclass(frozen=True)
class Domain:
    """Base of every domain. ``kind`` is the name a user writes in the spec."""

    kind: ClassVar[str] = ""

    def contains(self, value: Any) -> bool:
        """Whether ``value`` is a draw this domain can produce."""
        raise NotImplementedError


@dataclass(frozen=True)
class Uniform(Domain):
    kind: ClassVar[str] = "uniform"
    low: float
    high: float

    def contains(self, value: Any) -> bool:
        return isinstance(value, float) and self.low <= value <= self.high


@dataclass(frozen=True)
class LogUniform(Uniform):
    kind: ClassVar[str] = "loguniform"


@dataclass(frozen=True)
class QUniform(Domain):
    kind: ClassVar[str] = "quniform"
    low: float
    high: float
    q: float

    def contains(self, value: Any) -> bool:
        if not isinstance(value, float) or not self.low <= value <= self.high:
            return False
        steps = value / self.q
        return math.isclose(steps, round(steps), rel_tol=0, abs_tol=1e-6)


@dataclass(frozen=True)
class QLogUniform(QUniform):
    kind: ClassVar[str] = "qloguniform"


@dataclass(frozen=True)
class RandInt(Domain):
    """Integers ``low..high``, both bounds inclusive (as the user writes them)."""

    kind: ClassVar[str] = "randint"
    low: int
    high: int

    def contains(self, value: Any) -> bool:
        return _is_int(value) and self.low <= value <= self.high


@dataclass(frozen=True)
class LogRandInt(RandInt):
    kind: ClassVar[str] = "lograndint"


@dataclass(frozen=True)
class QRandInt(Domain):
    kind: ClassVar[str] = "qrandint"
    low: int
    high: int
    q: int

    def contains(self, value: Any) -> bool:
        return _is_int(value) and self.low <= value <= self.high and value % self.q == 0


@dataclass(frozen=True)
class Normal(Domain):
    kind: ClassVar[str] = "normal"
    mean: float
    sd: float

    def contains(self, value: Any) -> bool:
        return isinstance(value, float) and math.isfinite(value)


@dataclass(frozen=True)
class Choice(Domain):
    """One of ``values``; values may be any YAML value, lists and dicts included."""

    kind: ClassVar[str] = "choice"
    values: tuple[Any, ...]

    def contains(self, value: Any) -> bool:
        return any(_same_value(value, v) for v in self.values)


@dataclass(frozen=True)
class Grid(Choice):
    """Every one of ``values``, each in its own trial(s)."""

    kind: ClassVar[str] = "grid"


@dataclass(frozen=True)
class Fixed(Domain):
    """A constant written in ``search_space`` (kept there so a condition can refer to it)."""

    kind: ClassVar[str] = "fixed"
    value: Any

    def contains(self, value: Any) -> bool:
        return _same_value(value, self.value)


def _clip(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def _on_grid(value: float, low: float, high: float, q: float) -> float:
    # Quantized bounds are multiples of q (a parse-time rule), so the clipped multiple stays on the grid.
    return _clip(round(value / q) * q, low, high)


#: Domain kind -> the nearest value of that domain to a number, in the declared Python type.
PROJECTIONS: dict[str, Callable[[Any, Any], Any]] = {
    Uniform.kind: lambda d, v: _clip(float(v), d.low, d.high),
    LogUniform.kind: lambda d, v: _clip(float(v), d.low, d.high),
    QUniform.kind: lambda d, v: float(_on_grid(float(v), d.low, d.high, d.q)),
    QLogUniform.kind: lambda d, v: float(_on_grid(float(v), d.low, d.high, d.q)),
    RandInt.kind: lambda d, v: int(_clip(round(float(v)), d.low, d.high)),
    LogRandInt.kind: lambda d, v: int(_clip(round(float(v)), d.low, d.high)),
    QRandInt.kind: lambda d, v: int(_on_grid(float(v), d.low, d.high, d.q)),
    Normal.kind: lambda d, v: float(v),
}


def nearest(domain: Domain, value: Any) -> Any:
    """The value of a numeric ``domain`` nearest to ``value`` (a perturbed value, a backend's float or
    numpy scalar just past a bound), as a plain Python number of the declared type."""
    return PROJECTIONS[domain.kind](domain, value)


@dataclass(frozen=True)
class Parameter:
    """One entry of ``search_space``.

    Attributes:
        path: The spec key, ``method.argument[.key...]`` on the algorithm's config.
        domain: Where its values come from.
        when: Conditions, parameter path -> the values that make this parameter active.
    """

    path: str
    domain: Domain
    when: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def is_active(self, draws: Mapping[str, Any]) -> bool:
        return all(
            name in draws and any(_same_value(draws[name], v) for v in allowed)
            for name, allowed in self.when.items()
        )


@dataclass(frozen=True)
class SearchSpace:
    """The parsed ``search_space``, parameters in an order where every condition's parents come first."""

    parameters: tuple[Parameter, ...] = ()
    #: Each scheduled setting's path -> its schedule; its searched numbers are the parameters
    #: ``<path>.<slot>`` (``training.lr.from``), which a trial assembles into RLlib's format.
    schedules: tuple[tuple[str, _schedules.Schedule], ...] = ()

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.parameters)

    def __len__(self) -> int:
        return len(self.parameters)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(p.path for p in self.parameters)

    def grid_size(self) -> int:
        size = 1
        for parameter in self.parameters:
            if isinstance(parameter.domain, Grid):
                size *= len(parameter.domain.values)
        return size

    def distinct_configs(self, limit: int) -> int | None:
        """How many distinct configs the space holds (inactive parameters absent), when every domain is
        finite and there are at most ``limit``; None for a continuous or a larger space."""
        values: list[list[Any]] = []
        for parameter in self.parameters:
            options = _finite_values(parameter.domain, limit)
            if options is None:
                return None
            values.append(options)
        # Depth first over the active parameters only, stopping once more than ``limit`` are found: each leaf
        # is another config (every branch sets an active parameter to another value), so the work is bounded
        # by ``limit`` configs whatever the product of the domains' sizes.
        seen: set[str] = set()
        stack: list[tuple[int, dict[str, Any]]] = [(0, {})]
        while stack:
            index, config = stack.pop()
            while index < len(self.parameters) and not self.parameters[index].is_active(config):
                index += 1
            if index == len(self.parameters):
                seen.add(repr(sorted(config.items())))
                if len(seen) > limit:
                    return None
                continue
            path = self.parameters[index].path
            stack.extend((index + 1, {**config, path: value}) for value in reversed(values[index]))
        return len(seen)


def _finite_values(domain: Domain, limit: int) -> list[Any] | None:
    """Every value a finite domain can draw (at most ``limit`` of them), else None."""
    if isinstance(domain, Fixed):
        return [domain.value]
    if isinstance(domain, Choice):
        # A value listed twice is one config, and one branch of the count (else 20 choices of [1, 1] take
        # a million steps to count one config).
        return list({repr(value): value for value in domain.values}.values())
    if isinstance(domain, (RandInt, QRandInt, QUniform)):
        step = getattr(domain, "q", 1)
        count = int(round((domain.high - domain.low) / step)) + 1
        return [domain.low + k * step for k in range(count)] if count <= limit else None
    return None


def whole_number_range(domain: Domain) -> tuple[int, int] | None:
    """The smallest and largest draw of a domain that draws whole numbers only (ints, not bools), or None
    when it can draw anything else (a float, a string, a list). A rule a written value must keep (a seed's
    range, a schedule's order) then holds for every draw when it holds at both ends."""
    if isinstance(domain, (RandInt, QRandInt)):  # quantized bounds are multiples of q: both are drawn
        return domain.low, domain.high
    values = drawn_values(domain)
    if values is None or not all(_is_int(v) for v in values):
        return None
    return min(values), max(values)


def drawn_values(domain: Domain) -> tuple[Any, ...] | None:
    """Every value a domain that lists its values (fixed, choice, grid) can draw; None for a range."""
    if isinstance(domain, Fixed):
        return (domain.value,)
    if isinstance(domain, Choice):
        return domain.values
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_multiple(value: float, q: float) -> bool:
    steps = value / q
    return math.isclose(steps, round(steps), rel_tol=0, abs_tol=1e-9)


def _same_value(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b if not (_is_number(a) and _is_number(b)) else a == b


# --- parsing -------------------------------------------------------------------------------------------

ParseResult = tuple[Domain | None, list[str]]


def _numbers(args: Any, names: Sequence[str]) -> tuple[list[Any] | None, list[str]]:
    if isinstance(args, Mapping):
        unknown = sorted(set(args) - set(names))
        if unknown:
            return None, [f"unknown argument(s) {unknown}; expected {list(names)}"]
        missing = [n for n in names if n not in args]
        if missing:
            return None, [f"missing argument(s) {missing}; expected {list(names)}"]
        args = [args[n] for n in names]
    if not isinstance(args, (list, tuple)) or len(args) != len(names):
        return None, [f"expects [{', '.join(names)}], got {shorten(args)}"]
    bad = [f"{n} must be a number, got {shorten(v)}" for n, v in zip(names, args) if not _is_number(v)]
    bad += [f"{n} must be finite, got {v}" for n, v in zip(names, args) if _is_number(v) and not math.isfinite(v)]
    # Beyond a float's exact integers, bounds stop meaning what they say (and searchers draw floats).
    bad += [f"{n} must be within +-2**53, got {shorten(v)}" for n, v in zip(names, args)
            if _is_number(v) and math.isfinite(v) and abs(v) > 2**53]
    return (None, bad) if bad else (list(args), [])


def _bounded(cls: type, *, log: bool = False, integer: bool = False, quantized: bool = False):
    names = ("low", "high", "q") if quantized else ("low", "high")

    def parse(args: Any) -> ParseResult:
        return _parse_bounded(args, cls, names, log=log, integer=integer, quantized=quantized)

    parse.arguments = names  # type: ignore[attr-defined]
    parse.integer = integer  # type: ignore[attr-defined]
    return parse


# The parsers' checks live in functions of their own, called as a spec is parsed (not when DOMAIN_PARSERS is
# built at import), where a test, and a mutation tester, can reach them.
def _parse_bounded(args: Any, cls: type, names: tuple[str, ...], *, log: bool, integer: bool, quantized: bool) -> ParseResult:
    values, errors = _numbers(args, names)
    if values is None:
        return None, errors
    low, high = values[0], values[1]
    if integer:
        errors += [f"{n} must be an integer, got {shorten(v)}" for n, v in zip(names, values) if not _is_int(v)]
    if not low < high:
        # Equal bounds would be a constant: write the value itself (a fixed value) instead.
        errors.append(f"low must be < high, got low={low}, high={high}")
    if log and low <= 0:
        errors.append(f"low must be > 0 for a log scale, got low={low}")
    if quantized:
        q = values[2]
        if q <= 0:
            errors.append(f"q must be > 0, got q={q}")
        elif not errors and q > high - low:
            errors.append(f"q must not exceed high - low = {high - low}, got q={q}")
        elif not errors:
            # Then every backend's quantization (rounding to multiples of q, or steps of q from low)
            # draws from the same set, and no draw falls outside [low, high].
            off = [n for n, v in (("low", low), ("high", high)) if not _is_multiple(v, q)]
            if off:
                errors.append(
                    f"{' and '.join(off)} must be {'a multiple' if len(off) == 1 else 'multiples'} of q={q}, "
                    f"got low={low}, high={high}"
                )
    if errors:
        return None, errors
    if integer:
        return cls(*values), []
    return cls(*(float(v) for v in values)), []


def _parse_normal(args: Any) -> ParseResult:
    values, errors = _numbers(args, ["mean", "sd"])
    if values is None:
        return None, errors
    if values[1] <= 0:
        return None, [f"sd must be > 0, got sd={values[1]}"]
    return Normal(float(values[0]), float(values[1])), []


_parse_normal.arguments = ("mean", "sd")  # type: ignore[attr-defined]
_parse_normal.integer = False  # type: ignore[attr-defined]


def _values(cls: type) -> Callable[[Any], ParseResult]:
    def parse(args: Any) -> ParseResult:
        return _parse_values(args, cls)

    parse.arguments = None  # type: ignore[attr-defined]  # a list of values
    return parse


def _parse_values(args: Any, cls: type) -> ParseResult:
    if not isinstance(args, (list, tuple)) or not args:
        return None, [f"expects a non-empty list of values, got {shorten(args)}"]
    odd = [v for v in args if isinstance(v, float) and not math.isfinite(v)]
    if odd:
        return None, [f"values must be finite numbers where they are numbers, got {odd[0]}"]
    return cls(tuple(args)), []


#: The name a user writes -> its parser. Compilers dispatch on the resulting class's ``kind``.
DOMAIN_PARSERS: dict[str, Callable[[Any], ParseResult]] = {
    "uniform": _bounded(Uniform),
    "loguniform": _bounded(LogUniform, log=True),
    "quniform": _bounded(QUniform, quantized=True),
    "qloguniform": _bounded(QLogUniform, log=True, quantized=True),
    "randint": _bounded(RandInt, integer=True),
    "qrandint": _bounded(QRandInt, integer=True, quantized=True),
    "lograndint": _bounded(LogRandInt, log=True, integer=True),
    "normal": _parse_normal,
    "choice": _values(Choice),
    "grid": _values(Grid),
}

DOMAIN_KINDS: tuple[str, ...] = tuple(DOMAIN_PARSERS)


def domain_json_schema() -> dict[str, Any]:
    """The JSON Schema of one ``search_space`` entry: a domain from :data:`DOMAIN_PARSERS` (with an
    optional ``when``), or any fixed value."""
    when = {
        "type": "object",
        "description": "make this parameter active only when the named parameters take these values",
        "additionalProperties": {},
    }
    options: list[dict[str, Any]] = []
    for kind, parser in DOMAIN_PARSERS.items():
        arguments = parser.arguments  # type: ignore[attr-defined]
        if arguments is None:
            value: dict[str, Any] = {"type": "array", "minItems": 1}
        else:
            number = {"type": "integer" if parser.integer else "number"}  # type: ignore[attr-defined]
            value = {
                "anyOf": [
                    {"type": "array", "items": number, "minItems": len(arguments), "maxItems": len(arguments)},
                    {"type": "object", "properties": {a: number for a in arguments}, "required": list(arguments),
                     "additionalProperties": False},
                ],
                "description": f"[{', '.join(arguments)}]",
            }
        options.append(
            {"type": "object", "properties": {kind: value, "when": when}, "required": [kind], "additionalProperties": False}
        )
    options.append({"type": "object", "properties": {"fixed": {}, "when": when}, "required": ["fixed"],
                    "additionalProperties": False})
    # Anything else is a fixed value: a mapping is one only if it is not shaped like a domain.
    domain_keys = [*DOMAIN_PARSERS, "fixed", "when"]
    options.append(
        {"not": {"type": "object", "minProperties": 1, "propertyNames": {"enum": domain_keys}}, "description": "a fixed value"}
    )
    return {"anyOf": options}


def parse_search_space(raw: Any, *, where: str = "search_space") -> tuple[SearchSpace, list[Problem]]:
    """Parse the ``search_space`` mapping, returning the space and every problem found in it."""
    problems: list[Problem] = []
    if raw is None:
        return SearchSpace(), problems
    if not isinstance(raw, Mapping):
        return SearchSpace(), [Problem(where, f"must be a mapping of parameter paths to domains, got {shorten(raw)}")]

    parameters: dict[str, Parameter] = {}
    schedules: dict[str, _schedules.Schedule] = {}
    for path, value in raw.items():
        loc = f"{where}.{path}"
        if not isinstance(path, str) or not path:
            problems.append(Problem(where, f"parameter names must be non-empty strings, got {shorten(path)}"))
            continue
        if _schedules.is_schedule(value):
            schedule, searched = _parse_schedule(path, value, loc, problems)
            if schedule is not None:
                schedules[path] = schedule
                parameters.update((p.path, p) for p in searched)
            continue
        domain, when, errors = _parse_entry(value)
        problems.extend(Problem(loc, e) for e in errors)
        if domain is not None:
            parameters[path] = Parameter(path, domain, when)

    for parameter in parameters.values():
        for parent, allowed in parameter.when.items():
            loc = f"{where}.{parameter.path}.when.{parent}"
            if parent == parameter.path:
                problems.append(Problem(loc, "a parameter cannot depend on itself"))
            elif parent not in parameters:
                problems.append(Problem(loc, f"refers to {parent!r}, which is not in search_space"))
            else:
                parent_domain = parameters[parent].domain
                for value in allowed:
                    if not parent_domain.contains(value) and not _loosely_contains(parent_domain, value):
                        problems.append(
                            Problem(loc, f"value {shorten(value)} can never be drawn from {parent!r} ({parent_domain.kind})")
                        )
    ordered, cycle = _order_by_conditions(parameters)
    if cycle:
        shown = " -> ".join(cycle) if len(cycle) <= 10 else f"{' -> '.join(cycle[:9])} -> ... ({len(cycle) - 1} parameters)"
        problems.append(Problem(where, f"conditions form a cycle: {shown}"))
    elif depth_problem := _condition_depth_problem(ordered, where):
        problems.append(depth_problem)
    return SearchSpace(tuple(ordered), tuple(schedules.items())), problems


def _parse_schedule(path: str, value: Any, loc: str, problems: list[Problem]) -> tuple[_schedules.Schedule | None, list[Parameter]]:
    """A schedule written as a search-space value: each number written as a domain becomes the ordinary
    parameter ``<path>.<slot>``, which draws numbers only and takes no condition."""
    schedule, searched, errors = _schedules.parse(value, searchable=True)
    problems.extend(Problem(f"{loc}.{sub}", message) for sub, message in errors)
    parameters = []
    for slot, written in searched.items():
        domain, when, domain_errors = _parse_entry(written)
        problems.extend(Problem(f"{loc}.{slot}", e) for e in domain_errors)
        if domain is None:
            continue
        listed = drawn_values(domain)
        if when:
            problems.append(Problem(f"{loc}.{slot}.when", "a schedule's number takes no condition; it is always drawn"))
        elif listed is not None and not all(_is_number(v) for v in listed):
            problems.append(Problem(f"{loc}.{slot}", f"a schedule's number must be a number or a domain of numbers, "
                                    f"got {shorten(written)}"))
        else:
            parameters.append(Parameter(f"{path}.{slot}", domain))
    return (schedule if len(parameters) == len(searched) else None), parameters


def _loosely_contains(domain: Domain, value: Any) -> bool:
    # A condition on a float domain written as an int (``when: {x: 1}``) is fine.
    if isinstance(domain, (Uniform, QUniform, Normal)) and _is_number(value):
        return domain.contains(float(value))
    return False


def _parse_entry(value: Any) -> tuple[Domain | None, dict[str, tuple[Any, ...]], list[str]]:
    if not (isinstance(value, Mapping) and value and set(value) - {"when"} <= set(DOMAIN_PARSERS) | {"fixed"}):
        if isinstance(value, Mapping) and "when" in value:
            others = sorted(set(value) - {"when"})
            return None, {}, [f"unknown domain {shorten(others)}; expected one of {list(DOMAIN_KINDS)} or 'fixed'"]
        return Fixed(value), {}, []
    kinds = [k for k in value if k != "when"]
    if len(kinds) != 1:
        return None, {}, [f"give exactly one domain, got {shorten(kinds)}"]
    kind = kinds[0]
    errors: list[str] = []
    if kind == "fixed":
        domain: Domain | None = Fixed(value[kind])
    else:
        domain, kind_errors = DOMAIN_PARSERS[kind](value[kind])
        errors += [f"{kind}: {e}" for e in kind_errors]
    when: dict[str, tuple[Any, ...]] = {}
    if "when" in value:
        raw_when = value["when"]
        if not isinstance(raw_when, Mapping) or not raw_when:
            errors.append(f"when: must map parameter paths to a value or a list of values, got {shorten(raw_when)}")
        else:
            for parent, allowed in raw_when.items():
                allowed_values = tuple(allowed) if isinstance(allowed, list) else (allowed,)
                if not allowed_values:
                    errors.append(f"when.{parent}: needs at least one value")
                when[str(parent)] = allowed_values
    return (domain if not errors else None), when, errors


def _order_by_conditions(parameters: Mapping[str, Parameter]) -> tuple[list[Parameter], list[str]]:
    """The parameters with every condition's parents first (depth first, in the order written), or the
    first cycle found. A loop over an explicit stack, not recursion: a chain of any length (a hostile one
    of thousands) is ordered, then refused by :func:`_condition_depth_problem`, never a RecursionError."""
    ordered: list[Parameter] = []
    state: dict[str, int] = {}  # 1: on the current chain, 2: done
    for root in parameters:
        if state.get(root) == 2:
            continue
        state[root] = 1
        stack: list[tuple[str, Iterator[str]]] = [(root, iter(parameters[root].when))]
        while stack:
            path, parents = stack[-1]
            parent = next((p for p in parents if p in parameters and state.get(p) != 2), None)
            if parent is None:
                stack.pop()
                state[path] = 2
                ordered.append(parameters[path])
            elif state.get(parent) == 1:
                trail = [p for p, _ in stack]
                return list(parameters.values()), trail[trail.index(parent):] + [parent]
            else:
                state[parent] = 1
                stack.append((parent, iter(parameters[parent].when)))
    return ordered, []


#: The longest chain of ``when:`` conditions a search space may have (a parameter whose parent has a
#: parent ... counts each one). Real spaces nest two or three levels. Backends pay per level: HyperOpt and
#: Ax nest their native spaces (recursing once per level), and ConfigSpace (BOHB) orders conditions in
#: time exponential in the chain's length (ConfigSpace 1.2: a chain of 12 takes 1 s, 14 takes 10 s, 16
#: over 2 minutes, in validate as in the sweep).
MAX_CONDITION_DEPTH = 10


def _condition_depth_problem(ordered: Sequence[Parameter], where: str) -> Problem | None:
    """A problem at the first parameter whose chain of conditions is longer than :data:`MAX_CONDITION_DEPTH`
    (``ordered``: parents first), or None."""
    depth: dict[str, int] = {}
    deepest_parent: dict[str, str] = {}
    for parameter in ordered:
        parents = [p for p in parameter.when if p in depth]
        top = max(parents, key=lambda p: depth[p], default=None)
        depth[parameter.path] = 1 + (depth[top] if top is not None else 0)
        if top is not None:
            deepest_parent[parameter.path] = top
        if depth[parameter.path] > MAX_CONDITION_DEPTH:
            chain = [parameter.path]
            while chain[-1] in deepest_parent:
                chain.append(deepest_parent[chain[-1]])
            shown = " <- ".join(chain[:3]) + (f" <- ... <- {chain[-1]}" if len(chain) > 3 else "")
            return Problem(
                f"{where}.{parameter.path}.when",
                f"conditions chain {len(chain)} parameters deep ({shown}); at most {MAX_CONDITION_DEPTH}: "
                "condition parameters on a few shared parents instead",
            )
    return None
