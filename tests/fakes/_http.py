"""HTTP plumbing shared by the loopback fakes: a server thread, request bodies, replies, SSE.

Standard library only, so the fakes that use it still run inside the capture virtual
environments (which put ``tests/fakes`` on ``sys.path`` and import the fakes as top-level
modules).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

__all__ = [
    "LoopbackFake",
    "LoopbackServer",
    "read_body",
    "send",
    "send_json",
    "sse_event",
    "stream_sse",
]


class LoopbackServer:
    """A ``ThreadingHTTPServer`` on ``127.0.0.1`` (a free port), served from a daemon thread.

    Args:
        handler: The request handler class.
        name: The serving thread's name (None: the threading default).
        backlog: The listen backlog (None: the stdlib's 5).
        poll_interval: How often ``serve_forever`` checks for shutdown, in seconds.
    """

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, name: str | None = None,
                 backlog: int | None = None, poll_interval: float = 0.5) -> None:
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler, bind_and_activate=False)
        if backlog is not None:
            server.request_queue_size = backlog
        try:
            server.server_bind()
            server.server_activate()
        except BaseException:
            server.server_close()
            raise
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever,
                                        kwargs={"poll_interval": poll_interval}, name=name,
                                        daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self._server.server_address[1])

    def stop(self) -> None:
        """Stop serving, close the socket and wait (up to 5 s) for the thread."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class LoopbackFake:
    """Base of the fakes: a context manager owning a `LoopbackServer` from `start` to `stop`.

    Subclasses implement `start` (build the handler, set `self._server`, return self).
    """

    _server: LoopbackServer | None = None

    def start(self) -> Self:
        """Start serving; returns self."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body, by Content-Length or chunked transfer encoding (Node's http sends chunked)."""
    if "chunked" in (handler.headers.get("Transfer-Encoding") or "").lower():
        chunks: list[bytes] = []
        while True:
            size_line = handler.rfile.readline().split(b";", 1)[0].strip()
            size = int(size_line or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()  # the CRLF after each chunk
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str,
         headers: Mapping[str, str] | None = None) -> None:
    """A complete response with a Content-Length (the connection may be kept alive)."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any,
              headers: Mapping[str, str] | None = None) -> None:
    """``payload`` as a JSON response."""
    send(handler, status, json.dumps(payload).encode(), "application/json", headers)


def sse_event(data: str, event: str | None = None) -> bytes:
    """One Server-Sent Event: an optional ``event:`` line, the ``data:`` line, a blank line."""
    head = f"event: {event}\n" if event is not None else ""
    return f"{head}data: {data}\n\n".encode()


def stream_sse(handler: BaseHTTPRequestHandler, events: Iterable[bytes]) -> None:
    """A 200 event stream, flushed event by event; the body ends when the connection closes."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.close_connection = True
    for event in events:
        handler.wfile.write(event)
        handler.wfile.flush()
