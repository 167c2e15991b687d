"""Every searcher, one contract: draws lie inside the declared domain, with the declared type, and respect
every condition. Property-style over generated spaces, through ``rlsweep.sample`` (what a user sees)."""

from __future__ import annotations

import copy
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlsweep
from rlsweep.errors import IncompatibleError, SpecError
from rlsweep.search_spaces import DOMAIN_KINDS, SEARCHERS, parse_search_space

BASE = {"algorithm": "PPO", "env": "CartPole-v1", "budget": {"env_steps": 1000, "trials": 2}}

EVERY_SEARCHER = sorted(set(SEARCHERS) - {"grid"})

# docs/guides/searchers.md, the domain-support table written out: Y = expressed exactly, - =
# refused (an error naming the parameter, the searcher and the domain; lossy fallbacks are off by default).
# A fixed value is part of every searcher's space (docs/guides/spec.md: "each value is a domain ... or a fixed value").
DOMAIN_TABLE = """
             uniform loguniform quniform qloguniform randint qrandint lograndint choice grid normal fixed
random       Y       Y          Y        Y           Y       Y        Y          Y      Y    Y      Y
grid         -       -          -        -           -       -        -          -      Y    -      Y
optuna       Y       Y          Y        -           Y       Y        Y          Y      -    -      Y
hyperopt     Y       Y          Y        Y           Y       Y        Y          Y      -    Y      Y
bohb         Y       Y          Y        -           Y       Y        Y          Y      -    Y      Y
bayesopt     Y       Y          -        -           -       -        -          -      -    -      Y
nevergrad    Y       Y          Y        Y           Y       Y        Y          Y      -    -      Y
ax           Y       Y          Y        Y           Y       Y        Y          Y      -    -      Y
"""

#: docs/guides/searchers.md: which searchers express ``when:`` conditions (hyperopt and ax: one ``choice`` parent per parameter).
CONDITIONS = {"random": True, "grid": False, "optuna": True, "hyperopt": True, "bohb": True, "bayesopt": False,
              "nevergrad": False, "ax": True}


def _parse_table(text: str) -> dict[tuple[str, str], bool]:
    header, *rows = [line.split() for line in text.strip().splitlines()]
    table = {}
    for searcher, *cells in rows:
        assert len(cells) == len(header), searcher
        table.update({(searcher, kind): cell == "Y" for kind, cell in zip(header, cells)})
    return table


SUPPORTED = _parse_table(DOMAIN_TABLE)

#: One domain of each kind, as a user writes it.
EXAMPLES = {
    "uniform": {"uniform": [0.1, 0.9]},
    "loguniform": {"loguniform": [1.0e-4, 1.0e-2]},
    "quniform": {"quniform": [0.0, 2.0, 0.25]},
    "qloguniform": {"qloguniform": [1.0, 64.0, 1.0]},
    "randint": {"randint": [1, 8]},
    "qrandint": {"qrandint": [0, 64, 8]},
    "lograndint": {"lograndint": [1, 256]},
    "choice": {"choice": [[16], [32, 32], "tanh"]},
    "grid": {"grid": [0.1, 0.2]},
    "normal": {"normal": [0.0, 1.0]},
    "fixed": 0.5,
}

finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-6, max_value=1e3, allow_nan=False)
small_int = st.integers(min_value=-50, max_value=50)
choice_value = st.one_of(
    st.integers(-5, 5), st.booleans(), st.text("abc", min_size=1, max_size=3), st.lists(st.integers(1, 256), min_size=1, max_size=3)
)


@st.composite
def domains(draw):
    kind = draw(st.sampled_from(["uniform", "loguniform", "randint", "lograndint", "qrandint", "quniform", "normal", "choice"]))
    if kind == "uniform":
        low = draw(finite)
        return {kind: [low, low + draw(positive)]}
    if kind == "loguniform":
        low = draw(positive)
        return {kind: [low, low * draw(st.floats(1.01, 1e4))]}
    if kind == "randint":
        low = draw(small_int)
        return {kind: [low, low + draw(st.integers(1, 50))]}
    if kind == "lograndint":
        low = draw(st.integers(1, 100))
        return {kind: [low, low + draw(st.integers(1, 1000))]}
    if kind == "qrandint":
        q = draw(st.integers(1, 10))
        low = q * draw(st.integers(-5, 5))
        return {kind: [low, low + q * draw(st.integers(1, 10)), q]}
    if kind == "quniform":
        q = draw(st.sampled_from([0.25, 0.5, 1.0]))
        low = q * draw(st.integers(-8, 8))
        return {kind: [low, low + q * draw(st.integers(1, 8)), q]}
    if kind == "normal":
        return {kind: [draw(finite), draw(positive)]}
    return {kind: draw(st.lists(choice_value, min_size=1, max_size=4, unique_by=repr))}


@st.composite
def spaces(draw):
    document = {f"training.p{i}": draw(domains()) for i in range(draw(st.integers(1, 4)))}
    # A conditional child on a choice parent, sometimes.
    parents = [k for k, v in document.items() if "choice" in v]
    if parents and draw(st.booleans()):
        parent = parents[0]
        value = draw(st.sampled_from(document[parent]["choice"]))
        document["training.child"] = {"uniform": [0.0, 1.0], "when": {parent: [value]}}
    return document


def check_draw(space, draw):
    seen = {}
    for parameter in space:
        active = parameter.is_active(seen)
        assert (parameter.path in draw) == active, (parameter.path, draw)
        if active:
            value = draw[parameter.path]
            assert parameter.domain.contains(value), (parameter.path, parameter.domain, value, type(value))
            seen[parameter.path] = value
    assert set(draw) <= {p.path for p in space}


def test_the_table_covers_every_searcher_and_domain_kind():
    assert {s for s, _ in SUPPORTED} == set(SEARCHERS)
    assert {k for _, k in SUPPORTED} == set(DOMAIN_KINDS) | {"fixed"} == set(EXAMPLES)
    assert set(CONDITIONS) == set(SEARCHERS)


@pytest.mark.parametrize(("searcher", "kind"), sorted(SUPPORTED))
def test_each_searcher_expresses_exactly_the_domains_readme_lists(searcher, kind):
    space = {"training.x": copy.deepcopy(EXAMPLES[kind])}
    if kind == "fixed":
        # A space of fixed values only searches nothing (TuneBOHB refuses to sample from it): a fixed
        # value rides beside one searched parameter the searcher takes.
        space["training.y"] = copy.deepcopy(EXAMPLES["grid" if searcher == "grid" else "uniform"])
    document = {**BASE, "budget": {"env_steps": 1000, "trials": 2}, "search_space": space, "searcher": {"name": searcher, "seed": 0}}
    if SUPPORTED[searcher, kind]:
        spec = rlsweep.load_spec(document, preflight=False)
        parameters = {p.path: p for p in spec.search_space}
        assert parameters["training.x"].domain.kind == kind
        draws = rlsweep.sample(spec, 6)
        # Ax suggests each config once: a finite space smaller than 6 gives all it holds.
        finite = spec.search_space.distinct_configs(1000)
        assert len(draws) == (min(6, finite) if searcher == "ax" and finite is not None else 6)
        for draw in draws:
            assert set(draw) == set(space)
            for path, value in draw.items():
                assert parameters[path].domain.contains(value), (draw, parameters[path].domain)
    else:
        with pytest.raises(SpecError) as caught:
            rlsweep.load_spec(document, preflight=False)
        problems = caught.value.problems
        assert problems and all(p.path == "search_space.training.x" for p in problems), problems
        # The refusal says which searcher cannot take which domain.
        assert any(f"{searcher!r}" in p.message and f"{kind!r}" in p.message for p in problems), problems


#: docs/guides/searchers.md: searchers that need one searched parameter at least (a range, or a choice of two values or more).
SEARCH_SOMETHING = {"nevergrad", "ax"}

#: docs/guides/searchers.md: the narrowest float range a searcher takes (Ax refuses narrower ones as numerically unsafe).
MIN_WIDTH = {"ax": 1.5e-5}


def _expected_refusals(searcher, document) -> set[str]:
    """The spec paths the table says ``searcher`` refuses in a generated ``document``."""
    refused = set()
    for path, value in document.items():
        kind = next(iter(k for k in value if k != "when"))
        if not SUPPORTED[searcher, kind]:
            refused.add(f"search_space.{path}")
        elif kind in ("uniform", "loguniform") and value[kind][1] - value[kind][0] < MIN_WIDTH.get(searcher, 0):
            refused.add(f"search_space.{path}")
        if "when" in value and not CONDITIONS[searcher]:
            refused.add(f"search_space.{path}.when")
    if searcher in SEARCH_SOMETHING and all(len(v.get("choice", ())) == 1 for v in document.values()):
        refused.add("search_space")
    return refused


@pytest.mark.parametrize("searcher", EVERY_SEARCHER)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=spaces())
def test_every_draw_is_inside_its_domain_with_its_type_and_conditions(searcher, document):
    space, problems = parse_search_space(document)
    assert not problems
    expected = _expected_refusals(searcher, document)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec = rlsweep.load_spec({**BASE, "search_space": document, "searcher": {"name": searcher, "seed": 1}}, preflight=False)
    except (SpecError, IncompatibleError) as exc:
        # Refused exactly where the table says, each refusal at its parameter; never a silent drop.
        assert {p.path for p in exc.problems} == expected, (exc.problems, expected)
        return
    assert not expected, f"{searcher} accepted what the docs say it refuses: {sorted(expected)}"
    for draw in rlsweep.sample(spec, 6):
        check_draw(space, draw)


@pytest.mark.parametrize("searcher", EVERY_SEARCHER)
def test_points_to_evaluate_come_first_as_given(searcher):
    document = {
        **BASE,
        "search_space": {"training.lr": {"loguniform": [1e-5, 1e-2]}, "training.gamma": {"uniform": [0.9, 0.999]}},
        "searcher": {"name": searcher, "seed": 0, "points_to_evaluate": [{"training.lr": 3e-4, "training.gamma": 0.99}]},
    }
    draws = rlsweep.sample(rlsweep.load_spec(document, preflight=False), 3)
    assert draws[0]["training.lr"] == pytest.approx(3e-4) and draws[0]["training.gamma"] == pytest.approx(0.99)
    assert draws[1] != draws[0]


@pytest.mark.parametrize("searcher", ["random", "optuna", "hyperopt", "bohb", "ax"])
def test_points_with_choices_of_lists_and_conditions(searcher):
    document = {
        **BASE,
        "search_space": {
            "rl_module.model_config.fcnet_hiddens": {"choice": [[64, 64], [256, 256]]},
            "training.use_kl_loss": {"choice": [True, False]},
            "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}},
        },
        "searcher": {
            "name": searcher,
            "seed": 0,
            "points_to_evaluate": [
                {"rl_module.model_config.fcnet_hiddens": [256, 256], "training.use_kl_loss": False},
                {"rl_module.model_config.fcnet_hiddens": [64, 64], "training.use_kl_loss": True, "training.kl_coeff": 0.2},
            ],
        },
    }
    draws = rlsweep.sample(rlsweep.load_spec(document, preflight=False), 2)
    assert draws[0] == {"rl_module.model_config.fcnet_hiddens": [256, 256], "training.use_kl_loss": False}
    assert draws[1]["training.kl_coeff"] == pytest.approx(0.2) and draws[1]["rl_module.model_config.fcnet_hiddens"] == [64, 64]


def test_bad_points_are_reported_with_their_paths():
    document = {
        **BASE,
        "search_space": {"training.lr": {"loguniform": [1e-5, 1e-2]}, "training.gamma": {"uniform": [0.9, 0.999]}},
        "searcher": {"name": "optuna", "points_to_evaluate": [{"training.lr": 0.5, "training.gama": 0.99}]},
    }
    with pytest.raises(SpecError) as info:
        rlsweep.load_spec(document, preflight=False)
    problems = {p.path: p.message for p in info.value.problems}
    assert "cannot be drawn from its loguniform domain" in problems["searcher.points_to_evaluate[0].training.lr"]
    assert "not a parameter" in problems["searcher.points_to_evaluate[0].training.gama"]
    assert "is missing" in problems["searcher.points_to_evaluate[0].training.gamma"]


def test_lossy_opt_in_turns_the_error_into_a_warning_saying_what_changed():
    document = {**BASE, "search_space": {"training.lr": {"normal": [0.001, 0.0001]}}, "searcher": {"name": "optuna"}}
    with pytest.raises(SpecError, match="searcher 'optuna' cannot express a 'normal' domain exactly"):
        rlsweep.load_spec(document, preflight=False)
    document["searcher"]["lossy"] = True
    with pytest.warns(UserWarning, match=r"normal\(0.001, 0.0001\) searched as uniform over mean ± 3 sd"):
        spec = rlsweep.load_spec(document, preflight=False)
    for draw in rlsweep.sample(spec, 5):
        assert 0.0007 <= draw["training.lr"] <= 0.0013


@pytest.mark.parametrize(("searcher", "package"), [("nevergrad", "nevergrad"), ("ax", "ax")])
def test_a_searcher_whose_package_is_not_installed_is_refused_at_validate_with_the_install_command(monkeypatch, searcher, package):
    entry = SEARCHERS[searcher]
    assert entry.packages == (package,)
    # A machine without the searchers extra: the backend's module is not found.
    monkeypatch.setattr(type(entry), "packages", (f"{package}_not_installed_here",))
    document = {**BASE, "search_space": {"training.lr": {"loguniform": [1e-5, 1e-2]}}, "searcher": {"name": searcher}}
    with pytest.raises(SpecError) as caught:
        rlsweep.load_spec(document, preflight=False)
    (problem,) = caught.value.problems
    assert problem.path == "searcher.name"
    assert f"{package}_not_installed_here" in problem.message and "pip install 'rlsweep[searchers]'" in problem.message
