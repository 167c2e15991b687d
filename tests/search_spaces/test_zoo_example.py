"""The rl-baselines3-zoo PPO space, written as an rlsweep spec, validates and compiles for each searcher."""

from __future__ import annotations

import pytest

import rlsweep
from tests.conftest import REPO

ZOO = REPO / "examples" / "zoo_ppo_space.yaml"


@pytest.mark.parametrize("searcher", ["optuna", "hyperopt", "bohb"])
def test_zoo_space_validates_and_compiles(searcher):
    # BOHB's searcher runs only with its own scheduler, which takes the same grace and reduction factor.
    overrides = [f"searcher.name={searcher}"] + (["scheduler.name=bohb"] if searcher == "bohb" else [])
    spec = rlsweep.load_spec(ZOO, overrides)
    assert len(spec.search_space) == 12
    draws = rlsweep.sample(spec, 8)
    assert len(draws) == 8
    for draw in draws:
        assert set(draw) == set(spec.search_space.paths)
        assert draw["training.minibatch_size"] <= draw["training.train_batch_size"]
        assert draw["rl_module.model_config.fcnet_hiddens"] in ([64], [64, 64], [256, 256])
        assert 1e-5 <= draw["training.lr"] <= 1.0
