"""What the sweep says of its trials' settings before they run: what one iteration does, and what a replay
buffer type set without a capacity leaves the buffer holding. Read from the settings a trial would build,
so the lines say what RLlib will do, not what the spec's words suggest."""

from __future__ import annotations

from collections.abc import Mapping

from rlsweep.spec import SweepSpec
from rlsweep.trainables._config import settings_for


def iteration_line(spec: SweepSpec) -> str:
    """What one iteration of the spec's algorithm does (env steps sampled at least, or one training step),
    its time floor, and the budget in env steps: the sweep's first line."""
    from rlsweep.trainables._config import MIN_STEPS, MIN_TIME

    settings = settings_for(spec, {})
    work = f"samples at least {settings[MIN_STEPS]} env steps" if settings[MIN_STEPS] else f"is one training step ({MIN_STEPS} 0)"
    return (
        f"{spec.algorithm}: one iteration {work}, time floor {settings[MIN_TIME]} s ({MIN_TIME}); "
        f"budget {spec.budget.env_steps} env steps per trial"
    )


def replay_buffer_line(spec: SweepSpec) -> str | None:
    """What a ``replay_buffer_config.type`` set or searched without a ``capacity`` leaves the buffer holding,
    or None.

    RLlib's ``training(replay_buffer_config=...)`` replaces the whole dict when the type changes, so the
    algorithm's capacity (SAC 1,000,000, DQN 50,000) goes with it and the class's own default (10,000 for
    the episode buffers) holds: a buffer a hundred times smaller than the user may think, said once."""
    from rlsweep._dotted import unflatten
    from rlsweep.search_spaces._domains import Choice
    from rlsweep.trainables._config import algorithm_class

    type_path = "training.replay_buffer_config.type"
    buffer = unflatten(settings_for(spec, {})).get("training", {}).get("replay_buffer_config")
    buffer = buffer if isinstance(buffer, Mapping) else {}
    drawn = [p for p in spec.search_space if p.path == type_path and isinstance(p.domain, Choice)]
    chosen = any(p.startswith("training.replay_buffer_config") and p != type_path for p in spec.search_space.paths)
    if "capacity" in buffer or chosen:  # the user's capacity (or a whole dict drawn): nothing silent
        return None
    kinds = [v for p in drawn for v in p.domain.values] if drawn else [buffer["type"]] if "type" in buffer else []
    if not kinds:
        return None
    import inspect

    from ray.rllib.utils import replay_buffers

    default = getattr(algorithm_class(spec.algorithm).get_default_config(), "replay_buffer_config", {}) or {}
    own = default.get("type")
    if "capacity" not in default:
        return None
    smaller = []
    for kind in dict.fromkeys(kinds):
        cls = getattr(replay_buffers, kind, None) if isinstance(kind, str) else kind
        if not inspect.isclass(cls) or kind in (own, getattr(own, "__name__", None)):
            continue  # not a class RLlib names, or the algorithm's own type (RLlib keeps the dict)
        parameter = inspect.signature(cls).parameters.get("capacity")
        if parameter is not None and parameter.default not in (inspect.Parameter.empty, default["capacity"]):
            smaller.append((getattr(kind, "__name__", kind), parameter.default))
    if not smaller:
        return None
    instead = f"not {spec.algorithm}'s {default['capacity']:,}"
    then = "and RLlib then replaces the whole replay_buffer_config; set training.replay_buffer_config.capacity to choose"
    if not drawn:
        (name, holds), = smaller
        return (f"{spec.algorithm}: the replay buffer holds {holds:,} env steps ({name}'s own default, {instead}): "
                f"training.replay_buffer_config sets a type without a capacity, {then}")
    where = "; ".join(f"{holds:,} env steps where it is {name} ({name}'s own default)" for name, holds in smaller)
    return (f"{spec.algorithm}: the replay buffer holds {where}, {instead}: search_space.{type_path} draws a type "
            f"without a capacity, {then}")

