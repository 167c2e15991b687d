"""rl-baselines3-zoo's hyperparameters as RLlib settings: the one mapping behind ``rlsweep convert --from zoo``
and ``searcher.warm_start: zoo``.

An rl-zoo3 hyperparameter file (``rl_zoo3/hyperparams/ppo.yml``) holds one entry per env id, in
Stable-Baselines3's names; rl-zoo3 (2.9.2, ``exp_manager.py``) turns ``lin_<x>`` into a schedule falling
linearly from x to 0 over ``n_timesteps``, ``normalize`` into a ``VecNormalize`` wrapper, and
``policy_kwargs`` (a Python expression) into the policy's arguments with ``eval``. rlsweep never runs the
file's strings: ``policy_kwargs`` and ``normalize`` are read with :mod:`ast`, literals and ``nn.<Class>``
names only. What an entry leaves out is Stable-Baselines3's default, which is what rl-zoo3 trains with, so
those defaults are written out too (RLlib's differ: PPO's lr 5e-5, 30 epochs, a KL penalty; SAC's actor lr
3e-5, 1,500 warm-up steps).

Each zoo name maps onto the RLlib setting of the installed RLlib's config classes (``training.lr``,
``training.minibatch_size``, ...), or is listed with why it is not carried: nothing is dropped silently.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from rlsweep.convert import DEFAULT_ENV_STEPS, Unmapped, one_line
from rlsweep.errors import UsageError, shorten
from rlsweep.spec import MAX_SPEC_BYTES, MAX_UPDATES_PER_ENV_STEP

#: Where the mapping was read from: rl-zoo3's and Stable-Baselines3's versions.
SOURCE_VERSIONS = "rl_zoo3 2.9.2, stable-baselines3 2.9.2"

#: rl-zoo3 file name (its algorithm) -> the RLlib algorithm it maps onto.
ALGORITHMS = {"ppo": "PPO", "sac": "SAC", "dqn": "DQN"}

#: rl-zoo3's other files, and why rlsweep does not convert them.
NOT_CONVERTED = {
    "a2c": "RLlib's new API stack has no A2C",
    "trpo": "RLlib has no TRPO",
    "td3": "RLlib's new API stack has no TD3",
    "ddpg": "RLlib's new API stack has no DDPG",
    "tqc": "RLlib has no TQC",
    "qrdqn": "RLlib has no QR-DQN",
    "crossq": "RLlib has no CrossQ",
    "ars": "RLlib's new API stack has no ARS",
    "her": "RLlib's new API stack has no hindsight experience replay",
    "ppo_lstm": "rl-zoo3's recurrent PPO (sb3-contrib) is not mapped",
}

#: Stable-Baselines3 2.9.2's defaults (``PPO.__init__``, ``SAC.__init__``, ``DQN.__init__``) and rl-zoo3's
#: ``n_envs`` of 1: what an entry that leaves a name out trains with.
SB3_DEFAULTS: dict[str, dict[str, Any]] = {
    "PPO": {"n_envs": 1, "learning_rate": 3e-4, "n_steps": 2048, "batch_size": 64, "n_epochs": 10, "gamma": 0.99,
            "gae_lambda": 0.95, "clip_range": 0.2, "ent_coef": 0.0, "vf_coef": 0.5, "max_grad_norm": 0.5},
    "SAC": {"n_envs": 1, "learning_rate": 3e-4, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 256,
            "tau": 0.005, "gamma": 0.99, "train_freq": 1, "gradient_steps": 1, "ent_coef": "auto"},
    "DQN": {"n_envs": 1, "learning_rate": 1e-4, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 32,
            "tau": 1.0, "gamma": 0.99, "train_freq": 4, "gradient_steps": 1, "target_update_interval": 10_000,
            "exploration_fraction": 0.1, "exploration_initial_eps": 1.0, "exploration_final_eps": 0.05,
            "max_grad_norm": 10},
}

#: The MlpPolicy's network when ``policy_kwargs`` leaves it out (SB3 2.9.2: ActorCriticPolicy, SACPolicy,
#: DQNPolicy).
POLICY_DEFAULTS: dict[str, dict[str, Any]] = {
    "PPO": {"net_arch": [64, 64], "activation_fn": "Tanh"},
    "SAC": {"net_arch": [256, 256], "activation_fn": "ReLU"},
    "DQN": {"net_arch": [64, 64], "activation_fn": "ReLU"},
}

#: ``torch.nn`` activation classes -> RLlib's ``fcnet_activation`` names. Any other ``nn.<Class>`` is passed
#: as its class name, which RLlib's ``get_activation_fn`` looks up in ``torch.nn`` first (ray 2.60).
ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh", "ELU": "elu", "SiLU": "silu", "Identity": "linear"}

#: Names with a fixed, settled meaning for one algorithm: the SB3 behaviour RLlib must be told about.
#: (RLlib PPO adds a KL penalty by default and clamps each sample's value loss at ``vf_clip_param`` (10),
#: which stops the value function learning from returns far from its estimate; SB3's PPO does neither
#: (``clip_range_vf: None``), and a value loss never reaches 1e10. RLlib DQN is dueling and double-Q by
#: default; SB3 is neither. SB3 samples its replay buffer uniformly; RLlib's default buffer is prioritized.)
SB3_BEHAVIOUR: dict[str, dict[str, Any]] = {
    "PPO": {"training.use_kl_loss": False, "training.vf_clip_param": 1e10},
    "SAC": {"training.replay_buffer_config.type": "EpisodeReplayBuffer"},
    "DQN": {"training.dueling": False, "training.double_q": False, "training.replay_buffer_config.type": "EpisodeReplayBuffer"},
}

#: SB3's orthogonal initialization of a PPO policy's hidden layers (``ortho_init``, True by default) as RLlib's
#: model settings: torch's in-place initializer names, which RLlib's ``get_initializer_fn`` looks up.
ORTHO_INIT: dict[str, Any] = {
    "rl_module.model_config.fcnet_kernel_initializer": "orthogonal_",
    "rl_module.model_config.fcnet_kernel_initializer_kwargs": {"gain": 2 ** 0.5},
    "rl_module.model_config.fcnet_bias_initializer": "zeros_",
}

#: What SB3 does that no setting of RLlib's default model reproduces, for every entry of the algorithm (so no
#: entry states it): said in the converted spec's header, since it can change what is learned.
SB3_NOT_REPRODUCED: dict[str, tuple[str, ...]] = {
    "PPO": (
        "SB3 initializes its action and value output layers orthogonally (gains 0.01 and 1, zero biases) unless "
        "policy_kwargs sets ortho_init=False; RLlib's PPO heads keep torch's initialization (its PPO catalog reads "
        "no initializer for them; the hidden layers' sqrt(2) is carried through fcnet_kernel_initializer)",
        "for continuous actions SB3 learns one state-independent log std starting at log_std_init (default 0); "
        "RLlib's default model outputs the log std from the network (rl_module.model_config.free_log_std: true "
        "learns one from 0, as SB3's default; the conversion does not set it)",
        "SB3's PPO optimizer is Adam with eps 1e-5; RLlib's learner builds torch's Adam with its default eps 1e-8",
    ),
    "SAC": (),  # SB3's critic is carried by the spec's critic: concat
    "DQN": (),
}

#: Names rl-zoo3 reads itself and that have no RLlib counterpart here, and why.
NOT_CARRIED = {
    "use_sde": "generalized state-dependent exploration (gSDE); RLlib has none",
    "sde_sample_freq": "gSDE's noise resampling; RLlib has no gSDE",
    "use_sde_at_warmup": "gSDE during warm-up; RLlib has no gSDE",
    "env_wrapper": "a gymnasium wrapper rl-zoo3 wraps the env in; register the wrapped env and name it in env",
    "vec_env_wrapper": "a vectorized-env wrapper rl-zoo3 adds; RLlib vectorizes envs itself",
    "frame_stack": "rl-zoo3 stacks frames with VecFrameStack; RLlib's frame-stacking connectors have no spec setting",
    "callback": "an SB3 callback class; rlsweep runs its own RLlib callbacks",
    "monitor_kwargs": "rl-zoo3's Monitor wrapper; rlsweep records episodes itself",
    "replay_buffer_class": "an SB3 replay buffer class",
    "replay_buffer_kwargs": "arguments of an SB3 replay buffer class",
    "clip_range_vf": "SB3 clips the value change; RLlib's vf_clip_param clips the value loss instead",
    "target_kl": "SB3 stops an update's epochs at this KL; RLlib's kl_target steers a KL penalty instead",
    "noise_type": "action noise for TD3/DDPG-style exploration; RLlib's SAC and DQN take none",
    "noise_std": "action noise for TD3/DDPG-style exploration; RLlib's SAC and DQN take none",
    "optimize_memory_usage": "an SB3 replay buffer memory saving; it changes no learning",
    "stats_window_size": "SB3's logging window",
}

#: Names that only change how something is stored or logged: listed, but a warm start still reproduces
#: the learning without them.
NO_LEARNING_EFFECT = frozenset({"optimize_memory_usage", "stats_window_size", "monitor_kwargs", "callback"})


@dataclass(frozen=True)
class Setting:
    """An RLlib setting the zoo entry sets, with the zoo names it follows from."""

    value: Any
    source: str
    default: bool = False  #: Stable-Baselines3's default, not the entry's own value


@dataclass(frozen=True)
class ZooMapping:
    """One zoo entry as RLlib settings.

    ``settings``: RLlib ``method.argument`` path -> :class:`Setting`; a value that changes over training
    is a linear or piecewise schedule in the spec's format (``{schedule: linear, from: x, to: 0.0}``).
    ``unmapped``: what the entry says and the settings do not carry, with why; ``approximate`` marks
    one with no effect on learning (a memory option, a gSDE option of an entry without gSDE).
    ``problems``: values that cannot be read (``policy_kwargs: ...``).
    """

    algorithm: str
    env: str
    settings: dict[str, Setting] = field(default_factory=dict)
    normalize: dict[str, bool] = field(default_factory=dict)
    env_steps: int | None = None
    env_config: dict[str, Any] | None = None
    unmapped: tuple[Unmapped, ...] = ()
    problems: tuple[str, ...] = ()
    updates_per_env_step: Setting | None = None  #: SAC and DQN: the spec's ``updates_per_env_step``

    def config(self) -> dict[str, Any]:
        """The settings as a spec's ``config:`` (path -> value)."""
        return {path: setting.value for path, setting in self.settings.items()}


def budget_env_steps(env_steps: int | None) -> int:
    """A converted spec's budget: the entry's n_timesteps, or rlsweep's default where the entry has none (the
    epsilon schedule of a DQN entry is laid over the same budget)."""
    return env_steps if env_steps is not None else DEFAULT_ENV_STEPS


def algorithm_for(stem: str) -> str | None:
    """The RLlib algorithm of an rl-zoo3 file name (``ppo`` -> ``PPO``), or None."""
    return ALGORITHMS.get(stem.lower())


def linear(start: float) -> dict[str, Any]:
    """rl-zoo3's ``lin_<start>``: from ``start`` at env step 0 to 0 at the budget (its ``SimpleLinearSchedule``
    of the remaining progress)."""
    return {"schedule": "linear", "from": start, "to": 0.0}


def start_value(value: Any) -> Any:
    """A schedule's value at env step 0; any other value as it is."""
    if isinstance(value, Mapping) and value.get("schedule") == "linear":
        return value["from"]
    if isinstance(value, Mapping) and value.get("schedule") == "piecewise":
        return value["points"][0][1]
    return value


class _Unreadable(ValueError):
    """A string of the file that is not the literal Python rlsweep reads without running it."""


@dataclass(frozen=True)
class _Activation:
    """``nn.<name>`` in ``policy_kwargs``."""

    name: str


def _literal(node: ast.expr) -> Any:
    """A literal, ``dict(k=v, ...)`` or ``nn.<Class>`` (also ``th.nn.`` / ``torch.nn.``), without running it."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        if any(k.arg is None for k in node.keywords):
            raise _Unreadable("dict(**...) is not a literal")
        return {k.arg: _literal(k.value) for k in node.keywords}
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _Unreadable("{**...} is not a literal")
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Attribute) and _dotted(node.value) in ("nn", "th.nn", "torch.nn"):
        return _Activation(node.attr)
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _Unreadable(f"{ast.unparse(node)!r} is not a literal or nn.<Class>") from None


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := _dotted(node.value)) is not None:
        return f"{base}.{node.attr}"
    return None


def read_kwargs(text: str) -> dict[str, Any]:
    """``"dict(net_arch=[64, 64], activation_fn=nn.ReLU)"`` (or a ``{...}`` literal) as a mapping, read with
    :mod:`ast`: never run.

    Raises:
        ValueError: the text is not such an expression.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise _Unreadable(f"not a Python expression ({type(exc).__name__})") from None
    try:
        value = _literal(tree.body)
    except RecursionError:
        raise _Unreadable("nested too deeply") from None
    except TypeError:  # an unhashable key: {[1]: 2}
        raise _Unreadable("a key that is not a name") from None
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise _Unreadable("not dict(name=value, ...) or {'name': value, ...}")
    return value


def _show(value: Any) -> Any:
    """A parsed value as the file wrote it, for messages (``nn.ReLU``, not the marker)."""
    if isinstance(value, _Activation):
        return f"nn.{value.name}"
    if isinstance(value, dict):
        return {k: _show(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_show(v) for v in value]
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: Any, minimum: int = 1) -> bool:
    return _is_number(value) and float(value).is_integer() and value >= minimum


def _layers(value: Any) -> bool:
    return isinstance(value, list) and all(_is_count(v) for v in value)


class _Mapper:
    """One entry's mapping, name by name, collecting settings, what is not carried and what cannot be read."""

    def __init__(self, algorithm: str, env: str, entry: Mapping[str, Any]) -> None:
        self.algorithm = algorithm
        self.env = env
        self.entry = {str(k): v for k, v in entry.items()}
        self.values = {**SB3_DEFAULTS[algorithm], **self.entry}
        self.settings: dict[str, Setting] = {}
        self.unmapped: list[Unmapped] = []
        self.problems: list[str] = []
        self.normalize: dict[str, bool] = {}
        self.env_config: dict[str, Any] | None = None
        self.env_steps: int | None = None
        self.updates_per_env_step: Setting | None = None
        self.done: set[str] = set()

    # --- helpers ------------------------------------------------------------------------------------
    def put(self, path: str, value: Any, *names: str, source: str | None = None) -> None:
        self.settings[path] = Setting(value, source or " * ".join(names), default=not any(n in self.entry for n in names))
        self.done.update(names)

    def drop(self, key: str, value: Any, reason: str, *, approximate: bool = False) -> None:
        self.unmapped.append(Unmapped(key, _show(value), reason, approximate=approximate))
        self.done.add(key.split(".")[0])

    def number(self, name: str, *, minimum: float | None = None) -> float | int | None:
        value = self.values.get(name)
        if not _is_number(value) or (minimum is not None and value < minimum):
            low = "" if minimum is None else f" >= {minimum}"
            self.problems.append(f"{name}: must be a finite number{low}, got {shorten(value)}")
            self.done.add(name)
            return None
        return value

    def count(self, name: str, minimum: int = 1) -> int | None:
        value = self.values.get(name)
        if not _is_count(value, minimum):
            self.problems.append(f"{name}: must be a whole number >= {minimum}, got {shorten(value)}")
            self.done.add(name)
            return None
        return int(value)

    def rate(self, name: str) -> Any:
        """A number, or rl-zoo3's ``<anything>_<x>`` (``lin_0.001``) as a linear schedule from x to 0."""
        value = self.values.get(name)
        if isinstance(value, str):
            # rl-zoo3 splits on "_" and makes any such string a linear schedule from its number.
            parts = value.split("_")
            try:
                start = float(parts[1]) if len(parts) == 2 else math.nan
            except ValueError:
                start = math.nan
            if not math.isfinite(start) or start < 0:
                self.problems.append(f"{name}: a schedule is lin_<number >= 0>, got {shorten(value)}")
                self.done.add(name)
                return None
            return linear(start)
        if _is_number(value) and value >= 0:
            return float(value)
        self.problems.append(f"{name}: must be a number >= 0 or lin_<number>, got {shorten(value)}")
        self.done.add(name)
        return None

    # --- the phases ---------------------------------------------------------------------------------
    def common(self) -> None:
        steps = self.entry.get("n_timesteps")
        if steps is not None:
            if _is_count(steps):
                self.env_steps = int(steps)
            else:
                self.problems.append(f"n_timesteps: must be a whole number of env steps >= 1, got {shorten(steps)}")
        self.done.add("n_timesteps")
        if (n_envs := self.count("n_envs")) is not None:
            self.put("env_runners.num_envs_per_env_runner", n_envs, "n_envs")
        policy = self.entry.get("policy", "MlpPolicy")
        if policy != "MlpPolicy":
            why = {"CnnPolicy": "RLlib builds its own CNN for image observations (its conv_filters), not SB3's NatureCNN",
                   "MultiInputPolicy": "RLlib's default model takes no Dict observations"}
            self.drop("policy", policy, why.get(str(policy), "an SB3 policy class; RLlib builds its default model"))
        self.done.add("policy")
        if "env_kwargs" in self.entry:
            kwargs = self.entry["env_kwargs"]
            if isinstance(kwargs, Mapping):
                self.env_config = {str(k): v for k, v in kwargs.items()}
            else:
                self.problems.append(f"env_kwargs: must be a mapping of gymnasium.make arguments, got {shorten(kwargs)}")
            self.done.add("env_kwargs")
        self.normalization()
        self.policy_kwargs()
        for name, reason in NOT_CARRIED.items():
            if name in self.entry and name not in self.done:
                self.drop(name, self.entry[name], reason, approximate=name in NO_LEARNING_EFFECT)

    def normalization(self) -> None:
        if "normalize" not in self.entry:
            return
        raw = self.entry["normalize"]
        self.done.add("normalize")
        if isinstance(raw, str):
            try:
                raw = read_kwargs(raw)
            except ValueError as exc:
                self.problems.append(f"normalize: cannot read {shorten(self.entry['normalize'])}: {exc}")
                return
        if isinstance(raw, bool):
            options: dict[str, Any] = {"norm_obs": raw, "norm_reward": raw}
        elif isinstance(raw, Mapping):
            options = {"norm_obs": True, "norm_reward": True, **raw}  # VecNormalize's defaults
        else:
            self.problems.append(f"normalize: must be true/false or dict(norm_obs=..., norm_reward=...), got {shorten(raw)}")
            return
        for key in ("norm_obs", "norm_reward"):
            if not isinstance(options[key], bool):
                self.problems.append(f"normalize.{key}: must be true or false, got {shorten(options[key])}")
                return
        # VecNormalize clips observations at 10, as RLlib's MeanStdFilter does by default.
        self.normalize["observations"] = options["norm_obs"]
        self.normalize["rewards"] = False
        if options["norm_reward"]:
            self.drop("normalize.norm_reward", True, "RLlib has no reward-normalizing connector (VecNormalize scales "
                                                      "rewards by the discounted return's spread)")
        for key, value in options.items():
            if key not in ("norm_obs", "norm_reward"):
                same = key == "clip_obs" and value == 10.0
                if not same:
                    self.drop(f"normalize.{key}", value, "a VecNormalize option RLlib's MeanStdFilter does not take")

    def policy_kwargs(self) -> None:
        raw = self.entry.get("policy_kwargs")
        self.done.add("policy_kwargs")
        kwargs: dict[str, Any] = {}
        if raw is not None:
            try:
                if not isinstance(raw, (str, Mapping)):
                    raise _Unreadable("not a string or a mapping")
                kwargs = read_kwargs(raw) if isinstance(raw, str) else {str(k): v for k, v in raw.items()}
            except ValueError as exc:
                self.problems.append(f"policy_kwargs: cannot read {shorten(raw)} ({exc}); rlsweep reads "
                                     "dict(name=literal, ...) and nn.<Class> without running it")
                return
        given = set(kwargs)
        defaults = POLICY_DEFAULTS[self.algorithm]
        self.network(kwargs.pop("net_arch", defaults["net_arch"]), "net_arch" in given)
        activation = kwargs.pop("activation_fn", _Activation(defaults["activation_fn"]))
        if isinstance(activation, _Activation):
            self.settings["rl_module.model_config.fcnet_activation"] = Setting(
                ACTIVATIONS.get(activation.name, activation.name), "policy_kwargs.activation_fn",
                default="activation_fn" not in given)
        else:
            self.problems.append(f"policy_kwargs.activation_fn: must be nn.<Class>, got {shorten(_show(activation))}")
        ortho = kwargs.get("ortho_init", True)
        if not isinstance(ortho, bool):
            self.problems.append(f"policy_kwargs.ortho_init: must be True or False, got {shorten(_show(ortho))}")
        elif self.algorithm == "PPO" and ortho:
            # SB3's ActorCriticPolicy.init_weights: every layer of its policy and value MLPs orthogonal with gain
            # sqrt(2) and zero biases. RLlib's PPO encoders take both from fcnet_*_initializer (ray 2.60,
            # core/models/catalog.py: _get_encoder_config); its heads take none (SB3_NOT_REPRODUCED).
            source = "policy_kwargs.ortho_init" if "ortho_init" in given else "SB3's PPO: ortho_init=True"
            for path, value in ORTHO_INIT.items():
                self.settings[path] = Setting(value, source, default="ortho_init" not in given)
        for key, value in kwargs.items():
            if reason := self.policy_reason(key, value):  # "": what RLlib's default model does already
                self.drop(f"policy_kwargs.{key}", value, reason, approximate=self.policy_approximate(key))

    def network(self, arch: Any, given: bool) -> None:
        path = "rl_module.model_config.fcnet_hiddens"
        if isinstance(arch, list) and len(arch) == 1 and isinstance(arch[0], dict):
            arch = arch[0]  # SB3 1.x's [dict(pi=..., vf=...)], which 2.x still reads
        if _layers(arch):
            self.settings[path] = Setting([int(v) for v in arch], "policy_kwargs.net_arch", default=not given)
            return
        second = {"PPO": "vf", "SAC": "qf"}.get(self.algorithm)
        if isinstance(arch, dict) and second and set(arch) <= {"pi", second} and "pi" in arch and _layers(arch["pi"]):
            pi = [int(v) for v in arch["pi"]]
            self.settings[path] = Setting(pi, "policy_kwargs.net_arch.pi", default=False)
            other = arch.get(second, [])
            if not (_layers(other) and [int(v) for v in other] == pi):
                self.drop(f"policy_kwargs.net_arch.{second}", other,
                          f"RLlib's default model gives the {'value function' if second == 'vf' else 'Q function'} "
                          f"the same layers as the policy: fcnet_hiddens is pi's {pi}")
            return
        self.problems.append(f"policy_kwargs.net_arch: must be a list of layer sizes"
                             f"{' or dict(pi=[...], ' + second + '=[...])' if second else ''}, got {shorten(_show(arch))}")

    def policy_reason(self, key: str, value: Any) -> str:
        if key == "ortho_init":
            return ""  # True: carried (ORTHO_INIT); False: torch's initialization, which RLlib's default model keeps
        if key == "log_std_init":
            return ("the initial log std of SB3's state-independent Gaussian; RLlib's default model outputs the log std "
                    "from the network" if self.algorithm == "PPO" else "used by gSDE only (use_sde); RLlib has no gSDE")
        if key in ("use_expln", "clip_mean", "full_std", "squash_output"):
            return "a gSDE option (use_sde); RLlib has no gSDE"
        if key in ("optimizer_class", "optimizer_kwargs"):
            return "SB3's optimizer; RLlib's learners use Adam"
        if key == "n_critics" and value == 2:
            return ""
        return "no RLlib model setting known to rlsweep's mapping"

    def policy_approximate(self, key: str) -> bool:
        # gSDE-only options of a SAC entry that does not use gSDE: nothing about learning is lost.
        return self.algorithm == "SAC" and key in ("log_std_init", "use_expln", "clip_mean") and not self.entry.get("use_sde")

    # --- per algorithm ------------------------------------------------------------------------------
    def ppo(self) -> None:
        if (lr := self.rate("learning_rate")) is not None:
            self.put("training.lr", lr, "learning_rate")
        n_steps, n_envs = self.count("n_steps"), self.count("n_envs")
        if n_steps is not None and n_envs is not None:
            # SB3's rollout is n_steps on each of n_envs envs.
            self.put("training.train_batch_size_per_learner", n_steps * n_envs, "n_steps", "n_envs")
        self.done.add("n_steps")
        if (batch := self.count("batch_size")) is not None:
            if n_steps is not None and n_envs is not None and batch >= n_steps * n_envs:
                # SB3 slices the rollout into minibatches of batch_size: one as large as the rollout, or larger,
                # takes the whole rollout once per epoch, n_epochs updates. RLlib does that with no minibatch
                # size (null: one update of the whole train batch per epoch). A minibatch of the rollout's size
                # would not: RLlib's train batch also holds a masked row per episode chunk (its value bootstrap),
                # so its minibatches cycle over more rows than the rollout (21-22 updates of 20 epochs on CartPole).
                self.put("training.minibatch_size", None, "batch_size")
            else:
                self.put("training.minibatch_size", batch, "batch_size")
        if (epochs := self.count("n_epochs")) is not None:
            self.put("training.num_epochs", epochs, "n_epochs")
        for name, path in (("gamma", "training.gamma"), ("gae_lambda", "training.lambda_"), ("ent_coef", "training.entropy_coeff"),
                           ("vf_coef", "training.vf_loss_coeff"), ("max_grad_norm", "training.grad_clip")):
            if (value := self.number(name, minimum=0)) is not None:
                self.put(path, float(value), name)
        if (clip := self.rate("clip_range")) is not None:
            # A lin_ schedule too: rlsweep's PPO learner takes clip_param on a schedule (trainables/_ppo_learner.py).
            self.put("training.clip_param", clip, "clip_range")
        if self.entry.get("normalize_advantage", True) is not True:
            self.drop("normalize_advantage", self.entry["normalize_advantage"], "RLlib's PPO always standardizes advantages")
        self.done.add("normalize_advantage")

    def off_policy(self) -> None:
        """SAC's and DQN's names."""
        batch = self.count("batch_size")
        if batch is not None:
            self.put("training.train_batch_size_per_learner", batch, "batch_size")
        if (buffer := self.count("buffer_size")) is not None:
            self.put("training.replay_buffer_config.capacity", buffer, "buffer_size")
        if (starts := self.count("learning_starts", 0)) is not None:
            self.put("training.num_steps_sampled_before_learning_starts", starts, "learning_starts")
        for name, path in (("tau", "training.tau"), ("gamma", "training.gamma")):
            if (value := self.number(name, minimum=0)) is not None:
                self.put(path, float(value), name)
        if "n_steps" in self.entry and (n_step := self.count("n_steps")) is not None:
            self.put("training.n_step", n_step, "n_steps")
        self.replay_ratio()

    def replay_ratio(self) -> None:
        """SB3 collects ``train_freq`` steps on each env, then takes ``gradient_steps`` (-1: one per env step
        collected). RLlib samples ``rollout_fragment_length`` steps on each env a round: with the same fragment,
        the spec's ``updates_per_env_step`` (``gradient_steps / (train_freq * n_envs)``) runs SB3's number of
        updates a round. Not RLlib's ``training_intensity``: that counts env steps replayed, so it would hold only
        for the entry's batch size and one env runner, and go stale where the user searches the batch or adds
        remote env runners; rlsweep sets it per trial from this."""
        train_freq = self.values.get("train_freq")
        self.done.update({"train_freq", "gradient_steps"})
        if isinstance(train_freq, list) and len(train_freq) == 2 and str(train_freq[1]) in ("step", "episode"):
            if train_freq[1] == "episode":
                self.drop("train_freq", train_freq, "SB3 trains after each N episodes; RLlib's env runners sample "
                                                    "fragments of env steps (RLlib's default intensity is kept)")
                return
            train_freq = train_freq[0]
        if not _is_count(train_freq):
            self.problems.append(f"train_freq: must be a whole number >= 1 or [n, step|episode], got {shorten(train_freq)}")
            return
        gradient_steps = self.values.get("gradient_steps")
        if not (_is_count(gradient_steps, 0) or gradient_steps == -1):
            self.problems.append(f"gradient_steps: must be a whole number >= 0, or -1, got {shorten(gradient_steps)}")
            return
        n_envs = self.values.get("n_envs")
        if not _is_count(n_envs):
            return
        collected = int(train_freq) * int(n_envs)
        updates = collected if gradient_steps == -1 else int(gradient_steps)
        self.put("env_runners.rollout_fragment_length", int(train_freq), "train_freq")
        if updates == 0:
            self.drop("gradient_steps", gradient_steps, "0 gradient steps trains nothing; RLlib always trains")
            return
        if updates > MAX_UPDATES_PER_ENV_STEP * collected:
            self.problems.append(f"gradient_steps: {updates:,} updates per {collected:,} env steps collected (train_freq * n_envs) "
                                 f"is more than rlsweep's {MAX_UPDATES_PER_ENV_STEP:,} per env step, got {shorten(gradient_steps)}")
            return
        names = ("gradient_steps", "train_freq", "n_envs")
        self.updates_per_env_step = Setting(updates / collected, "gradient_steps / (train_freq * n_envs)",
                                            default=not any(n in self.entry for n in names))

    def sac(self) -> None:
        self.off_policy()
        if (lr := self.rate("learning_rate")) is not None:
            # SB3's one optimizer rate for actor, critics and the entropy coefficient; RLlib has three.
            for path in ("training.actor_lr", "training.critic_lr", "training.alpha_lr"):
                self.put(path, lr, "learning_rate")
        ent_coef = self.values.get("ent_coef")
        self.done.add("ent_coef")
        if isinstance(ent_coef, str) and ent_coef.startswith("auto"):
            # "auto": tuned from 1.0, as RLlib's SAC does by default; "auto_0.1" from 0.1.
            if ent_coef != "auto":
                try:
                    initial = float(ent_coef.split("_", 1)[1])
                except (IndexError, ValueError):
                    self.problems.append(f"ent_coef: must be auto, auto_<number> or a number, got {shorten(ent_coef)}")
                    return
                self.put("training.initial_alpha", initial, "ent_coef")
        elif _is_number(ent_coef) and ent_coef > 0:
            # A fixed coefficient: RLlib's alpha starts there and never moves.
            self.put("training.initial_alpha", float(ent_coef), "ent_coef")
            self.put("training.alpha_lr", 0.0, "ent_coef")
        else:
            self.problems.append(f"ent_coef: must be auto, auto_<number> or a number > 0, got {shorten(ent_coef)}")
        target = self.entry.get("target_entropy", "auto")
        self.done.add("target_entropy")
        if target != "auto":
            if _is_number(target):
                self.put("training.target_entropy", float(target), "target_entropy")
            else:
                self.problems.append(f"target_entropy: must be auto or a number, got {shorten(target)}")
        interval = self.entry.get("target_update_interval", 1)
        self.done.add("target_update_interval")
        if interval != 1:
            self.drop("target_update_interval", interval, "SB3 counts it in gradient steps; RLlib's SAC updates its "
                                                           "target networks after every training step")

    def dqn(self) -> None:
        self.off_policy()
        if (lr := self.rate("learning_rate")) is not None:
            self.put("training.lr", lr, "learning_rate")
        if (interval := self.count("target_update_interval")) is not None:
            self.put("training.target_network_update_freq", interval, "target_update_interval")  # both in env steps
        if (clip := self.number("max_grad_norm", minimum=0)) is not None:
            self.put("training.grad_clip", float(clip), "max_grad_norm")
        fraction = self.number("exploration_fraction", minimum=0)
        start = self.number("exploration_initial_eps", minimum=0)
        end = self.number("exploration_final_eps", minimum=0)
        if None not in (fraction, start, end):
            # SB3: linear from the initial to the final epsilon over the first fraction of n_timesteps, then held.
            # Over the budget the spec gets: n_timesteps, or the default a converted spec without one runs.
            until = round(float(fraction) * budget_env_steps(self.env_steps))  # type: ignore[arg-type]
            # A schedule over no env steps is the final epsilon from the start: a number (a schedule needs two points).
            value = {"schedule": "piecewise", "points": [[0, float(start)], [until, float(end)]]} if until > 0 else float(end)  # type: ignore[arg-type]
            self.put("training.epsilon", value,
                     "exploration_initial_eps", "exploration_final_eps", "exploration_fraction", "n_timesteps",
                     source="exploration_initial_eps to exploration_final_eps over exploration_fraction * n_timesteps")

    def run(self) -> ZooMapping:
        self.common()
        {"PPO": self.ppo, "SAC": self.sac, "DQN": self.dqn}[self.algorithm]()
        for path, value in SB3_BEHAVIOUR[self.algorithm].items():
            self.settings.setdefault(path, Setting(value, f"SB3's {self.algorithm}", default=True))
        for name, value in self.entry.items():
            if name not in self.done and name not in SB3_DEFAULTS[self.algorithm]:
                self.drop(name, value, "no RLlib counterpart known to rlsweep's mapping")
        return ZooMapping(self.algorithm, self.env, self.settings, self.normalize, self.env_steps, self.env_config,
                          tuple(self.unmapped), tuple(self.problems), self.updates_per_env_step)


def map_entry(algorithm: str, env: str, entry: Any) -> ZooMapping:
    """One rl-zoo3 entry (``ppo.yml``'s ``CartPole-v1``) as RLlib settings, with what it does not carry.

    Args:
        algorithm: ``PPO``, ``SAC`` or ``DQN`` (:data:`ALGORITHMS`).
        env: The entry's env id, for messages.
        entry: The entry as YAML reads it.

    Returns:
        The mapping; values it cannot read are in its ``problems``, never raised, so every one is listed.
    """
    if not isinstance(entry, Mapping):
        return ZooMapping(algorithm, env, problems=(f"the entry must be a mapping of hyperparameters, got {shorten(entry)}",))
    return _Mapper(algorithm, env, entry).run()


def header(source: str, mapping: ZooMapping) -> str:
    """The comment a converted spec starts with: where it came from, the names SB3's defaults filled in,
    and everything not carried."""
    lines = [f"# Converted by `rlsweep convert --from zoo` from {one_line(source)}, entry {one_line(mapping.env)} "
             f"(rl-baselines3-zoo, {mapping.algorithm}; mapping read from {SOURCE_VERSIONS})."]
    settings = dict(mapping.settings)
    if mapping.updates_per_env_step is not None:
        settings["updates_per_env_step"] = mapping.updates_per_env_step
    defaults = [p for p, s in settings.items() if s.default]
    if defaults:
        lines.append("# Left out by the entry, set to what rl-zoo3 trains with (Stable-Baselines3's defaults and behaviour):")
        lines += [f"#   {path}: {shorten(settings[path].value)} ({one_line(settings[path].source)})" for path in defaults]
    if mapping.unmapped:
        lines.append("# Not carried over (set these by hand where they matter):")
        lines += [f"#   {item}" for item in mapping.unmapped]
    if SB3_NOT_REPRODUCED.get(mapping.algorithm):
        lines.append(f"# Stable-Baselines3 behaviour of every {mapping.algorithm} entry that RLlib's default model does not reproduce:")
        lines += [f"#   {one_line(text)}" for text in SB3_NOT_REPRODUCED[mapping.algorithm]]
    return "\n".join(lines) + "\n"


def read_file(path: str) -> Any:
    """An rl-zoo3 hyperparameter file as YAML reads it. Not the spec reader: rl-zoo3's files share entries
    with YAML merge keys (``<<: *pybullet-defaults``), which a spec may not use.

    Raises:
        UsageError: the file cannot be read, is larger than a spec may be, or is not YAML (with its line).
    """
    try:
        with open(path, "rb") as file:  # bounded: a device or a pipe has no size to check first
            data = file.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read it: {exc.strerror or exc}", one_line(path)) from None
    if len(data) > MAX_SPEC_BYTES:
        raise UsageError(f"holds more than {MAX_SPEC_BYTES:,} bytes; an rl-zoo3 file is far smaller", one_line(path))
    try:
        return yaml.safe_load(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(f"not UTF-8 text (byte {exc.start})", one_line(path)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f"{one_line(path)}:{mark.line + 1}:{mark.column + 1}" if mark else one_line(path)
        raise UsageError(f"invalid YAML: {exc.problem or exc}", at) from None
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise UsageError(f"invalid YAML: {shorten(str(exc))}", one_line(path)) from None


def _why_not(name: str) -> str:
    """Why rlsweep does not convert rl-zoo3's algorithm ``name``, as a parenthesis, or nothing."""
    why = NOT_CONVERTED.get(name.lower())
    return f" ({why})" if why else ""


def algorithm_of_file(stem: str, source: str) -> str:
    """The RLlib algorithm an rl-zoo3 file is for, from its name (``ppo.yml`` -> ``PPO``).

    Raises:
        UsageError: a file name rlsweep does not convert, with why (A2C, TD3, ...), the ones it does, and
            ``--algo`` for a file of another name.
    """
    algorithm = algorithm_for(stem)
    if algorithm is None:
        raise UsageError(f"the algorithm comes from the file's name, and rlsweep converts rl-zoo3's "
                         f"{', '.join(f'{s}.yml' for s in ALGORITHMS)} only, not {one_line(shorten(stem))}{_why_not(stem)}; "
                         f"for a file of another name, give its algorithm with --algo ({', '.join(ALGORITHMS)})", source)
    return algorithm


def algorithm_named(name: str) -> str:
    """The RLlib algorithm of rl-zoo3's algorithm name (``--algo ppo`` -> ``PPO``), which decides over the
    file's name, as rl-zoo3's own ``--algo ppo -conf FILE`` does.

    Raises:
        UsageError: at ``--algo``, a name rlsweep does not convert, with why (A2C, TD3, ...) and the choices.
    """
    algorithm = algorithm_for(name)
    if algorithm is None:
        raise UsageError(f"rlsweep converts rl-zoo3's {', '.join(ALGORITHMS)} only, not {one_line(shorten(name))}"
                         f"{_why_not(name)}", "--algo")
    return algorithm


def convert_zoo(document: Any, env: str, *, algorithm: str, source: str = "FILE") -> tuple[dict[str, Any], ZooMapping]:
    """The rlsweep spec for one entry of an rl-zoo3 hyperparameter file, and the mapping it came from
    (what it does not carry is the mapping's ``unmapped``).

    Args:
        algorithm: ``PPO``, ``SAC`` or ``DQN`` (:func:`algorithm_named`, or :func:`algorithm_of_file`).
        source: The file's name, for messages.

    Raises:
        UsageError: the document is no rl-zoo3 file, has no entry for ``env`` (the ids it has are listed), or
            holds values the mapping cannot read (each named).
    """
    source = one_line(source)
    entries = {str(k): v for k, v in document.items() if isinstance(v, Mapping)} if isinstance(document, Mapping) else {}
    if not entries:
        raise UsageError("expects an rl-baselines3-zoo hyperparameter file: a mapping of env ids to their hyperparameters", source)
    if env not in entries:
        fallback = [k for k in ("default", "atari") if k in entries]
        also = (f"; rl-zoo3 trains an env with no entry on the file's {' or '.join(map(repr, fallback))} entry "
                "(copy it under the env's id to convert it)") if fallback else ""
        raise UsageError(f"no entry for env {one_line(shorten(env))} in {source}; it has "
                         f"{shorten(sorted(k for k in entries if k not in fallback))}{also}", "--env")
    mapping = map_entry(algorithm, env, entries[env])
    if mapping.problems:
        raise UsageError(f"\n{source}: ".join(f"{one_line(env)}.{p}" for p in mapping.problems), source)
    unmapped = list(mapping.unmapped)
    steps = budget_env_steps(mapping.env_steps)
    if mapping.env_steps is None:
        unmapped.append(Unmapped("n_timesteps", None, f"the entry has none: budget.env_steps set to {DEFAULT_ENV_STEPS:,}; change it"))
    spec: dict[str, Any] = {"name": re.sub(r"[^A-Za-z0-9_.-]+", "-", f"zoo-{algorithm.lower()}-{env}"),
                            "algorithm": algorithm, "env": env}
    if mapping.env_config:
        spec["env_config"] = mapping.env_config
    spec["config"] = dict(sorted(mapping.config().items()))
    if any(mapping.normalize.values()):
        spec["normalize"] = dict(mapping.normalize)
    if algorithm == "SAC":  # SB3's critic: one MLP on the observation and the action (every SB3 SAC env is continuous)
        spec["critic"] = "concat"
    if mapping.updates_per_env_step is not None:
        spec["updates_per_env_step"] = mapping.updates_per_env_step.value
    spec.update(search_space={}, searcher="random", scheduler="fifo", budget={"env_steps": steps, "trials": 1},
                metric={"name": "return_mean", "mode": "max"})
    return spec, replace(mapping, env_steps=steps, unmapped=tuple(unmapped))
