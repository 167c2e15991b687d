"""Each searcher drives a real (tiny) RLlib sweep: the trials get the declared, decoded values."""

from __future__ import annotations

import copy

import pytest

import rlsweep
from rlsweep.analysis import load
from tests.conftest import TINY_SPEC

pytestmark = pytest.mark.slow

SPACE = {
    "training.lr": {"loguniform": [1.0e-4, 3.0e-3]},
    "rl_module.model_config.fcnet_hiddens": {"choice": [[16], [32, 32]]},
    "training.use_kl_loss": {"choice": [True, False]},
    "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}},
}


@pytest.mark.parametrize(
    ("searcher", "space"),
    [
        ("random", SPACE),
        ("hyperopt", SPACE),
        ("bohb", SPACE),
        ("bayesopt", {"training.lr": {"loguniform": [1.0e-4, 3.0e-3]}, "training.gamma": {"uniform": [0.95, 0.99]}}),
    ],
)
def test_searcher_runs_a_real_sweep_with_decoded_configs(ray_runtime, tmp_path, searcher, space):
    document = copy.deepcopy(TINY_SPEC)
    document.update(
        search_space=space,
        searcher={"name": searcher, "seed": 3},
        scheduler={"name": "fifo"},
        budget={"env_steps": 1000, "trials": 2},
        checkpoint={"keep": 1},
        storage=str(tmp_path),
        mlflow=None,
    )
    spec = rlsweep.load_spec(document)
    result = rlsweep.run(spec, verbose=0)
    sweep = load(result.path)
    assert result.errored_trials == 0 and len(sweep.trials) == 2
    for trial in sweep.trials:
        assert trial.state == "TERMINATED"
        for parameter in spec.search_space:
            if parameter.is_active(trial.config):
                assert parameter.domain.contains(trial.config[parameter.path]), (parameter.path, trial.config)
            else:
                assert parameter.path not in trial.config
