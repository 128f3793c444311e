"""A real OTLP backend on loopback for tests: gRPC `TraceService`/`LogsService` and OTLP/HTTP
`/v1/traces`, `/v1/logs`, recording every request, with fault injection.

```python
with OtlpBackend() as backend:
    sink = OtlpSink(endpoint=backend.endpoint)            # gRPC, "127.0.0.1:PORT"
    sink = OtlpSink(endpoint=backend.http_endpoint, protocol="http")
    ...
    spans = backend.wait_for_spans(3)                       # simple dicts, hex ids
    backend.fail_with(grpc.StatusCode.UNAVAILABLE, times=2)  # the next 2 requests fail
    backend.fail_with(grpc.StatusCode.UNAVAILABLE, times=None, signal="logs")  # logs only
    backend.down(); backend.up()                             # stop / restart on the same ports

with OtlpBackend(logs=False) as backend:  # traces only, like a Tempo or Jaeger without logs
    ...                                   # gRPC LogsService: UNIMPLEMENTED; POST /v1/logs: 404
```

Requests are decoded protobuf (`trace_requests`, `log_requests`); `spans()` and `log_records()`
flatten them into dicts: `trace_id`, `span_id`, `parent_span_id` (lowercase hex, "" when
absent), `name`, `kind`, times, `attributes` / event `attributes` as Python values, `status`,
`scope`, `resource`, `transport`. A refused request (fault injected, or for a service not
served) is not recorded; `refused` and `unserved` list them. Thread-safe;
usable from sync and async tests (the servers run in their own threads); `wait_for_*` block, so
an async test calls `await asyncio.to_thread(backend.wait_for_spans, n)`.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

import grpc
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

__all__ = ["OtlpBackend", "Received", "any_value", "attributes"]

_HTTP_STATUS = {
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.UNIMPLEMENTED: 501,
}


def any_value(value: AnyValue) -> Any:
    """An OTLP `AnyValue` as a plain Python value (bytes as bytes, arrays as lists)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return getattr(value, kind)


def attributes(kvs: Any) -> dict[str, Any]:
    """Repeated `KeyValue`s as a dict."""
    return {kv.key: any_value(kv.value) for kv in kvs if isinstance(kv, KeyValue)}


@dataclass
class Received:
    """One accepted export request."""

    signal: str
    """`traces` or `logs`."""
    transport: str
    """`grpc` or `http`."""
    request: Any
    """The decoded `ExportTraceServiceRequest` / `ExportLogsServiceRequest`."""
    headers: dict[str, str] = field(default_factory=dict)
    """gRPC metadata or HTTP headers, names lowercased."""


@dataclass
class _Fault:
    code: grpc.StatusCode
    remaining: int | None
    message: str
    signal: str | None = None


class OtlpBackend:
    """An OTLP/gRPC server and an OTLP/HTTP server on 127.0.0.1 (free ports), recording requests.

    Args:
        http: also serve OTLP/HTTP (protobuf; gzip and deflate bodies accepted).
        logs: serve the logs signal. False: a traces-only backend; the gRPC server has no
            `LogsService` (gRPC itself answers `UNIMPLEMENTED`) and `POST /v1/logs` is a 404.
            Settable: over HTTP at once, over gRPC from the next `start()` / `up()`.
    """

    def __init__(self, *, http: bool = True, logs: bool = True) -> None:
        self._with_http = http
        self.logs = logs
        self._lock = threading.Condition()
        self.received: list[Received] = []
        self.refused: list[tuple[str, str, grpc.StatusCode]] = []
        """(signal, transport, code) of every request answered with an injected fault."""
        self.unserved: list[tuple[str, str]] = []
        """(signal, transport) of every request for a signal this backend does not serve
        (`logs=False`, or an unknown gRPC method: signal `?`)."""
        self._faults: list[_Fault] = []
        self._grpc: grpc.Server | None = None
        self._http: ThreadingHTTPServer | None = None
        self._http_thread: threading.Thread | None = None
        self._port = 0
        self._http_port = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Bind free ports and serve; returns self."""
        self._start_grpc(0)
        if self._with_http:
            self._start_http(0)
        return self

    def stop(self) -> None:
        """Stop both servers (idempotent)."""
        self.down()

    def down(self) -> None:
        """Stop serving and close the ports (a client now sees connection refused)."""
        if self._grpc is not None:
            self._grpc.stop(grace=None).wait(5)
            self._grpc = None
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            if self._http_thread is not None:
                self._http_thread.join(timeout=5)
            self._http = None
            self._http_thread = None

    def up(self) -> None:
        """Serve again on the same ports after `down()`."""
        if self._grpc is None:
            self._retry_bind(lambda: self._start_grpc(self._port))
        if self._with_http and self._http is None:
            self._retry_bind(lambda: self._start_http(self._http_port))

    @property
    def is_up(self) -> bool:
        """Whether the servers are serving."""
        return self._grpc is not None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @staticmethod
    def _retry_bind(start: Callable[[], None]) -> None:
        deadline = time.monotonic() + 5.0
        while True:
            try:
                start()
                return
            except (RuntimeError, OSError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _start_grpc(self, port: int) -> None:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8),
                             options=[("grpc.max_receive_message_length", 64 * 1024 * 1024),
                                      ("grpc.so_reuseport", 0)])
        backend = self

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
                backend._grpc_export("traces", request, context)
                return trace_service_pb2.ExportTraceServiceResponse()

        class Logs(logs_service_pb2_grpc.LogsServiceServicer):
            def Export(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
                backend._grpc_export("logs", request, context)
                return logs_service_pb2.ExportLogsServiceResponse()

        class Unserved(grpc.GenericRpcHandler):
            """Last in line: notes a call no service took; gRPC then answers UNIMPLEMENTED."""

            def service(self, handler_call_details: Any) -> None:
                method = str(handler_call_details.method)
                signal = ("logs" if ".logs." in method else
                          "traces" if ".trace." in method else "?")
                backend._note_unserved(signal, "grpc")
                return None

        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
        if self.logs:
            logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), server)
        server.add_generic_rpc_handlers((Unserved(),))
        bound = server.add_insecure_port(f"127.0.0.1:{port}")
        if bound == 0:
            raise RuntimeError(f"cannot bind 127.0.0.1:{port}")
        server.start()
        self._port = bound
        self._grpc = server

    def _start_http(self, port: int) -> None:
        backend = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _reply(self, status: int, body: bytes = b"",
                       content_type: str = "application/x-protobuf") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = self.path.split("?", 1)[0]
                signal = {"/v1/traces": "traces", "/v1/logs": "logs"}.get(path)
                if signal is None or (signal == "logs" and not backend.logs):
                    if signal is not None:
                        backend._note_unserved(signal, "http")
                    self._reply(404, b"not an OTLP path", "text/plain")
                    return
                fault = backend._take_fault(signal, "http")
                if fault is not None:
                    self._reply(_HTTP_STATUS.get(fault.code, 500), fault.message.encode(),
                                "text/plain")
                    return
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                try:
                    if encoding == "gzip":
                        body = gzip.decompress(body)
                    elif encoding == "deflate":
                        body = zlib.decompress(body)
                    request: Any = (trace_service_pb2.ExportTraceServiceRequest()
                                    if signal == "traces"
                                    else logs_service_pb2.ExportLogsServiceRequest())
                    request.ParseFromString(body)
                except (DecodeError, OSError, zlib.error):
                    self._reply(400, b"bad OTLP body", "text/plain")
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                backend._record(Received(signal, "http", request, headers))
                response: Any = (trace_service_pb2.ExportTraceServiceResponse()
                                 if signal == "traces"
                                 else logs_service_pb2.ExportLogsServiceResponse())
                self._reply(200, response.SerializeToString())

        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        self._http_port = int(server.server_address[1])
        self._http = server
        self._http_thread = threading.Thread(target=server.serve_forever,
                                             kwargs={"poll_interval": 0.05},
                                             name="otlp-backend-http", daemon=True)
        self._http_thread.start()

    # ------------------------------------------------------------------ addresses

    @property
    def port(self) -> int:
        """The gRPC port."""
        return self._port

    @property
    def endpoint(self) -> str:
        """The gRPC endpoint, `127.0.0.1:PORT`."""
        return f"127.0.0.1:{self._port}"

    @property
    def http_endpoint(self) -> str:
        """The OTLP/HTTP base URL (`/v1/traces`, `/v1/logs` are appended by clients)."""
        assert self._with_http, "started without http"
        return f"http://127.0.0.1:{self._http_port}"

    # ------------------------------------------------------------------ faults

    def fail_with(self, code: grpc.StatusCode, times: int | None = 1, message: str = "",
                  signal: str | None = None) -> None:
        """Answer the next `times` requests (None: every request until `clear_faults`) with
        `code` (over HTTP: the matching status, 503 for UNAVAILABLE); with `signal`
        (`traces` or `logs`) only requests of that signal."""
        with self._lock:
            self._faults.append(_Fault(code, times, message or f"injected {code.name}", signal))

    def clear_faults(self) -> None:
        """Stop injecting faults."""
        with self._lock:
            self._faults.clear()

    def _take_fault(self, signal: str, transport: str) -> _Fault | None:
        with self._lock:
            for index, fault in enumerate(self._faults):
                if fault.signal is not None and fault.signal != signal:
                    continue
                if fault.remaining is not None:
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.pop(index)
                self.refused.append((signal, transport, fault.code))
                self._lock.notify_all()
                return fault
        return None

    def _note_unserved(self, signal: str, transport: str) -> None:
        with self._lock:
            self.unserved.append((signal, transport))
            self._lock.notify_all()

    def _grpc_export(self, signal: str, request: Any, context: grpc.ServicerContext) -> None:
        fault = self._take_fault(signal, "grpc")
        if fault is not None:
            context.abort(fault.code, fault.message)
        headers = {k.lower(): v if isinstance(v, str) else v.decode("latin-1")
                   for k, v in context.invocation_metadata()}
        self._record(Received(signal, "grpc", request, headers))

    def _record(self, received: Received) -> None:
        with self._lock:
            self.received.append(received)
            self._lock.notify_all()

    # ------------------------------------------------------------------ reading

    @property
    def trace_requests(self) -> list[Received]:
        """Every accepted trace export request."""
        with self._lock:
            return [r for r in self.received if r.signal == "traces"]

    @property
    def log_requests(self) -> list[Received]:
        """Every accepted log export request."""
        with self._lock:
            return [r for r in self.received if r.signal == "logs"]

    def clear(self) -> None:
        """Forget everything received and refused so far."""
        with self._lock:
            self.received.clear()
            self.refused.clear()
            self.unserved.clear()

    def spans(self) -> list[dict[str, Any]]:
        """Every received span, flattened, in arrival order."""
        out = []
        for received in self.trace_requests:
            for rs in received.request.resource_spans:
                resource = attributes(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.append({
                            "trace_id": s.trace_id.hex(),
                            "span_id": s.span_id.hex(),
                            "parent_span_id": s.parent_span_id.hex(),
                            "name": s.name,
                            "kind": s.kind,
                            "start_time_unix_nano": s.start_time_unix_nano,
                            "end_time_unix_nano": s.end_time_unix_nano,
                            "attributes": attributes(s.attributes),
                            "events": [{"name": e.name, "time_unix_nano": e.time_unix_nano,
                                        "attributes": attributes(e.attributes)}
                                       for e in s.events],
                            "status": {"code": s.status.code, "message": s.status.message},
                            "scope": ss.scope.name,
                            "scope_version": ss.scope.version,
                            "resource": resource,
                            "transport": received.transport,
                        })
        return out

    def log_records(self) -> list[dict[str, Any]]:
        """Every received log record, flattened, in arrival order."""
        out = []
        for received in self.log_requests:
            for rl in received.request.resource_logs:
                resource = attributes(rl.resource.attributes)
                for sl in rl.scope_logs:
                    for r in sl.log_records:
                        out.append({
                            "trace_id": r.trace_id.hex(),
                            "span_id": r.span_id.hex(),
                            "time_unix_nano": r.time_unix_nano,
                            "severity_number": r.severity_number,
                            "severity_text": r.severity_text,
                            "event_name": r.event_name,
                            "body": any_value(r.body) if r.HasField("body") else None,
                            "attributes": attributes(r.attributes),
                            "flags": r.flags,
                            "scope": sl.scope.name,
                            "resource": resource,
                            "transport": received.transport,
                        })
        return out

    def _wait(self, read: Callable[[], list[dict[str, Any]]], n: int,
              timeout: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                items = read()
                if len(items) >= n:
                    return items
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"received {len(items)} of {n} within {timeout} s")
                self._lock.wait(left)

    def wait_for_spans(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Block until at least `n` spans arrived; all spans so far.

        Raises:
            TimeoutError: fewer arrived within `timeout` seconds.
        """
        return self._wait(self.spans, n, timeout)

    def wait_for_logs(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Block until at least `n` log records arrived; all log records so far.

        Raises:
            TimeoutError: fewer arrived within `timeout` seconds.
        """
        return self._wait(self.log_records, n, timeout)
