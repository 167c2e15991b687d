"""A trial's memory, measured before launch: one trial built at the search space's most memory-hungry
corner trains two iterations and saves a checkpoint, in a Ray task placed like a trial, and each of its
processes reports its peak resident set. The reading sets the memory each trial reserves from Ray (so Ray
places no more trials on a node than fit) and the sweep's concurrency."""

from __future__ import annotations

import math
import pickle
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlsweep.errors import Problem
from rlsweep.search_spaces import Choice, Fixed, Normal, Parameter, SearchSpace
from rlsweep.trainables._memory import MemoryReading, peak_rss_mb, policy_memory_mb, reset_peak_rss

if TYPE_CHECKING:
    from rlsweep.spec import SweepSpec

#: ``ray.memory_check: measure``: measure the trial even where an upper bound from its settings would do.
MEASURE = "measure"
#: Iterations the measured trial trains: the first allocates the optimizer state and the batch buffers,
#: the second shows what an iteration adds on top.
MEASURED_ITERATIONS = 2
#: How long the measurement waits for Ray to place its trial before it says the cluster cannot.
PLACEMENT_TIMEOUT_S = 120.0
#: The longest the measurement may take once placed.
MEASURE_TIMEOUT_S = 900.0
#: Env steps an off-policy algorithm samples per measured iteration, and before it starts learning: its
#: memory per update does not depend on these, its replay buffer's growth is extrapolated from them.
OFF_POLICY_MEASURED_STEPS = 50
_MB = 2**20


def _size(value: Any) -> float:
    """How much a choice weighs in memory terms: a number its magnitude, ``true`` more than ``false``, a
    list (``fcnet_hiddens``) its units summed, a mapping its values summed, anything else nothing (a choice
    of activations, say, is taken as listed)."""
    if isinstance(value, bool):
        return float(value)  # a feature turned on (use_lstm) weighs more than off
    if isinstance(value, (int, float)):
        return abs(float(value))
    if isinstance(value, (list, tuple)):
        return sum(_size(v) for v in value)
    if isinstance(value, Mapping):
        return sum(_size(v) for v in value.values())
    return 0.0


def _largest(parameter: Parameter) -> Any:
    domain = parameter.domain
    if isinstance(domain, Fixed):
        return domain.value
    if isinstance(domain, Choice):
        return max(domain.values, key=_size)  # the first of equal weights
    if isinstance(domain, Normal):
        return domain.mean
    return domain.high


def hungriest_draw(space: SearchSpace) -> dict[str, Any]:
    """The draw at the space's most memory-hungry corner: every range at its high end (more env runners,
    envs, batch, buffer), every choice at its heaviest value (the widest ``fcnet_hiddens``), conditional
    parameters as that corner activates them."""
    draw: dict[str, Any] = {}
    for parameter in space:
        if parameter.is_active(draw):
            draw[parameter.path] = _largest(parameter)
    return draw


def _remote_peaks(algo: Any) -> tuple[list[float], list[float]]:
    runners: list[float] = []
    for name in ("env_runner_group", "eval_env_runner_group"):
        group = getattr(algo, name, None)
        if group is not None and group.num_remote_env_runners() > 0:
            runners += group.foreach_env_runner(peak_rss_mb, local_env_runner=False)
    learners: list[float] = []
    group = getattr(algo, "learner_group", None)
    if group is not None and not group.is_local:
        learners += [r.get() for r in group.foreach_learner(peak_rss_mb) if r.ok]
    return runners, learners


def _buffer_bytes(algo: Any) -> tuple[int, int] | None:
    """(env steps stored, bytes of the state pickled) of the algorithm's replay buffer; None without one."""
    buffer = getattr(algo, "local_replay_buffer", None)
    if buffer is None or not hasattr(buffer, "get_num_timesteps"):
        return None
    return int(buffer.get_num_timesteps()), len(pickle.dumps(buffer.get_state(), protocol=pickle.HIGHEST_PROTOCOL))


def _replay_growth_mb(algo: Any, before: tuple[int, int] | None, budget_env_steps: int) -> float:
    """The bytes one more stored env step takes in the algorithm's replay buffer (the growth of its pickled
    state between two iterations, over the steps added: what the buffer sets aside up front, such as its
    priority trees, is in the measured peak already), times the steps it will still take, up to its
    capacity or the budget."""
    after = _buffer_bytes(algo)
    if before is None or after is None or after[0] <= before[0]:
        return 0.0
    per_step = max(0, after[1] - before[1]) / (after[0] - before[0])
    capacity = int(getattr(algo.local_replay_buffer, "capacity", budget_env_steps) or budget_env_steps)
    return per_step * max(0, min(capacity, budget_env_steps) - after[0]) / _MB


def _shortened(config: Any) -> Any:
    """An off-policy config that learns after ``OFF_POLICY_MEASURED_STEPS`` env steps, in iterations of that
    many (same networks, batch and buffer): SAC's example learns after 1,000, and one update per env step
    makes that a minute an iteration here. On-policy configs are left as they are."""
    if getattr(config, "num_steps_sampled_before_learning_starts", None) is not None:
        config.num_steps_sampled_before_learning_starts = min(
            int(config.num_steps_sampled_before_learning_starts), OFF_POLICY_MEASURED_STEPS
        )
        config.min_sample_timesteps_per_iteration = OFF_POLICY_MEASURED_STEPS
    return config


def measure_here(spec: SweepSpec, draw: Mapping[str, Any], iterations: int = MEASURED_ITERATIONS) -> MemoryReading:
    """Build the trial's algorithms (one per seed, as a trial does) at ``draw`` in this process, train
    ``iterations`` iterations and save a checkpoint, and read every process's peak. Leaves nothing behind."""
    from rlsweep import _compat
    from rlsweep.seeds import SEED_PATH
    from rlsweep.trainables._config import build_algo, build_config
    from rlsweep.trainables._metrics import lifetime_env_steps

    started = time.perf_counter()
    reset_peak_rss()
    seeds = spec.seeds.per_trial
    algos = []
    env_steps = 0
    runners: list[float] = []
    learners: list[float] = []
    policies: dict[str, float] = {}
    replay = 0.0
    with tempfile.TemporaryDirectory(prefix="rlsweep-memory-") as scratch:
        try:
            for index in range(seeds):
                # Seeded as every trial is: RLlib's seeding alone adds ~65 MB to a remote env runner.
                seeded = dict(draw) if SEED_PATH in draw or SEED_PATH in spec.config else {**draw, SEED_PATH: index}
                with _compat.algorithm_log_folders_in(scratch):
                    algos.append(build_algo(_shortened(build_config(spec, seeded))))
            for algo in algos:
                for _ in range(iterations):
                    result = algo.train()
                env_steps = lifetime_env_steps(result)
                if spec.evaluation is not None:
                    algo.evaluate()  # as a trial does, in its own process or on its evaluation runners
                algo.save_to_path(f"{scratch}/checkpoint")
            main = peak_rss_mb()
            for algo in algos:
                more_runners, more_learners = _remote_peaks(algo)
                runners += more_runners
                learners += more_learners
                # After the peak is read: pickling the buffer to size it takes memory a trial never uses.
                if (buffered := _buffer_bytes(algo)) is not None:
                    algo.train()
                    replay += _replay_growth_mb(algo, buffered, spec.budget.env_steps)
                for name, mb in policy_memory_mb(algo).items():
                    policies[name] = policies.get(name, 0.0) + mb
        finally:
            for algo in algos:
                algo.stop()
    return MemoryReading(
        draw=dict(draw), main_mb=main, env_runner_mb=tuple(runners), learner_mb=tuple(learners), replay_mb=replay,
        policy_mb=policies, env_steps=env_steps, seconds=time.perf_counter() - started, seeds=seeds,
    )


def reading_for(
    spec: SweepSpec, spec_path: str = "search_space", room: Callable[[MemoryReading], bool] | None = None
) -> MemoryReading:
    """One trial's reading at the hungriest corner: the one an earlier command kept for the same trial,
    versions and machine (:mod:`rlsweep.trainables._readings`); else, where ``room`` says the nodes hold
    an upper bound from the trial's settings with room to spare, that bound
    (:mod:`rlsweep.trainables._estimate`; not with ``ray.memory_check: measure``); else measured now (and
    kept)."""
    from rlsweep.trainables._readings import remember_reading

    if (known := reading_without_measuring(spec, room)) is not None:
        return known
    reading = measure_memory(spec, spec_path)
    remember_reading(spec, hungriest_draw(spec.search_space), reading)
    return reading


def reading_without_measuring(spec: SweepSpec, room: Callable[[MemoryReading], bool] | None = None) -> MemoryReading | None:
    """:func:`reading_for`'s answer where it needs no trial run: a kept reading, or an estimate ``room``
    says the nodes hold with room to spare. None where :func:`reading_for` would measure."""
    from rlsweep.trainables._estimate import estimate_reading
    from rlsweep.trainables._readings import cached_reading

    draw = hungriest_draw(spec.search_space)
    if (kept := cached_reading(spec, draw)) is not None:
        return kept
    if room is not None and spec.ray.memory_check != MEASURE:
        estimate = estimate_reading(spec, draw)
        if estimate is not None and room(estimate):
            return estimate
    return None


def measure_memory(spec: SweepSpec, spec_path: str = "search_space") -> MemoryReading:
    """Measure one trial at the hungriest corner on the Ray runtime this process joined, in a placement
    group shaped like a trial's (the task in its first bundle, so its env runners and learners are placed
    as a trial's are), in a worker process of its own.

    Raises:
        IncompatibleError: Ray cannot place the trial in time, or the trial fails to build or train, or is
            killed (out of memory) while it does.
    """
    import uuid

    import ray
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    from rlsweep.trainables._config import trial_resources

    draw = hungriest_draw(spec.search_space)
    group = trial_resources(spec, draw)()
    corner = f"the trial at the space's hungriest corner ({_describe(draw)})"
    try:
        ray.get(group.ready(), timeout=PLACEMENT_TIMEOUT_S)
        first = group.bundle_specs[0]
        task = ray.remote(max_calls=1)(measure_here).options(
            num_cpus=first.get("CPU", 1),
            num_gpus=first.get("GPU", 0),
            max_retries=0,
            # An environment of its own: Ray starts a new worker process for it (an idle one that ran
            # other tasks would hold their memory), which exits after it (max_calls=1).
            runtime_env={"env_vars": {"RLSWEEP_MEMORY_CHECK": uuid.uuid4().hex}},
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                group, placement_group_bundle_index=0, placement_group_capture_child_tasks=True
            ),
        )
        try:
            return ray.get(task.remote(spec, draw), timeout=MEASURE_TIMEOUT_S)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if exc.cause is not None else exc
            raise _refused(spec_path, f"{corner} failed to train, so its memory is unknown: {_first_line(cause)}") from None
        except ray.exceptions.GetTimeoutError:
            raise _refused("ray.memory_check", f"measuring {corner} took over {MEASURE_TIMEOUT_S:g} s; set "
                           "ray.memory_check: false to launch without it") from None
        except ray.exceptions.RayError as exc:  # killed: Ray's memory monitor (out of memory), a lost node
            raise _refused(spec_path, f"{corner} was killed while it was measured ({_first_line(exc)}); out of memory, "
                           "most likely: shrink that corner or join nodes with more memory") from None
    except ray.exceptions.GetTimeoutError:
        raise _refused("ray.memory_check", f"Ray could not place one trial ({group.bundle_specs}) within "
                       f"{PLACEMENT_TIMEOUT_S:g} s to measure its memory; the cluster is busy or too small") from None
    finally:
        ray.util.remove_placement_group(group)


def _refused(path: str, message: str) -> Exception:
    from rlsweep.errors import IncompatibleError

    return IncompatibleError([Problem(path, message)])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _describe(draw: Mapping[str, Any]) -> str:
    return ", ".join(f"{path}={value!r}" for path, value in draw.items()) or "the spec's config"


@dataclass(frozen=True)
class MemoryFit:
    """What the cluster's memory allows, as the run's first lines and validate print it."""

    reading: MemoryReading
    node_mb: tuple[float, ...]
    by_memory: int
    by_cpus: int
    max_concurrent: int | None

    @property
    def allowed(self) -> int:
        caps = [self.by_memory, self.by_cpus] + ([self.max_concurrent] if self.max_concurrent else [])
        return max(0, min(caps))

    def lines(self) -> list[str]:
        r = self.reading
        nodes = f"{len(self.node_mb)} node{'s' if len(self.node_mb) != 1 else ''}"
        limit = f", budget.max_concurrent {self.max_concurrent}" if self.max_concurrent else ""
        if r.estimated:
            first = (
                f"memory: one trial at the space's hungriest corner ({_describe(r.draw)}) needs at most {r.predicted_mb:,.0f} MB "
                f"by its settings: {r.parts()} (each process's baseline, its networks and batches); not measured, since "
                f"twice that fits the nodes for every trial the CPUs run at once (ray.memory_check: measure measures it); "
                f"it reserves {r.trial_mb:,.0f} MB"
            )
            return [first, self._fits_line(nodes, limit)]
        return [
            f"memory: one trial at the space's hungriest corner ({_describe(r.draw)}) peaks at {r.predicted_mb:,.0f} MB: "
            f"{r.parts()} (measured over {MEASURED_ITERATIONS} iterations, {r.env_steps:,} env steps, in {r.seconds:.0f} s"
            + (f", at {r.reused_from}; reused: same spec, versions and machine" if r.reused_from else "")
            + f"); it reserves {r.trial_mb:,.0f} MB ({r.HEADROOM:.0%} headroom)",
            self._fits_line(nodes, limit),
        ]

    def _fits_line(self, nodes: str, limit: str) -> str:
        return (f"memory: Ray has {sum(self.node_mb) / 1024:,.1f} GB for trials on {nodes} (the largest {max(self.node_mb, default=0) / 1024:,.1f} GB): "
                f"{self.by_memory} trial(s) at once by memory, {self.by_cpus} by CPUs{limit}; up to {self.allowed} at once")


def trials_that_fit(trial_mb: float, node_mb: Sequence[float]) -> int:
    """How many trials of ``trial_mb`` the nodes hold at once, each trial on one node."""
    return sum(math.floor(mb / trial_mb) for mb in node_mb)


def far_below(reading: MemoryReading, node_mb: Sequence[float], by_cpus: int, max_concurrent: int | None) -> bool:
    """Whether twice ``reading``'s need fits the nodes for every trial the CPUs (and ``max_concurrent``) run
    at once: an estimate twice too low still could not run a node out of memory."""
    at_once = min(by_cpus, max_concurrent) if max_concurrent else by_cpus
    need = 2 * reading.trial_mb
    return need <= max(node_mb, default=0.0) and trials_that_fit(need, node_mb) >= max(at_once, 1)


def heaviest_setting(reading: MemoryReading, largest_mb: float, spec_paths: Sequence[str] = ()) -> str:
    """The spec path to change when a trial does not fit a node of ``largest_mb``: where its own process
    alone would fit, the setting behind its larger remote share (env runners or learners); else the search
    space (its corner) or, where nothing is searched, the config. ``spec_paths``: the searched paths."""
    runners = reading.bundle_mb("env_runner") * len(reading.env_runner_mb)
    learners = reading.bundle_mb("learner") * len(reading.learner_mb)
    if reading.bundle_mb("main") <= largest_mb and max(runners, learners) > 0:
        path = "env_runners.num_env_runners" if runners >= learners else "learners.num_learners"
        return f"search_space.{path}" if path in spec_paths else f"config.{path}"
    return "search_space" if spec_paths else "config"


def memory_fit(
    reading: MemoryReading, node_mb: Sequence[float], by_cpus: int, max_concurrent: int | None, spec_paths: Sequence[str] = ()
) -> tuple[MemoryFit, list[Problem]]:
    """How many trials of ``reading``'s size the nodes' memory holds (each trial on one node), and the
    problems: a trial larger than every node (named by :func:`heaviest_setting`), or a
    ``budget.max_concurrent`` the memory cannot hold."""
    need = reading.trial_mb
    by_memory = trials_that_fit(need, node_mb) if need > 0 else by_cpus
    result = MemoryFit(reading, tuple(node_mb), by_memory, by_cpus, max_concurrent)
    largest = max(node_mb, default=0.0)
    corner = _describe(reading.draw)
    if need > largest:
        return result, [
            Problem(
                heaviest_setting(reading, largest, spec_paths),
                f"one trial at the space's hungriest corner ({corner}) needs {need:,.0f} MB (measured {reading.predicted_mb:,.0f}: "
                f"{reading.parts()}; + {reading.HEADROOM:.0%} headroom) but the "
                f"largest Ray node has {largest:,.0f} MB for trials; it could never be placed. Narrow the network, lower "
                "env_runners.num_env_runners or the batch sizes at that corner, or join nodes with more memory",
            )
        ]
    if max_concurrent is not None and max_concurrent > by_memory:
        return result, [
            Problem(
                "budget.max_concurrent",
                f"{max_concurrent} trials at once need {max_concurrent * need:,.0f} MB ({need:,.0f} MB each at the corner "
                f"{corner}) but Ray has {sum(node_mb):,.0f} MB for trials on {len(node_mb)} node(s), room for "
                f"{by_memory}; set budget.max_concurrent to {by_memory} or less, or shrink that corner",
            )
        ]
    return result, []


def node_memory_mb() -> list[float]:
    """The memory Ray offers trials on each live node (its ``memory`` resource), in MiB."""
    import ray

    return [n["Resources"].get("memory", 0.0) / _MB for n in ray.nodes() if n.get("Alive")]
