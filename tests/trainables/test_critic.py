"""``critic: concat``: SAC's Q networks built as Stable-Baselines3 builds its critic (no Ray: the module is built
from the trial's config in this process), and refused where it cannot build."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch
from ray.rllib.core.columns import Columns

import rlsweep
from rlsweep.errors import SpecError
from rlsweep.trainables._config import build_config


def _module(critic: str, hiddens: list[int]):
    spec = rlsweep.load_spec({
        "name": "critic", "algorithm": "SAC", "env": "Pendulum-v1", "critic": critic,
        "config": {"rl_module.model_config.fcnet_hiddens": hiddens, "rl_module.model_config.fcnet_activation": "relu"},
        "search_space": {},
        "budget": {"env_steps": 1000}, "mlflow": None,
    }, preflight=False)
    env = gym.make("Pendulum-v1")
    torch.manual_seed(0)
    return build_config(spec, {}).get_rl_module_spec(env=env).build()


def _count(*parts: torch.nn.Module) -> int:
    return sum(p.numel() for part in parts for p in part.parameters())


@pytest.mark.parametrize("hiddens", [[256, 256], [400, 300], [64]])
def test_concat_gives_each_q_network_sb3s_size_and_rllib_keeps_its_own(hiddens):
    # SB3's critic on Pendulum (3 observations, 1 action): Linear(4, h0), ..., Linear(h_last, 1).
    sizes = [3 + 1, *hiddens, 1]
    sb3 = sum(a * b + b for a, b in zip(sizes, sizes[1:]))
    concat = _module("concat", hiddens)
    assert _count(concat.qf_encoder, concat.qf) == sb3
    assert _count(concat.qf_twin_encoder, concat.qf_twin) == sb3
    # Layer by layer: Linear(4, h0), ..., Linear(h_last, 1), the model's activation after each hidden layer.
    linears = [m for part in (concat.qf_encoder, concat.qf) for m in part.modules() if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == list(zip(sizes, sizes[1:]))
    activations = [m for m in concat.qf_encoder.modules() if isinstance(m, (torch.nn.ReLU, torch.nn.Tanh))]
    assert len(activations) == len(hiddens) and all(isinstance(m, torch.nn.ReLU) for m in activations)
    rllib = _module("rllib", hiddens)
    assert _count(rllib.qf_encoder, rllib.qf) > 2 * sb3  # two streams and a fusion network
    # The policy is RLlib's in both.
    assert _count(concat.pi_encoder, concat.pi) == _count(rllib.pi_encoder, rllib.pi)


def test_a_concat_q_value_depends_on_the_action_as_well_as_the_observation():
    module = _module("concat", [64, 64])
    obs = torch.tensor([[1.0, 0.0, 0.5]] * 2)
    batch = {Columns.OBS: obs, Columns.ACTIONS: torch.tensor([[-1.5], [1.5]])}
    with torch.no_grad():
        q = module.compute_q_values(batch)
        moved = module.compute_q_values({**batch, Columns.OBS: obs + 1.0})
    assert q.shape == (2,)
    assert abs(q[0] - q[1]) > 1e-3  # the action is an input
    assert (q - moved).abs().min() > 1e-3  # and so is the observation


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"algorithm": "PPO"}, "concat is SAC's Q network as Stable-Baselines3 builds it; PPO has none to replace"),
        ({"env": "CartPole-v1"}, "concat needs continuous actions (a 1-D Box action space)"),
        # Refused by its algorithm even where the env cannot be made.
        ({"algorithm": "PPO", "env": "NoSuchEnv-v0"}, "PPO has none to replace (remove critic, or set it to rllib)"),
        ({"critic": "sb3"}, "must be 'rllib' or 'concat', got 'sb3'"),
        ({"policies": {"map": {"*": "shared"}}}, "concat is for single-agent sweeps"),
    ],
)
def test_concat_is_refused_at_validate_where_it_cannot_build(changes, says):
    document = {"name": "critic", "algorithm": "SAC", "env": "Pendulum-v1", "critic": "concat", "search_space": {},
                "budget": {"env_steps": 1000}, "mlflow": None, **changes}
    with pytest.raises(SpecError) as caught:
        rlsweep.load_spec(document)
    (problem,) = [p for p in caught.value.problems if p.path == "critic"]
    assert says in problem.message
