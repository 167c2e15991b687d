"""Spec loading and validation: every kind of error, with its path, all reported in one go."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

import rlsweep
from rlsweep.errors import SpecError
from tests.conftest import TINY_SPEC


def problems_of(document, overrides=(), preflight=True) -> dict[str, str]:
    with pytest.raises(SpecError) as info:
        rlsweep.load_spec(document, overrides, preflight=preflight)
    return {p.path: p.message for p in info.value.problems}


def with_changes(**changes):
    document = copy.deepcopy(TINY_SPEC)
    for key, value in changes.items():
        document[key] = value
    return document


@pytest.mark.parametrize("example", sorted((Path(__file__).parent.parent / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_validates(example):
    spec = rlsweep.load_spec(example)
    assert spec.budget.env_steps > 0


def test_the_example_spec_is_valid():
    spec = rlsweep.load_spec(Path(__file__).parent.parent / "examples" / "cartpole_ppo_asha.yaml")
    assert spec.algorithm == "PPO"
    assert spec.budget.env_steps > 0
    assert spec.search_space.paths[0] == "training.lr"


def test_unknown_keys_are_reported_at_every_level():
    document = with_changes(budgett={"env_steps": 1}, budget={"env_steps": 4000, "trails": 3})
    problems = problems_of(document)
    assert "budgett" in problems and "unknown key" in problems["budgett"]
    assert "budget.trails" in problems and "trials" in problems["budget.trails"]


def test_wrong_types_name_the_value():
    problems = problems_of(with_changes(budget={"env_steps": "lots", "trials": 2.5}))
    assert problems["budget.env_steps"] == "must be an integer, got 'lots'"
    assert problems["budget.trials"] == "must be an integer, got 2.5"


def test_bad_bounds_in_the_search_space():
    document = with_changes(
        search_space={
            "training.lr": {"loguniform": [0, 0.01]},
            "training.gamma": {"uniform": [0.99, 0.9]},
            "training.num_epochs": {"randint": [3, "ten"]},
            "training.minibatch_size": {"choice": []},
        }
    )
    problems = problems_of(document)
    assert problems["search_space.training.lr"] == "loguniform: low must be > 0 for a log scale, got low=0"
    assert "low must be < high, got low=0.99, high=0.9" in problems["search_space.training.gamma"]
    assert "high must be a number, got 'ten'" in problems["search_space.training.num_epochs"]
    assert "non-empty list" in problems["search_space.training.minibatch_size"]


def test_unknown_algorithm_lists_the_known_ones():
    problems = problems_of(with_changes(algorithm="PPPO"))
    assert "unknown RLlib algorithm 'PPPO'" in problems["algorithm"]
    assert "'PPO'" in problems["algorithm"]


def test_unknown_env_and_unimportable_env_class():
    assert "not a registered gymnasium id" in problems_of(with_changes(env="CartPole-v99"))["env"]
    assert "cannot import module" in problems_of(with_changes(env="no_such_pkg.envs:MyEnv"))["env"]


def test_config_paths_must_name_a_real_method_and_argument():
    document = with_changes(config={"training.learning_rate": 0.1, "trainig.lr": 0.1})
    problems = problems_of(document)
    assert "takes no argument 'learning_rate'" in problems["config.training.learning_rate"]
    assert "did you mean ['training']" in problems["config.trainig.lr"]


def test_metric_and_mode():
    problems = problems_of(with_changes(metric={"name": "episode_reward_mean", "mode": "maximize"}))
    assert "unknown metric 'episode_reward_mean'" in problems["metric.name"]
    assert problems["metric.mode"] == "must be 'min' or 'max', got 'maximize'"


def test_stop_keys_are_checked():
    problems = problems_of(with_changes(stop={"episode_reward_mean": 200}))
    assert "unknown metric" in problems["stop.episode_reward_mean"]


def test_budget_is_required_and_positive():
    document = copy.deepcopy(TINY_SPEC)
    del document["budget"]
    assert problems_of(document)["budget"] == "is required"
    assert "must be >= 1" in problems_of(with_changes(budget={"env_steps": 0}))["budget.env_steps"]


def test_unknown_searcher_scheduler_and_options():
    document = with_changes(searcher={"name": "optuma"}, scheduler={"name": "asha", "grace_period": 3})
    problems = problems_of(document)
    assert "unknown searcher 'optuma'" in problems["searcher.name"]
    assert "unknown option for scheduler 'asha'" in problems["scheduler.grace_period"]
    assert "grace_env_steps" in problems["scheduler.grace_period"]


def test_asha_grace_must_be_below_the_budget():
    document = with_changes(scheduler={"name": "asha", "grace_env_steps": 4000})
    assert "below the scheduler's max_env_steps=4000" in problems_of(document)["scheduler.grace_env_steps"]


def test_every_problem_is_reported_in_one_go():
    document = with_changes(
        algorithm=None,
        budget={"env_steps": -5},
        metric={"mode": "up"},
        search_space={"training.lr": {"loguniform": [-1, 1]}, "training.gamma": {"uniform": [1, 0]}},
    )
    problems = problems_of(document)
    assert {"algorithm", "budget.env_steps", "metric.mode", "search_space.training.lr", "search_space.training.gamma"} <= set(problems)


def test_rllib_rejections_are_found_before_launch_with_paths():
    document = with_changes(
        config={"training.train_batch_size": 200},
        search_space={"training.minibatch_size": {"choice": [64, 512]}},
    )
    problems = problems_of(document)
    [(path, message)] = problems.items()
    assert "search_space.training.minibatch_size" in path
    assert "config.training.train_batch_size" in path
    assert "RLlib rejects" in message and "minibatch_size=512" in message


def test_malformed_yaml_reports_line_and_column(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("algorithm: PPO\nenv: CartPole-v1\nbudget: {env_steps: 10\n")
    problems = problems_of(path)
    [(where, message)] = problems.items()
    assert where.startswith(f"{path}:4:1") or where.startswith(f"{path}:3:")
    assert message.startswith("invalid YAML")


def test_duplicate_yaml_keys_are_an_error(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("algorithm: PPO\nenv: CartPole-v1\nbudget: {env_steps: 10}\nalgorithm: DQN\n")
    [(where, message)] = problems_of(path).items()
    assert where == f"{path}:4:1" and "duplicate key 'algorithm'" in message


def test_yaml_is_loaded_safely(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("algorithm: !!python/object/apply:os.system ['echo pwned']\nenv: CartPole-v1\n")
    [(_, message)] = problems_of(path).items()
    assert "invalid YAML" in message


def test_set_overrides_apply_before_validation():
    spec = rlsweep.load_spec(TINY_SPEC, ["budget.trials=7", "config.training.gamma=0.9", "searcher.name=random"])
    assert spec.budget.trials == 7
    assert spec.config["training.gamma"] == 0.9
    assert spec.searcher.name == "random"


def test_a_parameter_may_not_be_both_fixed_and_searched():
    problems = problems_of(with_changes(config={"training.lr": 0.1}))
    assert "set a parameter in one place only" in problems["search_space.training.lr"]


def test_sweep_names_cannot_escape_the_storage_directory():
    assert "folder name" in problems_of(with_changes(name="../../etc"))["name"]


def test_grid_needs_a_multiple_of_its_points():
    document = with_changes(
        searcher={"name": "random"}, search_space={"training.lr": {"grid": [0.001, 0.002, 0.003]}}, budget={"env_steps": 10, "trials": 4}
    )
    assert "multiple of the grid's 3 points" in problems_of(document)["budget.trials"]


def test_model_based_searcher_refuses_grid():
    document = with_changes(search_space={"training.lr": {"grid": [0.001, 0.002]}}, budget={"env_steps": 10, "trials": 2})
    assert "cannot be combined with the model-based searcher 'optuna'" in problems_of(document)["search_space.training.lr"]


def test_a_trial_that_cannot_fit_the_machine_is_an_error_not_a_hang():
    document = with_changes(config={**TINY_SPEC["config"], "env_runners.num_env_runners": 4}, ray={"num_cpus": 2})
    problems = problems_of(document)
    message = problems["config.env_runners.num_env_runners"]
    assert "one trial needs 5 CPUs" in message and "has 2" in message


def test_a_trial_too_large_names_what_asks_for_the_cpus():
    # Two remote learners, no env runner: the learners are the cause, and the message says so with counts.
    document = with_changes(config={**TINY_SPEC["config"], "learners.num_learners": 2}, ray={"num_cpus": 2})
    message = problems_of(document)["config.learners.num_learners"]
    assert "one trial needs 3 CPUs (1 for the trial's own process, 2 for 2 learners" in message
    assert "Lower learners.num_learners" in message and "env runner" not in message
    # Searched: the message points at the search space.
    document = with_changes(
        config={**TINY_SPEC["config"], "env_runners.num_env_runners": 1},
        search_space={**TINY_SPEC["search_space"], "learners.num_learners": {"choice": [0, 2]}}, ray={"num_cpus": 2},
    )
    message = problems_of(document)["search_space.learners.num_learners"]
    assert "needs 4 CPUs (1 for the trial's own process, 1 for 1 env runner, 2 for 2 learners" in message


def test_the_cpu_check_sizes_the_heaviest_choice_not_only_the_listed_ends():
    # 8 env runners is neither the first nor the last value listed.
    document = with_changes(search_space={**TINY_SPEC["search_space"], "env_runners.num_env_runners": {"choice": [0, 8, 2]}},
                            ray={"num_cpus": 2})
    assert "one trial needs 9 CPUs" in problems_of(document)["search_space.env_runners.num_env_runners"]


@pytest.mark.parametrize("learners", [0, 1])
def test_gpus_where_the_machine_has_none_are_an_error_naming_the_setting(learners):
    # CPU-only torch here: a local runtime has no GPU, and a trial asking for one would wait forever.
    document = with_changes(config={**TINY_SPEC["config"], "learners.num_learners": learners,
                                    "learners.num_gpus_per_learner": 1}, ray={"num_cpus": 2})
    message = problems_of(document)["config.learners.num_gpus_per_learner"]
    who = "1 learner(s)" if learners else "the trial's own process"
    assert f"one trial asks for 1 GPU(s) (1 for {who}) but the Ray cluster has 0" in message


def test_quantized_bounds_must_be_multiples_of_q():
    document = with_changes(search_space={"training.train_batch_size": {"qrandint": [1, 100, 10]}})
    message = problems_of(document)["search_space.training.train_batch_size"]
    assert message == "qrandint: low must be a multiple of q=10, got low=1, high=100"


def test_a_violation_between_two_settings_is_found_where_neither_extreme_shows_it():
    # At the low end (64 <= 256) and the high end (512 <= 4000) both settings are valid; only the mixed
    # corner (512 > 256) is not.
    problems = problems_of(
        with_changes(
            config={"training.num_epochs": 1},
            search_space={
                "training.minibatch_size": {"choice": [64, 512]},
                "training.train_batch_size_per_learner": {"choice": [256, 4000]},
                "training.lr": {"loguniform": [1.0e-5, 1.0e-3]},
            },
        )
    )
    (path, message), = problems.items()
    assert path == "search_space.training.minibatch_size, search_space.training.train_batch_size_per_learner"
    assert "minibatch_size=512" in message and "train_batch_size_per_learner=256" in message


def test_an_evaluation_metric_needs_an_evaluation_section():
    problems = problems_of(with_changes(metric={"name": "eval_return_mean", "mode": "max"}))
    assert "needs an 'evaluation' section" in problems["metric.name"]
    # Evaluated between the scheduler's rungs: ASHA's first rung (2000 env steps) falls on an evaluation.
    rlsweep.load_spec(with_changes(metric={"name": "eval_return_mean"}, evaluation={"episodes": 3, "every_env_steps": 1000}))


MULTI_AGENT_ENV = "ray.rllib.examples.envs.classes.multi_agent:MultiAgentCartPole"


def test_policies_setups_are_checked_against_the_env_and_the_space():
    two_setups = {"shared": {"map": {"*": "main"}}, "separate": {"map": {"0": "p0", "1": "p1"}, "train": ["p2"]}}
    problems = problems_of(with_changes(env=MULTI_AGENT_ENV, env_config={"num_agents": 2}, policies=two_setups))
    assert "p2" in problems["policies.separate.train"]
    assert "search_space.policies" in problems["policies"]

    problems = problems_of(
        with_changes(
            env=MULTI_AGENT_ENV,
            env_config={"num_agents": 3},
            policies={"shared": {"map": {"*": "main"}}, "separate": {"map": {"0": "p0", "1": "p1"}}},
            search_space={"policies": {"choice": ["shared", "separte"]}},
        )
    )
    assert "'separte' is not a setup" in problems["search_space.policies"]

    problems = problems_of(
        with_changes(env=MULTI_AGENT_ENV, env_config={"num_agents": 3}, policies={"map": {"0": "p0", "1": "p1"}})
    )
    assert "agents [2]" in problems["policies.map"]


def test_a_multi_agent_env_needs_policies_and_a_single_agent_env_refuses_them():
    problems = problems_of(with_changes(env=MULTI_AGENT_ENV, env_config={"num_agents": 2}))
    assert "multi-agent env (agents [0, 1])" in problems["policies"]
    problems = problems_of(with_changes(policies={"map": {"*": "main"}}))
    assert "single-agent" in problems["policies"]


def test_pbt_refuses_to_search_the_policies_setup():
    problems = problems_of(
        with_changes(
            env=MULTI_AGENT_ENV,
            env_config={"num_agents": 2},
            policies={"shared": {"map": {"*": "main"}}, "separate": {"map": {"0": "p0", "1": "p1"}}},
            search_space={"policies": {"choice": ["shared", "separate"]}, "training.lr": {"loguniform": [1e-5, 1e-3]}},
            searcher="random",
            scheduler="pbt",
        )
    )
    assert "policies setting" in problems["search_space.policies"]


def test_empty_strings_are_refused_where_a_name_or_a_uri_is_needed():
    problems = problems_of(with_changes(mlflow={"experiment": ""}, storage="", algorithm=""), preflight=False)
    assert problems["mlflow.experiment"] == "must be a non-empty string, got ''"
    assert problems["storage"] == "must be a non-empty string, got ''"
    assert problems["algorithm"] == "must be a non-empty string, got ''"


def test_a_null_inside_a_section_means_its_default():
    spec = rlsweep.load_spec(with_changes(budget={"env_steps": 4000, "trials": None}, evaluation={"episodes": None}), preflight=False)
    assert spec.budget.trials == 4 and spec.evaluation.episodes == 10
    spec = rlsweep.load_spec(TINY_SPEC, ["budget.trials="], preflight=False)
    assert spec.budget.trials == 4


def test_a_spec_that_cuts_its_own_rollout_fragments_keeps_one_env_per_runner():
    # 8 vectorized envs would make RLlib reject this valid config (fragment x envs > train batch).
    from rlsweep.trainables import settings_for

    spec = rlsweep.load_spec(
        with_changes(config={"env_runners.rollout_fragment_length": 200, "training.train_batch_size_per_learner": 4000}),
    )
    assert "env_runners.num_envs_per_env_runner" not in settings_for(spec, {})
    assert settings_for(rlsweep.load_spec(TINY_SPEC, preflight=False), {})["env_runners.num_envs_per_env_runner"] == 1
    default = rlsweep.load_spec(with_changes(config={}), preflight=False)
    assert settings_for(default, {})["env_runners.num_envs_per_env_runner"] == 8


def test_a_storage_override_that_is_a_uri_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    """``run(storage=...)`` (the CLI's ``--storage``) is held to the spec's storage rule: a URI would be written
    as a local folder named after it."""
    import rlsweep
    from rlsweep.errors import UsageError
    from tests.conftest import small_ppo

    monkeypatch.chdir(tmp_path)
    spec = rlsweep.load_spec(small_ppo("uri", tmp_path / "results", budget={"env_steps": 1000, "trials": 1}), preflight=False)
    with pytest.raises(UsageError, match=r"storage: must be a folder path, not a URI .*got 's3://bucket/sweeps'"):
        rlsweep.run(spec, storage="s3://bucket/sweeps")
    assert list(tmp_path.iterdir()) == []


def _nested_spec(levels: int) -> dict:
    """TINY_SPEC with mappings nested ``levels`` deep (the document itself is level 0): env_config is level 1,
    the deepest mapping's path is env_config.a.a... with ``levels`` keys."""
    nested: object = 1
    for _ in range(levels):
        nested = {"a": nested}
    document = copy.deepcopy(TINY_SPEC)
    document["env_config"] = nested
    return document


@pytest.mark.parametrize("source", ["dict", "yaml file"])
def test_a_spec_may_nest_40_levels_and_the_41st_is_refused_at_its_path(tmp_path, source):
    def load(document):
        if source == "dict":
            return rlsweep.load_spec(document, preflight=False)
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(document))
        return rlsweep.load_spec(path, preflight=False)

    load(_nested_spec(40))
    with pytest.raises(SpecError) as refused:
        load(_nested_spec(41))
    (problem,) = refused.value.problems
    assert problem.path == "env_config" + ".a" * 40 and "nests deeper than 40 levels" in problem.message
