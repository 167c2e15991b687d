"""nevergrad: the optimizer named is the one that searches, seeded; integer, quantized and choice domains
come back exactly; results reach the optimizer; optimizers that cannot run beside Tune are refused."""

from __future__ import annotations

import math

import pytest

import rlsweep
from rlsweep.errors import SpecError
from rlsweep.search_spaces import SearchRequest, parse_search_space
from rlsweep.search_spaces._nevergrad import NevergradCompiler, NevergradOptions, NevergradSearcher, import_nevergrad

BASE = {"algorithm": "PPO", "env": "CartPole-v1", "budget": {"env_steps": 1000, "trials": 8}}
SPACE = {
    "training.lr": {"loguniform": [1e-5, 1e-2]},
    "training.num_epochs": {"randint": [1, 30]},
    "training.minibatch_size": {"qrandint": [32, 256, 32]},
    "training.clip_param": {"quniform": [0.1, 0.4, 0.05]},
    "rl_module.model_config.fcnet_hiddens": {"choice": [[64, 64], [256], "tanh"]},
}


def searcher(optimizer="NGOpt", seed=0, space=SPACE, **request):
    parsed, problems = parse_search_space(space)
    assert not problems
    return NevergradSearcher().make(
        SearchRequest(parsed, metric="m", mode="max", seed=seed, options=NevergradOptions(optimizer=optimizer), trials=12, **request)
    )


@pytest.mark.parametrize("optimizer", ["NGOpt", "CMA", "TwoPointsDE"])
def test_the_named_optimizer_searches_and_its_draws_have_the_declared_types(optimizer):
    ng = import_nevergrad()
    wrapped = searcher(optimizer)
    inner = wrapped.searcher._nevergrad_opt
    assert type(inner) is type(ng.optimizers.registry[optimizer](inner.parametrization, budget=12, num_workers=2))
    parsed, _ = parse_search_space(SPACE)
    for i in range(8):
        config = wrapped.suggest(f"t{i}")
        for parameter in parsed:
            assert parameter.domain.contains(config[parameter.path]), (parameter.path, config[parameter.path])
        assert type(config["training.num_epochs"]) is int and type(config["training.clip_param"]) is float
        assert type(config["rl_module.model_config.fcnet_hiddens"]) in (list, str)


def test_seeded_draws_repeat_and_another_seed_differs():
    one, two, other = searcher(seed=3), searcher(seed=3), searcher(seed=4)
    a = [one.suggest(f"t{i}") for i in range(5)]
    assert a == [two.suggest(f"t{i}") for i in range(5)]
    assert a != [other.suggest(f"t{i}") for i in range(5)]


def test_results_reach_the_optimizer_and_nan_or_errors_do_not():
    wrapped = searcher("CMA")
    inner = wrapped.searcher._nevergrad_opt
    for i in range(4):
        wrapped.suggest(f"t{i}")
    wrapped.on_trial_complete("t0", {"m": 1.5})
    wrapped.on_trial_complete("t1", {"m": math.nan})
    wrapped.on_trial_complete("t2", None, error=True)
    wrapped.on_trial_complete("t3", {"other": 1.0})
    assert inner.num_tell == 1
    # Maximizing: nevergrad minimizes the negated metric.
    assert inner.current_bests["pessimistic"].mean == pytest.approx(-1.5)


def test_importing_nevergrad_leaves_bayesian_optimization_working():
    import_nevergrad()
    import bayes_opt

    optimizer = bayes_opt.BayesianOptimization(f=None, pbounds={"x": (0, 1)}, random_state=0, verbose=0)
    assert 0 <= optimizer.suggest()["x"] <= 1


@pytest.mark.parametrize(
    ("optimizer", "message"),
    [
        ("CMAA", "did you mean 'CMA'"),
        ("BO", "need bayesian-optimization 1.x"),
        ("Powell", "proposes one point at a time"),
    ],
)
def test_an_optimizer_that_cannot_run_here_is_refused_at_validate(optimizer, message):
    document = {**BASE, "search_space": SPACE, "searcher": {"name": "nevergrad", "optimizer": optimizer}}
    with pytest.raises(SpecError) as caught:
        rlsweep.load_spec(document, preflight=False)
    (problem,) = caught.value.problems
    assert problem.path == "searcher.optimizer" and message in problem.message and repr(optimizer) in problem.message


def test_conditions_and_normal_domains_are_refused_with_the_parameter_named():
    parsed, _ = parse_search_space({
        "training.use_kl_loss": {"choice": [True, False]},
        "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}},
        "training.lr": {"normal": [0.001, 0.0001]},
    })
    with pytest.raises(Exception) as caught:
        NevergradCompiler().compile(parsed)
    paths = {p.path for p in caught.value.problems}
    assert paths == {"search_space.training.kl_coeff.when", "search_space.training.lr"}


def test_the_searcher_works_when_ray_loaded_its_nevergrad_module_first():
    # In a fresh interpreter: Ray's module imported first fails to import nevergrad on this stack and
    # holds None for it; the searcher still draws.
    import subprocess
    import sys

    script = (
        "import ray.tune.search.nevergrad.nevergrad_search as m\n"
        "assert m.ng is None\n"
        "from tests.search_spaces.test_nevergrad import searcher\n"
        "print(sorted(searcher('CMA').suggest('t0')))\n"
    )
    from tests.conftest import REPO

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "training.lr" in done.stdout
