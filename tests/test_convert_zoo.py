"""``rlsweep convert --from zoo``: one entry of an rl-baselines3-zoo hyperparameter file (tests/data/zoo, entries
copied verbatim from rl_zoo3 2.9.2) as an rlsweep spec: every zoo name carried onto the RLlib setting it stands
for or listed with why, schedules and normalization in the spec's formats, and nothing in the file ever run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import rlsweep
from rlsweep._zoo import SB3_DEFAULTS, algorithm_of_file, convert_zoo, map_entry, read_kwargs
from rlsweep.cli import main
from rlsweep.errors import UsageError

DATA = Path(__file__).parent / "data" / "zoo"


def entry(stem: str, env: str) -> dict:
    return yaml.safe_load((DATA / f"{stem}.yml").read_text())[env]


def converted(stem: str, env: str) -> tuple[dict, dict[str, str]]:
    document = yaml.safe_load((DATA / f"{stem}.yml").read_text())
    spec, mapping = convert_zoo(document, env, algorithm=algorithm_of_file(stem, stem), source=f"{stem}.yml")
    return spec, {item.key: item.reason for item in mapping.unmapped}


def test_cartpole_ppo_maps_onto_rllibs_ppo_with_sb3s_defaults_and_a_linear_lr():
    spec, unmapped = converted("ppo", "CartPole-v1")
    assert (spec["algorithm"], spec["env"], spec["budget"]) == ("PPO", "CartPole-v1", {"env_steps": 100_000, "trials": 1})
    assert spec["config"] == {
        "env_runners.num_envs_per_env_runner": 8,
        "training.train_batch_size_per_learner": 256,  # n_steps 32 on each of 8 envs
        # batch_size 256 = the rollout: one update of the whole batch per epoch, as SB3 (not RLlib's cyclic
        # minibatches of 256 over the batch's 256 rows and its masked bootstrap rows).
        "training.minibatch_size": None,
        "training.num_epochs": 20,
        "training.gamma": 0.98,
        "training.lambda_": 0.8,
        "training.entropy_coeff": 0.0,
        "training.lr": {"schedule": "linear", "from": 0.001, "to": 0.0},  # lin_0.001
        "training.clip_param": {"schedule": "linear", "from": 0.2, "to": 0.0},  # lin_0.2, through rlsweep's PPO learner
        # Left out by the entry: SB3's defaults, what rl-zoo3 trains with (RLlib's own differ).
        "training.vf_loss_coeff": 0.5,
        "training.grad_clip": 0.5,
        "rl_module.model_config.fcnet_hiddens": [64, 64],
        "rl_module.model_config.fcnet_activation": "tanh",
        "training.use_kl_loss": False,  # SB3's PPO has no KL penalty
        "training.vf_clip_param": 1e10,  # nor a clamp on the value loss (RLlib's default: 10)
        # SB3's ortho_init=True for the hidden layers (RLlib's default: torch's initialization).
        "rl_module.model_config.fcnet_kernel_initializer": "orthogonal_",
        "rl_module.model_config.fcnet_kernel_initializer_kwargs": {"gain": 2 ** 0.5},
        "rl_module.model_config.fcnet_bias_initializer": "zeros_",
    }
    assert "normalize" not in spec
    assert unmapped == {}


def test_pendulum_sac_sets_all_three_rates_and_sb3s_update_ratio():
    spec, unmapped = converted("sac", "Pendulum-v1")
    config = spec["config"]
    assert (config["training.actor_lr"], config["training.critic_lr"], config["training.alpha_lr"]) == (0.001,) * 3
    assert spec["budget"]["env_steps"] == 20_000
    # SB3's defaults, not RLlib's (actor_lr 3e-5, 1,500 warm-up steps, tanh, a prioritized buffer).
    assert config["training.num_steps_sampled_before_learning_starts"] == 100
    assert config["training.train_batch_size_per_learner"] == 256 and config["training.tau"] == 0.005
    assert config["rl_module.model_config.fcnet_hiddens"] == [256, 256]
    assert config["rl_module.model_config.fcnet_activation"] == "relu"
    assert config["training.replay_buffer_config.type"] == "EpisodeReplayBuffer"
    # One gradient step per env step, as the spec's own field: RLlib's training_intensity follows each trial's batch.
    assert config["env_runners.rollout_fragment_length"] == 1 and spec["updates_per_env_step"] == 1.0
    assert "training.training_intensity" not in config
    assert spec["critic"] == "concat"  # SB3's critic: one MLP on the observation and the action
    assert unmapped == {}


def test_sac_with_gsde_and_a_fixed_entropy_coefficient():
    spec, unmapped = converted("sac", "MountainCarContinuous-v0")
    config = spec["config"]
    # ent_coef 0.1: RLlib's alpha starts there and never learns.
    assert (config["training.initial_alpha"], config["training.alpha_lr"]) == (0.1, 0.0)
    assert (config["training.actor_lr"], config["training.critic_lr"]) == (3e-4, 3e-4)
    # 32 gradient steps after every 32 env steps.
    assert config["env_runners.rollout_fragment_length"] == 32 and spec["updates_per_env_step"] == 1.0
    assert config["rl_module.model_config.fcnet_hiddens"] == [64, 64]
    assert set(unmapped) == {"use_sde", "policy_kwargs.log_std_init", "policy_kwargs.use_expln"}
    assert "gSDE" in unmapped["use_sde"]


def test_lin_normalize_and_policy_kwargs_map_to_a_schedule_the_normalize_section_and_the_model():
    spec, unmapped = converted("ppo", "MountainCarContinuous-v0")
    assert spec["normalize"] == {"observations": True, "rewards": False}
    assert "no reward-normalizing connector" in unmapped["normalize.norm_reward"]
    assert spec["config"]["training.train_batch_size_per_learner"] == 8 and spec["config"]["training.grad_clip"] == 5.0
    # batch_size 256 > the rollout of 8: SB3 takes the rollout as one minibatch, RLlib with no minibatch size.
    assert spec["config"]["training.minibatch_size"] is None
    # ortho_init=False is RLlib's default initialization: carried, not listed. log_std_init has no counterpart.
    assert set(unmapped) == {"normalize.norm_reward", "policy_kwargs.log_std_init", "use_sde"}
    assert not any("initializer" in path for path in spec["config"])

    spec, unmapped = converted("ppo", "HalfCheetah-v4")  # dict(pi=[256, 256], vf=[256, 256]), nn.ReLU
    assert spec["config"]["rl_module.model_config.fcnet_hiddens"] == [256, 256]
    assert spec["config"]["rl_module.model_config.fcnet_activation"] == "relu"

    spec, unmapped = converted("ppo", "CarRacing-v3")
    assert spec["config"]["training.lr"] == {"schedule": "linear", "from": 1e-4, "to": 0.0}
    assert spec["config"]["rl_module.model_config.fcnet_activation"] == "GELU"  # torch.nn's name, which RLlib looks up
    assert "normalize" not in spec  # norm_obs False; norm_reward True is listed
    assert {"policy", "env_wrapper", "frame_stack", "normalize.norm_reward", "use_sde", "sde_sample_freq"} <= set(unmapped)
    assert "wrapper" in unmapped["env_wrapper"] and "VecFrameStack" in unmapped["frame_stack"] and "gSDE" in unmapped["use_sde"]


def test_dqn_explores_with_sb3s_epsilon_schedule_and_is_neither_dueling_nor_double():
    spec, unmapped = converted("dqn", "CartPole-v1")
    config = spec["config"]
    # 1.0 to 0.04 over the first 16% of 50,000 env steps, then held.
    assert config["training.epsilon"] == {"schedule": "piecewise", "points": [[0, 1.0], [8000, 0.04]]}
    assert (config["training.dueling"], config["training.double_q"]) == (False, False)
    assert config["training.target_network_update_freq"] == 10 and config["training.lr"] == 0.0023
    # 128 gradient steps after every 256 env steps.
    assert config["env_runners.rollout_fragment_length"] == 256 and spec["updates_per_env_step"] == 0.5
    assert config["rl_module.model_config.fcnet_hiddens"] == [256, 256] and unmapped == {}


@pytest.mark.parametrize(("entry", "epsilon"), [
    # No exploration phase: the final epsilon from the first step, as a number (a schedule needs two points).
    ({"n_timesteps": 1000, "exploration_fraction": 0, "exploration_final_eps": 0.05}, 0.05),
    # No n_timesteps: over the default budget the converted spec runs (100,000 env steps), as SB3 over its n_timesteps.
    ({"exploration_fraction": 0.1}, {"schedule": "piecewise", "points": [[0, 1.0], [10_000, 0.05]]}),
])
def test_a_dqn_epsilon_the_entry_leaves_without_a_span_still_converts_to_a_valid_spec(entry, epsilon):
    spec, _ = convert_zoo({"CartPole-v1": entry}, "CartPole-v1", algorithm="DQN")
    assert spec["config"]["training.epsilon"] == epsilon
    rlsweep.load_spec(spec, preflight=False)


def test_a_net_arch_whose_value_function_differs_is_listed():
    mapping = map_entry("PPO", "X", {"policy_kwargs": "dict(net_arch=dict(pi=[64], vf=[128, 128]))"})
    assert mapping.config()["rl_module.model_config.fcnet_hiddens"] == [64]
    (item,) = mapping.unmapped
    assert item.key == "policy_kwargs.net_arch.vf" and item.value == [128, 128]


def test_the_header_says_where_each_value_came_from_and_what_is_not_carried(tmp_path, capsys):
    out = tmp_path / "spec.yaml"
    assert main(["convert", "--from", "zoo", str(DATA / "ppo.yml"), "--env", "Pendulum-v1", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "not converted: use_sde: True: generalized state-dependent exploration" in err
    text = out.read_text()
    assert text.startswith("# Converted by `rlsweep convert --from zoo`") and "entry Pendulum-v1" in text
    assert "#   training.vf_loss_coeff: 0.5 (vf_coef)" in text  # SB3's default, said
    assert "#   sde_sample_freq: 4: gSDE's noise resampling" in text
    assert yaml.safe_load(text)["config"]["training.gamma"] == 0.9
    # What every PPO entry trains with in SB3 and RLlib's default model does not do: said, after the entry's own.
    said = text.split("RLlib's default model does not reproduce:\n", 1)[1]
    assert said.startswith("#   SB3 initializes its action and value output layers orthogonally") and "state-independent log std" in said
    assert "#   rl_module.model_config.fcnet_kernel_initializer: 'orthogonal_' (SB3's PPO: ortho_init=True)" in text
    assert "#   SB3's PPO optimizer is Adam with eps 1e-5" in said


def test_an_unreadable_ortho_init_is_a_problem_not_a_guess():
    assert map_entry("PPO", "X", {"policy_kwargs": "dict(ortho_init='yes')"}).problems == (
        "policy_kwargs.ortho_init: must be True or False, got 'yes'",)
    # Written as True: the same initialization as the default, said to come from the entry.
    settings = map_entry("PPO", "X", {"policy_kwargs": "dict(ortho_init=True)"}).settings
    assert settings["rl_module.model_config.fcnet_kernel_initializer"].source == "policy_kwargs.ortho_init"


def test_a_converted_ppo_policy_starts_from_sb3s_orthogonal_hidden_layers():
    """The initializer names reach RLlib's PPO encoders: every hidden layer orthogonal with gain sqrt(2) and zero
    biases, as SB3's ActorCriticPolicy starts (the output heads keep torch's initialization, as the header says)."""
    import gymnasium as gym
    import torch

    from rlsweep.trainables._config import build_config

    spec = rlsweep.load_spec(converted("ppo", "CartPole-v1")[0], preflight=False)
    module = build_config(spec, {}).get_rl_module_spec(env=gym.make("CartPole-v1")).build()
    hidden = {name: p.detach() for name, p in module.named_parameters() if "encoder" in name}
    assert len(hidden) == 8  # two layers of weights and biases, for the policy's and the value function's MLPs
    for name, tensor in hidden.items():
        if name.endswith("bias"):
            assert torch.count_nonzero(tensor) == 0, name
        else:
            gram = tensor @ tensor.T if tensor.shape[0] <= tensor.shape[1] else tensor.T @ tensor
            torch.testing.assert_close(gram, 2 * torch.eye(min(tensor.shape)), atol=1e-4, rtol=0, msg=name)


def test_a_sac_spec_carries_sb3s_critic_and_its_header_no_longer_says_it_differs(tmp_path):
    out = tmp_path / "spec.yaml"
    assert main(["convert", "--from", "zoo", str(DATA / "sac.yml"), "--env", "Pendulum-v1", "-o", str(out)]) == 0
    written = out.read_text()
    assert yaml.safe_load(written)["critic"] == "concat"
    assert "SB3's critic" not in written


def test_the_cli_writes_a_spec_that_validates(tmp_path, capsys):
    out = tmp_path / "spec.yaml"
    assert main(["convert", "--from", "zoo", str(DATA / "sac.yml"), "--env", "Pendulum-v1", "-o", str(out)]) == 0
    assert f"{out}: valid (0 zoo setting(s) not carried over" in capsys.readouterr().err
    assert main(["validate", str(out), "--no-memory-check"]) == 0


def test_entries_that_share_values_through_yaml_merge_keys_convert(tmp_path, capsys):
    # rl-zoo3's ppo.yml shares its PyBullet entries' values: `AntBulletEnv-v0: {<<: *pybullet-defaults, ...}`.
    path = tmp_path / "ppo.yml"
    path.write_text("Pendulum-v1: &shared\n  n_envs: 4\n  n_timesteps: !!float 2e3\n  gamma: 0.9\n"
                    "Pendulum-v1-copy:\n  <<: *shared\n  gamma: 0.95\n")
    out = tmp_path / "spec.yaml"
    assert main(["convert", "--from", "zoo", str(path), "--env", "Pendulum-v1-copy", "-o", str(out)]) == 2  # no such env id
    assert "invalid YAML" not in capsys.readouterr().err
    config = yaml.safe_load(out.read_text())["config"]
    assert (config["env_runners.num_envs_per_env_runner"], config["training.gamma"]) == (4, 0.95)


# --- errors -----------------------------------------------------------------------------------------


def test_an_env_the_file_has_no_entry_for_names_the_ones_it_has(capsys):
    assert main(["convert", "--from", "zoo", str(DATA / "ppo.yml"), "--env", "Taxi-v3"]) == 2
    err = capsys.readouterr().err
    assert "--env: no entry for env 'Taxi-v3'" in err and "'CartPole-v1'" in err and "'Acrobot-v1'" in err
    assert "Traceback" not in err


def test_a_file_that_is_not_yaml_or_missing_is_named_with_its_line(tmp_path, capsys):
    bad = tmp_path / "ppo.yml"
    bad.write_text("CartPole-v1:\n  n_envs: [8\n")
    assert main(["convert", "--from", "zoo", str(bad), "--env", "CartPole-v1"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3:1: invalid YAML" in err and "Traceback" not in err
    assert main(["convert", "--from", "zoo", str(tmp_path / "sac.yml"), "--env", "Pendulum-v1"]) == 2
    assert "cannot read it: No such file or directory" in capsys.readouterr().err


def test_a_file_of_an_algorithm_rlsweep_does_not_train_is_refused_with_why(capsys):
    assert main(["convert", "--from", "zoo", str(DATA / "a2c.yml"), "--env", "CartPole-v1"]) == 2
    err = capsys.readouterr().err
    assert "ppo.yml, sac.yml, dqn.yml only, not 'a2c'" in err and "no A2C" in err


def test_the_zoo_options_go_together(capsys):
    assert main(["convert", "--from", "zoo", str(DATA / "ppo.yml")]) == 2
    assert "--env: --from zoo needs the entry" in capsys.readouterr().err
    assert main(["convert", str(DATA / "ppo.yml"), "--env", "CartPole-v1"]) == 2
    assert "--env: only with --from zoo" in capsys.readouterr().err


def test_a_tuned_file_of_any_name_converts_with_algo_as_rl_zoo3_takes_it(tmp_path, capsys):
    # rl-zoo3 trains `--algo sac -conf my_sac.yml`; the file's name decides only when --algo is not given.
    tuned = tmp_path / "my_tuned.yml"
    tuned.write_bytes((DATA / "sac.yml").read_bytes())
    assert main(["convert", "--from", "zoo", str(tuned), "--env", "Pendulum-v1"]) == 2
    assert "not 'my_tuned'; for a file of another name, give its algorithm with --algo (ppo, sac, dqn)" in capsys.readouterr().err
    by_name, by_algo = tmp_path / "by_name.yaml", tmp_path / "by_algo.yaml"
    assert main(["convert", "--from", "zoo", str(DATA / "sac.yml"), "--env", "Pendulum-v1", "-o", str(by_name)]) == 0
    assert main(["convert", "--from", "zoo", str(tuned), "--algo", "sac", "--env", "Pendulum-v1", "-o", str(by_algo)]) == 0
    assert yaml.safe_load(by_algo.read_text()) == yaml.safe_load(by_name.read_text())  # the same SAC spec
    assert "(rl-baselines3-zoo, SAC;" in by_algo.read_text().splitlines()[0]
    # --algo decides over the name: dqn.yml's CartPole entry read as PPO's hyperparameters (its DQN names listed)
    assert main(["convert", "--from", "zoo", str(DATA / "dqn.yml"), "--algo", "ppo", "--env", "CartPole-v1", "-o", str(by_algo)]) == 0
    assert yaml.safe_load(by_algo.read_text())["algorithm"] == "PPO"


@pytest.mark.parametrize(("argv", "says"), [
    (["--from", "zoo", "--env", "CartPole-v1", "--algo", "a2c"],
     "--algo: rlsweep converts rl-zoo3's ppo, sac, dqn only, not 'a2c' (RLlib's new API stack has no A2C)\n"),
    (["--from", "zoo", "--env", "CartPole-v1", "--algo", "ppo2"], "--algo: rlsweep converts rl-zoo3's ppo, sac, dqn only, not 'ppo2'\n"),
    (["--from", "zoo", "--env", "CartPole-v1", "--algo", ""], "--algo: rlsweep converts rl-zoo3's ppo, sac, dqn only, not ''\n"),
    (["--algo", "ppo"], "--algo: only with --from zoo (an old RLlib experiment names its own algorithm, as run:)\n"),
])
def test_a_wrong_algo_is_a_usage_error_naming_the_choices_before_anything_is_written(tmp_path, capsys, argv, says):
    out = tmp_path / "spec.yaml"
    assert main(["convert", str(DATA / "ppo.yml"), "-o", str(out), *argv]) == 2
    assert capsys.readouterr().err == says
    assert not out.exists()


@pytest.mark.parametrize("text", [
    "dict(net_arch=[64, 64], activation_fn=getattr(nn, 'ReLU'))",
    "{{[64]: 1}}",
    "dict(net_arch=[64, 64]",
    "__import__('pathlib').Path('{marker}').touch()",
    "dict(**{{'net_arch': [64]}})",
])
def test_policy_kwargs_that_are_not_literals_are_an_error_and_never_run(tmp_path, text):
    marker = tmp_path / "ran"
    document = {"CartPole-v1": {"policy": "MlpPolicy", "n_timesteps": 1000, "policy_kwargs": text.format(marker=marker)}}
    with pytest.raises(UsageError, match=r"ppo.yml: CartPole-v1.policy_kwargs: cannot read"):
        convert_zoo(document, "CartPole-v1", algorithm="PPO", source="ppo.yml")
    assert not marker.exists()


def test_every_bad_value_of_an_entry_is_named_at_once():
    document = {"CartPole-v1": {"n_timesteps": "lots", "learning_rate": "lin_fast", "n_steps": 0, "gamma": ".99"}}
    with pytest.raises(UsageError) as caught:
        convert_zoo(document, "CartPole-v1", algorithm="PPO", source="ppo.yml")
    message = str(caught.value)
    for name in ("n_timesteps", "learning_rate", "n_steps", "gamma"):
        assert f"CartPole-v1.{name}:" in message


# --- properties -------------------------------------------------------------------------------------

COUNTS = st.integers(1, 4096)
RATES = st.floats(1e-6, 1.0, allow_nan=False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_envs=st.integers(1, 64), n_steps=COUNTS, batch_size=COUNTS, n_epochs=st.integers(1, 50),
       learning_rate=RATES, clip=st.floats(0.01, 1.0), lin=st.booleans(), gamma=st.floats(0.0, 1.0))
# The boundary: a batch_size of the rollout's size takes it whole, one less slices it.
@example(n_envs=8, n_steps=32, batch_size=256, n_epochs=20, learning_rate=0.001, clip=0.2, lin=True, gamma=0.98)
@example(n_envs=8, n_steps=32, batch_size=255, n_epochs=20, learning_rate=0.001, clip=0.2, lin=True, gamma=0.98)
def test_any_ppo_entry_maps_its_numbers_exactly(n_envs, n_steps, batch_size, n_epochs, learning_rate, clip, lin, gamma):
    zoo = {"n_envs": n_envs, "n_steps": n_steps, "batch_size": batch_size, "n_epochs": n_epochs, "gamma": gamma,
           "learning_rate": f"lin_{learning_rate!r}" if lin else learning_rate, "clip_range": f"lin_{clip!r}" if lin else clip}
    mapping = map_entry("PPO", "X", zoo)
    config = mapping.config()
    assert not mapping.problems
    assert config["training.train_batch_size_per_learner"] == n_steps * n_envs
    # SB3 takes a rollout no larger than batch_size as one minibatch per epoch: RLlib with no minibatch size.
    minibatch = None if batch_size >= n_steps * n_envs else batch_size
    assert (config["training.minibatch_size"], config["training.num_epochs"], config["training.gamma"]) == (minibatch, n_epochs, gamma)
    assert config["training.lr"] == ({"schedule": "linear", "from": learning_rate, "to": 0.0} if lin else learning_rate)
    assert config["training.clip_param"] == ({"schedule": "linear", "from": clip, "to": 0.0} if lin else clip)
    # Every batch_size is carried exactly: nothing listed.
    assert not mapping.unmapped


@settings(max_examples=40, deadline=None)
@given(train_freq=st.integers(1, 256), gradient_steps=st.one_of(st.just(-1), st.integers(1, 256)),
       batch_size=st.integers(1, 2048), n_envs=st.integers(1, 16))
def test_off_policy_updates_per_env_step_are_sb3s(train_freq, gradient_steps, batch_size, n_envs):
    mapping = map_entry("SAC", "X", {"train_freq": train_freq, "gradient_steps": gradient_steps,
                                     "batch_size": batch_size, "n_envs": n_envs})
    updates = train_freq * n_envs if gradient_steps == -1 else gradient_steps
    # A round samples rollout_fragment_length = train_freq env steps on each of n_envs envs: SB3's updates a round.
    assert mapping.config()["env_runners.rollout_fragment_length"] == train_freq
    assert round(mapping.updates_per_env_step.value * train_freq * n_envs, 9) == updates
    assert "training.training_intensity" not in mapping.config()  # set per trial from the trial's batch


def test_a_converted_sac_entry_keeps_sb3s_updates_when_the_batch_is_searched_and_env_runners_added():
    """RLlib's own ratio would have to be written for one batch size and one env runner; the converted spec's
    updates_per_env_step gives 8 updates after each 8 env steps (the entry's train_freq 8, gradient_steps 8)
    at every batch the user's search draws, also with remote env runners."""
    from ray.rllib.algorithms.dqn.dqn import calculate_rr_weights

    from rlsweep.trainables._config import build_config

    document = {"Pendulum-v1": {"n_timesteps": 20000, "train_freq": 8, "gradient_steps": 8, "batch_size": 256}}
    spec, mapping = convert_zoo(document, "Pendulum-v1", algorithm="SAC", source="sac.yml")
    del spec["config"]["training.train_batch_size_per_learner"]
    spec["search_space"] = {"training.train_batch_size_per_learner": {"choice": [64, 256, 1024]}}
    loaded = rlsweep.load_spec(spec)
    for batch in (64, 256, 1024):
        assert calculate_rr_weights(build_config(loaded, {"training.train_batch_size_per_learner": batch})) == [1, 8]
    # Two remote env runners of 2 envs each (three CPUs a trial: built without the pre-flight's resource check):
    # a round samples 2 x 2 x 8 env steps and runs as many updates.
    spec["config"].update({"env_runners.num_env_runners": 2, "env_runners.num_envs_per_env_runner": 2})
    remote = rlsweep.load_spec(spec, preflight=False)
    assert calculate_rr_weights(build_config(remote, {"training.train_batch_size_per_learner": 64})) == [1, 32]


@pytest.mark.parametrize(("stem", "document", "env", "updates"), [
    # rl-zoo3's DQN CartPole-v1: 128 gradient steps after every 256 env steps (a ratio of 0.5).
    ("dqn", None, "CartPole-v1", 128),
    # Two envs, 8 env steps on each, then 10 gradient steps (0.625), as rl-zoo3's SAC CarRacing entry does.
    ("sac", {"Pendulum-v1": {"n_envs": 2, "train_freq": 8, "gradient_steps": 10, "batch_size": 64}}, "Pendulum-v1", 10),
])
def test_converted_entries_run_their_gradient_steps_a_round_in_rllib(stem, document, env, updates):
    from ray.rllib.algorithms.dqn.dqn import calculate_rr_weights

    from rlsweep.trainables._config import build_config

    document = document or yaml.safe_load((DATA / f"{stem}.yml").read_text())
    spec, _ = convert_zoo(document, env, algorithm=algorithm_of_file(stem, stem), source=f"{stem}.yml")
    assert calculate_rr_weights(build_config(rlsweep.load_spec(spec), {})) == [1, updates]


def test_a_ratio_that_is_no_binary_fraction_is_written_read_back_and_said_in_the_header(tmp_path, capsys):
    path = tmp_path / "sac.yml"
    path.write_text("Pendulum-v1:\n  n_timesteps: 3000\n  train_freq: 3\n  gradient_steps: 1\n")
    out = tmp_path / "spec.yaml"
    assert main(["convert", "--from", "zoo", str(path), "--env", "Pendulum-v1", "-o", str(out)]) == 0
    text = out.read_text()
    assert yaml.safe_load(text)["updates_per_env_step"] == 1 / 3
    assert rlsweep.load_spec(str(out)).updates_per_env_step == 1 / 3
    # SB3's n_envs default of 1 went into it: said as a default; train_freq and gradient_steps are the entry's.
    assert "#   updates_per_env_step:" not in text
    path.write_text("Pendulum-v1:\n  n_timesteps: 3000\n")
    assert main(["convert", "--from", "zoo", str(path), "--env", "Pendulum-v1", "-o", str(out)]) == 0
    assert "#   updates_per_env_step: 1.0 (gradient_steps / (train_freq * n_envs))\n" in out.read_text()


def test_more_updates_per_env_step_than_a_spec_may_ask_is_named():
    mapping = map_entry("SAC", "X", {"train_freq": 1, "gradient_steps": 1001, "batch_size": 64})
    assert mapping.problems == ("gradient_steps: 1,001 updates per 1 env steps collected (train_freq * n_envs) "
                                "is more than rlsweep's 1,000 per env step, got 1001",)
    assert map_entry("SAC", "X", {"train_freq": 1, "gradient_steps": 1000, "batch_size": 64}).updates_per_env_step.value == 1000


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
                       lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
                       max_leaves=8)
NAMES = st.sampled_from(sorted({*SB3_DEFAULTS["PPO"], *SB3_DEFAULTS["SAC"], *SB3_DEFAULTS["DQN"], "policy_kwargs", "normalize",
                                "policy", "env_kwargs", "n_timesteps", "use_sde", "target_entropy", "frame_stack"}))


@settings(max_examples=50, deadline=None)
@given(algorithm=st.sampled_from(["PPO", "SAC", "DQN"]), zoo=st.dictionaries(NAMES | st.text(max_size=8), JSONISH, max_size=6))
def test_any_entry_maps_or_names_each_value_it_cannot_read_and_never_raises(algorithm, zoo):
    mapping = map_entry(algorithm, "X", zoo)
    accounted = {s.source for s in mapping.settings.values()}
    for name in zoo:
        listed = (any(i.key == name or i.key.startswith(f"{name}.") for i in mapping.unmapped)
                  or any(p.startswith((f"{name}:", f"{name}.")) for p in mapping.problems))
        # Each name is carried (a setting names it as its source), listed, a problem, or a value RLlib's
        # default already is (policy MlpPolicy, ent_coef auto, normalize false, an empty policy_kwargs).
        assert (any(name in source.split(" ") for source in accounted) or listed
                or name in ("policy", "normalize", "policy_kwargs", "ent_coef", "target_entropy", "target_update_interval",
                            "n_timesteps", "env_kwargs") or name in SB3_DEFAULTS[algorithm]), (name, mapping)


@settings(max_examples=50, deadline=None)
@given(st.one_of(st.text(max_size=60), st.builds("{}{}{}".format, st.sampled_from(["dict(", "{", "dict(a=", "{'a': "]),
                                                 st.text(alphabet="[]{}()0123456789.,:=-_ nNabe'*", max_size=30),
                                                 st.sampled_from([")", "}", "])", ""]))))
def test_read_kwargs_reads_or_refuses_any_text_without_running_it(text):
    try:
        value = read_kwargs(text)
    except ValueError:
        return
    assert isinstance(value, dict)


# --- round trip through the spec parser ---------------------------------------------------------------


@pytest.mark.parametrize(("stem", "env"), [("ppo", "CartPole-v1"), ("ppo", "MountainCarContinuous-v0"), ("dqn", "CartPole-v1"),
                                           ("sac", "Pendulum-v1")])
def test_converted_specs_with_schedules_and_normalization_validate(stem, env):
    document = yaml.safe_load((DATA / f"{stem}.yml").read_text())
    if stem == "sac":  # SAC's lin_ entry is LunarLanderContinuous (Box2D, not installed here): the same schedule on Pendulum
        document[env]["learning_rate"] = "lin_7.3e-4"
    spec, _ = convert_zoo(document, env, algorithm=algorithm_of_file(stem, stem), source=f"{stem}.yml")
    loaded = rlsweep.load_spec(spec)
    if "normalize" in spec:
        assert loaded.normalize.observations is True  # type: ignore[attr-defined]
