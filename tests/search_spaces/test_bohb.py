"""Compiling to ConfigSpace for BOHB: same draws as a hand-built space, declared types back, conditions."""

from __future__ import annotations

import ConfigSpace as CS
import pytest

from rlsweep.errors import IncompatibleError
from rlsweep.search_spaces import parse_search_space
from rlsweep.search_spaces._bohb import ConfigSpaceCompiler


def test_seeded_draws_match_hand_built_configspace():
    space, _ = parse_search_space(
        {
            "training.lr": {"loguniform": [1e-5, 1e-2]},
            "training.num_epochs": {"randint": [1, 10]},
            "training.train_batch_size": {"qrandint": [1000, 4000, 1000]},
            "training.minibatch_size": {"choice": [64, 128]},
        }
    )
    compiled = ConfigSpaceCompiler().compile(space, seed=5)
    by_hand = CS.ConfigurationSpace(seed=5)
    by_hand.add(
        CS.UniformFloatHyperparameter("training.lr", 1e-5, 1e-2, log=True),
        CS.UniformIntegerHyperparameter("training.num_epochs", 1, 10),
        CS.UniformIntegerHyperparameter("training.train_batch_size", 1, 4),
        CS.CategoricalHyperparameter("training.minibatch_size", ["64", "128"]),
    )
    ours = [compiled.decode(dict(c)) for c in compiled.native.sample_configuration(20)]
    theirs = [dict(c) for c in by_hand.sample_configuration(20)]
    for a, b in zip(ours, theirs):
        assert a["training.lr"] == b["training.lr"]
        assert a["training.num_epochs"] == b["training.num_epochs"]
        assert a["training.train_batch_size"] == 1000 * b["training.train_batch_size"]
        assert a["training.minibatch_size"] == int(b["training.minibatch_size"])
        # BOHB hands back numpy scalars and np.str_; the trial gets the declared Python types.
        assert type(a["training.minibatch_size"]) is int and type(a["training.num_epochs"]) is int


def test_conditions_and_inactive_parameters():
    space, _ = parse_search_space(
        {
            "training.use_kl_loss": {"choice": [True, False]},
            "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}},
        }
    )
    compiled = ConfigSpaceCompiler().compile(space, seed=1)
    draws = [compiled.decode(dict(c)) for c in compiled.native.sample_configuration(30)]
    assert {d["training.use_kl_loss"] for d in draws} == {True, False}
    for draw in draws:
        assert ("training.kl_coeff" in draw) == draw["training.use_kl_loss"]


def test_quantized_log_domain_is_refused_unless_lossy():
    space, _ = parse_search_space({"training.lr": {"qloguniform": [1e-4, 1e-1, 1e-4]}})
    with pytest.raises(IncompatibleError) as info:
        ConfigSpaceCompiler().compile(space)
    assert "searcher 'bohb' cannot express a 'qloguniform' domain exactly" in str(info.value)
    with pytest.warns(UserWarning, match="quantization q=0.0001 dropped"):
        compiled = ConfigSpaceCompiler().compile(space, lossy=True)
    assert compiled.native["training.lr"].log
