"""Schedules in the spec: parsing and refusals with their spec paths, RLlib's format, the value in
force, RLlib's own config accepting the result, and searched numbers as ordinary domains."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlsweep
from rlsweep import _schedules
from rlsweep.errors import SpecError
from rlsweep.search_spaces import parse_search_space
from rlsweep.spec import parse_spec
from rlsweep.trainables._config import build_config, path_problems, settings_for
from rlsweep.trainables._schedulable import SCHEDULABLE, trial_schedules, values_in_force
from tests.conftest import logged_to

BUDGET = 10_000
LINEAR = {"schedule": "linear", "from": 1.0e-3, "to": 0.0}


def document(config=None, search_space=None, algorithm="PPO", env="CartPole-v1", **sections):
    doc = {"algorithm": algorithm, "env": env, "budget": {"env_steps": BUDGET}, "mlflow": None}
    doc.update(config=config or {}, search_space=search_space or {}, **sections)
    return doc


def problems_of(doc):
    spec, problems = parse_spec(doc)
    return {p.path: p.message for p in problems}, spec


# --- parsing and its refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "written, path, words",
    [
        ({"schedule": "cosine", "from": 1, "to": 0}, "config.training.lr.schedule", ["unknown schedule 'cosine'", "linear", "piecewise"]),
        ({"schedule": "linear", "from": "fast", "to": 0.0}, "config.training.lr.from", ["must be a number", "'fast'"]),
        ({"schedule": "linear", "from": 1.0e-3}, "config.training.lr.to", ["required"]),
        ({"schedule": "linear", "from": 1.0e-3, "to": 0.0, "steps": 5}, "config.training.lr.steps", ["takes no key 'steps'"]),
        ({"schedule": "linear", "from": {"uniform": [0.0, 1.0]}, "to": 0.0}, "config.training.lr.from",
         ["must be a number", "search it in search_space"]),
        ({"schedule": "piecewise", "points": [[100, 1.0e-3], [200, 0.0]]}, "config.training.lr.points", ["must start at 0", "100"]),
        ({"schedule": "piecewise", "points": [[0, 1.0e-3], [500, 5.0e-4], [400, 0.0]]}, "config.training.lr.points",
         ["must rise", "[0, 500, 400]"]),
        ({"schedule": "piecewise", "points": [[0, 1.0e-3], [BUDGET + 1, 0.0]]}, "config.training.lr.points.1",
         [f"past budget.env_steps ({BUDGET})", f"0 to {BUDGET}"]),
        ({"schedule": "piecewise", "points": [[0, 1.0e-3]]}, "config.training.lr.points", ["at least two"]),
        ({"schedule": "piecewise", "points": [[0, 1.0e-3], [1.5, 0.0]]}, "config.training.lr.points.1", ["whole number"]),
        ({"schedule": "piecewise", "points": [[0, 1.0e-3], [10, 0.0, 3]]}, "config.training.lr.points.1", ["[env_steps, value]"]),
    ],
)
def test_a_bad_schedule_is_refused_at_its_path_with_the_rule_and_value(written, path, words):
    problems, spec = problems_of(document(config={"training.lr": written}))
    assert spec is None and path in problems, problems
    for word in words:
        assert word in problems[path], problems[path]


def test_search_space_schedule_refusals_name_the_number():
    problems, _ = problems_of(document(search_space={
        "training.lr": {"schedule": "linear", "from": {"choice": ["fast", 1.0e-3]}, "to": {"uniform": [0.0, 1.0e-4], "when": {"x": 1}}},
        "training.entropy_coeff": {"schedule": "linear", "from": {"loguniform": [0.0, 0.1]}, "to": 0.0},
    }, config={}))
    assert "domain of numbers" in problems["search_space.training.lr.from"]
    assert "takes no condition" in problems["search_space.training.lr.to.when"]
    assert "loguniform" in problems["search_space.training.entropy_coeff.from"]  # the domain's own rule


def test_a_schedule_needs_the_budget_and_one_place():
    doc = document(config={"training.lr": LINEAR}, search_space={"training.lr": LINEAR})
    del doc["budget"]
    problems = [(p.path, p.message) for p in parse_spec(doc)[1]]
    assert any(path == "search_space.training.lr" and "is also set in config" in m for path, m in problems), problems
    assert any(path == "config.training.lr" and "needs budget.env_steps" in m for path, m in problems), problems


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([0, 0, 0, 5]), st.lists(st.integers(-2000, 7000), min_size=1, max_size=4))
def test_piecewise_points_are_accepted_exactly_when_rlsweep_can_run_them(first, gaps):
    steps = [first]
    for gap in gaps:
        steps.append(steps[-1] + gap)
    points = [[step, 0.5] for step in steps]
    problems, spec = problems_of(document(config={"training.lr": {"schedule": "piecewise", "points": points}}))
    runnable = steps[0] == 0 and all(b > a for a, b in zip(steps, steps[1:])) and steps[-1] <= BUDGET
    assert (spec is not None) == runnable, problems
    if not runnable:
        assert all(path.startswith("config.training.lr.points") for path in problems), problems


# --- RLlib's format, and the value in force --------------------------------------------------------------


def test_linear_runs_over_the_budget_and_piecewise_keeps_its_points():
    spec = parse_spec(document(config={
        "training.lr": LINEAR,
        "training.entropy_coeff": {"schedule": "piecewise", "points": [[0, 0.01], [2000, 0.005], [8000, 0]]},
    }))[0]
    settings = settings_for(spec, {})
    assert settings["training.lr"] == [[0, 1.0e-3], [BUDGET, 0.0]]
    assert settings["training.entropy_coeff"] == [[0, 0.01], [2000, 0.005], [8000, 0.0]]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 5000), st.floats(-1.0, 1.0, allow_nan=False)), min_size=1, max_size=5),
    st.floats(0.0, 1.0, allow_nan=False),
    st.integers(0, 30_000),
)
def test_the_value_in_force_is_rllibs_own(gaps, first, env_steps):
    """What a row reports is what RLlib's Scheduler computes from the same points (PiecewiseSchedule, the
    last value held after the last point)."""
    from ray.rllib.utils.schedules.piecewise_schedule import PiecewiseSchedule

    points, step = [[0, first]], 0
    for gap, value in gaps:
        step += gap
        points.append([step, value])
    theirs = PiecewiseSchedule(points, framework=None, outside_value=points[-1][-1]).value(env_steps)
    assert _schedules.value_at(points, env_steps) == pytest.approx(float(theirs), abs=1e-12)


def test_rows_report_the_value_in_force_at_their_env_steps():
    spec = parse_spec(document(config={"training.lr": LINEAR}))[0]
    schedules = trial_schedules(spec, {})
    assert values_in_force(schedules, 0) == {"training.lr": 1.0e-3}
    assert values_in_force(schedules, BUDGET // 4)["training.lr"] == pytest.approx(0.75e-3)
    assert values_in_force(schedules, 3 * BUDGET) == {"training.lr": 0.0}  # held past the budget


# --- RLlib accepts what rlsweep writes ------------------------------------------------------------------


@pytest.mark.parametrize(
    "algorithm, env, paths",
    [(name, "Pendulum-v1" if name == "SAC" else "CartPole-v1", SCHEDULABLE[name]) for name in ("PPO", "APPO", "IMPALA", "DQN", "SAC")],
)
def test_rllibs_config_validates_every_schedulable_setting(algorithm, env, paths):
    spec = parse_spec(document(config={path: {"schedule": "linear", "from": 0.5, "to": 0.01} for path in paths},
                               algorithm=algorithm, env=env))[0]
    assert path_problems(spec) == []
    config = build_config(spec, {})
    config.validate()  # RLlib's Scheduler.validate on lr, entropy_coeff, ...
    for path in paths:
        assert getattr(config, path.split(".")[1]) == [[0, 0.5], [BUDGET, 0.01]]


def test_only_a_ppo_trial_that_schedules_clip_param_trains_with_the_clip_scheduling_learner():
    from rlsweep.trainables._ppo_learner import ClipScheduledPPOTorchLearner, RlsweepPPOTorchLearner

    fixed = build_config(parse_spec(document(config={"training.clip_param": 0.2}))[0], {})
    assert fixed.learner_class is RlsweepPPOTorchLearner  # every PPO trial's (advantages over the loss's rows)
    with logged_to("ray._common.deprecation") as said:  # where RLlib's deprecation notices go
        scheduled = build_config(parse_spec(document(config={"training.clip_param": {"schedule": "linear", "from": 0.2, "to": 0.0}}))[0], {})
    assert scheduled.learner_class is ClipScheduledPPOTorchLearner
    # Set where RLlib 2.60 wants it: no DeprecationWarning in the sweep's output for every trial.
    assert said == []
    assert scheduled.clip_param == [[0, 0.2], [BUDGET, 0.0]]


@pytest.mark.parametrize("algorithm", sorted(SCHEDULABLE))
def test_every_schedulable_setting_is_an_argument_of_the_algorithms_config(algorithm):
    from rlsweep.trainables._config import _method_arguments, algorithm_class

    arguments = _method_arguments(type(algorithm_class(algorithm).get_default_config()))
    for path in SCHEDULABLE[algorithm]:
        method, argument = path.split(".")
        assert argument in arguments[method], (algorithm, path)


def test_a_setting_rllib_cannot_schedule_is_refused_at_validate_with_those_it_can():
    doc = document(config={"training.gamma": {"schedule": "linear", "from": 0.9, "to": 0.99}})
    with pytest.raises(SpecError) as caught:
        rlsweep.load_spec(doc)
    (problem,) = [p for p in caught.value.problems if p.path == "config.training.gamma"]
    assert "cannot schedule training.gamma" in problem.message
    assert "training.lr" in problem.message and "training.entropy_coeff" in problem.message
    sac = document(search_space={"training.lr": {"schedule": "linear", "from": {"uniform": [1e-4, 1e-3]}, "to": 0.0}},
                   algorithm="SAC", env="Pendulum-v1")
    assert "training.actor_lr" in {p.path: p.message for p in path_problems(parse_spec(sac)[0])}["search_space.training.lr"]


# --- searched numbers are ordinary domains ----------------------------------------------------------------

SEARCHED = {
    "training.lr": {"schedule": "linear", "from": {"loguniform": [1.0e-4, 1.0e-3]}, "to": 0.0},
    "training.entropy_coeff": {"schedule": "piecewise", "points": [[0, {"uniform": [0.0, 0.02]}], [5000, 0.0]]},
}


def test_searched_numbers_become_parameters_named_after_the_setting():
    space, problems = parse_search_space(SEARCHED)
    assert not problems
    assert {p.path: type(p.domain).__name__ for p in space} == {"training.lr.from": "LogUniform",
                                                              "training.entropy_coeff.points.0": "Uniform"}


def _assembled(draw):
    spec = parse_spec(document(search_space=SEARCHED))[0]
    settings = settings_for(spec, draw)
    assert not any(key.startswith(("training.lr.", "training.entropy_coeff.")) for key in settings)
    return settings


def test_optuna_draws_a_searched_from_as_a_hand_written_study_does():
    from rlsweep.search_spaces._optuna import OptunaCompiler

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space, _ = parse_search_space(SEARCHED)
    compiled = OptunaCompiler().compile(space).native

    def by_hand(trial):
        return {"training.lr.from": trial.suggest_float("training.lr.from", 1.0e-4, 1.0e-3, log=True),
                "training.entropy_coeff.points.0": trial.suggest_float("training.entropy_coeff.points.0", 0.0, 0.02)}

    def draws(objective):
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=5))
        out = []
        for _ in range(10):
            trial = study.ask()
            out.append(objective(trial))
            study.tell(trial, 0.0)
        return out

    ours = draws(compiled)
    assert ours == draws(by_hand)
    for draw in ours:
        settings = _assembled(draw)
        assert settings["training.lr"] == [[0, draw["training.lr.from"]], [BUDGET, 0.0]]
        assert settings["training.entropy_coeff"] == [[0, draw["training.entropy_coeff.points.0"]], [5000, 0.0]]


def test_hyperopt_draws_a_searched_from_as_a_hand_written_space_does():
    from hyperopt import hp
    from hyperopt.pyll import stochastic

    from rlsweep.search_spaces._hyperopt import HyperOptCompiler

    space, _ = parse_search_space(SEARCHED)
    compiled = HyperOptCompiler().compile(space)
    by_hand = {"training.lr.from": hp.loguniform("training.lr.from", math.log(1.0e-4), math.log(1.0e-3)),
               "training.entropy_coeff.points.0": hp.uniform("training.entropy_coeff.points.0", 0.0, 0.02)}
    for seed in range(5):
        ours = compiled.decode(stochastic.sample(compiled.native, rng=np.random.default_rng(seed)))
        assert ours == stochastic.sample(by_hand, rng=np.random.default_rng(seed))
        assert _assembled(ours)["training.lr"] == [[0, ours["training.lr.from"]], [BUDGET, 0.0]]


# --- a real trial (slow: run by hand or in CI) ------------------------------------------------------------


@pytest.mark.slow
def test_a_linear_lr_schedule_falls_in_the_rows_as_in_the_learner(tmp_path, ray_runtime):
    from rlsweep.analysis import load
    from tests.conftest import small_ppo

    doc = small_ppo("lr-schedule", tmp_path / "results", budget={"env_steps": 2000, "trials": 1}, search_space={})
    doc["config"] = {**doc["config"], "training.lr": {"schedule": "linear", "from": 1.0e-3, "to": 0.0},
                     "training.clip_param": {"schedule": "linear", "from": 0.3, "to": 0.1}}
    sweep = load(rlsweep.run(rlsweep.load_spec(doc), verbose=0).path)
    (trial,) = sweep.trials
    assert trial.state == "TERMINATED", trial.error
    rows = trial.rows
    assert len(rows) >= 3
    lrs = [row["hp/training.lr"] for row in rows]
    assert all(b < a for a, b in zip(lrs, lrs[1:])), lrs
    for row in rows:
        expected = 1.0e-3 * (1 - min(row["env_steps"], 2000) / 2000)
        assert row["hp/training.lr"] == pytest.approx(expected, abs=1e-9)
        # RLlib logs the optimizer's rate after the iteration's update, set at the same lifetime env steps.
        learner = row["rllib/learners/default_policy/default_optimizer_learning_rate"]
        assert learner == pytest.approx(row["hp/training.lr"], rel=1e-3, abs=1e-7), row["env_steps"]
        # PPO's clip_param, which RLlib does not schedule: rlsweep's learner used the value in force at the
        # update's lifetime env steps, the row's own.
        assert row["hp/training.clip_param"] == pytest.approx(0.3 - 0.2 * min(row["env_steps"], 2000) / 2000, abs=1e-9)
        clip = row["rllib/learners/default_policy/curr_clip_param"]
        assert clip == pytest.approx(row["hp/training.clip_param"], rel=1e-6), row["env_steps"]


def test_rlsweeps_ppo_learner_hands_rllibs_loss_the_clip_in_force_at_the_updates_env_steps(monkeypatch):
    import gymnasium as gym
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    spec = parse_spec(document(config={"training.clip_param": {"schedule": "linear", "from": 0.2, "to": 0.0}}))[0]
    learner = build_config(spec, {}).build_learner(env=gym.make("CartPole-v1"))
    seen = []
    monkeypatch.setattr(PPOTorchLearner, "compute_loss_for_module",
                        lambda self, *, module_id, config, batch, fwd_out: seen.append((config.clip_param, config.gamma)))
    module_config = learner.config.get_config_for_module("default_policy")
    for env_steps in (0, BUDGET // 4, BUDGET, 2 * BUDGET):
        learner.before_gradient_based_update(timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: env_steps})
        learner.compute_loss_for_module(module_id="default_policy", config=module_config, batch={}, fwd_out={})
    # Linear from 0.2 to 0 over the budget, then held; every other setting is the config's own.
    assert seen == [(0.2, 0.99), (pytest.approx(0.15), 0.99), (0.0, 0.99), (0.0, 0.99)]


@pytest.mark.parametrize("algorithm, steps", [("PPO", 0), ("SAC", 100), ("DQN", 1000), ("IMPALA", 1000), ("APPO", 1000), ("CQL", 1000)])
def test_an_iteration_is_rllibs_own_work_floor_never_its_time_floor(algorithm, steps):
    from rlsweep.trainables._config import MIN_STEPS, MIN_TIME, iteration_settings

    assert iteration_settings(algorithm) == {MIN_TIME: 0, MIN_STEPS: steps}
