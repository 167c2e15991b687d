"""``critic: concat``: SAC's Q networks as Stable-Baselines3 builds them, through RLlib's own extension point.

RLlib's SAC (ray 2.60, ``SACCatalog.build_qf_encoder``) encodes the observation and the action in
two streams of ``fcnet_hiddens`` and fuses them through ``fusionnet_hiddens``: 658,433 parameters per Q network
on Pendulum-v1 with [256, 256]. Stable-Baselines3's critic is one MLP on the observation and the action
concatenated: 67,329. The catalog's docstring invites overriding the Q encoder; this one concatenates and
runs one MLP of ``fcnet_hiddens`` (its last layer the latent), and RLlib's Q head (``head_fcnet_hiddens``,
empty by default) maps that to the Q value: SB3's critic's shape. (SB3's activation is ReLU, RLlib's default
model's tanh: ``fcnet_activation`` decides, as for the policy.) Both Q networks, their targets and the
policy are otherwise RLlib's own. An env step costs about half the CPU on Pendulum-v1 (docs/benchmarks.md).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch
from ray.rllib.algorithms.sac.sac_catalog import SACCatalog
from ray.rllib.algorithms.sac.torch.default_sac_torch_rl_module import DefaultSACTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.models.base import ENCODER_OUT, Encoder
from ray.rllib.core.models.configs import MLPEncoderConfig
from ray.rllib.core.models.torch.encoder import TorchMLPEncoder
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from rlsweep import _compat


class ConcatQEncoder(TorchMLPEncoder):
    """One MLP on ``[observation, action]``, concatenated along the last axis."""

    def forward(self, inputs: dict, **kwargs: Any) -> dict:
        # Ray 2.60's TorchModel.forward only calls the model's _forward; this is the public one of the two.
        return {ENCODER_OUT: self.net(torch.cat([inputs[Columns.OBS], inputs[Columns.ACTIONS]], dim=-1))}


class ConcatCriticSACCatalog(SACCatalog):
    """RLlib's SAC catalog with the continuous-action Q encoder replaced by :class:`ConcatQEncoder`."""

    def build_qf_encoder(self, framework: str) -> Encoder:
        # RLlib's extension point: its own builds a Box action space's encoder as _build_qf_encoder_continuous.
        if not isinstance(self.action_space, gymnasium.spaces.Box):
            return super().build_qf_encoder(framework)
        model = _compat.catalog_model_config(self)
        hiddens = list(model["fcnet_hiddens"])
        self.qf_encoder_config = MLPEncoderConfig(
            input_dims=[int(np.prod(self.observation_space.shape)) + int(np.prod(self.action_space.shape))],
            hidden_layer_dims=hiddens[:-1],
            hidden_layer_activation=model["fcnet_activation"],
            hidden_layer_weights_initializer=model["fcnet_kernel_initializer"],
            hidden_layer_weights_initializer_config=model["fcnet_kernel_initializer_kwargs"],
            hidden_layer_bias_initializer=model["fcnet_bias_initializer"],
            hidden_layer_bias_initializer_config=model["fcnet_bias_initializer_kwargs"],
            output_layer_dim=self.latent_dims[0],
            output_layer_activation=model["fcnet_activation"],
            output_layer_weights_initializer=model["fcnet_kernel_initializer"],
            output_layer_weights_initializer_config=model["fcnet_kernel_initializer_kwargs"],
            output_layer_bias_initializer=model["fcnet_bias_initializer"],
            output_layer_bias_initializer_config=model["fcnet_bias_initializer_kwargs"],
        )
        return ConcatQEncoder(self.qf_encoder_config)


def concat_critic_spec() -> RLModuleSpec:
    """The module spec a SAC config takes for ``critic: concat`` (RLlib's module, this catalog)."""
    return RLModuleSpec(module_class=DefaultSACTorchRLModule, catalog_class=ConcatCriticSACCatalog)


def concat_critic_problem(algorithm: str, observation_space: Any = None, action_space: Any = None) -> str | None:
    """Why ``critic: concat`` cannot build for this algorithm (and, given its spaces, this env), or None."""
    if algorithm != "SAC":
        return f"is SAC's Q network as Stable-Baselines3 builds it; {algorithm} has none to replace"
    if observation_space is None or action_space is None:
        return None
    if not isinstance(action_space, gymnasium.spaces.Box) or len(action_space.shape) != 1:
        return (f"needs continuous actions (a 1-D Box action space) to concatenate with the observation; the "
                f"env's action space is {action_space}")
    if not isinstance(observation_space, gymnasium.spaces.Box) or len(observation_space.shape) != 1:
        return (f"needs a flat observation (a 1-D Box) to concatenate with the action; the env's observation "
                f"space is {observation_space}")
    return None
