"""Every searcher, one contract: draws lie inside the declared domain, with the declared type, and respect
every condition. Property-style over generated spaces, through ``rlsweep.sample`` (what a user sees)."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlsweep
from rlsweep.errors import IncompatibleError, SpecError
from rlsweep.search_spaces import SEARCHERS
from rlsweep.search_spaces import parse_search_space

BASE = {"algorithm": "PPO", "env": "CartPole-v1", "budget": {"env_steps": 1000, "trials": 2}}

MODEL_FREE = ("random",)
EVERY_SEARCHER = sorted(set(SEARCHERS) - {"grid"})

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


@pytest.mark.parametrize("searcher", EVERY_SEARCHER)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=spaces())
def test_every_draw_is_inside_its_domain_with_its_type_and_conditions(searcher, document):
    space, problems = parse_search_space(document)
    assert not problems
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec = rlsweep.load_spec({**BASE, "search_space": document, "searcher": {"name": searcher, "seed": 1}}, preflight=False)
    except (SpecError, IncompatibleError) as exc:
        # A refusal must name a parameter and the searcher; it is never a silent drop.
        assert all(p.path.startswith("search_space.") for p in exc.problems)
        assert all(searcher in p.message or "grid" in p.message for p in exc.problems)
        return
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


@pytest.mark.parametrize("searcher", ["random", "optuna", "hyperopt", "bohb"])
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
