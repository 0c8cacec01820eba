"""OpenTelemetry tracing: optional (``pip install 'backfiller[tracing]'``), off by default.

``--otlp-endpoint URL`` (or ``$BACKFILLER_OTLP_ENDPOINT``) turns it on; spans are exported over
OTLP/HTTP to ``URL/v1/traces``. What is traced:

- a launch: the HTTP request's span (continuing a ``traceparent`` header), the GraphQL root
  field's span under it, and the database statements under that (the insert among them);
  the launch's trace context is stored with the backfill;
- a run: a span from its claim to its result in the daemon, *linked* to the launch of its
  backfill (a run is not part of the request that launched it), whose context travels with
  the run to the worker (in the local pool's pipe, or in the Celery task's message); there a
  span wraps the job, and the user's own spans nest under it;
- a daemon tick: a span per pass of a daemon task that spoke to the database (``tick
  <task>``), with its statements under it.

A database statement gets a span only under another span (a request, a tick, a job): never a
trace of its own. Every helper is a no-op, and cheap, while tracing is off.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from backfiller import ids

ENDPOINT_VARIABLE = "BACKFILLER_OTLP_ENDPOINT"
_tracer: Any = None
_runs: dict[int, Any] = {}
_lock = threading.Lock()


@dataclasses.dataclass
class _Tick:
    """A daemon task's pass: its span is made by its first database statement."""

    name: str
    began: int
    span: Any = None


_tick: contextvars.ContextVar[_Tick | None] = contextvars.ContextVar(
    "backfiller_tick", default=None
)


class TracingUnavailable(RuntimeError):
    """OpenTelemetry is not installed."""


def enabled() -> bool:
    return _tracer is not None


def configure(
    endpoint: str | None = None, service: str = "backfiller", exporter: Any = None
) -> bool:
    """Turn tracing on for this process (and, through the environment, its workers).

    Args:
        endpoint: the OTLP/HTTP collector; ``$BACKFILLER_OTLP_ENDPOINT`` when None.
        exporter: a span exporter to use instead (tests: the in-memory one).

    Returns: whether tracing is on.

    Raises:
        TracingUnavailable: asked for, but the ``tracing`` extra is not installed.
    """
    global _tracer
    endpoint = endpoint or os.environ.get(ENDPOINT_VARIABLE) or None
    if exporter is None and endpoint is None:
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        raise TracingUnavailable(
            "tracing needs OpenTelemetry: pip install 'backfiller[tracing]'"
        ) from None
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        assert endpoint is not None
        os.environ[ENDPOINT_VARIABLE] = endpoint  # worker processes inherit it
        target = endpoint.rstrip("/") + "/v1/traces"
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=target)))
    trace.set_tracer_provider(provider)  # the user's spans in this process use it too
    _tracer = provider.get_tracer("backfiller")
    _install_database_spans()
    return True


def disable() -> None:
    """Turn tracing off in this process (tests)."""
    global _tracer
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    _tracer = None
    if event.contains(Engine, "before_cursor_execute", _before_statement):
        event.remove(Engine, "before_cursor_execute", _before_statement)
        event.remove(Engine, "after_cursor_execute", _after_statement)
        event.remove(Engine, "handle_error", _statement_failed)


def shutdown() -> None:
    """Flush what is buffered (a worker or daemon about to exit)."""
    if _tracer is None:
        return
    from opentelemetry import trace

    provider: Any = trace.get_tracer_provider()
    with contextlib.suppress(Exception):
        provider.force_flush()


@contextlib.contextmanager
def span(
    name: str,
    attributes: Mapping[str, Any] | None = None,
    carrier: Mapping[str, str] | None = None,
    server: bool = False,
) -> Iterator[Any]:
    """A span around a block, child of the current one (or of ``carrier``'s traceparent)."""
    if _tracer is None:
        yield None
        return
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind

    context = extract(dict(carrier)) if carrier else None
    kind = SpanKind.SERVER if server else SpanKind.INTERNAL
    with _tracer.start_as_current_span(
        name, context=context, kind=kind, attributes=dict(attributes or {})
    ) as current:
        yield current


def current_trace_parent() -> str | None:
    """The ``traceparent`` of the current span (stored with a backfill at its launch)."""
    if _tracer is None:
        return None
    from opentelemetry.propagate import inject

    carrier: dict[str, str] = {}
    inject(carrier)
    return carrier.get("traceparent")


def _context_of(trace_parent: str | None) -> Any:
    from opentelemetry import trace
    from opentelemetry.propagate import extract

    if not trace_parent:
        return None
    span_context = trace.get_current_span(extract({"traceparent": trace_parent})).get_span_context()
    return span_context if span_context.is_valid else None


def start_runs(tasks: Sequence[Any], backfill_trace_parent: str | None) -> list[Any]:
    """At a claim: a span per run, linked to its backfill's launch; the tasks returned carry
    the span's context to the worker."""
    if _tracer is None:
        return list(tasks)
    from opentelemetry import trace
    from opentelemetry.propagate import inject
    from opentelemetry.trace import Link

    launched = _context_of(backfill_trace_parent)
    links = [Link(launched)] if launched is not None else []
    found = []
    for task in tasks:
        run = _tracer.start_span(
            f"run {task.job_name}",
            context=trace.set_span_in_context(trace.INVALID_SPAN),  # a new trace per run
            links=links,
            attributes={
                "backfiller.backfill_id": ids.backfill_id(task.backfill_id),
                "backfiller.run_id": ids.run_id(task.run_id),
                "backfiller.partition_key": task.partition_key,
                "backfiller.attempt": task.attempt,
            },
        )
        carrier: dict[str, str] = {}
        inject(carrier, context=trace.set_span_in_context(run))
        with _lock:
            _runs[task.run_id] = run
        found.append(dataclasses.replace(task, trace_parent=carrier.get("traceparent")))
    return found


def end_run(run_id: int, outcome: str) -> None:
    """At a run's result: end its span."""
    if _tracer is None:
        return
    with _lock:
        run = _runs.pop(run_id, None)
    if run is not None:
        run.set_attribute("backfiller.outcome", outcome)
        run.end()


@contextlib.contextmanager
def job_span(task: Any, worker: str | None = None) -> Iterator[None]:
    """In the worker: the job's span, child of its run's; the user's spans nest under it."""
    if _tracer is None:
        yield
        return
    carrier = {"traceparent": task.trace_parent} if task.trace_parent else None
    attributes = {
        "backfiller.run_id": ids.run_id(task.run_id),
        "backfiller.attempt": task.attempt,
        "backfiller.partition_key": task.partition_key,
    }
    if worker:
        attributes["backfiller.worker"] = worker
    with span(f"execute {task.job_name}", attributes, carrier):
        yield


def current_trace_id() -> str | None:
    """The trace id of the current span, as 32 hex digits (for log lines); None: none."""
    if _tracer is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


@contextlib.contextmanager
def tick(name: str) -> Iterator[None]:
    """A pass of the daemon's task ``name``: its database statements nest under one span,
    ``tick <name>``, made by the first of them (a pass that reads nothing makes no span)."""
    if _tracer is None:
        yield
        return
    current = _Tick(name, time.time_ns())
    token = _tick.set(current)
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        _tick.reset(token)
        if current.span is not None:
            if failed:
                from opentelemetry.trace import Status, StatusCode

                current.span.set_status(Status(StatusCode.ERROR))
            current.span.end()


def _statement_parent() -> Any:
    """The context a statement's span goes under; None: the statement gets no span."""
    from opentelemetry import trace

    if trace.get_current_span().get_span_context().is_valid:
        return trace.set_span_in_context(trace.get_current_span())
    pending = _tick.get()
    if pending is None:
        return None
    if pending.span is None:
        pending.span = _tracer.start_span(
            f"tick {pending.name}",
            context=trace.set_span_in_context(trace.INVALID_SPAN),
            start_time=pending.began,
            attributes={"backfiller.task": pending.name},
        )
    return trace.set_span_in_context(pending.span)


def _install_database_spans() -> None:
    """A span per SQL statement, under the current span or tick (the launch's insert...)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    if event.contains(Engine, "before_cursor_execute", _before_statement):
        return
    event.listen(Engine, "before_cursor_execute", _before_statement)
    event.listen(Engine, "after_cursor_execute", _after_statement)
    event.listen(Engine, "handle_error", _statement_failed)


def _before_statement(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
    if _tracer is None:
        return
    parent = _statement_parent()
    if parent is None:
        return  # not under a request, a tick or a job: no trace of its own
    verb = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "SQL"
    context = args[-2] if len(args) >= 2 else None
    current = _tracer.start_span(
        f"db {verb}",
        context=parent,
        attributes={"db.system": conn.dialect.name, "db.operation": verb},
    )
    if context is not None:
        context._backfiller_span = current


def _after_statement(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
    context: Any = args[-2] if len(args) >= 2 else None
    current = getattr(context, "_backfiller_span", None)
    if current is not None:
        current.end()
        context._backfiller_span = None


def _statement_failed(exception_context: Any) -> None:
    context: Any = getattr(exception_context, "execution_context", None)
    current = getattr(context, "_backfiller_span", None)
    if current is not None:
        current.end()
        context._backfiller_span = None
