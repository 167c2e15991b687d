"""Every private internal of Ray, RLlib or another dependency that rlsweep touches, in one place, each with
the version it was written against and why. Tested against Ray 2.60.0 (``constraints.txt``), torch 2.13, Ax
1.3 and OpenTelemetry's exporter 1.45; on an upgrade, this file is the list to check. Nothing else in the
package names another package's private attribute, module or method, nor overrides one: a class that changes
a private method of RLlib's does it through a mixin here that hands it to a method of public name
(:class:`LearnerUpdateSeams`, :class:`ReplaySamplerSeam`). ``tests/test_structure.py`` finds any other use.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any


# --- RLlib learners (ray.rllib.core.learner.learner.Learner) ------------------------------------------


def optimizer_learning_rates(learner: Any) -> dict[Any, Any]:
    """optimizer -> its learning-rate schedule. Ray 2.60: ``Learner._optimizer_lr_schedules``.

    Why: PBT restores a trial from another's checkpoint, whose optimizer state carries the donor's rate;
    RLlib resets it from the config only after the next update (measured, PPO), so rlsweep resets it.
    """
    return dict(getattr(learner, "_optimizer_lr_schedules", {}) or {})


def entropy_schedulers(learner: Any) -> dict[Any, Any]:
    """module id -> its entropy-coefficient ``Scheduler``, for a learner that schedules one (PPO; empty for
    others). Ray 2.60: ``PPOLearner.entropy_coeff_schedulers_per_module``, a default dict that builds a
    module's scheduler, at its env step 0 value, the first time the loss asks for it.

    Why: after a restore (resume, retry, PBT) the scheduler is new and PPO updates it only after the next
    gradient update, so the first update would use the schedule's start; rlsweep sets it to the restored step.
    """
    table = getattr(learner, "entropy_coeff_schedulers_per_module", None)
    if table is None:
        return {}
    return {module_id: table[module_id] for module_id in learner.module.keys()}


class DropMessage(logging.Filter):
    """Drops a logger's records whose message starts with ``start``: one notice of Ray's or RLlib's that the
    user cannot act on, while the logger's other records still print."""

    def __init__(self, start: str) -> None:
        super().__init__()
        self.start = start

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.start)


def drop_message(name: str, start: str) -> None:
    """Install :class:`DropMessage` for ``start`` on the logger called ``name``, once."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, DropMessage) and f.start == start for f in logger.filters):
        logger.addFilter(DropMessage(start))


#: Ray 2.60's ``RLModule.__init__`` builds the deprecated ``RLModuleConfig`` itself for every module
#: (core/rl_module/rl_module.py:463, "TODO (sven): Deprecate this") and says so once per process: a notice
#: about RLlib's own code, not the caller's, which ``rlsweep evaluate`` / ``confirm`` / ``load_policy`` printed.
#: The logger's name and the notice's start, as :func:`drop_message` takes them.
MODULE_CONFIG_NOTICE = ("ray._common.deprecation", "DeprecationWarning: `RLModule(config=[RLModuleConfig object])`")

#: Ray 2.60 warns on every local start that it enabled token authentication for the local runtime (a default
#: the user cannot act on here: rlsweep's runtime listens on this machine only), from a logger named for its
#: private module. The logger's name and the notice's start, as :func:`drop_message` takes them.
TOKEN_AUTHENTICATION_NOTICE = ("ray._private.authentication.authentication_token_setup",
                               "Token authentication is enabled for this Ray cluster")

#: The logger of Tune's syncer, which says when it could not upload a trial's or the experiment's files. Ray 2.60
#: names it for its private module (``logging.getLogger(__name__)`` in ``ray/train/_internal/syncer.py``).
TUNE_SYNCER_LOGGER = "ray.train._internal.syncer"


def set_optimizer_learning_rate(learner: Any, optimizer: Any, value: float) -> None:
    """Ray 2.60: ``Learner._set_optimizer_lr`` (no public setter)."""
    learner._set_optimizer_lr(optimizer, value)


def optimizer_learning_rate(learner: Any, optimizer: Any) -> float:
    """Ray 2.60: ``Learner._get_optimizer_lr`` (the rate the optimizer holds now, not the config's)."""
    return float(learner._get_optimizer_lr(optimizer))


def local_learner(learner_group: Any) -> Any:
    """The learner running in this process (``num_learners=0``), or None. Ray 2.60:
    ``LearnerGroup._learner``. Why: its metrics logger times the learner's updates, which the timing
    split taps."""
    return getattr(learner_group, "_learner", None) if learner_group is not None else None


def tap_log_time(logger: Any, on_block: Callable[[Any, Any], Any]) -> None:
    """Wrap ``MetricsLogger.log_time(key)`` on one logger instance: ``on_block(key, block)`` receives each
    timing context manager and returns the one to use. Ray 2.60: every algorithm times its sampling and
    learning through ``log_time`` blocks, and its ``timers/*`` results are smoothed across iterations, so
    the block boundaries are the only per-iteration times."""
    original = logger.log_time

    def log_time(key: Any, *args: Any, **kwargs: Any) -> Any:
        return on_block(key, original(key, *args, **kwargs))

    logger.log_time = log_time


class LearnerUpdateSeams:
    """A mixin, before a torch learner class among the bases, that hands the two private seams of RLlib's
    ``Learner.update`` to methods of public name, each RLlib's own unless a subclass changes it:
    :meth:`make_minibatches` and :meth:`update_on_minibatch`. Ray 2.60: ``Learner._create_iterator_if_necessary``
    (keyword arguments only; returns an iterable of ``MultiAgentBatch`` or ``{}``) and
    ``TorchLearner._uncompiled_update(batch, **kwargs)`` (returns ``(fwd_out, loss_per_module, {})``; ``_update``
    calls it through ``_possibly_compiled_update``).

    Why: RLlib's update spends about as much Python around each minibatch as the torch work
    (benchmarks/step_cost.py), and these are the only seams between its loop and its loss; the lean update
    (``rlsweep.trainables._lean_update.LeanTorchUpdate``) changes both, and reads the rest through the
    functions below.
    """

    def _create_iterator_if_necessary(self, **kwargs: Any) -> Any:
        return self.make_minibatches(**kwargs)

    def make_minibatches(self, **kwargs: Any) -> Any:
        """The minibatches of one update (RLlib's ``_create_iterator_if_necessary``)."""
        return super()._create_iterator_if_necessary(**kwargs)  # type: ignore[misc]

    def _uncompiled_update(self, batch: dict[str, Any], **kwargs: Any) -> Any:
        return self.update_on_minibatch(batch, **kwargs)

    def update_on_minibatch(self, batch: dict[str, Any], **kwargs: Any) -> Any:
        """One minibatch's forward pass, loss, gradients and step (RLlib's ``_uncompiled_update``)."""
        return super()._uncompiled_update(batch, **kwargs)  # type: ignore[misc]


def learner_connector(learner: Any) -> Any:
    """A built learner's connector pipeline, or None. Ray 2.60: ``Learner._learner_connector``, which
    ``Learner.build`` makes from the config (no public getter). Why: rlsweep's PPO learner puts a piece of its
    own right after RLlib's advantage estimation in it."""
    return learner._learner_connector


def trains_as_multi_rl_module(modules: Any) -> bool:
    """Whether a multi-module's training forward pass is RLlib's ``MultiRLModule``'s (each module's own in
    turn), not one its class overrides. Ray 2.60: ``MultiRLModule._forward_train``, the method a subclass
    overrides. Why: the lean update runs each module's forward pass itself, only where the multi-module would
    do just that."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule

    return type(modules)._forward_train is MultiRLModule._forward_train


def cyclic_minibatch_settings(iterator: Any) -> tuple[Any, int, int, bool, int]:
    """``(batch, minibatch_size, num_epochs, shuffle_batch_per_epoch, num_total_minibatches)`` of an RLlib
    ``MiniBatchCyclicIterator``. Ray 2.60: its ``_batch``, ``_minibatch_size``, ``_num_epochs``,
    ``_shuffle_batch_per_epoch`` and ``_num_total_minibatches``. Why: the lean update makes the same
    minibatches from the batch's tensors."""
    return (iterator._batch, iterator._minibatch_size, iterator._num_epochs, iterator._shuffle_batch_per_epoch,
            iterator._num_total_minibatches)


def learner_update_is_plain(learner: Any) -> bool:
    """Whether a torch learner steps its optimizers plainly: no gradient scalers, no torch learning-rate
    scheduler classes. Ray 2.60: ``TorchLearner._grad_scalers``, ``TorchLearner._lr_scheduler_classes``
    (``apply_gradients`` builds the schedulers lazily and steps through the scalers)."""
    return learner._grad_scalers is None and learner._lr_scheduler_classes is None


def learner_optimizers(learner: Any) -> dict[Any, list[Any]]:
    """module id -> its optimizers, in the order ``TorchLearner.apply_gradients`` steps them. Ray 2.60:
    ``Learner._module_optimizers`` (module id -> optimizer names) and ``get_optimizer``."""
    return {module_id: [learner.get_optimizer(module_id, name) for name in names]
            for module_id, names in learner._module_optimizers.items()}


def set_gradients(learner: Any, gradients: dict[Any, Any]) -> None:
    """Hand each parameter its gradient, as ``TorchLearner.apply_gradients`` does for finite ones. Ray 2.60:
    ``Learner._params`` (parameter id -> parameter)."""
    for pid, gradient in gradients.items():
        learner._params[pid].grad = gradient


def log_off_policyness(learner: Any, batch: dict[str, Any]) -> None:
    """Log how many updates a minibatch's rows are behind the weights. Ray 2.60:
    ``TorchLearner._compute_off_policyness``, which ``_uncompiled_update`` calls for every minibatch."""
    learner._compute_off_policyness(batch)


def module_forward_train(module: Any, batch: dict[str, Any]) -> Any:
    """A single module's training forward pass without ``TorchRLModule.forward_train``'s ``self.train()``
    on every call. Ray 2.60: ``RLModule._forward_train``, the method a module overrides."""
    return module._forward_train(batch)


# --- RLlib connectors ----------------------------------------------------------------------------------


def evaluation_env_to_module_connector(factory: Callable[..., Any]) -> dict[str, Any]:
    """An ``evaluation_config`` override that gives the evaluation env runners an env-to-module connector
    factory of their own. Ray 2.60: ``env_runners(env_to_module_connector=...)`` keeps the factory in
    ``AlgorithmConfig._env_to_module_connector`` and ``update_from_dict`` (which applies the overrides)
    sets each key as an attribute; no public key names it.

    Why: the evaluation runners' MeanStdFilter must apply the training runners' statistics without adding
    the evaluation episodes to them (``update_stats=False``), as a restored policy does.
    """
    return {"_env_to_module_connector": factory}


# --- RLlib configs (ray.rllib.algorithms.algorithm_config.AlgorithmConfig) ------------------------------


def configured_learner_class(config: Any) -> Any:
    """The learner class a config was given (``learners(learner_class=...)``), or None. Ray 2.60:
    ``AlgorithmConfig._learner_class``; the public ``learner_class`` falls back to the algorithm's default, so
    it cannot say whether one was given. Why: every PPO trial trains with rlsweep's learner unless the spec
    names a learner class of its own."""
    return config._learner_class


def configured_learner_connector(config: Any) -> Any:
    """The learner connector a config was given (``learners(learner_connector=...)``), or None. Ray 2.60:
    ``AlgorithmConfig._learner_connector`` (no public getter; ``build_learner_connector`` builds the whole
    pipeline). Why: the fast replay buffer puts its columns piece first only where the spec gave none."""
    return config._learner_connector


# --- RLlib replay buffers (ray.rllib.utils.replay_buffers.episode_replay_buffer.EpisodeReplayBuffer) ----


class ReplaySamplerSeam:
    """A mixin, before ``EpisodeReplayBuffer`` among the bases, that hands the buffer's private sampler to a
    method of public name, RLlib's own unless a subclass changes it: :meth:`sample_transitions`. Ray 2.60:
    ``EpisodeReplayBuffer._sample_episodes(num_items, *, batch_size_B, batch_length_T, n_step, gamma, ...)``,
    which ``sample`` calls with ``sample_episodes=True`` (SAC's and DQN's default). Why: the fast replay
    buffer (``rlsweep.trainables._replay``) samples 1-step transitions without RLlib's per-sample waste; its
    state is read through the functions below."""

    def _sample_episodes(self, *args: Any, **kwargs: Any) -> Any:
        return self.sample_transitions(*args, **kwargs)

    def sample_transitions(self, *args: Any, **kwargs: Any) -> Any:
        """The sampled episodes (RLlib's ``_sample_episodes``)."""
        return super()._sample_episodes(*args, **kwargs)  # type: ignore[misc]


def replay_timestep_indices(buffer: Any) -> list[tuple[int, int]]:
    """``(episode index, timestep)`` of every timestep an ``EpisodeReplayBuffer`` holds, the list it samples
    from; an episode's index counts the evicted ones (:func:`replay_episodes_evicted`). Ray 2.60:
    ``EpisodeReplayBuffer._indices``."""
    return buffer._indices  # type: ignore[no-any-return]


def replay_episodes_evicted(buffer: Any) -> int:
    """How many episodes an ``EpisodeReplayBuffer`` evicted. Ray 2.60: ``_num_episodes_evicted``."""
    return buffer._num_episodes_evicted  # type: ignore[no-any-return]


def reset_last_sampled_indices(buffer: Any) -> None:
    """Empty the indices an ``EpisodeReplayBuffer``'s last sample drew, as its sampler does first. Ray 2.60:
    ``_last_sampled_indices`` (prioritized buffers fill it for their priority updates; the uniform one's
    sampler only empties it)."""
    buffer._last_sampled_indices = []


def log_replay_sample_metrics(buffer: Any, **counts: Any) -> None:
    """Log a sample's counts in an ``EpisodeReplayBuffer``'s metrics, as its sampler does. Ray 2.60:
    ``EpisodeReplayBuffer._update_sample_metrics`` (keyword arguments: ``num_env_steps_sampled``,
    ``agent_to_...``, ``module_to_...``)."""
    buffer._update_sample_metrics(**counts)


def replay_metrics_window(buffer: Any, default: int) -> int:
    """The episodes an ``EpisodeReplayBuffer`` smooths its metrics over, the constructor's
    ``metrics_num_episodes_for_smoothing`` (``default`` where it has none). Ray 2.60:
    ``_metrics_num_episodes_for_smoothing``. Why: the fast buffer that replaces RLlib's keeps its setting."""
    return getattr(buffer, "_metrics_num_episodes_for_smoothing", default)  # type: ignore[no-any-return]


# --- RLlib catalogs (ray.rllib.core.models.catalog.Catalog) ---------------------------------------------


def catalog_model_config(catalog: Any) -> dict[str, Any]:
    """A catalog's model config: RLlib's defaults with the module's ``model_config`` over them. Ray 2.60:
    ``Catalog._model_config_dict`` (no public getter), which RLlib's own SAC catalog reads to build its Q
    encoder. Why: ``critic: concat`` builds its Q encoder from the same settings."""
    return catalog._model_config_dict  # type: ignore[no-any-return]


# --- RLlib episodes ------------------------------------------------------------------------------------


def lookback_buffer(data: Any, lookback: int) -> Any:
    """``InfiniteLookbackBuffer(data, lookback=lookback)`` (no space), equal to it (``==``), without its
    space setter. Ray 2.60: ``InfiniteLookbackBuffer.__init__`` sets ``data``, ``lookback`` (at most
    ``len(data)``), ``finalized`` (data not a list) and, through the ``space`` setter, ``_space`` and
    ``_space_struct`` (``get_base_struct_from_space(None)`` is None).

    Why: a sampled SAC batch has two of these per transition (``n_step``, ``weights``), which RLlib's
    learner reads for their keys only; the setter's struct conversion took most of their cost.
    """
    from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer

    made = InfiniteLookbackBuffer.__new__(InfiniteLookbackBuffer)
    made.data = data
    made.lookback = min(lookback, len(data))
    made.finalized = not isinstance(data, list)
    made._space = None
    made._space_struct = None
    return made


# --- Tune sessions -------------------------------------------------------------------------------------


def trial_index() -> int:
    """The running trial's creation index: the order in which the searcher suggested it. Ray 2.60 names a
    trial's folder ``<trainable>_<trial id>_<experiment tag>[_<date>]`` and the tag starts with that index
    (``3_lr=0.001,...``); the context gives the folder and the id, not the tag."""
    from pathlib import Path

    from ray import tune

    context = tune.get_context()
    name = Path(context.get_trial_dir()).name
    tag = name.split(f"_{context.get_trial_id()}_", 1)[1]
    return int(tag.split("_", 1)[0])


def write_trial_file(name: str, text: str) -> None:
    """Write a file into the running trial's folder in the experiment's storage (a folder path).
    Ray 2.60: ``tune.get_context().get_storage()`` (a DeveloperAPI ``StorageContext``); the trial's own
    working directory is a temporary folder that is not synced by default."""
    from ray import tune

    storage = tune.get_context().get_storage()
    storage.storage_filesystem.create_dir(storage.trial_fs_path)
    with storage.storage_filesystem.open_output_stream(f"{storage.trial_fs_path}/{name}") as out:
        out.write(text.encode())


def read_trial_file(name: str) -> str | None:
    """The text of a file in the running trial's folder in the experiment's storage (one an earlier process
    of the same trial wrote: before a retry, a pause, a PBT copy or a resumed sweep), or None."""
    from ray import tune

    storage = tune.get_context().get_storage()
    try:
        with storage.storage_filesystem.open_input_stream(f"{storage.trial_fs_path}/{name}") as found:
            return bytes(found.read()).decode(errors="replace")
    except OSError:  # not written yet (FileNotFoundError), or unreadable
        return None


@contextlib.contextmanager
def algorithm_log_folders_in(folder: str) -> Iterator[None]:
    """While an RLlib algorithm is built outside Tune's own trainable, its (empty) log folder goes in
    ``folder`` instead of ``~/ray_results``. Ray 2.60: ``Trainable._setup_logdir`` makes that folder with
    ``tempfile.mkdtemp(dir=DEFAULT_STORAGE_PATH)``, a name it looks up in ``ray.tune.trainable.trainable``
    when it runs; ``build_algo`` takes no storage and no logger creator to say otherwise.

    Why: a trial ended by a scheduler, a lost node or a kill never runs its cleanup, and each left an empty
    folder in the user's home (thousands over a day of sweeps). The trial's working directory is Ray's, and
    goes with Ray's session.
    """
    import ray.tune.trainable.trainable as trainable_module

    before = trainable_module.DEFAULT_STORAGE_PATH
    trainable_module.DEFAULT_STORAGE_PATH = folder
    try:
        yield
    finally:
        trainable_module.DEFAULT_STORAGE_PATH = before


# --- Tune search --------------------------------------------------------------------------------------


def variant_configs(param_space: dict[str, Any], seed: int | None) -> Iterator[dict[str, Any]]:
    """Configs in the order ``BasicVariantGenerator(random_state=seed)`` draws them. Ray 2.60:
    ``generate_variants`` and ``_BackwardsCompatibleNumpyRng`` (``rlsweep sample`` shows what a sweep will
    try without running one)."""
    import copy

    from ray.tune.search.sample import _BackwardsCompatibleNumpyRng
    from ray.tune.search.variant_generator import generate_variants

    rng = _BackwardsCompatibleNumpyRng(seed)
    while True:
        for _, variant in generate_variants({"config": copy.deepcopy(param_space)}, random_state=rng):
            yield dict(variant["config"])


def hyperopt_search_with_encoded_points() -> type:
    """Ray's ``HyperOptSearch`` given ``points_to_evaluate`` already in HyperOpt's own encoding. Ray 2.60:
    its ``_convert_categories_to_indices`` walks nested dict values into the space and hangs or fails on
    nested ``hp.choice`` branches; rlsweep encodes points itself, so that conversion is skipped.

    Made on first use (it imports HyperOpt) and kept as this module's ``EncodedPointsHyperOptSearch``, so
    Tune can pickle a searcher by reference."""
    cls = globals().get("EncodedPointsHyperOptSearch")
    if cls is None:
        from ray.tune.search.hyperopt import HyperOptSearch

        class EncodedPointsHyperOptSearch(HyperOptSearch):
            def _convert_categories_to_indices(self, config: dict) -> None:
                return None

        EncodedPointsHyperOptSearch.__qualname__ = "EncodedPointsHyperOptSearch"
        cls = globals()["EncodedPointsHyperOptSearch"] = EncodedPointsHyperOptSearch
    return cls


def optuna_study(searcher: Any) -> Any:
    """The Optuna study behind Tune's ``OptunaSearch``. Ray 2.60: ``_ot_study``, made in the constructor
    when a space is given. Its public ``add_evaluated_point`` refuses define-by-run spaces, which rlsweep
    uses for conditions, so earlier trials are added to the study directly."""
    return searcher._ot_study


def __getattr__(name: str) -> Any:
    # Unpickling a saved searcher looks the class up here before anything made it.
    if name == "EncodedPointsHyperOptSearch":
        return hyperopt_search_with_encoded_points()
    if name == "LeanJsonLoggerCallback":
        return lean_json_logger_class()
    if name == "ForgetFinishedTrials":
        return forget_finished_trials_class()
    raise AttributeError(name)


# --- Tune schedulers ----------------------------------------------------------------------------------


def set_hyperband_brackets(scheduler: Any, brackets: int) -> None:
    """Ray 2.60: ``HyperBandScheduler._s_max_1`` (brackets are sized from ``max_t`` alone, as if the
    smallest useful budget were one time unit; in env steps that plans thousands of tiny trials)."""
    scheduler._s_max_1 = brackets


def hyperband_clock(scheduler: Any) -> tuple[str, int]:
    """``(time_attr, max_t)`` of a HyperBand scheduler. Ray 2.60: ``_time_attr`` and ``_max_t_attr``."""
    return scheduler._time_attr, scheduler._max_t_attr


def observe_exploits(on_exploit: Callable[[Any, Any, dict], None]) -> type:
    """A mixin for a ``PopulationBasedTraining`` subclass that calls ``on_exploit(trial, donor, config
    before)`` after each exploit. Ray 2.60: ``PopulationBasedTraining._exploit(tune_controller, trial,
    trial_to_clone)``, the one place PBT (and PB2) picks a donor and mutates; no public hook says which
    donor a trial took (the trace of a sweep shows it)."""

    class ObservesExploits:
        def _exploit(self, tune_controller: Any, trial: Any, trial_to_clone: Any) -> None:
            before = dict(trial.config)
            super()._exploit(tune_controller, trial, trial_to_clone)  # type: ignore[misc]
            on_exploit(trial, trial_to_clone, before)

    return ObservesExploits


# --- Tune's driver: what it keeps of finished trials ---------------------------------------------------


def forget_finished_trial(trial: Any, keep: set[str], drop_prefix: str | None = None) -> None:
    """Drop the per-key running statistics Tune keeps of a finished trial, except of the ``keep`` metrics;
    with ``drop_prefix``, also the keys starting with it (except ``keep``'s) from the trial's last result and
    from the results of the checkpoints Tune keeps for it.
    Ray 2.60: ``Trial.run_metadata`` (``metric_analysis``, ``metric_n_steps``, ``last_result``,
    ``checkpoint_manager`` with its ``_checkpoint_results`` and ``_latest_checkpoint_result``, each a
    ``_TrainingResult`` whose ``metrics`` is the reported row; and ``_cached_json``, the whole state serialized
    again). Why: the driver kept about 0.3 MB per finished trial, linearly (ray-project/ray#64231; measured
    473 -> 740 MB over 1,000 trials), and wrote all of it into every experiment-state snapshot (49 MB at 1,000
    trials); the rows, RLlib's diagnostics among them, are each trial's result.json, which rlsweep reads, and
    never these copies. Tune ranks a trial's checkpoints by the metric, which ``keep`` holds."""
    metadata = getattr(trial, "run_metadata", None)
    if metadata is None:
        return
    for statistics in (metadata.metric_analysis, metadata.metric_n_steps):
        for key in [k for k in statistics if k not in keep]:
            del statistics[key]
    if drop_prefix:
        def trimmed(row: Any) -> Any:
            if not isinstance(row, dict):
                return row
            return {k: v for k, v in row.items() if not (isinstance(k, str) and k.startswith(drop_prefix)) or k in keep}

        metadata.last_result = trimmed(metadata.last_result)
        manager = getattr(metadata, "checkpoint_manager", None)
        results = [*getattr(manager, "_checkpoint_results", ()), getattr(manager, "_latest_checkpoint_result", None)]
        for result in {id(r): r for r in results if r is not None}.values():
            result.metrics = trimmed(result.metrics)
    metadata.invalidate_cache()


def lean_json_logger_class() -> type:
    """Tune's JSON logger (it writes result.json), minus what it keeps of a trial after the trial ended.
    Ray 2.60: ``JsonLoggerCallback._trial_configs`` is filled per trial and never emptied (ray#64231), and a
    trial restarted from a checkpoint gets the storage's older copy of its result.json.

    Made on first use and kept as this module's ``LeanJsonLoggerCallback``, so Tune can pickle it with the
    sweep by reference."""
    cls = globals().get("LeanJsonLoggerCallback")
    if cls is None:
        from ray.tune.logger import JsonLoggerCallback

        class LeanJsonLoggerCallback(JsonLoggerCallback):
            def log_trial_end(self, trial: Any, failed: bool = False) -> None:
                super().log_trial_end(trial, failed=failed)
                self._trial_configs.pop(trial, None)

            def _restore_from_remote(self, file_name: str, trial: Any) -> None:
                # When a trial restarts from a checkpoint, Tune copies its result.json from storage over the
                # driver's copy; the storage copy is synced from the driver's now and then, so rows reported
                # just before a failure were lost (a retried trial's first rows, about 1 run in 3 here). The
                # driver's copy, where there is one, is the newer; a resumed sweep's driver has none yet.
                if Path(trial.local_path, file_name).exists():
                    return
                super()._restore_from_remote(file_name, trial)

        LeanJsonLoggerCallback.__qualname__ = "LeanJsonLoggerCallback"
        cls = globals()["LeanJsonLoggerCallback"] = LeanJsonLoggerCallback
    return cls


def forget_finished_trials_class() -> type:
    """A Tune callback that applies :func:`forget_finished_trial` to each trial as it finishes or fails,
    keeping the statistics of the metric it is given, and the ``keep`` keys of its rows where it drops those
    starting with ``drop_prefix``. Kept as this module's ``ForgetFinishedTrials``, so
    Tune can pickle it with the sweep by reference."""
    cls = globals().get("ForgetFinishedTrials")
    if cls is None:
        from ray.tune import Callback

        class ForgetFinishedTrials(Callback):
            def __init__(self, metric: str, keep: Collection[str] = (), drop_prefix: str | None = None) -> None:
                self.metric, self.keep, self.drop_prefix = metric, frozenset(keep), drop_prefix

            def _forget(self, trial: Any) -> None:
                # A callback pickled before keep and drop_prefix were added (a resumed older sweep) has neither.
                keep = {self.metric, *getattr(self, "keep", ())}
                forget_finished_trial(trial, keep=keep, drop_prefix=getattr(self, "drop_prefix", None))

            def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
                self._forget(trial)

            def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
                self._forget(trial)

        ForgetFinishedTrials.__qualname__ = "ForgetFinishedTrials"
        cls = globals()["ForgetFinishedTrials"] = ForgetFinishedTrials
    return cls


# --- torch without torch._dynamo (torch 2.13) ---------------------------------------------------------

#: ``torch._compile._disable_dynamo`` keeps ``torch._dynamo.disable(fn)`` on ``fn`` under this name.
_DISABLED = "__dynamo_disable"
#: Where the replaced function keeps the one it replaced. ``profile_hook_step``'s ``functools.wraps`` copies
#: it onto the wrapper it puts around a replaced ``step``, which is how a hooked step is known as rlsweep's.
_ORIGINAL = "_rlsweep_original"


def _wrapper_code(decorator: Any) -> Any:
    """The code of the function ``decorator`` wraps a function in (every wrapper it makes shares it); None
    where torch has no such decorator."""
    if decorator is None:
        return None
    return getattr(decorator(lambda *args: None), "__code__", None)


def _is_wrapper(function: Any, code: Any) -> bool:
    return code is not None and getattr(function, "__code__", None) is code and callable(getattr(function, "__wrapped__", None))


def _optimizer_classes() -> list[type]:
    import torch

    found, pending = [], [torch.optim.Optimizer]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def torch_without_dynamo(on: bool) -> bool:
    """Let this process seed torch and run its optimizers without importing ``torch._dynamo`` (``on``), or
    put torch's own functions back (not ``on``: for a trial that compiles). Returns whether they now run
    without it.

    torch 2.13 imports ``torch._dynamo`` (and ``torch._inductor``) for three things a trial does:

    - ``torch.use_deterministic_algorithms``, which RLlib's seeding calls in every seeded process, imports
      ``torch._inductor.config`` to set its ``deterministic`` before setting the flag in torch's core
      (``torch._C._set_deterministic_algorithms``). Here the core flag is set, and the inductor's when
      ``torch._inductor`` is loaded (now, or when these are put back);
    - the ``Optimizer`` methods wrapped by ``torch._disable_dynamo`` (``__init__``'s ``add_param_group``,
      ``zero_grad``, ``state_dict``, ``load_state_dict``) import it on their first call, to keep
      ``torch._dynamo.disable(fn)`` on ``fn`` as ``__dynamo_disable`` and call that. Outside
      ``torch.compile`` that is ``fn``, which they keep here;
    - each optimizer's ``step`` (``_use_grad_for_differentiable``) imports it on every call, for two
      ``torch._dynamo.graph_break()`` calls (nothing outside ``torch.compile``) around the step run with grad
      mode set to ``defaults["differentiable"]``. Here it sets the grad mode and runs the step (the hooks
      ``profile_hook_step`` adds around it kept).

    Where a wrapper is not what torch 2.13 has, it is left as it is: the import comes back, nothing else
    changes.

    Why: the import is most of a trial's setup, in every trial process, before its first result: alternated
    on CartPole, a PPO trial's setup took 1.54 s without it against 2.62 s with it, and launch to the first
    result 10.0 s against 11.06 s (``benchmarks/results/startup_ab-2026-11-29T0322.json``); a trial that
    compiles nothing never uses it.
    """
    import importlib

    import torch

    if on and "torch._dynamo" in sys.modules:
        on = False  # already paid for: torch's own functions cost nothing more
    deterministic = torch.use_deterministic_algorithms
    if not on and (original := getattr(deterministic, _ORIGINAL, None)) is not None:
        torch.use_deterministic_algorithms = original
        # What the inductor has not been told (it loads torch._dynamo, which a compiling trial needs anyway).
        original(torch.are_deterministic_algorithms_enabled(), warn_only=torch.is_deterministic_algorithms_warn_only_enabled())
    elif on and not hasattr(deterministic, _ORIGINAL):
        torch.use_deterministic_algorithms = _core_deterministic(deterministic)
    disabled = _wrapper_code(getattr(torch, "_disable_dynamo", None))
    optimizers = importlib.import_module("torch.optim.optimizer")  # torch.optim does not keep it as an attribute
    use_grad = _wrapper_code(getattr(optimizers, "_use_grad_for_differentiable", None))
    for cls in _optimizer_classes():
        for name, function in list(vars(cls).items()):
            if _is_wrapper(function, disabled):
                wrapped = function.__wrapped__
                if on and getattr(wrapped, _DISABLED, None) is None:
                    setattr(wrapped, _DISABLED, wrapped)
                elif not on and getattr(wrapped, _DISABLED, None) is wrapped:
                    delattr(wrapped, _DISABLED)
            elif name == "step":
                torchs = getattr(function, _ORIGINAL, None)  # the step this replaced, if it is rlsweep's
                if not on and torchs is not None:
                    cls.step = torchs
                    if getattr(function, "hooked", False):  # optimizers of the class exist: keep their hooks
                        cls.step = torch.optim.Optimizer.profile_hook_step(torchs)
                        cls.step.hooked = True  # type: ignore[attr-defined]
                elif on and torchs is None and _is_wrapper(function, use_grad):
                    cls.step = _eager_step(function)
    return on


def _core_deterministic(original: Any) -> Any:
    """``torch.use_deterministic_algorithms`` setting torch's core flag, and the inductor's only where
    ``torch._inductor`` is loaded. torch 2.13: ``torch._C._set_deterministic_algorithms`` is the core flag's
    setter, which torch's own calls after setting ``torch._inductor.config.deterministic``."""
    import torch

    @functools.wraps(original)
    def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
        if "torch._inductor.config" in sys.modules:
            original(mode, warn_only=warn_only)
        else:
            torch._C._set_deterministic_algorithms(mode, warn_only=warn_only)

    setattr(use_deterministic_algorithms, _ORIGINAL, original)
    return use_deterministic_algorithms


def _eager_step(step: Any) -> Any:
    """An optimizer class's ``step`` (``_use_grad_for_differentiable``'s wrapper) with its grad-mode setting
    and without its ``torch._dynamo`` import. Only for a class none of whose optimizers was made yet (no
    ``profile_hook_step`` around its ``step``): making one imported ``torch._dynamo`` already. The first
    optimizer made adds the hooks around it, as around torch's own."""
    import torch

    raw = step.__wrapped__

    @functools.wraps(raw)
    def eager(self: Any, *args: Any, **kwargs: Any) -> Any:
        with torch.set_grad_enabled(self.defaults["differentiable"]):
            return raw(self, *args, **kwargs)

    setattr(eager, _ORIGINAL, step)
    return eager


# --- Ray's node resources without a runtime (ray._private.resource_and_label_spec) ---------------------


def local_node_resources(num_cpus: int | None) -> dict[str, float] | None:
    """The resources (``CPU``, ``GPU``, ``memory`` in bytes, ...) a local runtime started now with
    ``num_cpus`` would offer, resolved by Ray's own code without starting one; None where that code is not
    there or fails. Ray 2.60: ``ResourceAndLabelSpec(...).resolve(is_head=True)``, which ``ray.init`` runs
    for its node (``ray._private.node.Node.get_resource_and_label_spec``).

    Why: ``rlsweep validate`` needs the node's CPUs and memory to tell whether a trial fits; starting Ray
    for them took most of a validate on a busy machine (about 17 s of 30) where nothing was measured.
    """
    try:
        from ray._private.resource_and_label_spec import ResourceAndLabelSpec

        resolved = ResourceAndLabelSpec(num_cpus=num_cpus).resolve(is_head=True, node_ip_address="127.0.0.1")
        return {str(k): float(v) for k, v in resolved.to_resource_dict().items()}
    except Exception:  # any change of Ray's internals: the caller starts Ray and asks it instead
        return None


# --- Ax's client (ax.api.Client, Ax 1.3) ---------------------------------------------------------------


def ax_client_seed(client: Any) -> int | None:
    """The seed an Ax ``Client`` was made with (None: unseeded). Ax 1.3.1: ``Client._random_seed``, which
    ``save_to_json_file`` leaves out. Why: without it a resumed sweep's model fits are unseeded."""
    return getattr(client, "_random_seed", None)


def set_ax_client_seed(client: Any, seed: int) -> None:
    """Give an Ax ``Client`` loaded from JSON the seed it was made with. Ax 1.3.1: ``Client._random_seed``
    (the constructor's ``random_seed``; ``load_from_json_file`` takes none)."""
    client._random_seed = seed


# --- OpenTelemetry's OTLP exporter (opentelemetry-exporter-otlp-proto-http 1.45) -----------------------


def otlp_endpoint(exporter: Any, default: str) -> str:
    """Where an OTLP span exporter sends its spans, or ``default`` for one that does not say. OpenTelemetry
    1.45: ``OTLPSpanExporter._endpoint`` (the argument, or the URL the environment resolves to). Why: the
    warning that spans are being dropped names where they could not go."""
    return getattr(exporter, "_endpoint", default)  # type: ignore[no-any-return]


# --- MLflow's SQL tracking store (mlflow 3.17.2) --------------------------------------------------------


def mlflow_sqlite_store(client: Any) -> Any:
    """The ``SqlAlchemyStore`` an ``MlflowClient`` writes to where it is a SQLite one; None for any other store,
    or where MLflow's internals are not as here. MLflow 3.17.2: ``MlflowClient._tracking_client.store`` (no
    public getter) and the store's ``db_type``. Why: MLflow has no bulk write, and its ``log_batch`` builds an
    ORM object per value; a SQLite store takes a trial's rows in a few transactions of rlsweep's own."""
    try:
        store = client._tracking_client.store
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    except (AttributeError, ImportError):
        return None
    if isinstance(store, SqlAlchemyStore) and getattr(store, "db_type", None) == "sqlite":
        return store
    return None


def validate_mlflow_metric(metric: Any) -> None:
    """Raise MLflow's own error for a metric its ``log_batch`` would refuse (the key's characters or length, a
    value, timestamp or step of the wrong type). MLflow 3.17.2: ``mlflow.utils.validation._validate_metric(key,
    value, timestamp, step)``, which ``log_batch`` runs on each metric. Why: a metric written past
    ``log_batch`` is refused as ``log_batch`` would refuse it."""
    from mlflow.utils.validation import _validate_metric

    _validate_metric(metric.key, metric.value, metric.timestamp, metric.step)


def check_mlflow_run_active(store: Any, run_id: str, session: Any) -> None:
    """Raise MLflow's own error where a run of a SQL store is not there or not active (deleted), as its
    ``log_batch`` does before it writes. MLflow 3.17.2: ``SqlAlchemyStore._get_run(run_uuid=, session=)`` and
    ``SqlAlchemyStore._check_run_is_active(run)``, in the caller's session. Why: as for
    :func:`validate_mlflow_metric`."""
    store._check_run_is_active(store._get_run(run_uuid=run_id, session=session))
