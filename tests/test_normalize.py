"""``normalize:``: the spec section, RLlib's MeanStdFilter wired into the trial's config (frozen and synced on
the evaluation runner), and the statistics a checkpoint holds applied by ``load_policy``. No Ray runtime:
env runners are built in this process (``tests/test_normalize_slow.py`` trains and restores for real)."""

from __future__ import annotations

import copy
import pickle
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import rlsweep
from rlsweep.analysis._confirm import ConfirmationPlan, confirmation_document
from rlsweep.errors import SpecError, SweepError
from rlsweep.policy import MODULES_DIR, OBSERVATION_FILTER_DIRS, load_policy, observation_filters
from rlsweep.spec import parse_spec
from rlsweep.trainables._config import ObservationFilter, build_config, sync_evaluation_filter
from tests.conftest import TINY_SPEC, logged_to

OFFSET_ENV = "tests.envs.offset:OffsetCartPole"


def document(**sections):
    doc = copy.deepcopy(TINY_SPEC)
    doc.update(mlflow=None, **sections)
    return doc


# --- the spec ------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(observations=st.booleans(), rewards=st.booleans())
def test_normalize_takes_observations_and_refuses_rewards_naming_the_path(observations, rewards):
    spec, problems = parse_spec(document(normalize={"observations": observations, "rewards": rewards}))
    if rewards:
        assert spec is None
        assert [p.path for p in problems] == ["normalize.rewards"]
        assert "no reward-normalizing connector" in problems[0].message and "got true" in problems[0].message
    else:
        assert problems == [] and spec.normalize.observations is observations and spec.normalize.rewards is False


@settings(max_examples=30, deadline=None)
@given(value=st.one_of(st.integers(), st.text(max_size=5), st.none().map(lambda _: [1]), st.floats(allow_nan=False)))
def test_a_normalize_value_that_is_not_true_or_false_is_refused_at_its_path(value):
    _, problems = parse_spec(document(normalize={"observations": value}))
    assert [p.path for p in problems] == ["normalize.observations"]
    assert "true or false" in problems[0].message


def test_normalize_is_off_by_default_and_refuses_unknown_keys():
    spec, _ = parse_spec(document())
    assert spec.normalize.observations is False and spec.normalize.rewards is False
    _, problems = parse_spec(document(normalize={"obs": True}))
    assert [(p.path, "unknown key" in p.message) for p in problems] == [("normalize.obs", True)]
    with pytest.raises(SpecError, match="normalize.rewards"):
        rlsweep.load_spec(document(normalize={"rewards": True}), preflight=False)
    schema = rlsweep.spec.json_schema()
    assert "normalize" in schema["properties"]


def test_the_old_stacks_observation_filter_is_refused_pointing_to_normalize():
    config = {**TINY_SPEC["config"], "env_runners.observation_filter": "MeanStdFilter"}
    _, problems = parse_spec(document(config=config))
    assert [p.path for p in problems] == ["config.env_runners.observation_filter"]
    assert "normalize.observations: true" in problems[0].message and "MeanStdFilter" in problems[0].message
    space = {"env_runners.observation_filter": {"choice": ["NoFilter", "MeanStdFilter"]}}
    _, problems = parse_spec(document(search_space=space))
    assert [p.path for p in problems] == ["search_space.env_runners.observation_filter"]
    _, problems = parse_spec(document(config={**TINY_SPEC["config"], "env_runners.observation_filter": "NoFilter"}))
    assert problems == []


def test_a_confirmation_retrains_with_the_sweeps_normalization():
    plan = ConfirmationPlan(candidates=("a",), configs={"a": {}}, tuning_values={"a": 1.0}, tuning_seeds={"a": [1]},
                            test_seeds=(1000, 1001), rule="last", metric="return_mean", episodes=3)
    doc = confirmation_document(document(normalize={"observations": True}), plan)
    spec, problems = parse_spec(doc)
    assert problems == [] and spec.normalize.observations is True


# --- the trial's config ----------------------------------------------------------------------------------


def _pipeline(config, env):
    return config.build_env_to_module_connector(spaces={"__env_single__": (env.observation_space, env.action_space)})


def _mean_std_filters(pipeline):
    from ray.rllib.connectors.env_to_module import MeanStdFilter

    return [c for c in pipeline.connectors if isinstance(c, MeanStdFilter)]


@pytest.mark.parametrize("observations", [True, False])
def test_the_trial_config_puts_a_mean_std_filter_on_training_and_a_frozen_one_on_evaluation(observations):
    import gymnasium as gym

    spec = rlsweep.load_spec(document(normalize={"observations": observations}, evaluation={"episodes": 2}), preflight=False)
    config = build_config(spec, {"training.lr": 1e-3, "rl_module.model_config.fcnet_hiddens": [16]})
    env = gym.make("CartPole-v1")
    training, evaluation = _mean_std_filters(_pipeline(config, env)), _mean_std_filters(_pipeline(config.get_evaluation_config_object(), env))
    if not observations:
        assert training == [] and evaluation == []
        return
    assert [f._update_stats for f in training] == [True]
    assert [f._update_stats for f in evaluation] == [False]
    assert sync_evaluation_filter in config.callbacks_on_evaluate_start
    # The evaluation settings rlsweep sets stay as they were.
    assert config.evaluation_config["explore"] is False and config.evaluation_config["num_envs_per_env_runner"] == 1
    # The config goes into every checkpoint with plain pickle (a lambda would not).
    restored = pickle.loads(pickle.dumps(config.get_state()))
    assert isinstance(restored["_env_to_module_connector"], ObservationFilter)


# --- the statistics, from the env runners to the checkpoint to load_policy ---------------------------------


@pytest.fixture(scope="module")
def normalized_runners():
    """A training env runner that sampled OffsetCartPole with its MeanStdFilter, and an evaluation runner of
    the same config, built in this process as a trial with rlsweep's defaults builds them."""
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    spec = rlsweep.load_spec(document(env=OFFSET_ENV, search_space={}, normalize={"observations": True},
                                      evaluation={"episodes": 1}), preflight=False)
    config = build_config(spec, {})
    training = SingleAgentEnvRunner(config=config)
    training.sample(num_timesteps=300, random_actions=True)
    evaluation = SingleAgentEnvRunner(config=config.get_evaluation_config_object())
    yield training, evaluation
    training.stop()
    evaluation.stop()


def _filter_state(runner):
    from ray.rllib.core import COMPONENT_ENV_TO_MODULE_CONNECTOR

    return runner.get_state(components=COMPONENT_ENV_TO_MODULE_CONNECTOR)[COMPONENT_ENV_TO_MODULE_CONNECTOR]["MeanStdFilter"]


def _stats(state):
    return [(s["num_pushes"], s["mean_array"]) for s in state[None]["running_stats"]]


def test_the_evaluation_runner_takes_the_training_statistics_and_keeps_them(normalized_runners):
    training, evaluation = normalized_runners
    algorithm = SimpleNamespace(env_runner=training, eval_env_runner=evaluation, env_to_module_connector=None,
                                eval_env_runner_group=SimpleNamespace(num_remote_env_runners=lambda: 0))
    sync_evaluation_filter(algorithm)
    assert _stats(_filter_state(evaluation)) == _stats(_filter_state(training))
    assert _filter_state(training)[None]["running_stats"][0]["num_pushes"] >= 300
    before = _stats(_filter_state(evaluation))
    evaluation.sample(num_episodes=1, explore=False)
    assert _stats(_filter_state(evaluation)) == before  # evaluation episodes add nothing to them


def test_load_policy_normalizes_observations_as_the_env_runner_did(normalized_runners, tmp_path):
    import torch
    from ray.rllib.core import Columns

    from tests.envs.offset import OffsetCartPole

    training, evaluation = normalized_runners
    sync_evaluation_filter(SimpleNamespace(env_runner=training, eval_env_runner=evaluation, env_to_module_connector=None,
                                           eval_env_runner_group=SimpleNamespace(num_remote_env_runners=lambda: 0)))
    checkpoint = tmp_path / "checkpoint"
    training.module.save_to_path(checkpoint / MODULES_DIR / "default_policy")
    training.save_to_path(checkpoint / "env_runner")
    policy = load_policy(checkpoint)
    assert list(policy.observation_filters) == [None]

    # The evaluation runner's connector normalized the episode's first observation; load_policy does the same.
    episode = evaluation.sample(num_episodes=1, explore=False)[0]
    raw, _ = OffsetCartPole().reset()
    np.testing.assert_allclose(policy.normalize(raw), episode.get_observations(0), rtol=1e-6)
    assert abs(float(np.mean(raw))) > 100 > float(np.max(np.abs(policy.normalize(raw))))

    # act() feeds the module the normalized observation, never the raw one.
    with torch.no_grad():
        logits = policy.module.forward_inference({Columns.OBS: torch.as_tensor(policy.normalize(raw)[None])})[Columns.ACTION_DIST_INPUTS]
    assert policy.act(raw) == int(torch.argmax(logits[0]))


def test_load_policy_prints_no_rllib_notice_about_rllibs_own_module_constructor(normalized_runners, tmp_path):
    """RLlib 2.60's RLModule.__init__ builds the deprecated RLModuleConfig itself and says so once per process:
    ``rlsweep evaluate`` printed it. The notice is reset first, so this load is the first in the process."""
    from ray.util.debug import reset_log_once

    training, _ = normalized_runners
    checkpoint = tmp_path / "checkpoint"
    training.module.save_to_path(checkpoint / MODULES_DIR / "default_policy")
    with logged_to("ray._common.deprecation") as said:
        reset_log_once("RLModule(config=[RLModuleConfig object])")
        load_policy(checkpoint)
    assert said == []


def test_a_checkpoint_without_statistics_loads_as_it_is_and_broken_ones_are_named(normalized_runners, tmp_path):
    training, _ = normalized_runners
    checkpoint = tmp_path / "checkpoint"
    training.module.save_to_path(checkpoint / MODULES_DIR / "default_policy")
    assert observation_filters(checkpoint) == {} and load_policy(checkpoint).observation_filters == {}
    obs = np.array([1000.0, 1.0, 2.0, 3.0], dtype=np.float32)
    assert load_policy(checkpoint).normalize(obs) is obs
    folder = checkpoint / OBSERVATION_FILTER_DIRS[0]
    folder.mkdir(parents=True)
    (folder / "state.pkl").write_bytes(b"cut off")
    with pytest.raises(SweepError, match="cannot read the observation statistics"):
        load_policy(checkpoint)
