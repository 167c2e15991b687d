"""Compiling to bayesian-optimization: continuous only, log domains searched in log space."""

from __future__ import annotations

import math

import pytest
from bayes_opt import BayesianOptimization

from rlsweep.errors import IncompatibleError
from rlsweep.search_spaces._bayesopt import BayesOptTuneSearcher as BayesOptSearcher
from rlsweep.search_spaces import SearchRequest, parse_search_space
from rlsweep.search_spaces._bayesopt import BayesOptCompiler


def test_seeded_suggestions_match_hand_built_optimizer_in_log_space():
    space, _ = parse_search_space({"training.lr": {"loguniform": [1e-5, 1e-1]}, "training.gamma": {"uniform": [0.9, 0.999]}})
    compiled = BayesOptCompiler().compile(space)
    assert compiled.native["training.lr"] == (math.log(1e-5), math.log(1e-1))
    ours = BayesOptSearcher(compiled, SearchRequest(space, metric="m", mode="max", seed=3))
    theirs = BayesianOptimization(
        f=None, pbounds={"training.lr": (math.log(1e-5), math.log(1e-1)), "training.gamma": (0.9, 0.999)},
        random_state=3, verbose=0, allow_duplicate_points=True,
    )
    for i in range(6):
        config = ours.suggest(f"t{i}")
        expected = theirs.suggest()
        assert config["training.lr"] == pytest.approx(math.exp(expected["training.lr"]))
        assert config["training.gamma"] == pytest.approx(expected["training.gamma"])
        ours.on_trial_complete(f"t{i}", {"m": -(config["training.gamma"] - 0.95) ** 2})
        theirs.register(params=expected, target=-(expected["training.gamma"] - 0.95) ** 2)


def test_log_domain_draws_cover_decades():
    space, _ = parse_search_space({"training.lr": {"loguniform": [1e-6, 1e-1]}})
    searcher = BayesOptSearcher(BayesOptCompiler().compile(space), SearchRequest(space, metric="m", mode="max", seed=0))
    values = [searcher.suggest(f"t{i}")["training.lr"] for i in range(5)]
    assert all(1e-6 <= v <= 1e-1 for v in values)
    # A linear search over [1e-6, 0.1] would put almost every draw above 1e-2.
    assert sum(v < 1e-2 for v in values) >= 2


def test_discrete_domains_are_refused_with_advice():
    space, _ = parse_search_space({"training.minibatch_size": {"choice": [64, 128]}})
    with pytest.raises(IncompatibleError) as info:
        BayesOptCompiler().compile(space)
    assert "continuous ranges only; use searcher 'optuna', 'hyperopt' or 'bohb'" in str(info.value)


def test_searcher_state_survives_save_and_restore(tmp_path):
    space, _ = parse_search_space({"training.lr": {"loguniform": [1e-5, 1e-1]}})
    compiled = BayesOptCompiler().compile(space)
    first = BayesOptSearcher(compiled, SearchRequest(space, metric="m", mode="min", seed=1))
    for i in range(3):
        config = first.suggest(f"t{i}")
        first.on_trial_complete(f"t{i}", {"m": abs(math.log10(config["training.lr"]) + 3)})
    first.save(str(tmp_path / "state.pkl"))
    second = BayesOptSearcher(compiled, SearchRequest(space, metric="m", mode="min", seed=99))
    second.restore(str(tmp_path / "state.pkl"))
    assert second.suggest("t3") == first.suggest("t3")
