"""Ax: Sobol points, then a Gaussian process that learns from the results; conditions as Ax's hierarchical
space; each config once (a finite space smaller than the sweep is refused at validate); the searcher
survives Tune's pickling."""

from __future__ import annotations

import math
import pickle

import pytest

import rlsweep
from rlsweep.errors import IncompatibleError, SpecError
from rlsweep.search_spaces import SearchRequest, parse_search_space
from rlsweep.search_spaces._ax import AxCompiler, AxOptions, AxSearcher, AxTuneSearcher

BASE = {"algorithm": "PPO", "env": "CartPole-v1", "budget": {"env_steps": 1000, "trials": 8}}
SPACE = {
    "training.lr": {"loguniform": [1e-5, 1e-2]},
    "training.minibatch_size": {"qrandint": [32, 256, 32]},
    "training.use_kl_loss": {"choice": [True, False]},
    "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.use_kl_loss": True}},
}


def searcher(space=SPACE, seed=0, startup=3, trials=12, mode="max", points=None):
    parsed, problems = parse_search_space(space)
    assert not problems
    options = AxOptions(startup_trials=startup, points_to_evaluate=points)
    return AxSearcher().make(SearchRequest(parsed, metric="m", mode=mode, seed=seed, options=options, trials=trials))


def test_conditional_parameters_appear_only_when_their_parent_allows_and_types_are_declared():
    ax = searcher()
    configs = [ax.suggest(f"t{i}") for i in range(8)]
    assert {c["training.use_kl_loss"] for c in configs} == {True, False}
    for config in configs:
        assert ("training.kl_coeff" in config) == config["training.use_kl_loss"]
        assert type(config["training.minibatch_size"]) is int and config["training.minibatch_size"] % 32 == 0
        assert 1e-5 <= config["training.lr"] <= 1e-2
    # Ax itself is given the hierarchy: its trials without the KL loss carry no kl_coeff to model.
    trials = ax.client.summarize()
    without = trials["training.use_kl_loss"] == 1  # the index of False
    assert trials.loc[without, "training.kl_coeff"].isna().all() and trials.loc[~without, "training.kl_coeff"].notna().all()


def test_after_the_sobol_points_the_gaussian_process_moves_toward_the_best_results():
    # Minimizing |log10(lr) + 2|: after 4 Sobol points, Ax's model proposes lr near 1e-2.
    space = {"training.lr": {"loguniform": [1e-5, 1e-1]}}
    ax = searcher(space, startup=4, mode="min")
    distances = []
    for i in range(8):
        config = ax.suggest(f"t{i}")
        distance = abs(math.log10(config["training.lr"]) + 2)
        distances.append(distance)
        ax.on_trial_complete(f"t{i}", {"m": distance})
    assert min(distances[4:]) < min(distances[:4])
    assert min(distances[4:]) < 0.3


def test_points_to_evaluate_come_first_and_errors_or_nan_do_not_count_as_results():
    point = {"training.lr": 3e-4, "training.minibatch_size": 64, "training.use_kl_loss": False}
    ax = searcher(points=[point])
    assert ax.suggest("t0") == point
    ax.suggest("t1"), ax.suggest("t2")
    ax.on_trial_complete("t0", {"m": 2.0})
    ax.on_trial_complete("t1", None, error=True)
    ax.on_trial_complete("t2", {"m": math.nan})
    summary = ax.client.summarize()
    assert list(summary["trial_status"]) == ["COMPLETED", "FAILED", "ABANDONED"]


def test_the_searcher_survives_pickling_with_its_experiment():
    ax = searcher()
    for i in range(3):
        ax.suggest(f"t{i}")
        ax.on_trial_complete(f"t{i}", {"m": float(i)})
    ax.suggest("t3")
    copy = pickle.loads(pickle.dumps(ax))
    assert list(copy.client.summarize()["trial_status"]) == ["COMPLETED"] * 3 + ["RUNNING"]
    copy.on_trial_complete("t3", {"m": 5.0})
    assert list(copy.client.summarize()["trial_status"]) == ["COMPLETED"] * 4
    # The sweep's seed goes with it (Ax's JSON leaves it out): Ax seeds its model fits from it.
    assert copy.client._random_seed == ax.client._random_seed == 0


def test_a_finite_space_smaller_than_the_sweep_is_refused_at_validate():
    document = {**BASE, "search_space": {"training.num_epochs": {"randint": [1, 3]}, "training.use_kl_loss": {"choice": [True, False]}},
                "searcher": {"name": "ax"}}
    with pytest.raises(SpecError) as caught:
        rlsweep.load_spec(document, preflight=False)
    (problem,) = caught.value.problems
    assert problem.path == "budget.trials" and "holds 6" in problem.message and "got 8" in problem.message
    document["budget"] = {"env_steps": 1000, "trials": 6}
    assert rlsweep.load_spec(document, preflight=False).searcher.name == "ax"


def test_conditions_need_one_choice_parent_and_tiny_ranges_are_refused():
    parsed, _ = parse_search_space({
        "training.num_epochs": {"randint": [1, 3]},
        "training.kl_coeff": {"uniform": [0.1, 0.3], "when": {"training.num_epochs": [2]}},
        "training.lr": {"uniform": [0.0, 1e-6]},
    })
    with pytest.raises(IncompatibleError) as caught:
        AxCompiler().compile(parsed)
    problems = {p.path: p.message for p in caught.value.problems}
    assert "needs the parent 'training.num_epochs' to be a 'choice'" in problems["search_space.training.kl_coeff.when"]
    assert "narrower than 1.5e-05" in problems["search_space.training.lr"]


@pytest.mark.slow
def test_a_sweep_runs_with_ax_and_saves_its_experiment_with_the_sweep(tmp_path, ray_runtime):
    """Four PPO trials: two Sobol points, then the Gaussian process; Tune saves the searcher (for resume)
    with Ax's experiment in it, every trial completed."""
    from tests.conftest import small_ppo

    document = small_ppo("ax", tmp_path / "results", budget={"env_steps": 500, "trials": 4},
                         searcher={"name": "ax", "seed": 0, "startup_trials": 2})
    result = rlsweep.run(rlsweep.load_spec(document), verbose=0)
    trials = rlsweep.load(result.path).trials
    assert len(trials) == 4 and all(t.state == "TERMINATED" for t in trials)
    assert len({t.config["training.lr"] for t in trials}) == 4
    (saved,) = result.path.glob("searcher-state-*.pkl")
    # What a resume restores: Ax's experiment with the four trials, each completed with its score.
    restored = AxTuneSearcher.__new__(AxTuneSearcher)
    restored.restore(str(saved))
    summary = restored.client.summarize()
    assert list(summary["trial_status"]) == ["COMPLETED"] * 4
    assert sorted(summary["training.lr"]) == pytest.approx(sorted(t.config["training.lr"] for t in trials))
