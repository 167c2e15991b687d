"""A collector that is down does not hold the sweep: after one failed export, spans are dropped for a while
instead of each report waiting out the exporter's timeout again (fast: no Ray, a real OTLP exporter)."""

from __future__ import annotations

import socket

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rlsweep.tracing import PausingExporter


class Counting(OTLPSpanExporter):
    """The real OTLP/HTTP exporter, counting the exports it tries."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tries = 0

    def export(self, spans):
        self.tries += 1
        return super().export(spans)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def _spans(n: int):
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for i in range(n):
        provider.get_tracer("t").start_span(f"s{i}").end()
    return memory.get_finished_spans()


def test_after_a_failed_export_nothing_is_sent_until_the_pause_ends(caplog):
    now = [0.0]
    inner = Counting(endpoint=f"http://127.0.0.1:{_closed_port()}/v1/traces", timeout=1)
    exporter = PausingExporter(inner, pause_s=60.0, clock=lambda: now[0])
    assert exporter.export(_spans(2)) is SpanExportResult.FAILURE
    assert inner.tries == 1
    assert "spans are dropped for the next 60 s" in caplog.text
    # Within the pause: dropped, without trying (each try would wait out the timeout).
    now[0] = 59.0
    assert exporter.export(_spans(3)) is SpanExportResult.FAILURE
    assert exporter.force_flush() is True
    assert inner.tries == 1 and exporter.dropped == 3
    # After it: tried again.
    now[0] = 60.5
    exporter.export(_spans(1))
    assert inner.tries == 2


def test_a_collector_that_answers_gets_every_span():
    memory = InMemorySpanExporter()
    exporter = PausingExporter(memory, clock=lambda: 0.0)
    assert exporter.export(_spans(2)) is SpanExportResult.SUCCESS
    assert exporter.export(_spans(1)) is SpanExportResult.SUCCESS
    assert len(memory.get_finished_spans()) == 3 and exporter.dropped == 0
