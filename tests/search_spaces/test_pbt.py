"""Compiling to PBT mutations and PB2 bounds."""

from __future__ import annotations

import pytest
from ray import tune

from rlsweep.errors import IncompatibleError
from rlsweep.search_spaces import parse_search_space
from rlsweep.search_spaces._pbt import IntoDomains, Pb2Compiler, PbtCompiler


def test_pbt_mutations_resample_from_the_same_domains():
    space, _ = parse_search_space(
        {
            "training.lr": {"loguniform": [1e-5, 1e-2]},
            "training.num_epochs": {"randint": [1, 10]},
            "rl_module.model_config.fcnet_hiddens": {"choice": [[64], [256, 256]]},
            "training.gamma": 0.99,
        }
    )
    mutations = PbtCompiler().compile(space).native
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
        bounds = Pb2Compiler().compile(space, lossy=True).native
    assert bounds == {"training.gamma": [0.9, 0.99], "training.lr": [1e-5, 1e-2]}


def test_explored_values_stay_inside_their_declared_domains():
    """Ray's PBT multiplies by a perturbation factor without clipping; rlsweep maps the result back."""
    import random

    import numpy as np
    from ray.tune.schedulers.pbt import _explore


    space, _ = parse_search_space(
        {
            "training.lr": {"loguniform": [1e-5, 1e-3]},
            "training.num_epochs": {"qrandint": [2, 20, 2]},
            "training.clip_param": {"quniform": [0.1, 0.4, 0.05]},
        }
    )
    mutations = PbtCompiler().compile(space).native
    into = IntoDomains(space)
    random.seed(0)
    for config in ({"training.lr": 1e-3, "training.num_epochs": 20, "training.clip_param": 0.4},
                   {"training.lr": 1e-5, "training.num_epochs": 2, "training.clip_param": 0.1},
                   {"training.lr": 3e-4, "training.num_epochs": 10, "training.clip_param": 0.25}):
        for factor in (1.2, 0.8, 1.33):
            raw, _ = _explore(config, mutations, 0.0, (factor,), None)
            explored = into(raw)
            for parameter in space:
                value = explored[parameter.path]
                assert parameter.domain.contains(value), (parameter.path, raw[parameter.path], value)
    assert not space.parameters[0].domain.contains(1e-3 * 1.2)  # what Ray alone would have used
    # PB2 hands back float32 numpy values a hair outside the bounds.
    pb2 = IntoDomains(parse_search_space({"training.lr": {"uniform": [1e-4, 3e-3]}})[0])
    value = pb2({"training.lr": np.float32(1e-4)})["training.lr"]
    assert type(value) is float and value == 1e-4
