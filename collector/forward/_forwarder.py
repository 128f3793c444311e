"""Pass-through: every accepted span and log request forwarded to the next collector (DESIGN §6).

```
receiver ─accept→ ForwardingSink ─→ Ingest (span log, assembly: scoring)
                        └─ submit (never waits) → bounded queue → consumers → next collector
```

- **What is sent**: the request body as the agent sent it (un-gzipped): protobuf bodies
  byte for byte; OTLP/JSON bodies are converted once, off the request path, to the same
  request in protobuf (hex ids to bytes), so the next collector always receives
  `application/x-protobuf` (over HTTP) or a plain gRPC `Export` call. A JSON body that cannot be
  expressed in protobuf (an id that is not hex) is dropped as permanent and counted.
- **Where**: `forward.endpoint` only. The standard `OTEL_EXPORTER_OTLP_*` variables are NOT
  read here: they configure where scores go (`exporters.otlp`), and the agent's own SDK. An
  operator sets the forward target explicitly so scores and telemetry never get mixed up.
- **Bounded**: a queue bounded by requests (`queue_size`) and bytes (`queue_max_mib`),
  counting requests in flight. `submit` never waits: past the bound the NEW request is dropped
  (as the Collector's `sending_queue` does with `block_on_overflow: false`), so what is already
  queued is delivered in order of arrival and a burst never evicts older data.
- **Retry**: retryable answers (gRPC `CANCELLED`, `DEADLINE_EXCEEDED`, `ABORTED`,
  `OUT_OF_RANGE`, `UNAVAILABLE`, `DATA_LOSS`, and `RESOURCE_EXHAUSTED` only with `RetryInfo`;
  HTTP 429, 502, 503, 504; connection errors and timeouts) are retried without an end with
  jittered exponential backoff (`initial_backoff` doubling up to `max_backoff`, each wait
  50–100 % of that); a server's `RetryInfo` / `Retry-After` replaces the backoff (capped at
  `max_retry_after`). Only the queue bound limits an outage. Anything else (400,
  `INVALID_ARGUMENT`, `UNIMPLEMENTED`, 401, 404, …) is permanent: dropped and counted.
- **Counted** in `scorecar_forward_total{signal,outcome}` by span / log record: `forwarded`,
  `retried` (once per failed attempt that will be retried), `dropped_full`,
  `dropped_permanent`, `dropped_shutdown`.
- **Shutdown**: `stop(grace)` stops taking requests, keeps delivering (and retrying) until the
  queue is empty or `grace` ends, then counts what is left as `dropped_shutdown`.
- **Not durable**: the queue is in memory; a crash loses what it held (the scoring path keeps
  its own write-ahead log; telemetry replayed from it at start is not forwarded again).
- **Secrets**: header values are sent, never logged; logs name the endpoint (user info removed)
  and the status code only.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import random
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import grpc  # type: ignore[import-untyped,unused-ignore]
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped,unused-ignore]
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from collector._telemetry import Metrics
from collector.intake import BodyKind, SpanSink
from collector.otlp import Decoded

__all__ = ["Forwarder", "ForwardingSink", "Signal", "json_to_protobuf"]

log = logging.getLogger("scorecar.forward")

Signal = Literal["traces", "logs"]

_GRPC_METHODS: dict[Signal, str] = {
    "traces": "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
    "logs": "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
}
_GRPC_RETRYABLE = frozenset({
    grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED,
    grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DATA_LOSS,
})
_HTTP_RETRYABLE = frozenset({429, 502, 503, 504})
_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class _Result:
    """One attempt's outcome: ok, retryable (with the server's delay, if any), or permanent."""

    ok: bool
    retryable: bool = False
    retry_after: float | None = None
    why: str = ""


_OK = _Result(ok=True)


@dataclass(eq=False, slots=True)
class _Item:
    signal: Signal
    kind: BodyKind
    body: bytes
    count: int


# --------------------------------------------------------------------------- JSON → protobuf

_ID_FIELDS = ("traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id")


def _ids_to_base64(obj: dict[str, Any]) -> None:
    """OTLP/JSON ids are hex; proto3 JSON `bytes` are base64: convert in place."""
    for key in _ID_FIELDS:
        value = obj.get(key)
        if isinstance(value, str) and value:
            obj[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")


def _each(obj: dict[str, Any], *keys: str) -> list[Any]:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, list):
            return value
    return []


def json_to_protobuf(body: bytes, signal: Signal) -> bytes:
    """An OTLP/JSON request body as the same request in binary protobuf.

    OTLP/JSON differs from proto3 JSON only in ids (hex, not base64); enum numbers, camelCase
    or snake_case names and int64 as strings or numbers are proto3 JSON already. Unknown fields
    are ignored, as OTLP receivers must.

    Raises:
        ValueError: the body is not an OTLP/JSON request of `signal` (e.g. an id not in hex).
    """
    doc = json.loads(body)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if signal == "traces":
        for rs in _each(doc, "resourceSpans", "resource_spans"):
            for ss in _each(rs, "scopeSpans", "scope_spans") if isinstance(rs, dict) else []:
                for span in _each(ss, "spans") if isinstance(ss, dict) else []:
                    if isinstance(span, dict):
                        _ids_to_base64(span)
                        for link in _each(span, "links"):
                            if isinstance(link, dict):
                                _ids_to_base64(link)
        request: Any = trace_service_pb2.ExportTraceServiceRequest()
    else:
        for rl in _each(doc, "resourceLogs", "resource_logs"):
            for sl in _each(rl, "scopeLogs", "scope_logs") if isinstance(rl, dict) else []:
                for record in _each(sl, "logRecords", "log_records") if isinstance(sl, dict) \
                        else []:
                    if isinstance(record, dict):
                        _ids_to_base64(record)
        request = logs_service_pb2.ExportLogsServiceRequest()
    try:
        json_format.ParseDict(doc, request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise ValueError(str(exc)) from None
    return bytes(request.SerializeToString())


# --------------------------------------------------------------------------- transports


class _Transport(Protocol):
    async def open(self) -> None: ...

    async def send(self, signal: Signal, payload: bytes) -> _Result: ...

    async def close(self) -> None: ...


def _redact(endpoint: str) -> str:
    """The endpoint without user info (safe to log)."""
    if "://" not in endpoint:
        return endpoint
    parts = urlsplit(endpoint)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _read(path: Path | None) -> bytes | None:
    return path.read_bytes() if path is not None else None


def _retry_info(exc: grpc.aio.AioRpcError) -> float | None:
    """The `google.rpc.RetryInfo` delay in an error's `grpc-status-details-bin`, if any."""
    for key, value in exc.trailing_metadata() or ():
        if key != "grpc-status-details-bin" or not isinstance(value, bytes):
            continue
        try:
            status = status_pb2.Status.FromString(value)
        except Exception:  # noqa: BLE001 - a malformed detail is no RetryInfo
            return None
        for detail in status.details:
            if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                info = error_details_pb2.RetryInfo()
                detail.Unpack(info)
                return float(info.retry_delay.seconds + info.retry_delay.nanos / 1e9)
    return None


class _GrpcTransport:
    def __init__(self, endpoint: str, *, insecure: bool, headers: Mapping[str, str],
                 timeout: float, ca_file: Path | None, cert_file: Path | None,
                 key_file: Path | None, reconnect_backoff: tuple[float, float]) -> None:
        if "://" in endpoint:
            parts = urlsplit(endpoint)
            self._target = parts.netloc.rpartition("@")[2]
            self._secure = parts.scheme == "https"
        else:
            self._target = endpoint
            self._secure = not insecure
        self._files = (ca_file, cert_file, key_file)
        self._metadata = tuple((k.lower(), v) for k, v in headers.items())
        self._timeout = timeout
        low, high = reconnect_backoff
        # No transparent retries (this module counts every attempt) and reconnects no slower
        # than the backoff, so a backend that returns is used within `max_backoff`.
        self._options = [("grpc.enable_retries", 0),
                         ("grpc.initial_reconnect_backoff_ms", max(1, int(low * 1000))),
                         ("grpc.min_reconnect_backoff_ms", max(1, int(low * 1000))),
                         ("grpc.max_reconnect_backoff_ms", max(1, int(high * 1000)))]
        self._channel: grpc.aio.Channel | None = None
        self._calls: dict[Signal, Any] = {}

    async def open(self) -> None:
        if self._secure:
            ca, cert, key = (_read(p) for p in self._files)
            creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                                 certificate_chain=cert)
            self._channel = grpc.aio.secure_channel(self._target, creds, options=self._options)
        else:
            self._channel = grpc.aio.insecure_channel(self._target, options=self._options)
        # No (de)serializers: the body goes out as the bytes it is.
        self._calls = {s: self._channel.unary_unary(m) for s, m in _GRPC_METHODS.items()}

    async def send(self, signal: Signal, payload: bytes) -> _Result:
        try:
            await self._calls[signal](payload, timeout=self._timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
            delay = _retry_info(exc)
            retryable = code in _GRPC_RETRYABLE or (
                code == grpc.StatusCode.RESOURCE_EXHAUSTED and delay is not None)
            return _Result(False, retryable, delay, code.name)
        return _OK

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None


def _retry_after(value: str | None) -> float | None:
    """`Retry-After` as seconds (a number, or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class _HttpTransport:
    def __init__(self, endpoint: str, *, insecure: bool, headers: Mapping[str, str],
                 timeout: float, ca_file: Path | None, cert_file: Path | None,
                 key_file: Path | None) -> None:
        base = endpoint if "://" in endpoint else \
            f"{'http' if insecure else 'https'}://{endpoint}"
        base = base.rstrip("/")
        self._urls: dict[Signal, str] = {"traces": f"{base}/v1/traces",
                                         "logs": f"{base}/v1/logs"}
        self._headers = {**headers, "Content-Type": "application/x-protobuf"}
        self._timeout = timeout
        self._ssl: ssl.SSLContext | None = None
        if base.startswith("https://"):
            self._ssl = ssl.create_default_context(cafile=ca_file)
            if cert_file is not None:
                self._ssl.load_cert_chain(cert_file, key_file)
        self._session: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self._timeout), raise_for_status=False)

    async def send(self, signal: Signal, payload: bytes) -> _Result:
        assert self._session is not None, "open() first"
        try:
            async with self._session.post(self._urls[signal], data=payload,
                                          headers=self._headers,
                                          ssl=self._ssl if self._ssl is not None else True
                                          ) as resp:
                await resp.read()
                if 200 <= resp.status < 300:
                    return _OK
                return _Result(False, resp.status in _HTTP_RETRYABLE,
                               _retry_after(resp.headers.get("Retry-After")),
                               f"HTTP {resp.status}")
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return _Result(False, True, None, type(exc).__name__)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


# --------------------------------------------------------------------------- the forwarder


class Forwarder:
    """A bounded queue and its consumers, sending request bodies to the next collector.

    Args:
        endpoint: `host:port` or an `http(s)://` URL (for HTTP, the base: `/v1/traces` and
            `/v1/logs` are appended).
        metrics: `forward` (`scorecar_forward_total{signal,outcome}`) is incremented.
        protocol: `grpc` or `http/protobuf` (`http` accepted).
        headers: sent with every request (gRPC metadata names lower-cased); never logged.
        insecure: plaintext when the endpoint has no scheme (`https://` always means TLS).
        timeout: seconds per attempt.
        ca_file: PEM CA bundle to verify the server (None: the system's).
        cert_file: client certificate (mTLS), with `key_file`.
        key_file: its private key.
        queue_size: requests held at most (queued and in flight).
        queue_max_bytes: bytes of request bodies held at most.
        consumers: requests in flight at once.
        initial_backoff: first retry wait, seconds (doubles per attempt).
        max_backoff: longest backoff wait, seconds.
        max_retry_after: longest wait a server's `RetryInfo` / `Retry-After` can ask for.
        sleep: how to wait between attempts (tests pass a recording one).
    """

    def __init__(self, endpoint: str, metrics: Metrics, *, protocol: str = "grpc",
                 headers: Mapping[str, str] | None = None, insecure: bool = True,
                 timeout: float = 10.0, ca_file: Path | None = None,
                 cert_file: Path | None = None, key_file: Path | None = None,
                 queue_size: int = 1000, queue_max_bytes: int = 64 * _MIB, consumers: int = 4,
                 initial_backoff: float = 1.0, max_backoff: float = 30.0,
                 max_retry_after: float = 120.0,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.endpoint = _redact(endpoint)
        self._metrics = metrics
        headers = dict(headers or {})
        self._transport: _Transport
        if protocol in ("http", "http/protobuf"):
            self._transport = _HttpTransport(endpoint, insecure=insecure, headers=headers,
                                             timeout=timeout, ca_file=ca_file,
                                             cert_file=cert_file, key_file=key_file)
        elif protocol == "grpc":
            self._transport = _GrpcTransport(endpoint, insecure=insecure, headers=headers,
                                             timeout=timeout, ca_file=ca_file,
                                             cert_file=cert_file, key_file=key_file,
                                             reconnect_backoff=(initial_backoff, max_backoff))
        else:
            raise ValueError(f"forward protocol must be grpc or http/protobuf, not {protocol!r}")
        self._queue_size = queue_size
        self._queue_max_bytes = queue_max_bytes
        self._consumers = consumers
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_retry_after = max_retry_after
        self._sleep = sleep
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._held = 0  # requests queued or in flight
        self._held_bytes = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._closed = False
        self._failing = False

    @classmethod
    def from_config(cls, config: Any, metrics: Metrics) -> Forwarder:
        """A forwarder from `collector.config.ForwardConfig` (its endpoint must be set)."""
        return cls(config.endpoint, metrics, protocol=config.protocol,
                   headers=dict(config.headers), insecure=config.insecure,
                   timeout=config.timeout, ca_file=config.ca_file, cert_file=config.cert_file,
                   key_file=config.key_file, queue_size=config.queue_size,
                   queue_max_bytes=int(config.queue_max_mib * _MIB),
                   consumers=config.consumers, initial_backoff=config.initial_backoff,
                   max_backoff=config.max_backoff)

    def __repr__(self) -> str:
        return f"Forwarder({self.endpoint!r})"  # never the headers

    # ------------------------------------------------------------------ state

    @property
    def queued(self) -> int:
        """Requests held (queued or in flight)."""
        return self._held

    @property
    def queued_bytes(self) -> int:
        """Bytes of request bodies held (queued or in flight)."""
        return self._held_bytes

    def _count(self, item: _Item, outcome: str) -> None:
        self._metrics.forward.labels(item.signal, outcome).inc(item.count)

    # ------------------------------------------------------------------ the request path

    def submit(self, kind: BodyKind, body: bytes, count: int) -> bool:
        """Queue one accepted request body; never waits. Returns whether it was queued
        (otherwise it was dropped and counted: `dropped_full`, or `dropped_shutdown` once
        stopping).

        Args:
            kind: how `body` is encoded (which signal, protobuf or JSON).
            body: the un-gzipped request body.
            count: spans or log records in it (what the counter counts).
        """
        item = _Item("logs" if kind.startswith("logs") else "traces", kind, body, count)
        if self._closed:
            self._count(item, "dropped_shutdown")
            return False
        if self._held >= self._queue_size or \
                self._held_bytes + len(body) > self._queue_max_bytes:
            self._count(item, "dropped_full")
            return False
        self._held += 1
        self._held_bytes += len(body)
        self._idle.clear()
        self._queue.put_nowait(item)
        return True

    def _release(self, item: _Item) -> None:
        self._held -= 1
        self._held_bytes -= len(item.body)
        if self._held == 0:
            self._idle.set()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open the connection (lazily: nothing is sent yet) and start the consumers."""
        if self._started:
            return
        self._started = True
        await self._transport.open()
        self._tasks = [asyncio.create_task(self._consume(), name=f"scorecar-forward-{i}")
                       for i in range(self._consumers)]

    async def flush(self, timeout: float) -> bool:
        """Wait until nothing is held (everything delivered or dropped); False on timeout."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def stop(self, grace: float = 10.0) -> None:
        """Take no more requests; deliver what is held within `grace` seconds; count the rest
        `dropped_shutdown`. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._tasks:
            await self.flush(grace)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        left = 0
        while not self._queue.empty():
            item = self._queue.get_nowait()
            self._count(item, "dropped_shutdown")
            left += item.count
            self._release(item)
        if left:
            log.warning("forwarding stopped with %d span(s)/log record(s) not delivered to %s",
                        left, self.endpoint, extra={"dropped": left})
        with contextlib.suppress(Exception):
            await self._transport.close()

    # ------------------------------------------------------------------ delivery

    async def _consume(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                await self._deliver(item)
            except asyncio.CancelledError:
                self._count(item, "dropped_shutdown")
                raise
            except Exception:  # noqa: BLE001 - one request never stops the consumer
                log.exception("forwarding a request to %s failed", self.endpoint)
                self._count(item, "dropped_permanent")
            finally:
                self._release(item)

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self._max_backoff, self._initial_backoff * 2.0 ** min(attempt, 30))
        return ceiling * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not security

    async def _deliver(self, item: _Item) -> None:
        payload = item.body
        if item.kind.endswith("_json"):
            try:
                payload = json_to_protobuf(item.body, item.signal)
            except ValueError as exc:
                self._count(item, "dropped_permanent")
                log.warning("a %s request could not be forwarded: its JSON has no protobuf "
                            "form (%s)", item.signal, str(exc)[:200])
                return
        attempt = 0
        while True:
            result = await self._transport.send(item.signal, payload)
            if result.ok:
                self._count(item, "forwarded")
                if self._failing:
                    self._failing = False
                    log.info("forwarding to %s works again", self.endpoint)
                return
            if not result.retryable:
                self._count(item, "dropped_permanent")
                log.warning("%s refused a forwarded %s request (%s, permanent): dropped %d "
                            "item(s)", self.endpoint, item.signal, result.why, item.count)
                return
            self._count(item, "retried")
            if not self._failing:
                self._failing = True
                log.warning("forwarding to %s failing (%s); retrying with backoff",
                            self.endpoint, result.why)
            if result.retry_after is not None:
                delay = min(result.retry_after, self._max_retry_after)
            else:
                delay = self._backoff(attempt)
            attempt += 1
            await self._sleep(delay)


class ForwardingSink:
    """A `SpanSink` that hands every accepted request to the scoring path (`inner`) and then
    to a `Forwarder`. A request `inner` refuses is not forwarded (the agent will retry it)."""

    def __init__(self, inner: SpanSink, forwarder: Forwarder) -> None:
        self._inner = inner
        self.forwarder = forwarder

    def check_capacity(self) -> None:
        """The scoring path's check (forwarding never refuses: it drops and counts).

        Raises:
            Overloaded: from `inner`.
        """
        self._inner.check_capacity()

    async def accept(self, decoded: Decoded, transport: str, body: bytes, kind: BodyKind) -> None:
        """`inner.accept`, then queue `body` for forwarding (never waits).

        Raises:
            Overloaded: from `inner` (nothing is forwarded then).
        """
        await self._inner.accept(decoded, transport, body, kind)
        self.forwarder.submit(kind, body, len(decoded.spans) + len(decoded.logs)
                              + decoded.undecoded)
