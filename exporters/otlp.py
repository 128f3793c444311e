"""OTLP score sink (DESIGN §7): every `ScoreRecord` as OpenTelemetry data, the transport.

What a record becomes (an evaluation span with its `gen_ai.evaluation.result` event, a judge span
per judge call, a log record; a log record only for records without trace ids) is
`exporters._otlp_mapping`; this module sends it through the opentelemetry-sdk OTLP exporters
(gRPC or HTTP/protobuf). The exporters are called directly, not through a batch processor:
`export` returns only once the backend confirmed, and raises `ExportError(retryable=True)`
otherwise, so the caller's durable queue does the retrying. The SDK exporter's own retries stay
inside its `timeout`.

The sidecar runs one sink per signal (`OtlpSink.per_signal`: `otlp` for spans, `otlp_logs` for
log records), so the queue confirms each signal on its own: log records the backend refuses
never make it re-send spans it accepted. A backend that does not serve a signal at all (gRPC
`UNIMPLEMENTED`, HTTP 404/405/501: a traces-only Tempo or Jaeger has no logs service) gets
`ExportError(retryable=False)` instead: the records are dropped for that sink and counted, a
warning is logged once, and the signal is asked for again only every few minutes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from exporters._otlp_env import SIGNALS, OtlpSignal, env, signal_enabled
from exporters._otlp_mapping import build_log_records, build_spans
from scorers.errors import ExportError
from scorers.types import ScoreRecord

__all__ = ["OtlpProtocol", "OtlpSignal", "OtlpSink", "build_log_records", "build_spans"]

logger = logging.getLogger(__name__)

OtlpProtocol = Literal["grpc", "http"]
"""The OTLP transport: `grpc` (port 4317) or `http` (HTTP/protobuf, port 4318)."""

_SIGNALS = SIGNALS
_ITEMS = {"traces": "spans", "logs": "log records"}
_SUCCESS: dict[str, object] = {"traces": SpanExportResult.SUCCESS,
                               "logs": LogRecordExportResult.SUCCESS}
_UNSUPPORTED_HTTP = frozenset({404, 405, 501})
"""HTTP answers to an OTLP POST that mean "this signal is not served here"."""
_PROBE_TIMEOUT = 5.0
_GRPC_CHANNEL_OPTIONS: Any = (("grpc.use_local_subchannel_pool", 1),)  # the SDK types values as str
"""Each exporter's channel owns its connections: one rebuilt after a failure connects anew
instead of sharing a connection still waiting out its reconnect backoff."""
_DEFAULT_RECHECK = 300.0


def _resolve_protocol(protocol: str | None, signal: str) -> OtlpProtocol:
    """The transport of one signal: the argument, else `OTEL_EXPORTER_OTLP_{SIGNAL_}PROTOCOL`."""
    value = protocol or env(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL",
                             "OTEL_EXPORTER_OTLP_PROTOCOL") or "grpc"
    value = value.strip().lower()
    if value == "grpc":
        return "grpc"
    if value in ("http", "http/protobuf"):
        return "http"
    if value == "http/json":
        logger.warning("OTLP protocol http/json is not supported by the Python SDK exporters; "
                       "scores are sent as http/protobuf")
        return "http"
    raise ValueError(f"unknown OTLP protocol {value!r}: use grpc or http")


def _redact_url(url: str) -> str:
    """`url` without user info, query or fragment (they may hold credentials)."""
    parts = urlsplit(url if "://" in url else f"//{url}")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    shown = urlunsplit((parts.scheme, host, parts.path, "", ""))
    return shown.removeprefix("//")


def _http_signal_url(endpoint: str, insecure: bool, path: str) -> str:
    """The full OTLP/HTTP URL of one signal from a base endpoint (as OTEL_EXPORTER_OTLP_ENDPOINT)."""
    base = endpoint if "://" in endpoint else f"{'http' if insecure else 'https'}://{endpoint}"
    base = base.rstrip("/")
    for suffix in ("/v1/traces", "/v1/logs"):
        base = base.removesuffix(suffix)
    return f"{base}/{path}"


class _HttpStatus:
    """The status of the last HTTP response an exporter's session received (a `requests`
    response hook: the SDK exporter only says SUCCESS or FAILURE)."""

    def __init__(self) -> None:
        self.last: int | None = None

    def hook(self, response: Any, *args: Any, **kwargs: Any) -> None:
        status = getattr(response, "status_code", None)
        self.last = status if isinstance(status, int) else None


def _http_session(signal: OtlpSignal, status: _HttpStatus) -> Any:
    """A `requests` session reporting each response's status to `status`; None when an OTLP
    credential provider supplies the session (`OTEL_PYTHON_EXPORTER_OTLP_HTTP_{,SIGNAL_}
    CREDENTIAL_PROVIDER`): then the SDK's own session is used and no status is seen."""
    if env("OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
            f"OTEL_PYTHON_EXPORTER_OTLP_HTTP_{signal.upper()}_CREDENTIAL_PROVIDER"):
        return None
    import requests  # type: ignore[import-untyped,unused-ignore]  # the SDK HTTP exporters' own

    session = requests.Session()
    session.hooks["response"].append(status.hook)
    return session


def _grpc_probe(exporter: Any, signal: OtlpSignal, timeout: float | None) -> Any:
    """Ask the backend once whether it serves `signal`: an empty export request over the SDK
    exporter's own stub and metadata (same channel, TLS and headers). Returns the
    `grpc.StatusCode` answered (`OK` included), or None when the exporter offers no stub."""
    import grpc  # type: ignore[import-untyped,unused-ignore]
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    client = getattr(exporter, "_client", None)
    if client is None or not hasattr(client, "Export"):
        return None
    request: Any = (ExportTraceServiceRequest() if signal == "traces"
                    else ExportLogsServiceRequest())
    try:
        client.Export(request=request, metadata=getattr(exporter, "_headers", None) or None,
                      timeout=min(timeout or _PROBE_TIMEOUT, _PROBE_TIMEOUT))
    except grpc.RpcError as error:
        code = error.code() if callable(getattr(error, "code", None)) else None
        return code if isinstance(code, grpc.StatusCode) else None
    except Exception:  # noqa: BLE001 - a probe that cannot ask tells nothing
        return None
    return grpc.StatusCode.OK


def _make_exporter(signal: OtlpSignal, protocol: OtlpProtocol, endpoint: str | None,
                   headers: dict[str, str] | None, insecure: bool, timeout: float | None,
                   status: _HttpStatus) -> Any:
    """The SDK exporter of one signal."""
    upper = signal.upper()
    if protocol == "grpc":
        # With no endpoint the SDK reads OTEL_EXPORTER_OTLP_{,SIGNAL_}ENDPOINT; a scheme-less
        # env endpoint uses OTEL_EXPORTER_OTLP_{,SIGNAL_}INSECURE when that is set.
        env_insecure = env(f"OTEL_EXPORTER_OTLP_{upper}_INSECURE", "OTEL_EXPORTER_OTLP_INSECURE")
        use_insecure = None if endpoint is None and env_insecure is not None else insecure
        if signal == "traces":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcSpanExporter,
            )
            return GrpcSpanExporter(endpoint=endpoint, insecure=use_insecure, headers=headers,
                                    timeout=timeout, channel_options=_GRPC_CHANNEL_OPTIONS)
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
            OTLPLogExporter as GrpcLogExporter,
        )
        return GrpcLogExporter(endpoint=endpoint, insecure=use_insecure, headers=headers,
                               timeout=timeout, channel_options=_GRPC_CHANNEL_OPTIONS)
    url = _http_signal_url(endpoint, insecure, f"v1/{signal}") if endpoint is not None else None
    session = _http_session(signal, status)
    if signal == "traces":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpSpanExporter,
        )
        return HttpSpanExporter(endpoint=url, headers=headers, timeout=timeout, session=session)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import (
        OTLPLogExporter as HttpLogExporter,
    )
    return HttpLogExporter(endpoint=url, headers=headers, timeout=timeout, session=session)


class _SignalExporter:
    """One signal's SDK exporter (rebuilt after a failure), and whether the backend serves the
    signal at all.

    A failed export is classified: the backend does not serve the signal (gRPC `UNIMPLEMENTED`,
    found by one probe over the same channel; HTTP 404/405/501, seen by a response hook), or
    anything else (transient). Not served: the records are dropped (a non-retryable
    `ExportError`), a warning is logged once, and nothing is sent for `recheck` seconds; after
    that the next batch is tried again.
    """

    def __init__(self, signal: OtlpSignal, protocol: OtlpProtocol, endpoint: str | None,
                 headers: dict[str, str] | None, insecure: bool, timeout: float | None,
                 *, sink: str, recheck: float) -> None:
        self.signal = signal
        self.protocol = protocol
        self._timeout = timeout
        self._sink = sink
        self._recheck = recheck
        self._status = _HttpStatus()
        self._make = functools.partial(_make_exporter, signal, protocol, endpoint, headers,
                                       insecure, timeout, self._status)
        self._exporter = self._make()
        shown = getattr(self._exporter, "_endpoint", None)
        self.target = f"{protocol} {_redact_url(str(shown)) if shown else '?'}"
        self._stale = False
        self._unsupported: str | None = None
        self._recheck_at = 0.0
        self._warned = False

    def send(self, items: Sequence[Any]) -> ExportError | None:
        """Export `items`; None when the backend confirmed them, else the error to raise."""
        now = time.monotonic()
        if self._unsupported is not None and now < self._recheck_at:
            return self._dropped(len(items))
        if self._stale:
            # After a failure, a fresh exporter: a gRPC channel that failed to connect waits out
            # its reconnect backoff, and the queue's own backoff already waited.
            self.shutdown()
            self._exporter = self._make()
            self._stale = False
        self._status.last = None
        result = self._exporter.export(items)
        if result is _SUCCESS[self.signal]:
            if self._unsupported is not None:
                logger.warning("the OTLP backend %s accepts %s again", self.target, self.signal)
                self._unsupported = None
            return None
        why = self._why_unsupported()
        if why is None:
            self._stale = True
            return ExportError(f"OTLP {self.signal} export to {self.target} failed "
                               f"({len(items)} {_ITEMS[self.signal]})", retryable=True)
        if not self._warned:
            self._warned = True
            logger.warning(
                "the OTLP backend %s does not accept %s (%s): scorecar's %s are dropped and "
                'counted in scorecar_export_total{exporter="%s",outcome="dropped"}; '
                "OTEL_%s_EXPORTER=none stops sending them. Asked again every %.0f s.",
                self.target, self.signal, why, _ITEMS[self.signal], self._sink,
                self.signal.upper(), self._recheck)
        self._unsupported = why
        self._recheck_at = now + self._recheck
        return self._dropped(len(items))

    def _dropped(self, count: int) -> ExportError:
        return ExportError(f"the OTLP backend {self.target} does not accept {self.signal} "
                           f"({self._unsupported}); {count} {_ITEMS[self.signal]} dropped",
                           retryable=False)

    def _why_unsupported(self) -> str | None:
        """How the backend said it does not serve this signal; None: it did not say so."""
        if self.protocol == "http":
            status = self._status.last
            return f"HTTP {status}" if status in _UNSUPPORTED_HTTP else None
        code = _grpc_probe(self._exporter, self.signal, self._timeout)
        name = getattr(code, "name", None)
        return "gRPC UNIMPLEMENTED" if name == "UNIMPLEMENTED" else None

    def shutdown(self) -> None:
        try:
            self._exporter.shutdown()
        except Exception:  # shutdown must not fail the caller
            logger.exception("OTLP exporter shutdown failed")


def _default_resource(attributes: Mapping[str, Any] | None) -> Resource:
    """`attributes` over the SDK defaults and `OTEL_RESOURCE_ATTRIBUTES` / `OTEL_SERVICE_NAME`;
    `service.name` is `scorecar` unless one of them names it."""
    resource = Resource.create(dict(attributes or {}))
    name = resource.attributes.get("service.name")
    if not isinstance(name, str) or name.startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "scorecar"}))
    return resource


class OtlpSink:
    """Exports score records as evaluation spans, span events and log records over OTLP.

    With no `endpoint` the SDK's standard environment applies (`OTEL_EXPORTER_OTLP_ENDPOINT`,
    `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `..._LOGS_ENDPOINT`, `..._HEADERS`, `..._TIMEOUT`,
    `..._INSECURE`, `..._COMPRESSION`, certificates). Arguments given here win over the
    environment, except `headers`: over HTTP they are merged with `OTEL_EXPORTER_OTLP_HEADERS`,
    over gRPC non-empty headers replace them (the SDK's behaviour).

    A sink confirms a batch only when every signal it sends was confirmed; the sidecar runs one
    sink per signal (`OtlpSink.per_signal`), so a failing signal never holds back or re-sends
    the other. A backend that does not serve a signal at all (gRPC `UNIMPLEMENTED`, HTTP
    404/405/501, e.g. a traces-only Tempo or Jaeger) is a permanent condition: `export` raises
    `ExportError(retryable=False)` (the records count as dropped for this sink), logs a warning
    once, and sends nothing of that signal for `recheck_unsupported` seconds.

    Args:
        endpoint: the backend: `host:port` or a URL for gRPC (`https://` means TLS); the base URL
            for HTTP (`/v1/traces` and `/v1/logs` are appended). None: from the environment.
        protocol: `grpc` or `http` (HTTP/protobuf). None: `OTEL_EXPORTER_OTLP_{,SIGNAL_}PROTOCOL`
            (`grpc`, `http/protobuf`), else gRPC.
        headers: request headers/metadata (e.g. an auth token). Never logged.
        insecure: plaintext when the endpoint has no scheme (`http://` / `https://` decide
            otherwise).
        timeout: seconds one export may take, the SDK exporter's own retries included. None:
            `OTEL_EXPORTER_OTLP_{,SIGNAL_}TIMEOUT`, else 10.
        judge_content: put judge prompts and replies on the judge spans
            (`gen_ai.input.messages`, `gen_ai.output.messages`).
        resource: resource attributes of everything exported (`service.name` defaults to
            `scorecar`; `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME` apply).
        signals: what this sink sends: `traces` (evaluation and judge spans), `logs` (log
            records), or both.
        name: the `exporter` label of `scorecar_export_total`; default `otlp_logs` for a
            logs-only sink, else `otlp`.
        recheck_unsupported: seconds a signal the backend does not serve is dropped without
            being sent, before the next batch asks again.

    Raises:
        ValueError: an unknown protocol or signal, or no signal.
    """

    def __init__(self, *, endpoint: str | None = None, protocol: OtlpProtocol | str | None = "grpc",
                 headers: Mapping[str, str] | None = None, insecure: bool = True,
                 timeout: float | None = None, judge_content: bool = False,
                 resource: Mapping[str, Any] | None = None,
                 signals: Sequence[OtlpSignal] = _SIGNALS, name: str | None = None,
                 recheck_unsupported: float = _DEFAULT_RECHECK) -> None:
        unknown = sorted(set(signals) - set(_SIGNALS))
        chosen = tuple(s for s in _SIGNALS if s in signals)
        if unknown or not chosen:
            raise ValueError(f"signals must be traces and/or logs, not {list(signals)!r}")
        self.signals = chosen
        self.name: str = name or ("otlp_logs" if chosen == ("logs",) else "otlp")
        self._judge_content = judge_content
        self._resource = _default_resource(resource)
        shared = dict(headers) if headers else None
        self._exporters = {
            signal: _SignalExporter(signal, _resolve_protocol(protocol, signal.upper()), endpoint,
                                    shared, insecure, timeout, sink=self.name,
                                    recheck=recheck_unsupported)
            for signal in chosen}
        targets = [e.target for e in self._exporters.values()]
        self.target = (targets[0] if len(set(targets)) == 1
                       else f"{targets[0]} (logs: {targets[1]})")
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def per_signal(cls, *, endpoint: str | None = None,
                   protocol: OtlpProtocol | str | None = None,
                   headers: Mapping[str, str] | None = None, insecure: bool = True,
                   timeout: float | None = None, judge_content: bool = False,
                   resource: Mapping[str, Any] | None = None,
                   recheck_unsupported: float = _DEFAULT_RECHECK) -> list[OtlpSink]:
        """The sidecar's OTLP sinks: evaluation spans as `otlp`, log records as `otlp_logs`,
        each confirmed on its own.

        A signal gets a sink when `endpoint` is given, or the environment names an endpoint for
        it (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_{TRACES,LOGS}_ENDPOINT`), and
        `OTEL_{TRACES,LOGS}_EXPORTER` is not `none`. The arguments are `OtlpSink`'s; None
        leaves a setting to the signal's `OTEL_EXPORTER_OTLP_*` variables.

        Raises:
            ValueError: an unknown protocol.
        """
        return [cls(endpoint=endpoint, protocol=protocol, headers=headers, insecure=insecure,
                    timeout=timeout, judge_content=judge_content, resource=resource,
                    signals=(signal,), recheck_unsupported=recheck_unsupported)
                for signal in _SIGNALS if signal_enabled(signal, endpoint)]

    def __repr__(self) -> str:
        return f"OtlpSink({self.name}: {self.target})"

    async def export(self, records: Sequence[ScoreRecord]) -> None:
        """Send `records` as spans (when they have trace ids) and/or log records.

        Raises:
            ExportError: retryable when the backend refused or could not be reached in time, or
                the sink is shut down; not retryable when the backend does not serve a signal
                (whatever other signal this sink sends was delivered).
        """
        if not records:
            return
        if self._closed:
            raise ExportError("the OTLP sink is shut down", retryable=True)
        spans = (build_spans(records, resource=self._resource, judge_content=self._judge_content)
                 if "traces" in self._exporters else [])
        logs = (build_log_records(records, resource=self._resource)
                if "logs" in self._exporters else [])
        await asyncio.to_thread(self._send, spans, logs)

    def _send(self, spans: list[ReadableSpan], logs: list[ReadableLogRecord]) -> None:
        # One export at a time: the gRPC exporter replaces its channel on UNAVAILABLE.
        with self._lock:
            if self._closed:
                raise ExportError("the OTLP sink is shut down", retryable=True)
            dropped: list[str] = []
            batches: tuple[tuple[OtlpSignal, Sequence[Any]], ...] = (("traces", spans),
                                                                      ("logs", logs))
            for signal, items in batches:
                exporter = self._exporters.get(signal)
                if exporter is None or not items:
                    continue
                error = exporter.send(items)
                if error is None:
                    continue
                if error.retryable:
                    raise error
                dropped.append(str(error))
            if dropped:
                raise ExportError("; ".join(dropped), retryable=False)

    def _shutdown_exporters(self) -> None:
        for exporter in self._exporters.values():
            exporter.shutdown()

    async def shutdown(self) -> None:
        """Close the exporters' connections; idempotent."""
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self._shutdown_exporters)
