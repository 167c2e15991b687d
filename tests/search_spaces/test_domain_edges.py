"""Domains at their edges, pinned where mutation testing (mutmut) found them unchecked: what each domain
contains at its bounds, the nearest value of a domain, and the parse errors' wording."""

from __future__ import annotations

import math

import pytest

from rlsweep.errors import Problem
from rlsweep.search_spaces._domains import (
    Choice,
    Fixed,
    Grid,
    LogRandInt,
    LogUniform,
    Normal,
    Parameter,
    QLogUniform,
    QRandInt,
    QUniform,
    RandInt,
    SearchSpace,
    Uniform,
    _condition_depth_problem,
    _finite_values,
    drawn_values,
    nearest,
    parse_search_space,
    whole_number_range,
)


def test_each_domain_contains_its_bounds_and_nothing_past_them():
    u = Uniform(0.5, 1.5)
    assert u.contains(0.5) and u.contains(1.5) and not u.contains(0.4999) and not u.contains(1.5001)
    assert not u.contains(1)  # an int is not a float draw
    q = QUniform(0.0, 1.0, 0.25)
    assert q.contains(0.0) and q.contains(1.0) and q.contains(0.75) and not q.contains(0.3)
    assert not q.contains(1.25) and not q.contains(-0.25) and not q.contains(1)
    q1 = QUniform(0.0, 4.0, 1.0)
    # Far from 0 the grid's tolerance stays absolute: 0.001 off a multiple is off the grid.
    assert not QUniform(0.0, 1.0e7, 1.0).contains(5.0e6 + 0.001) and QUniform(0.0, 1.0e7, 1.0).contains(5.0e6)
    assert q1.contains(1 + 5e-7) and not q1.contains(1 + 2e-6)  # a float's rounding is still on the grid
    r = RandInt(2, 4)
    assert r.contains(2) and r.contains(4) and not r.contains(1) and not r.contains(5) and not r.contains(3.0)
    assert not RandInt(0, 1).contains(True)
    qr = QRandInt(0, 10, 5)
    assert qr.contains(0) and qr.contains(10) and qr.contains(5) and not qr.contains(3) and not qr.contains(15)
    assert not qr.contains(5.0) and not qr.contains(-5)
    n = Normal(0.0, 1.0)
    assert n.contains(123.0) and not n.contains(math.inf) and not n.contains(math.nan) and not n.contains(1)
    c = Choice((1, "a", [1, 2]))
    assert c.contains(1) and c.contains(1.0) and c.contains("a") and c.contains([1, 2]) and not c.contains(True)
    assert not c.contains((1, 2)) and not c.contains("b")
    assert Fixed(True).contains(True) and not Fixed(True).contains(1) and Fixed(2).contains(2.0)


def test_the_nearest_value_is_clipped_to_the_bounds_on_the_grid_in_the_declared_type():
    assert nearest(Uniform(0.0, 1.0), 2) == 1.0 and isinstance(nearest(Uniform(0.0, 1.0), 2), float)
    assert nearest(Uniform(0.0, 1.0), -1) == 0.0 and nearest(Uniform(0.0, 1.0), 0.3) == 0.3
    assert nearest(LogUniform(0.1, 1.0), 5.0) == 1.0 and nearest(LogUniform(0.1, 1.0), 0.01) == 0.1
    assert nearest(QUniform(0.0, 1.0, 0.25), 0.3) == 0.25 and nearest(QUniform(0.0, 1.0, 0.25), 7.0) == 1.0
    assert nearest(QLogUniform(0.5, 2.0, 0.5), 0.1) == 0.5 and nearest(QLogUniform(0.5, 2.0, 0.5), 1.3) == 1.5
    assert nearest(RandInt(1, 5), 2.6) == 3 and type(nearest(RandInt(1, 5), 2.6)) is int
    assert nearest(RandInt(1, 5), 9.0) == 5 and nearest(RandInt(1, 5), -9.0) == 1
    assert nearest(LogRandInt(1, 100), 150.2) == 100 and nearest(LogRandInt(1, 100), 0.2) == 1
    assert nearest(QRandInt(0, 20, 5), 12.6) == 15 and type(nearest(QRandInt(0, 20, 5), 12.6)) is int
    assert nearest(QRandInt(0, 20, 5), 99) == 20 and nearest(QRandInt(0, 20, 5), -99) == 0
    assert nearest(Normal(0.0, 1.0), 7) == 7.0 and isinstance(nearest(Normal(0.0, 1.0), 7), float)


def test_grid_size_multiplies_the_grids_only_and_a_search_space_iterates_its_parameters():
    space = SearchSpace((Parameter("a.x", Grid((1, 2, 3))), Parameter("a.y", Choice((1, 2))), Parameter("a.z", Grid((4, 5)))))
    assert space.grid_size() == 6 and len(space) == 3 and [p.path for p in space] == ["a.x", "a.y", "a.z"]
    assert space.paths == ("a.x", "a.y", "a.z") and SearchSpace().grid_size() == 1


def test_a_quantized_space_counts_its_grid_points_and_ranges_give_their_whole_number_ends():
    space = SearchSpace((Parameter("a.q", QRandInt(0, 10, 5)), Parameter("a.f", QUniform(0.0, 1.0, 0.5))))
    assert space.distinct_configs(9) == 9 and space.distinct_configs(8) is None
    assert SearchSpace((Parameter("a.r", RandInt(1, 3)),)).distinct_configs(3) == 3
    assert SearchSpace((Parameter("a.r", RandInt(1, 3)),)).distinct_configs(2) is None
    assert SearchSpace((Parameter("a.f", Fixed([1])),)).distinct_configs(1) == 1
    # The values counted are the grid's own: a condition on its top value opens a branch.
    conditional = SearchSpace((Parameter("a.q", QRandInt(0, 10, 5)),
                               Parameter("a.c", Choice((1, 2)), {"a.q": (10,)})))
    assert conditional.distinct_configs(100) == 4
    assert _finite_values(RandInt(1, 10**12), 10) is None  # not a list of a trillion values
    assert whole_number_range(RandInt(3, 9)) == (3, 9) and whole_number_range(QRandInt(0, 10, 5)) == (0, 10)
    assert whole_number_range(Choice((4, -2, 7))) == (-2, 7) and whole_number_range(Fixed(5)) == (5, 5)
    assert whole_number_range(Choice((1, 2.0))) is None and whole_number_range(Choice((1, True))) is None
    assert whole_number_range(Uniform(0.0, 1.0)) is None
    assert drawn_values(Fixed(3)) == (3,) and drawn_values(Grid((1, 2))) == (1, 2) and drawn_values(RandInt(1, 2)) is None


def _errors(entry):
    _, problems = parse_search_space({"training.x": entry})
    return [p.message for p in problems]


@pytest.mark.parametrize(("entry", "message"), [
    ({"uniform": {"low": 0, "hi": 1}}, "uniform: unknown argument(s) ['hi']; expected ['low', 'high']"),
    ({"uniform": {"low": 0}}, "uniform: missing argument(s) ['high']; expected ['low', 'high']"),
    ({"uniform": [0, 1, 2]}, "uniform: expects [low, high], got [0, 1, 2]"),
    ({"uniform": "0, 1"}, "uniform: expects [low, high], got '0, 1'"),
    ({"uniform": [0, True]}, "uniform: high must be a number, got True"),
    ({"uniform": [0, math.inf]}, "uniform: high must be finite, got inf"),
    ({"uniform": [-(2**53) - 2, 0]}, "uniform: low must be within +-2**53, got -9007199254740994"),
    ({"uniform": [1, 1]}, "uniform: low must be < high, got low=1, high=1"),
    ({"loguniform": [0, 1]}, "loguniform: low must be > 0 for a log scale, got low=0"),
    ({"randint": [0, 1.5]}, "randint: high must be an integer, got 1.5"),
    ({"quniform": [0, 1, 0]}, "quniform: q must be > 0, got q=0"),
    ({"quniform": [0, 1, 2]}, "quniform: q must not exceed high - low = 1, got q=2"),
    ({"quniform": [0.1, 1, 0.5]}, "quniform: low must be a multiple of q=0.5, got low=0.1, high=1"),
    ({"quniform": [0.1, 1.1, 0.5]}, "quniform: low and high must be multiples of q=0.5, got low=0.1, high=1.1"),
    ({"normal": [0, 0]}, "normal: sd must be > 0, got sd=0"),
    ({"normal": [0]}, "normal: expects [mean, sd], got [0]"),
    ({"choice": []}, "choice: expects a non-empty list of values, got []"),
    ({"grid": 3}, "grid: expects a non-empty list of values, got 3"),
    ({"choice": [1, math.nan]}, "choice: values must be finite numbers where they are numbers, got nan"),
    ({"choice": [1], "grid": [2]}, "give exactly one domain, got ['choice', 'grid']"),
    ({"when": {"a.b": 1}, "unifrom": [0, 1]}, "unknown domain ['unifrom']; expected one of ['uniform', 'loguniform', "
     "'quniform', 'qloguniform', 'randint', 'qrandint', 'lograndint', 'normal', 'choice', 'grid'] or 'fixed'"),
    ({"choice": [1], "when": []}, "when: must map parameter paths to a value or a list of values, got []"),
    ({"choice": [1], "when": {"a.b": []}}, "when.a.b: needs at least one value"),
])
def test_a_bad_domain_is_refused_with_the_rule_and_the_value(entry, message):
    assert message in _errors(entry)


def test_a_domain_parses_to_its_values_in_the_declared_type():
    space, problems = parse_search_space({
        "a.u": {"uniform": {"low": 0, "high": 2}}, "a.r": {"randint": [1, 3]}, "a.q": {"qrandint": [0, 10, 5]},
        "a.n": {"normal": [1, 2]}, "a.f": {"fixed": [1, 2]}, "a.c": {"choice": [1, "x"], "when": {"a.r": [1, 2]}},
        "a.d": {"choice": [3], "when": {"a.r": 3}}, "a.e": {"grid": [1, 2]}, "a.l": {"loguniform": [1, 10]},
    })
    assert problems == []
    domains = {p.path: p.domain for p in space}
    assert domains["a.u"] == Uniform(0.0, 2.0) and type(domains["a.u"].low) is float
    assert domains["a.r"] == RandInt(1, 3) and domains["a.q"] == QRandInt(0, 10, 5) and domains["a.n"] == Normal(1.0, 2.0)
    assert type(domains["a.n"].mean) is float and domains["a.f"] == Fixed([1, 2]) and domains["a.e"] == Grid((1, 2))
    assert domains["a.l"] == LogUniform(1.0, 10.0)
    quantized, problems = parse_search_space({"a.q": {"quniform": {"low": 0, "high": 1, "q": 0.5}},
                                              "a.r": {"qrandint": {"low": 0, "high": 10, "q": 5}}})
    assert problems == [] and [p.domain for p in quantized] == [QUniform(0.0, 1.0, 0.5), QRandInt(0, 10, 5)]
    assert _errors({"qloguniform": [1, 2]}) == ["qloguniform: expects [low, high, q], got [1, 2]"]
    # Bounds on the grid within a float's rounding pass; off it by a step's fraction far from 0 do not.
    assert _errors({"quniform": [0.3, 0.9, 0.1]}) == []
    assert _errors({"quniform": [1_000_000_000.5, 1_000_000_010.5, 1]}) == [
        "quniform: low and high must be multiples of q=1, got low=1000000000.5, high=1000000010.5"]
    assert _errors({"uniform": [0, 2**53]}) == [] and _errors({"normal": [0, 0.5]}) == []
    assert _errors({"choice": [1], "when": {}}) == [
        "when: must map parameter paths to a value or a list of values, got {}"]
    every_kind = {kind: [0, 1] for kind in ("uniform", "loguniform", "quniform", "qloguniform", "randint", "qrandint",
                                            "lograndint", "normal", "choice", "grid", "fixed")}
    assert any(e.startswith("give exactly one domain") for e in _errors(every_kind))
    # A condition that names no value is refused once, and the parameter is left out.
    assert parse_search_space({"a.x": {"choice": [1], "when": {"a.b": []}}})[1] == [
        Problem("search_space.a.x", "when.a.b: needs at least one value")]
    whens = {p.path: p.when for p in space}
    assert whens["a.c"] == {"a.r": (1, 2)} and whens["a.d"] == {"a.r": (3,)}
    assert parse_search_space(None) == (SearchSpace(), [])
    _, problems = parse_search_space([1])
    assert [(p.path, p.message) for p in problems] == [("search_space", "must be a mapping of parameter paths to domains, got [1]")]
    _, problems = parse_search_space({"": 1}, where="x")
    assert [(p.path, p.message) for p in problems] == [("x", "parameter names must be non-empty strings, got ''")]


def test_conditions_name_parents_that_exist_and_values_they_can_draw():
    _, problems = parse_search_space({
        "a.f": {"uniform": [0, 1]},
        "a.i": {"choice": [1], "when": {"a.f": 1}},  # an int on a float domain is fine
        "a.j": {"choice": [1], "when": {"a.f": 2}},
        "a.k": {"choice": [1], "when": {"a.k": 1}},
        "a.m": {"choice": [1], "when": {"a.none": 1}},
        "a.n": {"choice": [1], "when": {"a.c": "z"}},
        "a.o": {"choice": [1], "when": {"a.f": "z"}},  # a text on a float domain
        "a.c": {"choice": ["x", "y"]},
    })
    assert sorted((p.path, p.message) for p in problems) == [
        ("search_space", "conditions form a cycle: a.k -> a.k"),
        ("search_space.a.j.when.a.f", "value 2 can never be drawn from 'a.f' (uniform)"),
        ("search_space.a.k.when.a.k", "a parameter cannot depend on itself"),
        ("search_space.a.m.when.a.none", "refers to 'a.none', which is not in search_space"),
        ("search_space.a.n.when.a.c", "value 'z' can never be drawn from 'a.c' (choice)"),
        ("search_space.a.o.when.a.f", "value 'z' can never be drawn from 'a.f' (uniform)"),
    ]


def test_parents_come_first_and_a_cycle_is_named():
    space, problems = parse_search_space({
        "a.c": {"choice": [1], "when": {"a.b": 1}}, "a.b": {"choice": [1], "when": {"a.a": 1}}, "a.a": {"choice": [1]},
    })
    assert problems == [] and space.paths == ("a.a", "a.b", "a.c")
    _, problems = parse_search_space({
        "a.x": {"choice": [1]}, "a.a": {"choice": [1], "when": {"a.b": 1}}, "a.b": {"choice": [1], "when": {"a.a": 1}},
    })
    assert [(p.path, p.message) for p in problems] == [("search_space", "conditions form a cycle: a.a -> a.b -> a.a")]


def test_a_parameters_depth_follows_its_deepest_parent_whatever_their_names():
    chain = [Parameter("a.c0", Choice((1,)))] + [Parameter(f"a.c{i}", Choice((1,)), {f"a.c{i - 1}": (1,)}) for i in range(1, 10)]
    ordered = [*chain, Parameter("z.z", Choice((1,))), Parameter("a.x", Choice((1,)), {"a.c9": (1,), "z.z": (1,)})]
    problem = _condition_depth_problem(ordered, "search_space")
    assert problem is not None and problem.path == "search_space.a.x.when"
    assert problem.message == ("conditions chain 11 parameters deep (a.x <- a.c9 <- a.c8 <- ... <- a.c0); at most 10: "
                               "condition parameters on a few shared parents instead")
    assert _condition_depth_problem(ordered[:-1], "search_space") is None


# --- The JSON Schema of a search-space entry (what `rlsweep schema` gives an editor) ---------------------------
# Built by a call, here, and checked entry by entry: rlsweep.spec builds it once at import, where a mutation
# tester cannot switch it, and tests/test_schema.py checks whole documents through the CLI.


def _schema_errors(entry) -> list[str]:
    import jsonschema

    from rlsweep.search_spaces._domains import domain_json_schema

    schema = domain_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(entry)]


@pytest.mark.parametrize(
    "entry",
    [
        {"uniform": [0.0, 1.0]},
        {"uniform": {"low": 0.0, "high": 1.0}},
        {"quniform": [0.0, 1.0, 0.5]},
        {"quniform": {"low": 0, "high": 1, "q": 0.5}},
        {"randint": [1, 5]},
        {"normal": [0.0, 1.0]},
        {"choice": [[16], [32, 32]]},
        {"grid": [1]},
        {"fixed": {"any": "value"}},
        {"uniform": [0.0, 1.0], "when": {"training.use_kl_loss": True}},
        {"fixed": 3, "when": {"a": 1}},
        0.99,
        "relu",
        [64, 64],
        {"not_a_domain": 1},  # a mapping not shaped like a domain is a fixed value
        {"uniform": [0, 1], "bogus": 1},  # nor is one with a key no domain has
        {},  # an empty mapping is a fixed value too
    ],
    ids=repr,
)
def test_the_schema_accepts_every_domain_and_fixed_value(entry):
    assert _schema_errors(entry) == []


@pytest.mark.parametrize(
    "entry",
    [
        {"uniform": [0.0]},  # too few bounds
        {"uniform": [0.0, 1.0, 2.0]},  # too many
        {"uniform": ["a", 1.0]},  # not numbers
        {"uniform": {"low": 0.0}},  # a named bound missing
        {"uniform": {"low": 0.0, "high": 1.0, "q": 0.1}},  # a name uniform does not take
        {"quniform": [0.0, 1.0]},  # q missing
        {"randint": [1.5, 5]},  # randint's bounds are integers
        {"lograndint": {"low": 1, "high": 2.5}},
        {"choice": []},  # at least one value
        {"choice": 3},  # a list of values
        {"uniform": [0, 1], "when": 3},  # when is a mapping
        {"when": {"a": 1}},  # a condition on nothing
        {"fixed": 1, "uniform": [0, 1]},  # two domains at once
        {"uniform": "0, 1"},
    ],
    ids=repr,
)
def test_the_schema_refuses_a_malformed_domain(entry):
    assert _schema_errors(entry)


def test_the_schema_describes_each_domains_arguments_and_when():
    from rlsweep.search_spaces._domains import DOMAIN_PARSERS, domain_json_schema

    options = domain_json_schema()["anyOf"]
    by_kind = {next(iter(o["required"])): o for o in options if "required" in o}
    assert set(by_kind) == {*DOMAIN_PARSERS, "fixed"}
    assert by_kind["uniform"]["properties"]["uniform"]["description"] == "[low, high]"
    assert by_kind["qloguniform"]["properties"]["qloguniform"]["description"] == "[low, high, q]"
    assert by_kind["normal"]["properties"]["normal"]["description"] == "[mean, sd]"
    when = by_kind["uniform"]["properties"]["when"]
    assert when["type"] == "object" and when["description"] == "make this parameter active only when the named parameters take these values"
    # Each domain's option is an object's (an editor offers its keys), as is the fixed value's.
    assert all(o["type"] == "object" for o in by_kind.values())
    assert options[-1]["description"] == "a fixed value"


# --- Each domain's own checks, at their edges, with the whole message --------------------------------------------

PARSED = [
    # Bounds: low strictly below high; a log scale from above 0; whole numbers where the domain draws them.
    ("uniform", [1.0, 1.0], ["low must be < high, got low=1.0, high=1.0"]),
    ("uniform", [2.0, 1.0], ["low must be < high, got low=2.0, high=1.0"]),
    ("loguniform", [0.0, 1.0], ["low must be > 0 for a log scale, got low=0.0"]),
    ("loguniform", [-1.0, 1.0], ["low must be > 0 for a log scale, got low=-1.0"]),
    ("loguniform", [1e-5, 1.0], LogUniform(1e-5, 1.0)),
    ("uniform", [0, 1], Uniform(0.0, 1.0)),  # whole numbers written, floats drawn
    ("lograndint", [0, 4], ["low must be > 0 for a log scale, got low=0"]),
    ("randint", [1.5, 4], ["low must be an integer, got 1.5"]),
    ("randint", [1, 4.5], ["high must be an integer, got 4.5"]),
    ("randint", [1.5, 1], ["low must be an integer, got 1.5", "low must be < high, got low=1.5, high=1"]),
    ("randint", ["a", 1], ["low must be a number, got 'a'"]),
    ("randint", [1, 4], RandInt(1, 4)),
    # q: above 0, at most the width, and low and high on its grid (checked only once the bounds are right).
    ("quniform", [0.0, 1.0, 0.0], ["q must be > 0, got q=0.0"]),
    ("quniform", [0.0, 1.0, -0.5], ["q must be > 0, got q=-0.5"]),
    ("quniform", [0.0, 1.0, 0.5], QUniform(0.0, 1.0, 0.5)),
    ("quniform", [0.0, 1.0, 1.0], QUniform(0.0, 1.0, 1.0)),
    ("quniform", [0.0, 0.5, 1.0], ["q must not exceed high - low = 0.5, got q=1.0"]),
    ("quniform", [0.5, 1.0, 1.5], ["q must not exceed high - low = 0.5, got q=1.5"]),
    ("quniform", [1.0, 0.0, 5.0], ["low must be < high, got low=1.0, high=0.0"]),
    ("quniform", [1.0, 0.0, -1.0], ["low must be < high, got low=1.0, high=0.0", "q must be > 0, got q=-1.0"]),
    ("quniform", [0.1, 1.0, 0.2], ["low must be a multiple of q=0.2, got low=0.1, high=1.0"]),
    ("quniform", [0.0, 1.1, 0.2], ["high must be a multiple of q=0.2, got low=0.0, high=1.1"]),
    ("quniform", [0.1, 1.1, 0.2], ["low and high must be multiples of q=0.2, got low=0.1, high=1.1"]),
    ("qrandint", [0, 10, 4], ["high must be a multiple of q=4, got low=0, high=10"]),
    ("qrandint", [2, 10, 4], ["low and high must be multiples of q=4, got low=2, high=10"]),
    ("qrandint", [0, 10, 5], QRandInt(0, 10, 5)),
    ("qloguniform", [0.0, 2.0, 0.5], ["low must be > 0 for a log scale, got low=0.0"]),
    ("qloguniform", [0.5, 2.0, 0.5], QLogUniform(0.5, 2.0, 0.5)),
    # Lists of values: not empty, numbers finite.
    ("choice", [], ["expects a non-empty list of values, got []"]),
    ("choice", 3, ["expects a non-empty list of values, got 3"]),
    ("choice", [1.0, math.nan], ["values must be finite numbers where they are numbers, got nan"]),
    ("choice", [1, math.inf, math.nan], ["values must be finite numbers where they are numbers, got inf"]),
    ("choice", (None, "relu"), Choice((None, "relu"))),
    ("grid", [1, 2], Grid((1, 2))),
]


@pytest.mark.parametrize(("kind", "args", "expected"), PARSED, ids=lambda v: repr(v)[:40])
def test_each_domain_refuses_what_it_cannot_draw_with_the_whole_message(kind, args, expected):
    from rlsweep.search_spaces._domains import DOMAIN_PARSERS

    domain, errors = DOMAIN_PARSERS[kind](args)
    if isinstance(expected, list):
        assert (domain, errors) == (None, expected)
    else:
        assert (domain, errors) == (expected, [])
        # The bounds in the domain's own type: whole numbers for the int domains, floats for the others.
        bounds = [getattr(domain, name) for name in ("low", "high", "q") if hasattr(domain, name)]
        assert all(type(b) is (int if "randint" in kind else float) for b in bounds), bounds


@pytest.mark.parametrize(
    ("lr", "problems"),
    [
        ({"schedule": "cubic", "from": 1.0, "to": 0.0},
         [("search_space.training.lr.schedule", "unknown schedule 'cubic'; expected one of ['linear', 'piecewise']")]),
        ({"schedule": "linear", "from": {"loguniform": [1e-4, 1e-2], "when": {"x": 1}}, "to": 0.0},
         [("search_space.training.lr.from.when", "a schedule's number takes no condition; it is always drawn")]),
        ({"schedule": "linear", "from": {"choice": ["a", "b"]}, "to": 0.0},
         [("search_space.training.lr.from", "a schedule's number must be a number or a domain of numbers, got {'choice': ['a', 'b']}")]),
        # Both numbers wrong: each is named, the second after the first.
        ({"schedule": "linear", "from": {"uniform": [2, 1]}, "to": {"choice": ["a"]}},
         [("search_space.training.lr.from", "uniform: low must be < high, got low=2, high=1"),
          ("search_space.training.lr.to", "a schedule's number must be a number or a domain of numbers, got {'choice': ['a']}")]),
    ],
)
def test_a_searched_schedule_with_a_wrong_number_is_refused_at_that_number_and_kept_out_of_the_space(lr, problems):
    space, found = parse_search_space({"training.lr": lr, "training.gamma": {"uniform": [0.9, 0.99]}})
    assert [(p.path, p.message) for p in found] == problems
    assert space.schedules == ()


def test_a_searched_schedule_becomes_a_parameter_per_searched_number():
    space, found = parse_search_space(
        {"training.lr": {"schedule": "linear", "from": {"loguniform": [1e-4, 1e-2]}, "to": {"choice": [0.0, 1e-5]}}})
    assert found == [] and [p.path for p in space.parameters] == ["training.lr.from", "training.lr.to"]
    assert [path for path, _ in space.schedules] == ["training.lr"]


@pytest.mark.parametrize(
    ("n", "shown"),
    [(9, "p0 -> p1 -> p2 -> p3 -> p4 -> p5 -> p6 -> p7 -> p8 -> p0"),  # ten names: shown whole
     (10, "p0 -> p1 -> p2 -> p3 -> p4 -> p5 -> p6 -> p7 -> p8 -> ... (10 parameters)")],
)
def test_a_cycle_of_conditions_is_shown_whole_up_to_ten_names_and_cut_after_nine_past_that(n, shown):
    raw = {f"p{i}": {"choice": [1, 2], "when": {f"p{(i + 1) % n}": 1}} for i in range(n)}
    assert [(p.path, p.message) for p in parse_search_space(raw)[1]] == [("search_space", f"conditions form a cycle: {shown}")]


def test_a_parameter_with_no_name_is_named_and_the_parameters_after_it_still_checked():
    _, found = parse_search_space({"": {"uniform": [0, 1]}, "training.lr": {"uniform": [2, 1]}})
    assert [(p.path, p.message) for p in found] == [
        ("search_space", "parameter names must be non-empty strings, got ''"),
        ("search_space.training.lr", "uniform: low must be < high, got low=2, high=1")]


def _choice(**when):
    return {"choice": [1, 2], **({"when": when} if when else {})}


@pytest.mark.parametrize(
    ("raw", "order", "problems"),
    [
        # A child written before its parent: the parent comes first, and what follows is still ordered.
        ({"child": _choice(parent=1), "parent": _choice(), "other": {"uniform": [0, 1]}}, ["parent", "child", "other"], []),
        # Two children of one parent: the parent once.
        ({"a": _choice(), "b": _choice(a=1), "c": _choice(a=2)}, ["a", "b", "c"], []),
        # A cycle that the first parameter only leads into.
        ({"x": _choice(a=1), "a": _choice(b=1), "b": _choice(a=1)}, ["x", "a", "b"],
         [("search_space", "conditions form a cycle: a -> b -> a")]),
        # A condition on a parameter the space does not have: named, and the rest still ordered.
        ({"b": _choice(nope=1), "z": _choice()}, ["b", "z"],
         [("search_space.b.when.nope", "refers to 'nope', which is not in search_space")]),
    ],
)
def test_conditions_order_parents_first_once_each_and_a_cycle_anywhere_is_named(raw, order, problems):
    space, found = parse_search_space(raw)
    assert [p.path for p in space.parameters] == order
    assert [(p.path, p.message) for p in found] == problems


def test_distinct_configs_count_only_the_active_parameters_of_each_branch():
    space, _ = parse_search_space({"a": {"choice": ["x", "y"]}, "b": {"choice": [1, 2], "when": {"a": "x"}},
                                   "c": {"choice": [1, 2, 3], "when": {"a": "y"}}})
    assert space.distinct_configs(100) == 2 + 3  # a=x with b's two values, a=y with c's three
    assert space.distinct_configs(4) is None  # more than the limit
