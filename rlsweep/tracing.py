"""OpenTelemetry traces of a sweep: where each trial's time goes, as spans in any OTLP/HTTP backend.

Off unless the spec has a ``tracing`` section. Off, nothing here imports OpenTelemetry: the trial loop and the
driver hold :data:`OFF`, whose methods do nothing. On, the driver resolves one :class:`TraceTarget` (the
endpoint, its headers, the sweep span's context) and hands it to every trial, so trials on other nodes need
no environment of their own.

Traces:

- the sweep's (driver): ``sweep`` > ``preflight``, ``suggest`` (each searcher suggestion), ``decide`` (each
  scheduler decision: continue, pause, stop), ``exploit`` (PBT's donor and mutations);
- one per trial, linked to the sweep's: ``trial`` (made by the driver, from when Tune starts the trial to
  when it ends, retries and resumes included) > ``build``, ``restore``, ``iteration`` (one per
  ``algo.train()``) > ``sample`` / ``learn`` / ``weight_sync``; ``evaluate`` and ``checkpoint``. The trial's
  processes put their spans under the driver's ``trial`` span by ids both derive from the sweep and trial
  ids (:func:`trial_span_ids`), and send them before every report: Tune may end a trial's process after
  any report.

An iteration's ``sample`` and ``learn`` spans are the intervals ``sample_time_s`` and ``learn_time_s``
add up (:class:`rlsweep.trainables._timing.PhaseTimer`); they never overlap, so their durations plus the
gaps between them are the iteration span's, and the gaps are ``other_time_s``.

Uses ``opentelemetry-sdk`` and its OTLP/HTTP exporter (``pip install 'rlsweep[tracing]'``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import util as importlib_util
from typing import Any

#: The packages tracing needs (the ``tracing`` extra).
REQUIRED_MODULES = ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter")
#: Where an OTLP/HTTP receiver takes traces, below its base URL; MLflow 3's tracking server included.
TRACES_PATH = "/v1/traces"
#: The header that names the MLflow experiment a trace goes to.
MLFLOW_EXPERIMENT_HEADER = "x-mlflow-experiment-id"
#: Span attributes rlsweep sets, under one prefix.
PREFIX = "rlsweep."


def missing_modules() -> list[str]:
    """The packages tracing needs that are not installed (found without importing them)."""
    missing = []
    for name in REQUIRED_MODULES:
        try:
            found = importlib_util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


def endpoint_from_environment(environ: Mapping[str, str] = os.environ) -> str | None:
    """The traces URL the standard variables name: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as is, or
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces`` (the OTLP/HTTP rule)."""
    if url := environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return url
    if url := environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return url.rstrip("/") + TRACES_PATH
    return None


def headers_from_environment(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_HEADERS`` and ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` (``k=v,k2=v2``, URL-encoded),
    the second winning."""
    from urllib.parse import unquote

    headers: dict[str, str] = {}
    for name in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        for item in environ.get(name, "").split(","):
            key, sep, value = item.partition("=")
            if sep and key.strip():
                headers[unquote(key.strip()).lower()] = unquote(value.strip())
    return headers


def traces_url(endpoint: str) -> str:
    """A receiver's base URL (``http://host:4318``) or its traces URL, as the traces URL."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith(TRACES_PATH) else endpoint + TRACES_PATH


@dataclass(frozen=True)
class TraceTarget:
    """Where a sweep's spans go, resolved once on the driver and handed to every trial (picklable).

    Attributes:
        endpoint: The OTLP/HTTP traces URL.
        headers: Sent with every export (the MLflow experiment's id, the environment's headers).
        service_name: The ``service.name`` of the spans' resource.
        sweep_id: The sweep's id: with a trial's id, the ids of that trial's root span (:func:`trial_span_ids`).
    """

    endpoint: str
    headers: tuple[tuple[str, str], ...] = ()
    service_name: str = "rlsweep"
    sweep_id: str = ""

    def with_sweep(self, sweep_id: str) -> TraceTarget:
        return TraceTarget(self.endpoint, self.headers, self.service_name, sweep_id)


def target_for(tracing: Any, mlflow_experiment_id: str | None = None, mlflow_uri: str | None = None) -> TraceTarget | None:
    """The target a spec's ``tracing`` section names (None: off). ``to: mlflow`` needs the sweep's MLflow
    server and experiment id; the spec's validation has checked the server is an http(s) one."""
    if tracing is None:
        return None
    headers = headers_from_environment()
    if tracing.to == "mlflow":
        endpoint = traces_url(str(mlflow_uri))
        headers[MLFLOW_EXPERIMENT_HEADER] = str(mlflow_experiment_id)
    else:
        endpoint = traces_url(tracing.otlp_endpoint) if tracing.otlp_endpoint else endpoint_from_environment()
        if endpoint is None:
            return None
    return TraceTarget(endpoint, tuple(sorted(headers.items())), tracing.service_name)


def attribute_value(value: Any) -> Any:
    """A span attribute's value: OpenTelemetry takes str, bool, int, float and their lists."""
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (str, bool, int, float)) for v in value):
        if len({type(v) for v in value}) == 1:
            return list(value)
    return repr(value)[:500]


def attributes(values: Mapping[str, Any], prefix: str = PREFIX) -> dict[str, Any]:
    return {prefix + str(k): attribute_value(v) for k, v in values.items() if v is not None}


#: perf_counter seconds -> epoch nanoseconds, for spans made after the fact from the phase timer's intervals.
_CLOCK_OFFSET_NS = time.time_ns() - time.perf_counter_ns()


def epoch_ns(perf_counter_s: float) -> int:
    return int(perf_counter_s * 1e9) + _CLOCK_OFFSET_NS


class Off:
    """Tracing off: every method does nothing, and nothing imports OpenTelemetry."""

    enabled = False

    @contextlib.contextmanager
    def span(self, name: str, **values: Any) -> Iterator[None]:
        yield

    def record(self, name: str, start_s: float, end_s: float, **values: Any) -> None:
        pass

    def record_iteration(
        self, start_s: float, end_s: float, phases: Mapping[str, Sequence[tuple[float, float]]], **values: Any
    ) -> None:
        pass

    def event(self, name: str, **values: Any) -> None:
        pass

    def start_trial(self, trial_id: str, **values: Any) -> None:
        pass

    def end_trial(self, trial_id: str, **values: Any) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


OFF = Off()


def trial_span_ids(sweep_id: str, trial_id: str) -> tuple[int, int]:
    """The trace id and root span id of a trial's trace, the same wherever they are computed: the driver
    makes the root span (it sees the trial start and end, also when Tune ends it early), the trial's
    processes put their spans under it."""
    digest = hashlib.sha256(f"{sweep_id}/{trial_id}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


class Tracer:
    """Spans of one process under one parent: the sweep's root span on the driver, or a trial's root span
    (made by the driver) in a trial's process. Its own provider, not the global one: a user's or Ray's
    tracing stays as it is."""

    enabled = True

    def __init__(self, target: TraceTarget) -> None:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator

        class ChosenIds(IdGenerator):
            """Random ids, except the trace and span id of a trial's root span, chosen beforehand."""

            def __init__(self) -> None:
                self.random, self.chosen = RandomIdGenerator(), None

            def generate_trace_id(self) -> int:
                return self.chosen[0] if self.chosen else self.random.generate_trace_id()

            def generate_span_id(self) -> int:
                return self.chosen[1] if self.chosen else self.random.generate_span_id()

        self.target, self._trace, self._lock = target, trace, threading.Lock()
        self.ids = ChosenIds()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": target.service_name}), id_generator=self.ids
        )
        exporter = OTLPSpanExporter(endpoint=target.endpoint, headers=dict(target.headers), timeout=EXPORT_TIMEOUT_S)
        self.provider.add_span_processor(BatchSpanProcessor(PausingExporter(exporter), schedule_delay_millis=1000))
        self.tracer = self.provider.get_tracer("rlsweep")
        self._stack: list[Any] = []

    def _parent(self) -> Any:
        return self._trace.set_span_in_context(self._stack[-1])

    @contextlib.contextmanager
    def span(self, name: str, **values: Any) -> Iterator[Any]:
        """A span around a block, a child of the innermost open one."""
        span = self.tracer.start_span(name, context=self._parent(), attributes=attributes(values))
        self._stack.append(span)
        try:
            yield span
        except BaseException as exc:
            span.record_exception(exc)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            self._stack.pop()
            span.end()

    def record(self, name: str, start_s: float, end_s: float, parent: Any = None, **values: Any) -> Any:
        """A span of an interval already measured (``time.perf_counter`` seconds)."""
        context = self._trace.set_span_in_context(parent) if parent is not None else self._parent()
        span = self.tracer.start_span(name, context=context, start_time=epoch_ns(start_s), attributes=attributes(values))
        span.end(end_time=epoch_ns(end_s))
        return span

    def record_iteration(
        self, start_s: float, end_s: float, phases: Mapping[str, Sequence[tuple[float, float]]], **values: Any
    ) -> None:
        """An ``iteration`` span and, under it, one span per phase interval (they do not overlap)."""
        iteration = self.tracer.start_span(
            "iteration", context=self._parent(), start_time=epoch_ns(start_s), attributes=attributes(values)
        )
        for phase, intervals in phases.items():
            for start, end in intervals:
                self.record(phase, start, end, parent=iteration)
        iteration.end(end_time=epoch_ns(end_s))

    def event(self, name: str, **values: Any) -> None:
        """A zero-length span (a searcher suggestion, a scheduler decision) under the parent."""
        now = time.perf_counter()
        self.record(name, now, now, **values)

    def flush(self) -> None:
        """Send every ended span now: Tune may end a trial's process at any report without warning."""
        self.provider.force_flush(timeout_millis=10_000)

    def close(self) -> None:
        self.provider.shutdown()


#: How long one export may take (the OTLP exporter retries within it), and how long nothing is sent after one
#: failed: a trial flushes its spans before every report, so a collector that is down would otherwise hold
#: every report of every trial for the whole timeout.
EXPORT_TIMEOUT_S = 5
PAUSE_AFTER_FAILURE_S = 60.0


class PausingExporter:
    """Wraps a span exporter: after an export fails, spans are dropped for ``pause_s`` instead of being sent
    (each send would wait out the exporter's timeout again), with one warning per pause. A trace with a gap
    is worth less than a sweep that runs at its own speed."""

    def __init__(self, inner: Any, pause_s: float = PAUSE_AFTER_FAILURE_S, clock: Any = time.monotonic) -> None:
        self.inner, self.pause_s, self.clock = inner, pause_s, clock
        self.paused_until = float("-inf")
        self.dropped = 0

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        if self.clock() < self.paused_until:
            self.dropped += len(spans)
            return SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
        except Exception:  # an exporter that raises instead of returning FAILURE
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self.paused_until = self.clock() + self.pause_s
            import logging

            from rlsweep import _compat

            logging.getLogger("rlsweep.tracing").warning(
                "could not send %d span(s) to %s; spans are dropped for the next %.0f s",
                len(spans), _compat.otlp_endpoint(self.inner, "the OTLP endpoint"), self.pause_s,
            )
        return result

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.clock() < self.paused_until or bool(self.inner.force_flush(timeout_millis))

    def shutdown(self) -> None:
        self.inner.shutdown()


class TrialTracer(Tracer):
    """A trial process's spans, under the trial's root span, which the driver makes
    (:meth:`SweepTracer.start_trial`): its ids come from :func:`trial_span_ids`."""

    def __init__(self, target: TraceTarget, trial_id: str) -> None:
        super().__init__(target)
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

        trace_id, span_id = trial_span_ids(target.sweep_id, trial_id)
        self._stack = [NonRecordingSpan(SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)))]


class SweepTracer(Tracer):
    """The driver's spans: the ``sweep`` root (a trace of its own), the driver's work under it, and each
    trial's root span, which starts a trial's trace linked to the sweep's."""

    def __init__(self, target: TraceTarget, **values: Any) -> None:
        super().__init__(target)
        self.root = self.tracer.start_span(
            "sweep", context=self._trace.set_span_in_context(self._trace.INVALID_SPAN), attributes=attributes(values)
        )
        self._stack = [self.root]
        self.trials: dict[str, Any] = {}

    def start_trial(self, trial_id: str, **values: Any) -> None:
        """The root span of a trial's trace, from when Tune starts the trial (again, after a retry or a
        resume: the same ids) to when it ends, linked to the sweep span."""
        if trial_id in self.trials:
            return
        link = self._trace.Link(self.root.get_span_context(), {PREFIX + "link": "sweep"})
        with self._lock:
            self.ids.chosen = trial_span_ids(self.target.sweep_id, trial_id)
            try:
                span = self.tracer.start_span(
                    "trial", context=self._trace.set_span_in_context(self._trace.INVALID_SPAN), links=[link],
                    attributes=attributes({"trial_id": trial_id, "sweep_id": self.target.sweep_id, **values}),
                )
            finally:
                self.ids.chosen = None
        self.trials[trial_id] = span

    def end_trial(self, trial_id: str, **values: Any) -> None:
        span = self.trials.pop(trial_id, None)
        if span is not None:
            span.set_attributes(attributes(values))
            span.end()

    def close(self) -> None:
        for trial_id in list(self.trials):
            self.end_trial(trial_id, state="UNFINISHED")
        self.root.end()
        super().close()


def sweep_tracer(target: TraceTarget | None, **values: Any) -> SweepTracer | Off:
    return OFF if target is None else SweepTracer(target, **values)


def trial_tracer(target: TraceTarget | None, trial_id: str) -> TrialTracer | Off:
    return OFF if target is None else TrialTracer(target, trial_id)


# --- the driver's tracer: scheduler decisions and searcher suggestions report to it -------------------

_driver: SweepTracer | Off = OFF


def driver() -> SweepTracer | Off:
    """The running sweep's tracer on the driver (:data:`OFF` when tracing is off or no sweep runs)."""
    return _driver


@contextlib.contextmanager
def driving(tracer_: SweepTracer | Off) -> Iterator[SweepTracer | Off]:
    """Make ``tracer_`` the driver's while a sweep runs, and close it afterwards."""
    global _driver
    before, _driver = _driver, tracer_
    try:
        yield tracer_
    finally:
        _driver = before
        tracer_.close()


__all__ = [
    "MLFLOW_EXPERIMENT_HEADER",
    "OFF",
    "Off",
    "SweepTracer",
    "TraceTarget",
    "TrialTracer",
    "driver",
    "driving",
    "endpoint_from_environment",
    "missing_modules",
    "sweep_tracer",
    "target_for",
    "trial_span_ids",
    "trial_tracer",
]
