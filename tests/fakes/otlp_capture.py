"""A loopback OTLP/HTTP receiver that writes every request as one OTLP/JSON line.

Used to record what real instrumentation libraries export (the golden captures
under ``tests/testdata/captures/``). Each accepted ``/v1/traces`` or ``/v1/logs``
request becomes one line: an ``ExportTraceServiceRequest`` or
``ExportLogsServiceRequest`` in the OTLP JSON encoding, the same format the
OpenTelemetry Collector's file exporter writes (camelCase names, enum ints,
int64 as strings, and ``traceId``/``spanId``/``parentSpanId`` as lowercase hex,
not protobuf-JSON's base64). ``/v1/metrics`` is accepted and dropped.

It depends only on the standard library, ``protobuf`` and ``opentelemetry-proto``,
so it runs inside every capture virtual environment. Two ways to use it:

* in-process: ``with OtlpCaptureServer(path) as server: ... server.endpoint``;
* as a process (for the Node driver): ``python otlp_capture.py --out FILE``
  prints ``PORT <n>`` on stdout once listening and stops on SIGTERM or when
  stdin closes.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import signal
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Self

from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

try:  # as a sibling module (capture venvs and `python otlp_capture.py`) or as tests.fakes
    from _http import LoopbackFake, LoopbackServer, read_body, send
except ImportError:  # pragma: no cover - depends on how the module is imported
    from tests.fakes._http import LoopbackFake, LoopbackServer, read_body, send

__all__ = ["OtlpCaptureServer", "ids_to_hex", "request_to_otlp_json"]

_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})
_SIGNALS: dict[str, tuple[type[Message], type[Message]]] = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/logs": (ExportLogsServiceRequest, ExportLogsServiceResponse),
}


def ids_to_hex(node: Any) -> Any:
    """Rewrite protobuf-JSON base64 ids into OTLP JSON lowercase hex, in place.

    Only the id fields change; ``bytesValue`` attribute values stay base64 as
    the OTLP JSON encoding requires.

    Args:
        node: A ``MessageToDict`` result (dicts and lists, nested).

    Returns:
        The same object, for chaining.
    """
    stack = [node]
    while stack:  # iterative: deep attribute maps must not hit the recursion limit
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in _ID_KEYS and isinstance(value, str):
                    item[key] = base64.b64decode(value).hex()
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))
    return node


def _hex_ids_to_base64(node: Any) -> Any:
    """The inverse of :func:`ids_to_hex`, so OTLP JSON can be parsed by protobuf."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in _ID_KEYS and isinstance(value, str):
                    item[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))
    return node


def request_to_otlp_json(message: Message) -> dict[str, Any]:
    """Convert a decoded export request into its OTLP JSON form (hex ids, enum ints).

    Args:
        message: An ``ExportTraceServiceRequest`` or ``ExportLogsServiceRequest``.

    Returns:
        The OTLP JSON document as a dict.
    """
    as_dict = MessageToDict(message, use_integers_for_enums=True)
    return ids_to_hex(as_dict)  # type: ignore[no-any-return]


def _decode_body(headers: Any, body: bytes, request_type: type[Message]) -> Message:
    encoding = (headers.get("Content-Encoding") or "").lower()
    if encoding == "gzip":
        body = gzip.decompress(body)
    elif encoding == "deflate":
        body = zlib.decompress(body)
    content_type = (headers.get("Content-Type") or "").lower()
    message = request_type()
    if "json" in content_type:
        # OTLP JSON already has hex ids; round-trip through protobuf so the line
        # is normalised exactly like a protobuf request.
        ParseDict(_hex_ids_to_base64(json.loads(body)), message)
    else:
        message.ParseFromString(body)
    return message


class OtlpCaptureServer(LoopbackFake):
    """An OTLP/HTTP receiver on ``127.0.0.1`` (free port) that appends OTLP/JSON lines.

    Args:
        out_path: The ``.otlp.jsonl`` file to write; truncated on start.

    Attributes:
        documents: Every accepted request as an OTLP JSON dict, in arrival order.
        refused: How many requests could not be decoded (answered 400).
    """

    def __init__(self, out_path: str | Path) -> None:
        self.out_path = Path(out_path)
        self.documents: list[dict[str, Any]] = []
        self.refused = 0
        self._lock = threading.Lock()
        self._server: LoopbackServer | None = None

    @property
    def port(self) -> int:
        """The bound port (only while started)."""
        assert self._server is not None, "server not started"
        return self._server.port

    @property
    def endpoint(self) -> str:
        """Base URL for ``OTEL_EXPORTER_OTLP_ENDPOINT`` (append ``/v1/traces`` per signal)."""
        return f"http://127.0.0.1:{self.port}"

    def _record(self, document: dict[str, Any]) -> None:
        line = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self.documents.append(document)
            with self.out_path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    def start(self) -> Self:
        """Bind, truncate the output file and serve in a daemon thread."""
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        self.out_path.write_text("", encoding="utf-8")
        capture = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return  # quiet: drivers print their own summary

            def _reply(self, status: int, body: bytes, content_type: str) -> None:
                send(self, status, body, content_type)

            def do_POST(self) -> None:
                body = read_body(self)
                path = self.path.split("?", 1)[0]
                if os.environ.get("OTLP_CAPTURE_DEBUG"):
                    print(f"otlp_capture: {path} {self.headers.get('Content-Type')} "
                          f"{self.headers.get('Content-Encoding')} {len(body)} bytes", file=sys.stderr)
                wants_json = "json" in (self.headers.get("Content-Type") or "").lower()
                if path == "/v1/metrics":
                    self._reply(200, b"{}" if wants_json else b"", self._ctype(wants_json))
                    return
                kinds = _SIGNALS.get(path)
                if kinds is None:
                    self._reply(404, b"not an OTLP path", "text/plain")
                    return
                request_type, response_type = kinds
                try:
                    message = _decode_body(self.headers, body, request_type)
                except (DecodeError, ValueError, OSError) as exc:
                    with capture._lock:
                        capture.refused += 1
                    self._reply(400, f"undecodable OTLP body: {exc}".encode(), "text/plain")
                    return
                capture._record(request_to_otlp_json(message))
                response = response_type()
                if wants_json:
                    self._reply(200, b"{}", "application/json")
                else:
                    self._reply(200, response.SerializeToString(), "application/x-protobuf")

            @staticmethod
            def _ctype(wants_json: bool) -> str:
                return "application/json" if wants_json else "application/x-protobuf"

        self._server = LoopbackServer(Handler)
        return self



def main(argv: list[str] | None = None) -> int:
    """Run the receiver as a process until SIGTERM/SIGINT or stdin closes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", required=True, help="the .otlp.jsonl file to write")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    def watch_stdin() -> None:
        sys.stdin.read()  # returns at EOF: the parent went away or closed the pipe
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    with OtlpCaptureServer(args.out) as server:
        print(f"PORT {server.port}", flush=True)
        stop.wait()
    try:
        print(f"WROTE {len(server.documents)} requests, refused {server.refused}", flush=True)
    except BrokenPipeError:  # the parent is gone; the file is what matters
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
