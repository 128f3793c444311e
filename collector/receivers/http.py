"""OTLP/HTTP receiver (aiohttp): `POST /v1/traces` and `POST /v1/logs`.

Bodies are `application/x-protobuf` (or `application/protobuf`) or `application/json`,
optionally `Content-Encoding: gzip` or `deflate`. Answers, in the request's encoding:

- 200 with `ExportTraceServiceResponse` / `ExportLogsServiceResponse`, carrying
  `partial_success` when some spans or log records had bad ids;
- 400 for a malformed body (protobuf that does not parse, text that is not JSON, JSON that is
  not a request object, a broken gzip stream), and for a JSON body of the other signal: a
  `resourceLogs` document sent to `/v1/traces` (or `resourceSpans` to `/v1/logs`) is refused
  whole, so the write-ahead log never stores a body under the wrong kind;
- 413 over `max_recv_msg_size_mib`: checked on `Content-Length` before reading, then while
  reading, and while inflating (a gzip bomb is refused once its output passes the limit);
- 415 for any other content type or content encoding;
- 503 + `Retry-After` (whole seconds, at least 1) when the sink is over its limit or failed;
- 404 / 405 for other paths and methods, as aiohttp answers them;
- 401 + `WWW-Authenticate: Bearer` without the right bearer token (when `bearer_token` is
  set), checked before the body is read, with no detail;
- 429 + `Retry-After` over `max_requests_per_second` for this client address.

With `tls` the port serves HTTPS only (mTLS when it names a client CA).

Every error body is a `google.rpc.Status` with a message (JSON for JSON requests, protobuf
otherwise), as the OTLP/HTTP specification asks.
"""

from __future__ import annotations

import logging
import math
import zlib

from aiohttp import ClientPayloadError, web
from aiohttp.http_exceptions import HttpProcessingError
from google.protobuf import json_format
from google.protobuf.any_pb2 import Any as AnyPb
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped,unused-ignore]
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from pydantic import SecretStr

from collector._telemetry import Metrics
from collector.config import TlsConfig
from collector.intake import BodyKind, SpanSink
from collector.receivers._inflight import Inflight
from collector.receivers._request import Refused, ingest, refuse
from collector.receivers._security import Guard, server_ssl_context
from collector.receivers._status import ANSWERS

__all__ = ["HttpReceiver"]

log = logging.getLogger("scorecar.receivers")

_MIB = 1024 * 1024
_PROTOBUF = frozenset({"application/x-protobuf", "application/protobuf"})
_JSON = "application/json"
_IDENTITY = frozenset({"", "identity"})
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_KINDS: dict[tuple[bool, bool], BodyKind] = {
    (False, False): "traces_protobuf", (False, True): "traces_json",
    (True, False): "logs_protobuf", (True, True): "logs_json",
}


def _encode(message: Message, as_json: bool) -> bytes:
    if as_json:
        return json_format.MessageToJson(message, indent=None).encode()
    return message.SerializeToString()


class HttpReceiver:
    """The OTLP/HTTP receiver.

    Args:
        sink: where decoded requests go.
        metrics: `spans_received{transport="http"}` and `spans_refused{reason}` are counted here.
        endpoint: `host:port` to listen on; port 0 picks a free port.
        max_recv_msg_size_mib: the largest request body accepted, after decompression.
        tls: serve HTTPS (mTLS with `client_ca_file`); None or no `cert_file`: plain HTTP.
        bearer_token: required as `Authorization: Bearer <token>`; None: no auth.
        max_requests_per_second: requests per second per client address; None: no limit.
    """

    def __init__(self, sink: SpanSink, metrics: Metrics, *, endpoint: str = "0.0.0.0:4318",
                 max_recv_msg_size_mib: float = 64, tls: TlsConfig | None = None,
                 bearer_token: SecretStr | str | None = None,
                 max_requests_per_second: float | None = None,
                 max_inflight_requests: int | None = None,
                 max_inflight_mib: float | None = None) -> None:
        self._sink = sink
        self.inflight = Inflight(metrics, max_requests=max_inflight_requests,
                                 max_mib=max_inflight_mib,
                                 undecoded=lambda: sink.undecoded_bytes)
        self._metrics = metrics
        self._tls = tls if tls is not None and tls.enabled else None
        self._guard = Guard(metrics, bearer_token=bearer_token,
                            max_requests_per_second=max_requests_per_second)
        self._endpoint = endpoint
        host, _, port = endpoint.rpartition(":")
        if not port.isdigit():
            raise ValueError(f"endpoint {endpoint!r} is not host:port")
        self._host = host.strip("[]") or "0.0.0.0"
        self._port = int(port)
        self._limit = int(max_recv_msg_size_mib * _MIB)
        self._runner: web.AppRunner | None = None

    @property
    def max_bytes(self) -> int:
        """The request size limit in bytes."""
        return self._limit

    async def start(self) -> int:
        """Bind and start serving.

        Returns:
            The bound port.

        Raises:
            RuntimeError: already started.
            OSError: the endpoint could not be bound.
        """
        if self._runner is not None:
            raise RuntimeError("HttpReceiver already started")
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        app.router.add_post("/v1/logs", self._logs)
        # auto_decompress=False: this receiver inflates bodies itself, under the size limit.
        runner = web.AppRunner(app, access_log=None, auto_decompress=False,
                               shutdown_timeout=5.0)
        await runner.setup()
        ssl_context = server_ssl_context(self._tls) if self._tls is not None else None
        site = web.TCPSite(runner, self._host, self._port, ssl_context=ssl_context)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        port = int(runner.addresses[0][1])
        log.info("OTLP/HTTP receiver listening on %s (port %d%s)", self._endpoint, port,
                 "" if self._tls is None
                 else ", mTLS" if self._tls.client_ca_file is not None else ", TLS")
        return port

    async def stop(self) -> None:
        """Stop listening and close connections. Idempotent; does nothing if never started."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        await runner.cleanup()
        log.info("OTLP/HTTP receiver on %s stopped", self._endpoint)

    async def _traces(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, logs=False)

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, logs=True)

    async def _handle(self, request: web.Request, *, logs: bool) -> web.StreamResponse:
        ctype = request.content_type
        as_json = ctype == _JSON
        try:
            if self._guard.active:
                await self._guard.check(request.headers.get("Authorization"),
                                        request.remote or "")
            if not as_json and ctype not in _PROTOBUF:
                raise refuse(self._metrics, "unsupported_media_type", "unsupported",
                             f"content type {ctype!r} is not supported; use "
                             f"application/x-protobuf or application/json")
            kind = _KINDS[logs, as_json]
            # Admitted before the body is read: under overload, refusing costs no reading.
            with self.inflight.admit(request.content_length or 0):
                try:
                    body = await self._read(request)
                except (ConnectionError, ClientPayloadError, HttpProcessingError) as exc:
                    log.debug("OTLP/HTTP request body not received whole: %r", exc)
                    raise refuse(self._metrics, "malformed", "malformed",
                                 f"request body ended early ({exc})") from None
                accepted = await ingest(self._sink, self._metrics, "http", body, kind)
        except Refused as exc:
            return self._error(exc, as_json)
        response: Message
        if logs:
            response = ExportLogsServiceResponse()
            if accepted.message:
                response.partial_success.rejected_log_records = accepted.rejected
                response.partial_success.error_message = accepted.message
        else:
            response = ExportTraceServiceResponse()
            if accepted.message:
                response.partial_success.rejected_spans = accepted.rejected
                response.partial_success.error_message = accepted.message
        return web.Response(body=_encode(response, as_json),
                            content_type=_JSON if as_json else "application/x-protobuf")

    def _oversized(self, what: str) -> Refused:
        return refuse(self._metrics, "oversized", "oversized",
                      f"request body {what} the limit of {self._limit} bytes "
                      f"(max_recv_msg_size_mib)")

    async def _read(self, request: web.Request) -> bytes:
        """The body, inflated, never holding more than the limit (+ one read) in memory."""
        limit = self._limit
        encoding = request.headers.get("Content-Encoding", "").strip().lower()
        if encoding not in _IDENTITY and encoding not in _WBITS:
            raise refuse(self._metrics, "unsupported_media_type", "unsupported",
                         f"content encoding {encoding!r} is not supported; use gzip, deflate "
                         f"or none")
        length = request.content_length
        if length is not None and length > limit:
            raise self._oversized(f"of {length} bytes (Content-Length) is over")
        parts: list[bytes] = []
        size = 0
        if encoding in _IDENTITY:
            async for chunk in request.content.iter_any():
                size += len(chunk)
                if size > limit:
                    raise self._oversized("is over")
                parts.append(chunk)
            return b"".join(parts)
        wbits = _WBITS[encoding]
        inflater = zlib.decompressobj(wbits)
        received = 0
        try:
            async for chunk in request.content.iter_any():
                received += len(chunk)
                if received > limit:
                    raise self._oversized("is over")
                data = chunk
                while data:
                    out = inflater.decompress(data, limit - size + 1)
                    size += len(out)
                    if size > limit:
                        raise self._oversized(f"inflated ({encoding}) past")
                    parts.append(out)
                    data = inflater.unconsumed_tail
                    if inflater.eof and not data and inflater.unused_data:
                        data = inflater.unused_data  # the next gzip member
                        inflater = zlib.decompressobj(wbits)
        except zlib.error as exc:
            raise refuse(self._metrics, "malformed", "malformed",
                         f"{encoding} body does not inflate: {exc}") from None
        if not inflater.eof and received:
            raise refuse(self._metrics, "malformed", "malformed", f"{encoding} body is truncated")
        return b"".join(parts)

    def _error(self, exc: Refused, as_json: bool) -> web.Response:
        answer = ANSWERS[exc.status]
        status = status_pb2.Status(code=answer.rpc_code, message=exc.message)
        headers = {}
        if exc.status == "unauthenticated":
            headers["WWW-Authenticate"] = "Bearer"
        if answer.retryable:
            delay = max(1, math.ceil(exc.retry_after))
            headers["Retry-After"] = str(delay)
            detail = AnyPb()
            detail.Pack(error_details_pb2.RetryInfo(retry_delay=Duration(seconds=delay)))
            status.details.append(detail)
        return web.Response(status=answer.http_status, headers=headers,
                            body=_encode(status, as_json),
                            content_type=_JSON if as_json else "application/x-protobuf")
