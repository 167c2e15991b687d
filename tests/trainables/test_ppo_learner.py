"""rlsweep's PPO learner standardizes the advantages over the rows the loss trains on (no Ray runtime)."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.metrics import WEIGHTS_SEQ_NO

from rlsweep.spec import parse_spec
from rlsweep.trainables._config import build_config
from rlsweep.trainables._ppo_learner import RlsweepPPOTorchLearner, StandardizedPPOTorchLearner, StandardizeOverLossMask

OBS = gym.spaces.Box(-5.0, 5.0, (4,), np.float32)
ACT = gym.spaces.Discrete(2)


def chunk(length: int, *, terminated: bool, seed: int) -> SingleAgentEpisode:
    """An episode chunk as PPO's env runner hands it over: ongoing, or ended by the env."""
    rng = np.random.default_rng(seed)
    made = SingleAgentEpisode(
        observations=[rng.normal(size=4).astype(np.float32) for _ in range(length + 1)],
        actions=[int(a) for a in rng.integers(2, size=length)],
        rewards=[1.0] * length,
        extra_model_outputs={Columns.ACTION_LOGP: [float(v) for v in rng.normal(-0.7, 0.05, size=length)],
                             Columns.ACTION_DIST_INPUTS: list(rng.normal(0.0, 0.1, size=(length, 2)).astype(np.float32)),
                             WEIGHTS_SEQ_NO: [0] * length},  # the env runner's weights, one update behind
        terminated=terminated,
        observation_space=OBS,
        action_space=ACT,
        len_lookback_buffer=0,
    )
    made.to_numpy()
    return made


#: Late in CartPole's training: 8 envs' chunks of 32 env steps, no episode ending (a pole that stays up).
CHUNKS = [(32, False)] * 8


def learner_for(learner_class=None, **config):
    doc = {"algorithm": "PPO", "env": "CartPole-v1", "budget": {"env_steps": 10_000}, "mlflow": None,
           "config": {"training.gamma": 0.98, "training.lambda_": 0.8, **config}}
    if learner_class is not None:
        doc["config"]["learners.learner_class"] = learner_class
    config = build_config(parse_spec(doc)[0], {})
    torch.manual_seed(0)  # the same weights for every learner built here
    learner = config.build_learner(env=None, spaces={"__env__": (OBS, ACT), "default_policy": (OBS, ACT)})
    with torch.no_grad():  # a critic that has learned CartPole's values (about 1 / (1 - 0.98) = 50)
        learner.module["default_policy"].vf.net.mlp[0].bias.fill_(45.0)
    return config, learner


def advantages(learner) -> tuple[torch.Tensor, torch.Tensor]:
    episodes = [chunk(n, terminated=t, seed=i) for i, (n, t) in enumerate(CHUNKS)]
    batch = learner._learner_connector(rl_module=learner.module, batch={}, episodes=copy.deepcopy(episodes),
                                       shared_data={}, metrics=learner.metrics)["default_policy"]
    return batch[Postprocessing.ADVANTAGES], batch[Columns.LOSS_MASK].bool()


def test_every_ppo_trial_trains_with_advantages_standardized_over_the_rows_that_train():
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

    config, ours = learner_for()
    assert config.learner_class is RlsweepPPOTorchLearner
    got, mask = advantages(ours)
    # One bootstrap row per chunk, masked out of the loss (RLlib's AddOneTsToEpisodesAndTruncate).
    assert int((~mask).sum()) == len(CHUNKS) and int(mask.sum()) == sum(n for n, _ in CHUNKS)
    real = got[mask]
    assert abs(float(real.mean())) < 1e-5 and abs(float(real.std(unbiased=False)) - 1.0) < 1e-5

    # RLlib's own learner, the same weights and chunks: its standardization counts the bootstrap rows, so the
    # rows that train are offset and shrunk (ray-project/ray#57989). Standardizing is affine: restandardized
    # over the loss's rows, RLlib's advantages are ours.
    _, rllibs = learner_for(PPOTorchLearner)
    for name, value in ours.module["default_policy"].state_dict().items():
        assert torch.equal(value, rllibs.module["default_policy"].state_dict()[name]), name
    theirs, their_mask = advantages(rllibs)
    assert torch.equal(mask, their_mask)
    their_mean, their_std = float(theirs[mask].mean()), float(theirs[mask].std(unbiased=False))
    assert their_std < 0.5 and their_mean / their_std > 0.5, (their_mean, their_std)
    expected = (theirs - theirs[mask].mean()) / theirs[mask].std(unbiased=False)
    assert torch.allclose(got[mask], expected[mask], atol=1e-5)


def test_a_learner_class_the_spec_sets_stays():
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

    config, learner = learner_for(PPOTorchLearner)
    assert config.learner_class is PPOTorchLearner
    assert not any(isinstance(piece, StandardizeOverLossMask) for piece in learner._learner_connector.connectors)


@pytest.mark.parametrize("as_numpy", [False, True])
def test_the_piece_standardizes_each_module_over_its_mask_and_passes_the_rest(as_numpy):
    adv = np.array([1.0, 2.0, 3.0, -45.0, 5.0], np.float32)
    mask = np.array([True, True, True, False, True])
    wrap = (lambda a: a) if as_numpy else torch.as_tensor
    batch = {
        "p": {Postprocessing.ADVANTAGES: wrap(adv), Columns.LOSS_MASK: wrap(mask)},
        "no_mask": {Postprocessing.ADVANTAGES: wrap(adv)},
        "flat": {Postprocessing.ADVANTAGES: wrap(np.full(3, 2.0, np.float32)), Columns.LOSS_MASK: wrap(np.ones(3, bool))},
    }
    out = StandardizeOverLossMask()(rl_module=None, batch=batch, episodes=[])
    real = np.asarray(out["p"][Postprocessing.ADVANTAGES])[mask]
    np.testing.assert_allclose(real, (adv[mask] - 2.75) / np.std(adv[mask]), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(out["no_mask"][Postprocessing.ADVANTAGES]), adv)
    # All equal: RLlib's floor under the deviation (1e-4), not a division by zero.
    np.testing.assert_array_equal(np.asarray(out["flat"][Postprocessing.ADVANTAGES]), np.zeros(3, np.float32))


def updated(learner, *, corrupt: bool = False, minibatch: int = 48, shuffle: bool = True) -> tuple[dict[str, torch.Tensor], dict]:
    """The weights and the reported learner metrics after two updates of 3 epochs over 232 rows (224 env steps
    and a bootstrap row per chunk), on the same chunks and draws. Minibatches of 48 straddle the passes and
    the reshuffles; 58 end exactly where a pass does."""
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    if corrupt:  # a weight gone non-finite: the gradients come out nan, for RLlib's handling of them
        with torch.no_grad():
            learner.module["default_policy"].pi.net.mlp[0].weight[0, 0] = float("nan")
    episodes = [chunk(n, terminated=t, seed=i) for i, (n, t) in enumerate(CHUNKS[:6] + [(8, True), (24, False)])]
    for step in range(2):
        np.random.seed(step)
        results = learner.update(episodes=copy.deepcopy(episodes), num_epochs=3, minibatch_size=minibatch,
                                 shuffle_batch_per_epoch=shuffle, timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: 256 * (step + 1)})
    reported = {key: stats.peek() for key, stats in results["default_policy"].items() if "throughput" not in key}
    return learner.module["default_policy"].state_dict(), reported


@pytest.mark.parametrize(("case", "config", "run"), [
    ("straddling", {}, {}),
    ("a weight gone nan", {}, {"corrupt": True}),
    ("at the pass boundary, unshuffled", {}, {"minibatch": 58, "shuffle": False}),
    ("an lr schedule, held as a tensor", {"training.lr": {"schedule": "linear", "from": 1e-3, "to": 0.0}}, {}),
])
def test_the_lean_update_learns_and_reports_what_rllibs_update_does(case, config, run, monkeypatch):
    from ray.rllib.core.learner.torch.torch_learner import TorchLearner

    from rlsweep.trainables import _lean_update

    # RLlib's update against rlsweep's lean one, from the same weights (learner_for seeds them), with a gradient
    # norm to clip and to report: bit for bit the same weights, and the same learner metrics.
    config = {"training.grad_clip": 0.5, **config}
    reference = updated(learner_for(StandardizedPPOTorchLearner, **config)[1], **run)
    learner_config, ours = learner_for(**config)
    assert learner_config.learner_class is RlsweepPPOTorchLearner
    # The lean path runs: its minibatches, and RLlib's gradient handling only for a non-finite gradient.
    made, handed = [], []
    minibatches = _lean_update.CyclicMinibatches.__iter__
    monkeypatch.setattr(_lean_update.CyclicMinibatches, "__iter__", lambda self: (made.append(1), minibatches(self))[1])
    rllibs = TorchLearner.apply_gradients
    monkeypatch.setattr(TorchLearner, "apply_gradients", lambda self, grads: (handed.append(1), rllibs(self, grads))[1])
    got = updated(ours, **run)
    assert len(made) == 2
    assert bool(handed) == run.get("corrupt", False)
    for name, value in reference[0].items():
        torch.testing.assert_close(got[0][name], value, rtol=0, atol=0, equal_nan=True, msg=name)
    assert got[1].keys() == reference[1].keys()
    for key, value in reference[1].items():
        np.testing.assert_array_equal(got[1][key], value, err_msg=key)
    for snapshot in ("gradients_default_optimizer_global_norm", "mean_kl_loss", "diff_num_grad_updates_vs_sampler_policy"):
        assert snapshot in got[1], snapshot
    assert ours.module["default_policy"].training
    assert np.isnan(got[1]["total_loss"]) == run.get("corrupt", False)
