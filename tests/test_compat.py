"""What rlsweep changes or reads inside Ray, RLlib, Ax, MLflow and OpenTelemetry (``rlsweep._compat``), on
their own objects."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any


def test_a_finished_trial_keeps_only_the_metrics_statistics():
    from ray.tune.trainable.metadata import _TrainingRunMetadata

    from rlsweep import _compat

    metadata = _TrainingRunMetadata()
    for step in range(1, 4):
        for key in ("return_mean", "rllib/timers/training_iteration", "env_steps"):
            metadata.update_metric(key, float(step), step=step)
    before = len(metadata.get_json_state())

    class Finished:  # a Tune trial's shape as far as the trimmer looks: its run metadata
        run_metadata = metadata

    _compat.forget_finished_trial(Finished(), keep={"return_mean"})
    assert set(metadata.metric_analysis) == set(metadata.metric_n_steps) == {"return_mean"}
    assert metadata.metric_analysis["return_mean"]["max"] == 3.0
    assert len(metadata.get_json_state()) < before / 2  # the cached state was rebuilt without them


def test_a_finished_trial_keeps_its_rows_without_rllibs_diagnostics_but_those_the_spec_names(tmp_path):
    from ray.train import CheckpointConfig
    from ray.train._internal.checkpoint_manager import _CheckpointManager
    from ray.train._internal.session import _TrainingResult
    from ray.tune import Checkpoint
    from ray.tune.trainable.metadata import _TrainingRunMetadata

    from rlsweep import _compat

    def row(step: int) -> dict[str, Any]:
        return {"return_mean": float(step), "env_steps": 100 * step, "training_iteration": step, "hp/training.lr": 0.1,
                "rllib/learners/default_policy/entropy": 0.5, "rllib/timers/training_step": 0.01, "rllib/env_runners/x": 1.0}

    metadata = _TrainingRunMetadata()
    metadata.checkpoint_manager = _CheckpointManager(CheckpointConfig(num_to_keep=2, checkpoint_score_attribute="return_mean"))
    for step in range(1, 4):
        metadata.last_result = row(step)
        (tmp_path / f"checkpoint_{step}").mkdir()
        metadata.checkpoint_manager.register_checkpoint(_TrainingResult(Checkpoint(str(tmp_path / f"checkpoint_{step}")), row(step)))
    before = len(metadata.get_json_state())

    class Finished:
        run_metadata = metadata

    callback = _compat.forget_finished_trials_class()("return_mean", keep={"rllib/env_runners/x"}, drop_prefix="rllib/")
    callback.on_trial_complete(iteration=3, trials=[], trial=Finished())
    kept = {"return_mean", "env_steps", "training_iteration", "hp/training.lr", "rllib/env_runners/x"}
    manager = metadata.checkpoint_manager
    assert set(metadata.last_result) == kept and metadata.last_result["env_steps"] == 300
    assert [set(r.metrics) for r in manager.best_checkpoint_results] == [kept, kept]
    assert manager.latest_checkpoint_result.metrics["return_mean"] == 3.0
    assert [Path(r.checkpoint.path).name for r in manager.best_checkpoint_results] == ["checkpoint_2", "checkpoint_3"]
    assert len(metadata.get_json_state()) < before - 300  # the cached state was rebuilt without them
    # One pickled before keep and drop_prefix existed (a resumed older sweep) still forgets the statistics.
    older = _compat.forget_finished_trials_class()("return_mean")
    del older.keep, older.drop_prefix
    older.on_trial_error(iteration=3, trials=[], trial=Finished())


def test_the_lean_json_logger_forgets_a_trial_once_it_ended_and_pickles_by_reference(tmp_path):
    from rlsweep import _compat

    logger = _compat.lean_json_logger_class()()
    trial = object()
    logger._trial_configs[trial] = {"training.lr": 0.1}
    logger._trial_files[trial] = (tmp_path / "result.json").open("w")
    logger.log_trial_end(trial)
    assert trial not in logger._trial_configs and trial not in logger._trial_files
    assert type(pickle.loads(pickle.dumps(logger))).__name__ == "LeanJsonLoggerCallback"
    tracker = _compat.forget_finished_trials_class()("return_mean")
    assert pickle.loads(pickle.dumps(tracker)).metric == "return_mean"


def test_a_lookback_buffer_made_without_the_space_setter_equals_rllibs():
    import numpy as np
    from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer

    from rlsweep import _compat

    for data, lookback in ((np.full((2,), 3), 1), (np.ones((1,)), 0), (np.arange(3.0), 4), ([1.0, 2.0], 1)):
        made = _compat.lookback_buffer(copy.copy(data), lookback)
        rllibs = InfiniteLookbackBuffer(copy.copy(data), lookback=lookback)
        assert made == rllibs and list(vars(made)) == list(vars(rllibs)), (data, lookback)
        for name, value in vars(rllibs).items():
            assert type(vars(made)[name]) is type(value) and np.array_equal(vars(made)[name], value), name
        assert made.get(-1) == rllibs.get(-1) and len(made) == len(rllibs)


#: Seeds torch as RLlib does, then trains a small net with foreach Adam (as a trial's learner steps it) through
#: every optimizer call a trial makes (step, zero_grad, a step hook, state_dict into a new optimizer), with
#: torch's optimizers and seeding as ``torch_without_dynamo(on)`` leaves them; prints what was learned and
#: what the process loaded.
OPTIMIZER_SCRIPT = """
import json, sys
import torch
from rlsweep import _compat
now = _compat.torch_without_dynamo(sys.argv[1] == "on")
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(net.parameters(), lr=0.01, foreach=True)
hooked = []
optimizer.register_step_post_hook(lambda *args: hooked.append(1))
x, y = torch.randn(32, 4), torch.randn(32, 1)
for _ in range(5):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(net(x), y).backward()
    optimizer.step()
again = torch.optim.Adam(net.parameters(), lr=0.01, foreach=True)
again.load_state_dict(optimizer.state_dict())
optimizer.zero_grad()
torch.nn.functional.mse_loss(net(x), y).backward()
again.step()
kept = sorted(name for name, f in vars(torch.optim.Optimizer).items()
              if callable(getattr(f, "__wrapped__", None)) and getattr(f.__wrapped__, "__dynamo_disable", None) is f.__wrapped__)
report = {"without": now, "params": [p.tolist() for p in net.parameters()], "hooked": len(hooked), "kept": kept,
          "grad_mode": torch.is_grad_enabled(), "deterministic": torch.are_deterministic_algorithms_enabled(),
          "dynamo": "torch._dynamo" in sys.modules}
if sys.argv[1] == "on":  # then a trial that compiles, in the same process: torch's own back, the inductor told
    _compat.torch_without_dynamo(False)
    import torch._inductor.config
    report["inductor_deterministic"] = torch._inductor.config.deterministic
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(net(x), y).backward()
    optimizer.step()  # the optimizer made before: its hook still runs
    report["hooked_after"] = len(hooked)
    report["restored"] = [hasattr(torch.use_deterministic_algorithms, "_rlsweep_original"),
                          hasattr(torch.optim.Adam.step, "_rlsweep_original"),
                          [name for name, f in vars(torch.optim.Optimizer).items() if callable(getattr(f, "__wrapped__", None))
                           and getattr(f.__wrapped__, "__dynamo_disable", None) is f.__wrapped__]]
print(json.dumps(report))
"""


def test_torch_seeds_and_optimizes_without_its_compiler_loaded_and_learns_the_same():
    """A trial's torch (rlsweep._compat.torch_without_dynamo) loads no torch._dynamo (most of a trial's setup),
    and its optimizers learn bit for bit what torch's own do, hooks and grad mode as torch's; a trial that
    compiles gets torch's own back."""
    import json
    import subprocess
    import sys

    def run(mode: str) -> dict:
        done = subprocess.run([sys.executable, "-c", OPTIMIZER_SCRIPT, mode], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    without, torchs = run("on"), run("off")
    assert without["without"] and not without["dynamo"], without
    assert not torchs["without"] and torchs["dynamo"]  # what the process would have loaded
    assert without["kept"] == ["add_param_group", "load_state_dict", "state_dict", "zero_grad"] and torchs["kept"] == []
    assert without["params"] == torchs["params"]
    assert without["hooked"] == torchs["hooked"] == 5 and without["grad_mode"] and torchs["grad_mode"]
    assert without["deterministic"] and torchs["deterministic"]
    assert without["inductor_deterministic"] and without["hooked_after"] == 6, without
    assert without["restored"] == [False, False, []], without


def test_a_config_that_compiles_anywhere_keeps_torchs_own_functions():
    """What decides whether a trial may run torch without its compiler (rlsweep.trainables._config.compiles)."""
    from ray.rllib.algorithms.ppo import PPOConfig

    from rlsweep.trainables._config import compiles

    assert not compiles(PPOConfig())
    assert compiles(PPOConfig().framework(torch_compile_learner=True))
    assert compiles(PPOConfig().framework(torch_compile_worker=True))
    assert compiles(PPOConfig().evaluation(evaluation_config={"torch_compile_worker": True}))


def test_each_private_method_a_seam_hands_over_is_one_rllib_has_and_its_public_names_are_new():
    """A seam whose private method RLlib renamed would never be called (the lean update or the fast buffer would
    quietly be RLlib's own), and one whose public name RLlib took would change RLlib's class."""
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.utils.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer

    from rlsweep import _compat

    for seam, rllibs in ((_compat.LearnerUpdateSeams, PPOTorchLearner), (_compat.ReplaySamplerSeam, EpisodeReplayBuffer)):
        names = [name for name in vars(seam) if not name.startswith("__")]
        private = [name for name in names if name.startswith("_")]
        assert private and all(callable(getattr(rllibs, name, None)) for name in private), (seam, private)
        public = [name for name in names if not name.startswith("_")]
        assert public and not any(hasattr(rllibs, name) for name in public), (seam, public)


def test_the_settings_compat_reads_are_where_rllib_ax_and_opentelemetry_keep_them():
    """Each reader of a private setting gives back what was set, not its fallback: on an upgrade that moved one,
    this fails rather than a sweep quietly using a default."""
    import gymnasium as gym
    from ax.api import Client
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from ray.rllib.algorithms.sac import SACConfig
    from ray.rllib.algorithms.sac.sac_catalog import SACCatalog
    from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
    from ray.rllib.utils.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer

    from rlsweep import _compat

    config = SACConfig()
    assert _compat.configured_learner_class(config) is None and _compat.configured_learner_connector(config) is None
    assert config.learner_class is SACTorchLearner  # the public one says the default: it cannot tell unset from set

    def pieces(*args: Any) -> list:
        return []

    config.learners(learner_class=SACTorchLearner, learner_connector=pieces)
    assert _compat.configured_learner_class(config) is SACTorchLearner
    assert _compat.configured_learner_connector(config) is pieces

    assert _compat.replay_metrics_window(EpisodeReplayBuffer(capacity=10, metrics_num_episodes_for_smoothing=7), 100) == 7
    space = gym.spaces.Box(-1.0, 1.0, (3,))
    model = _compat.catalog_model_config(SACCatalog(space, space, {"fcnet_hiddens": [7, 5]}))
    assert model["fcnet_hiddens"] == [7, 5] and "fcnet_activation" in model  # the module's over RLlib's defaults

    client = Client(random_seed=3)
    assert _compat.ax_client_seed(client) == 3
    _compat.set_ax_client_seed(client, 5)
    assert _compat.ax_client_seed(client) == 5

    endpoint = "http://127.0.0.1:4318/v1/traces"
    assert _compat.otlp_endpoint(OTLPSpanExporter(endpoint=endpoint), "the OTLP endpoint") == endpoint
    assert _compat.otlp_endpoint(object(), "the OTLP endpoint") == "the OTLP endpoint"


def test_mlflows_sqlite_store_is_found_and_refuses_what_log_batch_refuses(tmp_path):
    """The store behind a client where it is SQLite (none for a file store), and MLflow's own checks of a metric
    and of a run, as its log_batch runs them before writing."""
    import pytest
    from mlflow import MlflowClient
    from mlflow.entities import Metric
    from mlflow.exceptions import MlflowException

    from rlsweep import _compat

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    store = _compat.mlflow_sqlite_store(client)
    assert store is not None and store.db_type == "sqlite"
    assert _compat.mlflow_sqlite_store(MlflowClient("http://127.0.0.1:9")) is None  # a server: MLflow's REST store
    assert _compat.mlflow_sqlite_store(object()) is None

    _compat.validate_mlflow_metric(Metric("return_mean", 1.5, 0, 3))
    with pytest.raises(MlflowException):
        _compat.validate_mlflow_metric(Metric("return_mean", "high", 0, 3))
    run = client.create_run(client.create_experiment("e")).info.run_id
    with store.ManagedSessionMaker() as session:
        _compat.check_mlflow_run_active(store, run, session)
    client.delete_run(run)
    with store.ManagedSessionMaker() as session, pytest.raises(MlflowException):
        _compat.check_mlflow_run_active(store, run, session)
