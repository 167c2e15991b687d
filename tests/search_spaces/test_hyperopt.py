"""Compiling to HyperOpt: the same draws as a hand-written hp space; conditions as nested choices."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hyperopt import hp
from hyperopt.pyll import stochastic

from rlsweep.errors import IncompatibleError
from rlsweep.search_spaces import parse_search_space
from rlsweep.search_spaces._hyperopt import HyperOptCompiler


def test_seeded_draws_match_hand_written_hyperopt():
    space, _ = parse_search_space(
        {
            "training.lr": {"loguniform": [1e-5, 1e-2]},
            "training.gamma": {"uniform": [0.9, 0.999]},
            "training.num_epochs": {"randint": [1, 10]},
            "training.minibatch_size": {"choice": [64, 128, 256]},
        }
    )
    compiled = HyperOptCompiler().compile(space)
    by_hand = {
        "training.lr": hp.loguniform("training.lr", math.log(1e-5), math.log(1e-2)),
        "training.gamma": hp.uniform("training.gamma", 0.9, 0.999),
        "training.num_epochs": hp.randint("training.num_epochs", 1, 11),
        "training.minibatch_size": hp.choice("training.minibatch_size", [64, 128, 256]),
    }
    for seed in range(10):
        ours = compiled.decode(stochastic.sample(compiled.native, rng=np.random.default_rng(seed)))
        theirs = stochastic.sample(by_hand, rng=np.random.default_rng(seed))
        assert ours == {k: (int(v) if k == "training.num_epochs" else v) for k, v in theirs.items()}
        assert type(ours["training.num_epochs"]) is int and type(ours["training.minibatch_size"]) is int


def test_conditions_become_nested_choices_and_inactive_parameters_are_absent():
    space, _ = parse_search_space(
        {
            "training.use_kl_loss": {"choice": [True, False]},
            "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}},
            "rl_module.model_config.fcnet_hiddens": {"choice": [[64, 64], [256]]},
        }
    )
    compiled = HyperOptCompiler().compile(space)
    draws = [compiled.decode(stochastic.sample(compiled.native, rng=np.random.default_rng(s))) for s in range(40)]
    assert {d["training.use_kl_loss"] for d in draws} == {True, False}
    for draw in draws:
        assert ("training.kl_coeff" in draw) == draw["training.use_kl_loss"]
        assert draw["rl_module.model_config.fcnet_hiddens"] in ([64, 64], [256])


def test_encode_decode_round_trip_for_points():
    space, _ = parse_search_space(
        {"training.use_kl_loss": {"choice": [True, False]}, "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}}}
    )
    compiled = HyperOptCompiler().compile(space)
    assert compiled.encode({"training.use_kl_loss": True, "training.kl_coeff": 0.2}) == {
        "training.use_kl_loss": 0,
        "training.kl_coeff|training.use_kl_loss=True": 0.2,
    }


def test_a_condition_on_a_non_choice_parent_is_refused():
    space, _ = parse_search_space(
        {"training.lr": {"uniform": [0.1, 0.3]}, "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.lr": 0.2}}}
    )
    with pytest.raises(IncompatibleError) as info:
        HyperOptCompiler().compile(space)
    assert "needs the parent 'training.lr' to be a 'choice'" in str(info.value)
