"""Compiling to PBT mutations and PB2 bounds."""

from __future__ import annotations

import pytest
from ray import tune

from rlsweep.errors import IncompatibleError
from rlsweep.search_spaces import Pb2Compiler, PbtCompiler, parse_search_space


def test_pbt_mutations_resample_from_the_same_domains():
    space, _ = parse_search_space(
        {
            "training.lr": {"loguniform": [1e-5, 1e-2]},
            "training.num_epochs": {"randint": [1, 10]},
            "rl_module.model_config.fcnet_hiddens": {"choice": [[64], [256, 256]]},
            "training.gamma": 0.99,
        }
    )
    mutations = PbtCompiler().compile(space)
    assert set(mutations) == {"training.lr", "training.num_epochs", "rl_module.model_config.fcnet_hiddens"}
    assert list(mutations["training.lr"].sample(size=10, random_state=1)) == list(tune.loguniform(1e-5, 1e-2).sample(size=10, random_state=1))
    assert list(mutations["training.num_epochs"].sample(size=10, random_state=1)) == list(tune.randint(1, 11).sample(size=10, random_state=1))
    assert mutations["rl_module.model_config.fcnet_hiddens"] == [[64], [256, 256]]


def test_pb2_takes_linear_ranges_only_and_says_so():
    space, _ = parse_search_space({"training.gamma": {"uniform": [0.9, 0.99]}, "training.lr": {"loguniform": [1e-5, 1e-2]}})
    with pytest.raises(IncompatibleError) as info:
        Pb2Compiler().compile(space)
    [problem] = info.value.problems
    assert problem.path == "search_space.training.lr"
    assert problem.message.startswith("scheduler 'pb2' cannot express a 'loguniform' domain exactly")
    with pytest.warns(UserWarning, match="searched linearly"):
        bounds = Pb2Compiler().compile(space, lossy=True)
    assert bounds == {"training.gamma": [0.9, 0.99], "training.lr": [1e-5, 1e-2]}
