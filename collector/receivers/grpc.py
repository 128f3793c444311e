"""OTLP/gRPC receiver: `TraceService/Export`, `LogsService/Export` and `grpc.health.v1`.

The handlers take the raw request bytes (gRPC does not parse them), so the body that reaches
`SpanSink.accept` is exactly what the client sent, un-gzipped by gRPC.

Answers (OTLP specification, DESIGN §6):

- accepted: OK with an empty response, or `partial_success` (`rejected_spans` /
  `rejected_log_records` and an English `error_message`) when some items had bad ids;
- over `max_recv_msg_size_mib` after decompression: `RESOURCE_EXHAUSTED` (not retryable: no
  `RetryInfo`). The transport's own limit is twice that, so scorecar answers and counts it;
  beyond twice the limit gRPC itself refuses, uncounted;
- malformed protobuf: `INVALID_ARGUMENT` with the parser's message;
- over capacity (`Overloaded`) or an unexpected error in the sink: `UNAVAILABLE` with a
  `google.rpc.RetryInfo`, both in `grpc-status-details-bin` (a `google.rpc.Status`, as the
  Collector and most SDKs read it) and in `google.rpc.retryinfo-bin` (what the OTel Python
  exporter reads);
- without the right bearer token (when `bearer_token` is set): `UNAUTHENTICATED`, no detail;
- over `max_requests_per_second` for this client address: `RESOURCE_EXHAUSTED` with a
  `RetryInfo` (retryable, as the OTLP specification reads a `RetryInfo`).

With `tls` the port serves TLS only (mTLS when it names a client CA); `max_concurrent_streams`
caps the concurrent calls on one client connection (HTTP/2 setting: a further call waits on the
client or is refused with `REFUSED_STREAM`, which the client reports as a retryable
`UNAVAILABLE`; not counted, as gRPC itself answers). The health service needs no token and is not rate-limited.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import grpc  # type: ignore[import-untyped,unused-ignore]
from google.protobuf.any_pb2 import Any as AnyPb
from google.protobuf.duration_pb2 import Duration
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped,unused-ignore]
from grpc_health.v1 import health_pb2, health_pb2_grpc  # type: ignore[import-untyped,unused-ignore]
from grpc_health.v1.health import aio as health_aio  # type: ignore[import-untyped,unused-ignore]
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from pydantic import SecretStr

from collector._telemetry import Metrics
from collector.config import TlsConfig
from collector.intake import BodyKind, SpanSink
from collector.receivers._inflight import Inflight
from collector.receivers._request import Refused, ingest, refuse
from collector.receivers._security import Guard, grpc_peer_host
from collector.receivers._status import ANSWERS

__all__ = ["GrpcReceiver", "LOGS_SERVICE", "TRACE_SERVICE"]

log = logging.getLogger("scorecar.receivers")

TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
_MIB = 1024 * 1024

_Handler = Callable[[bytes, grpc.aio.ServicerContext[bytes, bytes]], Awaitable[bytes]]


def _retry_metadata(code: grpc.StatusCode, message: str,
                    retry_after: float) -> tuple[tuple[str, bytes], ...]:
    """Trailing metadata carrying `RetryInfo{retry_delay}` in both places clients look."""
    delay = Duration()
    delay.FromNanoseconds(round(max(0.0, retry_after) * 1e9))
    info = error_details_pb2.RetryInfo(retry_delay=delay)
    detail = AnyPb()
    detail.Pack(info)
    status = status_pb2.Status(code=code.value[0], message=message, details=[detail])
    return (("grpc-status-details-bin", status.SerializeToString()),
            ("google.rpc.retryinfo-bin", info.SerializeToString()))


class GrpcReceiver:
    """The OTLP/gRPC receiver (grpc.aio).

    Args:
        sink: where decoded requests go.
        metrics: `spans_received{transport="grpc"}` and `spans_refused{reason}` are counted here.
        endpoint: `host:port` to listen on; port 0 picks a free port.
        max_recv_msg_size_mib: the largest request accepted, after decompression.
        tls: serve TLS (mTLS with `client_ca_file`); None or no `cert_file`: plaintext.
        bearer_token: required as `authorization: Bearer <token>` metadata; None: no auth.
        max_requests_per_second: export calls per second per client address; None: no limit.
        max_concurrent_streams: concurrent calls per client connection; None: gRPC's default.
    """

    def __init__(self, sink: SpanSink, metrics: Metrics, *, endpoint: str = "0.0.0.0:4317",
                 max_recv_msg_size_mib: float = 64, tls: TlsConfig | None = None,
                 bearer_token: SecretStr | str | None = None,
                 max_requests_per_second: float | None = None,
                 max_concurrent_streams: int | None = None,
                 max_inflight_requests: int | None = None,
                 max_inflight_mib: float | None = None) -> None:
        self._sink = sink
        self.inflight = Inflight(metrics, max_requests=max_inflight_requests,
                                 max_mib=max_inflight_mib,
                                 undecoded=lambda: sink.undecoded_bytes)
        self._metrics = metrics
        self._endpoint = endpoint
        self._tls = tls if tls is not None and tls.enabled else None
        self._guard = Guard(metrics, bearer_token=bearer_token,
                            max_requests_per_second=max_requests_per_second)
        self._max_streams = max_concurrent_streams
        self._limit = int(max_recv_msg_size_mib * _MIB)
        self._server: grpc.aio.Server | None = None
        self._health: health_aio.HealthServicer | None = None

    @property
    def max_bytes(self) -> int:
        """The request size limit in bytes."""
        return self._limit

    async def start(self) -> int:
        """Bind and start serving; health turns SERVING.

        Returns:
            The bound port.

        Raises:
            RuntimeError: already started, or the endpoint could not be bound.
        """
        if self._server is not None:
            raise RuntimeError("GrpcReceiver already started")
        transport_limit = max(2 * self._limit, 4 * _MIB)
        options: list[tuple[str, int]] = [
            ("grpc.max_receive_message_length", min(transport_limit, 2**31 - 1)),
            ("grpc.max_send_message_length", 4 * _MIB),
        ]
        if self._max_streams is not None:
            options.append(("grpc.max_concurrent_streams", self._max_streams))
        server = grpc.aio.server(options=options)
        server.add_generic_rpc_handlers((
            self._service(TRACE_SERVICE, "traces_protobuf"),
            self._service(LOGS_SERVICE, "logs_protobuf"),
        ))
        health = health_aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health, server)
        try:
            if self._tls is None:
                port = server.add_insecure_port(self._endpoint)
            else:
                port = server.add_secure_port(self._endpoint, self._credentials(self._tls))
        except RuntimeError as exc:
            raise RuntimeError(f"cannot listen on {self._endpoint}: {exc}") from exc
        await server.start()
        serving = health_pb2.HealthCheckResponse.SERVING
        for name in ("", TRACE_SERVICE, LOGS_SERVICE):
            await health.set(name, serving)
        self._server, self._health = server, health
        log.info("OTLP/gRPC receiver listening on %s (port %d%s)", self._endpoint, port,
                 "" if self._tls is None
                 else ", mTLS" if self._tls.client_ca_file is not None else ", TLS")
        return int(port)

    async def stop(self, grace: float = 5.0) -> None:
        """Turn health NOT_SERVING, refuse new calls, let running calls finish within `grace`.

        Idempotent; does nothing if never started.
        """
        server, health = self._server, self._health
        self._server = self._health = None
        if server is None:
            return
        if health is not None:
            await health.enter_graceful_shutdown()
        await server.stop(grace)
        log.info("OTLP/gRPC receiver on %s stopped", self._endpoint)

    @staticmethod
    def _credentials(tls: TlsConfig) -> grpc.ServerCredentials:
        assert tls.cert_file is not None and tls.key_file is not None
        ca = tls.client_ca_file.read_bytes() if tls.client_ca_file is not None else None
        return grpc.ssl_server_credentials(
            ((tls.key_file.read_bytes(), tls.cert_file.read_bytes()),),
            root_certificates=ca, require_client_auth=ca is not None)

    def _service(self, service: str, kind: BodyKind) -> grpc.GenericRpcHandler:
        handler = grpc.unary_unary_rpc_method_handler(
            self._handler(kind), request_deserializer=None, response_serializer=None)
        return grpc.method_handlers_generic_handler(service, {"Export": handler})

    def _handler(self, kind: BodyKind) -> _Handler:
        logs = kind == "logs_protobuf"

        async def export(body: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
            try:
                if self._guard.active:
                    metadata = context.invocation_metadata() or ()
                    authorization = next((str(v) for k, v in metadata if k == "authorization"),
                                         None)
                    await self._guard.check(authorization, grpc_peer_host(context.peer()))
                if len(body) > self._limit:
                    raise refuse(self._metrics, "oversized", "oversized",
                                 f"request of {len(body)} bytes is over the limit of "
                                 f"{self._limit} bytes (max_recv_msg_size_mib)")
                with self.inflight.admit(len(body)):
                    accepted = await ingest(self._sink, self._metrics, "grpc", body, kind)
            except Refused as exc:
                await self._abort(context, exc)
                raise AssertionError("unreachable") from None  # abort() raises
            if logs:
                resp_logs = ExportLogsServiceResponse()
                if accepted.message:
                    resp_logs.partial_success.rejected_log_records = accepted.rejected
                    resp_logs.partial_success.error_message = accepted.message
                return resp_logs.SerializeToString()
            resp = ExportTraceServiceResponse()
            if accepted.message:
                resp.partial_success.rejected_spans = accepted.rejected
                resp.partial_success.error_message = accepted.message
            return resp.SerializeToString()

        return export

    @staticmethod
    async def _abort(context: grpc.aio.ServicerContext[bytes, bytes], exc: Refused) -> None:
        answer = ANSWERS[exc.status]
        code = answer.grpc_code
        metadata = _retry_metadata(code, exc.message, exc.retry_after) if answer.retryable \
            else ()
        await context.abort(code, exc.message, trailing_metadata=metadata)
