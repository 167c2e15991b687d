"""Compiling to an Optuna define-by-run function: same draws as hand-written suggest calls."""

from __future__ import annotations

import optuna
import pytest

from rlsweep.errors import IncompatibleError
from rlsweep.search_spaces import parse_search_space
from rlsweep.search_spaces._optuna import OptunaCompiler

optuna.logging.set_verbosity(optuna.logging.WARNING)


def draws(objective, n=20, seed=3):
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    out = []
    for _ in range(n):
        trial = study.ask()
        out.append(objective(trial))
        study.tell(trial, 0.0)
    return out


def test_seeded_draws_match_hand_written_optuna():
    space, problems = parse_search_space(
        {
            "training.lr": {"loguniform": [1e-5, 1e-2]},
            "training.gamma": {"uniform": [0.9, 0.999]},
            "training.num_epochs": {"randint": [1, 10]},
            "training.minibatch_size": {"choice": [64, 128, 256]},
            "training.train_batch_size": {"qrandint": [1000, 4000, 500]},
            "training.vf_clip_param": {"lograndint": [1, 100]},
        }
    )
    assert not problems
    compiled = OptunaCompiler().compile(space).native

    def by_hand(trial):
        return {
            "training.lr": trial.suggest_float("training.lr", 1e-5, 1e-2, log=True),
            "training.gamma": trial.suggest_float("training.gamma", 0.9, 0.999),
            "training.num_epochs": trial.suggest_int("training.num_epochs", 1, 10),
            "training.minibatch_size": trial.suggest_categorical("training.minibatch_size", [64, 128, 256]),
            "training.train_batch_size": trial.suggest_int("training.train_batch_size", 1000, 4000, step=500),
            "training.vf_clip_param": trial.suggest_int("training.vf_clip_param", 1, 100, log=True),
        }

    assert draws(compiled) == draws(by_hand)


def test_choices_of_lists_come_back_as_the_declared_objects():
    space, _ = parse_search_space({"rl_module.model_config.fcnet_hiddens": {"choice": [[64, 64], [256, 256]]}})
    values = [d["rl_module.model_config.fcnet_hiddens"] for d in draws(OptunaCompiler().compile(space).native, n=30)]
    assert {tuple(v) for v in values} == {(64, 64), (256, 256)}
    assert all(type(v) is list and all(type(x) is int for x in v) for v in values)


def test_inactive_conditional_parameters_are_absent():
    space, _ = parse_search_space(
        {
            "training.use_kl_loss": {"choice": [True, False]},
            "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}},
        }
    )
    results = draws(OptunaCompiler().compile(space).native, n=40)
    assert any(r["training.use_kl_loss"] for r in results) and not all(r["training.use_kl_loss"] for r in results)
    for r in results:
        assert ("training.kl_coeff" in r) == r["training.use_kl_loss"]


def test_normal_domain_is_refused_with_the_parameter_named():
    space, _ = parse_search_space({"training.lr": {"normal": [0.001, 0.0001]}})
    with pytest.raises(IncompatibleError) as info:
        _ = OptunaCompiler().compile(space).native
    assert info.value.problems[0].path == "search_space.training.lr"
    assert "searcher 'optuna' cannot express a 'normal' domain" in info.value.problems[0].message


def test_quantized_floats_step_through_exactly_the_multiples_of_q():
    space, _ = parse_search_space({"training.clip_param": {"quniform": [0.1, 0.4, 0.1]}})
    values = {round(d["training.clip_param"], 9) for d in draws(OptunaCompiler().compile(space).native, n=60)}
    assert values == {0.1, 0.2, 0.3, 0.4}


def test_tpe_starts_with_a_quarter_of_the_trials_as_random_and_models_jointly():
    from rlsweep.search_spaces import SEARCHERS, SearchRequest
    from rlsweep.search_spaces._optuna import OptunaOptions, startup_trials

    assert [startup_trials(OptunaOptions(), n) for n in (4, 12, 20, 32, 100)] == [2, 3, 5, 8, 10]
    assert startup_trials(OptunaOptions(startup_trials=7), 12) == 7
    space, _ = parse_search_space({"training.lr": {"loguniform": [1e-5, 1e-2]}})
    searcher = SEARCHERS["optuna"].make(SearchRequest(space, metric="m", mode="max", seed=0, options=OptunaOptions(), trials=20))
    sampler = searcher._sampler  # Ray's OptunaSearch keeps the sampler it was given
    assert sampler._n_startup_trials == 5 and sampler._multivariate and sampler._constant_liar
    univariate = SEARCHERS["optuna"].make(
        SearchRequest(space, metric="m", mode="max", seed=0, options=OptunaOptions(multivariate=False), trials=20)
    )
    assert not univariate._sampler._multivariate


SAMPLERS = {"tpe": "TPESampler", "gp": "GPSampler", "qmc": "QMCSampler", "random": "RandomSampler", "cmaes": "CmaEsSampler"}
MIXED = {
    "training.lr": {"loguniform": [1.0e-5, 1.0e-2]},
    "training.num_epochs": {"randint": [1, 10]},
    "training.train_batch_size": {"qrandint": [1000, 4000, 500]},
    "training.use_kl_loss": {"choice": [True, False]},
    "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}},
    "rl_module.model_config.fcnet_hiddens": {"choice": [[16], [32, 32]]},
}


def _sweep_spec(sampler, trials=12):
    import rlsweep

    document = {"algorithm": "PPO", "env": "CartPole-v1", "budget": {"env_steps": 1000, "trials": trials},
                "search_space": MIXED, "searcher": {"name": "optuna", "seed": 0, "sampler": sampler}}
    return rlsweep.load_spec(document, preflight=False)


@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_each_sampler_is_the_one_named_and_draws_inside_the_space(sampler):
    from rlsweep._compat import optuna_study
    from rlsweep.schedulers import search_request
    from rlsweep.search_spaces import SEARCHERS

    spec = _sweep_spec(sampler)
    searcher = SEARCHERS["optuna"].searcher(search_request(spec))
    assert type(optuna_study(searcher).sampler).__name__ == SAMPLERS[sampler]
    # Past the startup trials (3 for 12 trials), each sampler models; its draws still lie in the space.
    space, _ = parse_search_space(MIXED)
    for i in range(8):
        config = searcher.suggest(f"t{i}")
        for parameter in space:
            if parameter.is_active(config):
                assert parameter.domain.contains(config[parameter.path]), (sampler, parameter.path, config)
            else:
                assert parameter.path not in config
        searcher.on_trial_complete(f"t{i}", {"return_mean": float(i % 3), "training_iteration": 1})


def test_a_sampler_whose_package_is_missing_is_refused_at_validate_naming_it(monkeypatch):
    from rlsweep.errors import SpecError
    from rlsweep.search_spaces import _optuna

    # The searchers extra installs cmaes here; a machine without it is one whose package does not import.
    monkeypatch.setitem(_optuna.SAMPLER_PACKAGES, "cmaes", "cmaes_is_not_installed")
    with pytest.raises(SpecError) as info:
        _sweep_spec("cmaes")
    (problem,) = info.value.problems
    assert problem.path == "searcher.sampler" and "pip install cmaes_is_not_installed" in problem.message


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["gp", "qmc"])
def test_a_sweep_runs_with_another_sampler_and_saves_it_with_the_searcher(tmp_path, ray_runtime, sampler):
    """Tune saves the searcher with the sweep (pickled, for resume): the named sampler is in it."""
    import rlsweep
    from tests.conftest import small_ppo

    document = small_ppo("sampler", tmp_path / "results", budget={"env_steps": 500, "trials": 4},
                         searcher={"name": "optuna", "seed": 0, "sampler": sampler})
    result = rlsweep.run(rlsweep.load_spec(document), verbose=0)
    trials = rlsweep.load(result.path).trials
    assert len(trials) == 4 and all(t.state == "TERMINATED" for t in trials)
    saved = b"".join(p.read_bytes() for p in result.path.glob("searcher-state-*.pkl"))
    assert SAMPLERS[sampler].encode() in saved and b"TPESampler" not in saved
