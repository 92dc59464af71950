"""The decision log's optional OpenTelemetry export: each record as one span, sent over
OTLP/HTTP to a team's collector (the ``otel`` extra: ``opentelemetry-sdk`` and
``opentelemetry-exporter-otlp-proto-http``).

Spans rather than log records: the Python SDK's logs signal is still experimental (its
modules are ``_logs`` and its classes have moved between releases), while the traces
API has been stable since 1.0, and a decision has a start and a duration as a span
does (docs/DECISIONS.md, "Rules: the audit's OpenTelemetry export"). Nothing here is
imported unless an endpoint is configured, and the SDK only at the first record.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

__all__ = ["EXTRA_HINT", "SpanExport", "endpoint", "installed", "traces_url"]

ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
EXTRA_HINT = "pip install 'kodelet[otel]'"
TIMEOUT = 2.0
"""Seconds an export may take: the last batch is sent when a bridge's call ends, and an
unreachable collector must not hold the agent up for long."""
_MODULES = ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter")


def endpoint(configured: str, otel: bool, env: Mapping[str, str]) -> str:
    """Where spans go: ``[audit] otlp_endpoint``, else ``$OTEL_EXPORTER_OTLP_ENDPOINT``
    when ``[audit] otel = true``, else "" (no export)."""
    if configured:
        return configured
    return (env.get(ENV) or "").strip() if otel else ""


def traces_url(base: str) -> str:
    """The OTLP/HTTP traces URL of a base endpoint, as the OTel environment variable has it."""
    return base if base.rstrip("/").endswith("/v1/traces") else base.rstrip("/") + "/v1/traces"


def installed() -> bool:
    """Whether the ``otel`` extra is installed (found, not imported)."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in _MODULES)
    except (ImportError, ValueError):
        return False


class SpanExport:
    """A tracer provider of its own (never the process's global one) with a batching
    OTLP/HTTP exporter; :meth:`close` sends what is left."""

    def __init__(self, base: str, service: str = "kodelet") -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.url = traces_url(base)
        self._provider = TracerProvider(resource=Resource.create({"service.name": service}))
        exporter = OTLPSpanExporter(endpoint=self.url, timeout=TIMEOUT)
        self._provider.add_span_processor(BatchSpanProcessor(exporter))
        self._tracer = self._provider.get_tracer("kodelet.audit")

    def emit(self, record: Mapping[str, Any], start_ns: int, end_ns: int) -> None:
        attributes = {
            f"kodelet.{key}": value
            for key, value in record.items()
            if isinstance(value, str | int | float | bool) and key != "time"
        }
        span = self._tracer.start_span(
            f"kodelet.decision {record.get('decision', '')}".strip(),
            start_time=start_ns,
            attributes=attributes,
        )
        span.end(end_time=end_ns)

    def close(self) -> None:
        self._provider.shutdown()
