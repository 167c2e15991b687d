"""Spans from a trial's remote env runners and learners (``num_env_runners`` >= 1, ``num_learners`` >= 1),
in the trial's trace (:mod:`rlsweep.tracing`).

With tracing on, the trial's config names subclasses of its env runner and learner classes that wrap
``sample`` and ``update`` in spans; Ray ships them to the remote actors with the trace target and the
trial id, and each actor puts its spans under the trial's root span (ids derived from the sweep and trial
ids, as the trial's own process does). Each actor sends its spans in batches once a second and as it
stops; an actor killed with its trial loses its last second.
"""

from __future__ import annotations

import os
from typing import Any

from rlsweep import tracing


def _remote_tracer(owner: Any, target: tracing.TraceTarget, trial_id: str) -> Any:
    tracer = getattr(owner, "_rlsweep_tracer", None)
    if tracer is None:
        tracer = owner._rlsweep_tracer = tracing.trial_tracer(target, trial_id)
    return tracer


def _node_id() -> str:
    import ray

    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else ""


def traced_env_runner_class(base: type, target: tracing.TraceTarget, trial_id: str) -> type:
    """``base`` with an ``env_runner.sample`` span around each ``sample`` call (remote runners only: the
    local one's sampling is the iteration's ``sample`` span already)."""

    class TracedEnvRunner(base):  # type: ignore[valid-type, misc]
        def sample(self, *args: Any, **kwargs: Any) -> Any:
            if getattr(self, "worker_index", 0) == 0:
                return super().sample(*args, **kwargs)
            tracer = _remote_tracer(self, target, trial_id)
            with tracer.span("env_runner.sample", worker_index=self.worker_index, pid=os.getpid(), node_id=_node_id()):
                return super().sample(*args, **kwargs)

        def stop(self) -> None:
            try:
                super().stop()
            finally:
                tracer = getattr(self, "_rlsweep_tracer", None)
                if tracer is not None:
                    tracer.close()

    TracedEnvRunner.__name__ = TracedEnvRunner.__qualname__ = f"Traced{base.__name__}"
    return TracedEnvRunner


def traced_learner_class(base: type, target: tracing.TraceTarget, trial_id: str) -> type:
    """``base`` with a ``learner.update`` span around each ``update`` call of a remote learner."""

    class TracedLearner(base):  # type: ignore[valid-type, misc]
        def update(self, *args: Any, **kwargs: Any) -> Any:
            tracer = _remote_tracer(self, target, trial_id)
            with tracer.span("learner.update", pid=os.getpid(), node_id=_node_id()):
                result = super().update(*args, **kwargs)
            tracer.flush()  # a learner has no stop hook; its batches are few and large
            return result

    TracedLearner.__name__ = TracedLearner.__qualname__ = f"Traced{base.__name__}"
    return TracedLearner


def trace_remote_workers(config: Any, target: tracing.TraceTarget | None, trial_id: str) -> Any:
    """Point ``config`` at traced env runner and learner classes where the trial runs them remotely."""
    if target is None:
        return config
    if config.num_env_runners >= 1:
        base = config.env_runner_cls
        if base is None:
            from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
            from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

            base = MultiAgentEnvRunner if config.is_multi_agent else SingleAgentEnvRunner
        if isinstance(base, type):
            config.env_runners(env_runner_cls=traced_env_runner_class(base, target, trial_id))
    if config.num_learners >= 1 and isinstance(config.learner_class, type):
        config.learners(learner_class=traced_learner_class(config.learner_class, target, trial_id))
    return config
