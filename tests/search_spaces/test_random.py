"""Compiling to Ray Tune domains: each domain draws what the hand-written Tune domain draws."""

from __future__ import annotations

import pytest
from ray import tune

from rlsweep.errors import IncompatibleError
from rlsweep.search_spaces import parse_search_space
from rlsweep.search_spaces._random import TuneCompiler

CASES = [
    ({"uniform": [0.9, 0.99]}, tune.uniform(0.9, 0.99)),
    ({"loguniform": [1e-5, 1e-2]}, tune.loguniform(1e-5, 1e-2)),
    ({"quniform": [0.0, 1.0, 0.25]}, tune.quniform(0.0, 1.0, 0.25)),
    ({"qloguniform": [1e-4, 1e-1, 5e-5]}, tune.qloguniform(1e-4, 1e-1, 5e-5)),
    # rlsweep's integer bounds are inclusive; Tune's randint/lograndint exclude the upper bound.
    ({"randint": [1, 10]}, tune.randint(1, 11)),
    ({"lograndint": [1, 1000]}, tune.lograndint(1, 1001)),
    ({"qrandint": [0, 100, 10]}, tune.qrandint(0, 100, 10)),
    ({"normal": [0.0, 2.0]}, tune.randn(0.0, 2.0)),
    ({"choice": [[64, 64], [256, 256], {"a": 1}]}, tune.choice([[64, 64], [256, 256], {"a": 1}])),
]


def compile_one(entry):
    space, problems = parse_search_space({"training.x": entry})
    assert not problems
    return TuneCompiler().compile(space).native["training.x"]


@pytest.mark.parametrize(("entry", "native"), CASES, ids=[next(iter(e)) for e, _ in CASES])
def test_seeded_draws_match_hand_written_tune(entry, native):
    compiled = compile_one(entry)
    ours = list(compiled.sample(size=50, random_state=7))
    theirs = list(native.sample(size=50, random_state=7))
    assert ours == theirs
    assert len(set(map(repr, ours))) > 1


def test_randint_includes_the_upper_bound():
    draws = set(compile_one({"randint": [1, 3]}).sample(size=200, random_state=0))
    assert draws == {1, 2, 3}


def test_grid_and_fixed_values():
    assert compile_one({"grid": [1, 2, 3]}) == tune.grid_search([1, 2, 3])
    assert compile_one([64, 64]) == [64, 64]
    assert compile_one({"fixed": {"a": 1}}) == {"a": 1}


def test_conditions_are_refused_not_dropped():
    space, _ = parse_search_space(
        {"training.use_kl_loss": {"choice": [True, False]}, "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}}}
    )
    with pytest.raises(IncompatibleError) as info:
        TuneCompiler().compile(space)
    [problem] = info.value.problems
    assert problem.path == "search_space.training.kl_coeff.when"
    assert "searcher 'random' cannot express conditions" in problem.message
