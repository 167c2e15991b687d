"""``rlsweep convert``: an experiment YAML of RLlib's old API (``rllib train -f file.yaml``, the old
``tuned_examples``) as an rlsweep spec. Every old key is mapped to the new API stack's ``method.argument``
path, or listed with why it was not: nothing is dropped silently.

An old file holds one or more experiments, each ``name: {run, env, stop, config, ...}``; ``grid_search``
values become a ``grid`` search space, ``stop: timesteps_total`` the env-step budget, ``episode_reward_mean``
(or ``env_runners/episode_return_mean``) ``return_mean``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlsweep.errors import UsageError, shorten

#: Old config key -> the new API stack's path, for every algorithm.
COMMON = {
    "num_workers": "env_runners.num_env_runners",
    "num_rollout_workers": "env_runners.num_env_runners",
    "num_env_runners": "env_runners.num_env_runners",
    "num_envs_per_worker": "env_runners.num_envs_per_env_runner",
    "num_envs_per_env_runner": "env_runners.num_envs_per_env_runner",
    "rollout_fragment_length": "env_runners.rollout_fragment_length",
    "batch_mode": "env_runners.batch_mode",
    "gamma": "training.gamma",
    "lr": "training.lr",
    "train_batch_size": "training.train_batch_size",
    "train_batch_size_per_learner": "training.train_batch_size_per_learner",
    "sgd_minibatch_size": "training.minibatch_size",
    "minibatch_size": "training.minibatch_size",
    "num_sgd_iter": "training.num_epochs",
    "num_epochs": "training.num_epochs",
    "grad_clip": "training.grad_clip",
    "lambda": "training.lambda_",
    "use_gae": "training.use_gae",
    "use_critic": "training.use_critic",
    "vf_loss_coeff": "training.vf_loss_coeff",
    "entropy_coeff": "training.entropy_coeff",
    "clip_param": "training.clip_param",
    "vf_clip_param": "training.vf_clip_param",
    "kl_coeff": "training.kl_coeff",
    "kl_target": "training.kl_target",
    "use_kl_loss": "training.use_kl_loss",
    "seed": "debugging.seed",
    "evaluation_interval": "evaluation.evaluation_interval",
    "evaluation_duration": "evaluation.evaluation_duration",
    "evaluation_duration_unit": "evaluation.evaluation_duration_unit",
    "evaluation_num_workers": "evaluation.evaluation_num_env_runners",
    "evaluation_num_env_runners": "evaluation.evaluation_num_env_runners",
    "metrics_smoothing_episodes": "reporting.metrics_num_episodes_for_smoothing",
    "metrics_num_episodes_for_smoothing": "reporting.metrics_num_episodes_for_smoothing",
    "timesteps_per_iteration": "reporting.min_sample_timesteps_per_iteration",
    "min_sample_timesteps_per_iteration": "reporting.min_sample_timesteps_per_iteration",
    "min_time_s_per_iteration": "reporting.min_time_s_per_iteration",
    "env_config": None,  # the spec's own env_config section
    # Off-policy (SAC, DQN).
    "tau": "training.tau",
    "n_step": "training.n_step",
    "target_entropy": "training.target_entropy",
    "initial_alpha": "training.initial_alpha",
    "twin_q": "training.twin_q",
    "training_intensity": "training.training_intensity",
    "target_network_update_freq": "training.target_network_update_freq",
    "learning_starts": "training.num_steps_sampled_before_learning_starts",
    "num_steps_sampled_before_learning_starts": "training.num_steps_sampled_before_learning_starts",
    "double_q": "training.double_q",
    "dueling": "training.dueling",
    # IMPALA / APPO.
    "vtrace": "training.vtrace",
    "vtrace_clip_rho_threshold": "training.vtrace_clip_rho_threshold",
    "vtrace_clip_pg_rho_threshold": "training.vtrace_clip_pg_rho_threshold",
    "broadcast_interval": "training.broadcast_interval",
}

#: ``optimization: {...}`` of the old SAC.
SAC_OPTIMIZATION = {
    "actor_learning_rate": "training.actor_lr",
    "critic_learning_rate": "training.critic_lr",
    "entropy_learning_rate": "training.alpha_lr",
}

#: ``model: {...}`` keys the new default model still has.
MODEL_KEYS = {
    "fcnet_hiddens", "fcnet_activation", "vf_share_layers", "use_lstm", "max_seq_len", "lstm_cell_size",
    "lstm_use_prev_action", "lstm_use_prev_reward", "conv_filters", "conv_activation", "free_log_std",
}

#: Old keys with no place in rlsweep on the new API stack, and why.
GONE = {
    "framework": "rlsweep trains with torch",
    "horizon": "removed from RLlib; the env's own time limit (gymnasium's TimeLimit) ends episodes",
    "soft_horizon": "removed from RLlib with horizon",
    "no_done_at_end": "removed from RLlib; gymnasium's terminated/truncated say it",
    "observation_filter": "the old stack's filter; on the new stack it is an env-to-module connector (MeanStdFilter)",
    "enable_connectors": "connectors are always on in the new API stack",
    "_disable_execution_plan_api": "the execution-plan API is gone",
    "vtrace_drop_last_ts": "removed from RLlib's IMPALA",
    "prioritized_replay": "set through training.replay_buffer_config ({type: PrioritizedEpisodeReplayBuffer})",
    "log_level": "rlsweep sets RLlib's logging",
    "num_cpus_per_worker": "use config env_runners.num_cpus_per_env_runner if a runner needs more than 1",
    "num_gpus_per_worker": "env runners need no GPU on the new stack",
    "simple_optimizer": "the old stack's optimizer choice",
    "callbacks": "rlsweep runs its own RLlib callbacks; a custom class goes in config callbacks.callbacks_class",
    "Q_model": "mapped only where it equals policy_model (one rl_module.model_config for both)",
    "policy_model": "mapped only where it equals Q_model (one rl_module.model_config for both)",
}

#: Old result keys a ``stop`` may name -> rlsweep's metric.
RESULT_KEYS = {
    "episode_reward_mean": "return_mean",
    "env_runners/episode_return_mean": "return_mean",
    "sampler_results/episode_reward_mean": "return_mean",
    "episode_reward_max": "return_max",
    "episode_reward_min": "return_min",
    "episode_len_mean": "episode_len_mean",
}

#: The env-step budget a converted spec gets where the old one had no ``timesteps_total``.
DEFAULT_ENV_STEPS = 100_000


@dataclass(frozen=True)
class Unmapped:
    """An old key the converted spec does not carry, and why."""

    key: str
    value: Any
    reason: str
    #: With no effect on learning (a memory option, a gSDE option of an entry without gSDE).
    approximate: bool = False

    def __str__(self) -> str:
        return f"{one_line(self.key)}: {shorten(self.value)}: {self.reason}"


#: Every character YAML (and a terminal) ends a line at, and how a comment writes it instead.
_LINE_BREAKS = str.maketrans({c: repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


def one_line(text: str) -> str:
    """``text`` with its line breaks escaped: a key or file name with a newline in it must not end the
    comment it is quoted in (and start a line of YAML)."""
    return text.translate(_LINE_BREAKS)


def _whole(value: Any) -> int | None:
    """A count given as an int or a float with no fraction, if it is >= 1 (True is not a count)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _finite(value: Any) -> float | None:
    """A finite number as a float (True is not a number here)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int past a float's range
        return None
    return number if math.isfinite(number) else None


def _grid(value: Any) -> list[Any] | None:
    if isinstance(value, Mapping) and set(value) == {"grid_search"} and isinstance(value["grid_search"], list):
        return list(value["grid_search"])
    return None


def _experiment(document: Any, name: str | None, source: str) -> tuple[str, Mapping[str, Any]]:
    if not isinstance(document, Mapping) or not document:
        raise UsageError("expects an RLlib experiment YAML: a mapping of experiment names to {run, env, config, ...}", source)
    if {"run", "env"} & set(document):
        return name or "converted", document  # one experiment written without its name
    # Names as text: YAML keys may be numbers too, and --experiment is text.
    experiments = {str(k): v for k, v in document.items() if isinstance(v, Mapping) and "run" in v}
    if not experiments:
        raise UsageError(f"no experiment with a 'run' key in it; top-level keys: {shorten(sorted(map(str, document)))}", source)
    if name is not None:
        if name not in experiments:
            raise UsageError(f"no experiment {shorten(name)}; the file has {shorten(sorted(experiments))}", "--experiment")
        return name, experiments[name]
    if len(experiments) > 1:
        raise UsageError(f"the file has {len(experiments)} experiments {shorten(sorted(experiments))}; pick one with --experiment", source)
    return next(iter(experiments.items()))


def convert(document: Any, experiment: str | None = None, *, source: str = "FILE") -> tuple[dict[str, Any], list[Unmapped]]:
    """The rlsweep spec for one experiment of an old RLlib YAML, and every key it does not carry.

    Args:
        source: The file's name, for messages.

    Raises:
        UsageError: the document is no RLlib experiment file, holds several and ``experiment`` names none,
            or a value convert carries over (the ``stop`` budget and targets, ``num_samples``) is not a
            number it can be; every such value is listed with its path in the file.
    """
    source = one_line(source)
    name, old = _experiment(document, experiment, source)
    # Paths in messages are the file's own: under the experiment's name where the file names it.
    where = "" if old is document else f"{one_line(name)}."
    problems: list[str] = []
    unmapped: list[Unmapped] = []
    config: dict[str, Any] = {}
    space: dict[str, Any] = {}

    def put(path: str, value: Any, key: str) -> None:
        if (points := _grid(value)) is not None:
            space[path] = {"grid": points}
        elif isinstance(value, Mapping) and len(value) == 1 and next(iter(value)) in ("grid_search",):
            unmapped.append(Unmapped(key, value, "grid_search needs a list of values"))
        else:
            config[path] = value

    old_config = old.get("config") or {}
    if not isinstance(old_config, Mapping):
        raise UsageError(f"{where}config: must be a mapping, got {shorten(old_config)}", source)
    spec: dict[str, Any] = {"name": str(name), "algorithm": str(old.get("run", "")), "env": old_config.get("env", old.get("env"))}
    for key, value in old_config.items():
        key = str(key)
        if key == "env":
            continue
        if key == "env_config":
            if isinstance(value, Mapping):
                spec["env_config"] = dict(value)
            continue
        if key == "model" and isinstance(value, Mapping):
            for model_key, model_value in value.items():
                if model_key in MODEL_KEYS:
                    put(f"rl_module.model_config.{model_key}", model_value, f"config.model.{model_key}")
                else:
                    unmapped.append(Unmapped(f"config.model.{model_key}", model_value, "the new default model has no such setting"))
            continue
        if key == "optimization" and isinstance(value, Mapping):
            for opt_key, opt_value in value.items():
                if opt_key in SAC_OPTIMIZATION:
                    put(SAC_OPTIMIZATION[opt_key], opt_value, f"config.optimization.{opt_key}")
                else:
                    unmapped.append(Unmapped(f"config.optimization.{opt_key}", opt_value, "no new-stack setting of that name"))
            continue
        if key in ("Q_model", "policy_model"):
            other = old_config.get("policy_model" if key == "Q_model" else "Q_model")
            if key == "Q_model" and isinstance(value, Mapping) and value == other:
                for model_key, model_value in value.items():
                    if model_key in MODEL_KEYS:
                        put(f"rl_module.model_config.{model_key}", model_value, f"config.Q_model.{model_key}")
                    else:
                        unmapped.append(Unmapped(f"config.Q_model.{model_key}", model_value, "the new default model has no such setting"))
            elif value != other:
                unmapped.append(Unmapped(f"config.{key}", value, GONE[key]))
            continue
        if key == "num_gpus":
            if value:
                put("learners.num_gpus_per_learner", value, "config.num_gpus")
            else:
                unmapped.append(Unmapped("config.num_gpus", value, "0 is the default: no GPU"))
            continue
        if key in COMMON and COMMON[key] is not None:
            put(COMMON[key], value, f"config.{key}")
        elif key in GONE:
            unmapped.append(Unmapped(f"config.{key}", value, GONE[key]))
        else:
            unmapped.append(Unmapped(f"config.{key}", value, "no mapping known to the new API stack; set its new name in config by hand"))

    _new_stack_rules(config, unmapped)
    budget, stop = _budget_and_stop(old.get("stop") or {}, unmapped, problems, f"{where}stop")
    grid_points = math.prod(len(v["grid"]) for v in space.values()) if space else 1
    samples = _whole(old.get("num_samples", 1))
    if samples is None:
        problems.append(f"{where}num_samples: must be a whole number >= 1, got {shorten(old.get('num_samples'))}")
    if problems:
        raise UsageError(f"\n{source}: ".join(problems), source)
    budget["trials"] = grid_points * (samples or 1)
    spec.update(config=config)
    if space:
        spec["search_space"] = space
        spec["searcher"] = "grid"
    else:
        # Nothing searched: the old file ran one configuration (num_samples times).
        spec["search_space"] = {}
        spec["searcher"] = "random"
    spec["scheduler"] = "fifo"
    spec["budget"] = budget
    spec["metric"] = {"name": "return_mean", "mode": "max"}
    if stop:
        spec["stop"] = stop
    _top_level(old, spec, unmapped)
    return spec, unmapped


def _new_stack_rules(config: dict[str, Any], unmapped: list[Unmapped]) -> None:
    """Values the old stack took and the new one refuses, changed to the nearest it takes, and listed."""
    n_step = config.get("training.n_step")
    fragment = config.get("env_runners.rollout_fragment_length")
    if isinstance(n_step, int) and isinstance(fragment, int) and fragment < n_step:
        config["env_runners.rollout_fragment_length"] = n_step
        unmapped.append(Unmapped("config.rollout_fragment_length", fragment,
                                 f"raised to n_step ({n_step}): the new API stack needs rollout_fragment_length >= n_step"))


def _budget_and_stop(old_stop: Any, unmapped: list[Unmapped], problems: list[str], where: str) -> tuple[dict[str, Any], dict[str, float]]:
    budget: dict[str, Any] = {}
    stop: dict[str, float] = {}
    if not isinstance(old_stop, Mapping):
        unmapped.append(Unmapped("stop", old_stop, "a stopper class cannot be converted; set budget and stop by hand"))
        old_stop = {}
    for key, value in old_stop.items():
        key = str(key)
        if key in ("timesteps_total", "num_env_steps_sampled_lifetime", "env_runners/num_env_steps_sampled_lifetime"):
            if (steps := _whole(value)) is None:
                problems.append(f"{where}.{one_line(key)}: must be a whole number of env steps >= 1, got {shorten(value)}")
            else:  # Tune stopped at the first criterion met: the smallest budget
                budget["env_steps"] = min(steps, budget.get("env_steps", steps))
        elif key in RESULT_KEYS:
            if (target := _finite(value)) is not None:
                stop[RESULT_KEYS[key]] = target
            else:
                problems.append(f"{where}.{one_line(key)}: must be a finite number (the {RESULT_KEYS[key]} that stops a "
                                f"trial), got {shorten(value)}")
        elif key == "training_iteration":
            unmapped.append(Unmapped("stop.training_iteration", value, "an iteration is different work per algorithm; rlsweep budgets in env steps (budget.env_steps)"))
        elif key == "time_total_s":
            unmapped.append(Unmapped("stop.time_total_s", value, "a per-trial time limit; rlsweep budgets trials in env steps and the sweep in time (budget.time_s)"))
        else:
            unmapped.append(Unmapped(f"stop.{key}", value, "no rlsweep metric of that name"))
    if "env_steps" not in budget and not problems:
        budget["env_steps"] = DEFAULT_ENV_STEPS
        unmapped.append(Unmapped("stop", dict(old_stop), f"no timesteps_total: budget.env_steps set to {DEFAULT_ENV_STEPS:,}; change it"))
    return budget, stop


def _top_level(old: Mapping[str, Any], spec: dict[str, Any], unmapped: list[Unmapped]) -> None:
    for key, value in old.items():
        if key in ("run", "env", "config", "stop", "num_samples"):
            continue
        if key == "keep_checkpoints_num":
            if (keep := _whole(value)) is not None:
                spec.setdefault("checkpoint", {})["keep"] = keep
            else:
                unmapped.append(Unmapped(key, value, "not a whole number >= 1: checkpoint.keep keeps its default"))
        elif key == "checkpoint_at_end":
            unmapped.append(Unmapped(key, value, "rlsweep always checkpoints at the end"))
        elif key == "checkpoint_freq":
            unmapped.append(Unmapped(key, value, "in iterations; rlsweep checkpoints every N env steps (checkpoint.every_env_steps; default a tenth of the budget)"))
        elif key == "local_dir" or key == "storage_path":
            spec["storage"] = value
        else:
            unmapped.append(Unmapped(key, value, "no rlsweep equivalent"))


def header(source: str, unmapped: list[Unmapped]) -> str:
    """The comment a converted spec starts with: where it came from and every key it does not carry."""
    lines = [f"# Converted by `rlsweep convert` from {one_line(source)} (RLlib's old experiment YAML)."]
    if unmapped:
        lines.append("# Not carried over (set these by hand where they matter):")
        lines += [f"#   {item}" for item in unmapped]
    return "\n".join(lines) + "\n"
