"""A fake Anthropic Messages API: a real HTTP server on a loopback port.

The real `anthropic` client talks to it through `base_url`, so the judge adapter, its error
mapping and its retries are exercised over HTTP exactly as in production. Replies are scripted
per test as a FIFO queue; when the queue is empty the server answers with `default_reply`.
Every request is recorded (method, path, lower-cased headers, parsed JSON body, arrival time).

Usage in tests (the `fake_anthropic` fixture in `tests/conftest.py` yields a started server)::

    def test_x(fake_anthropic):
        fake_anthropic.enqueue(rate_limited(retry_after=1), structured({"score": 0.8}))
        client = anthropic.AsyncAnthropic(base_url=fake_anthropic.base_url,
                                          api_key=fake_anthropic.api_key, max_retries=0)
        ...
        assert len(fake_anthropic.requests) == 2
        assert fake_anthropic.requests[0].body["model"] == "claude-haiku-5-5"

Outside pytest (capture scripts, README runs) it is a context manager::

    from tests.fakes.fake_anthropic import FakeAnthropic, text
    with FakeAnthropic() as fake:
        fake.enqueue(text("hello"))
        os.environ.update(fake.env())   # ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY
        ...

Reply builders (each accepts `delay=` seconds, to make a slow reply, and `headers=`):

- `structured(obj)`: the JSON object the request asked for. A forced tool call
  (`tool_choice: {"type": "tool"}`) gets a `tool_use` block with `obj` as input; any other request
  (native `output_config` structured output, or a schema injected in the prompt) gets a text block
  holding `json.dumps(obj)` — which is what Anthropic structured outputs return.
- `text(s)`: one text block. `tool_use(name, input, text=…, tool_use_id=…)`: one tool_use block
  (after an optional text block).
- `error(status, type, message)` and the shortcuts `rate_limited(retry_after=…,
  retry_after_ms=…)` (429), `overloaded()` (529), `server_error()` (500), `unauthorized()` (401),
  `forbidden()` (403), `context_too_long()` (400).
- `raw(status, body, content_type=…)`: arbitrary bytes, e.g. a body that is not JSON.
- `disconnect()`: close the connection without answering (a connection error on the client).
- a callable `(RecordedRequest) -> Reply` decides from the request.

Requests with `"stream": true` are answered as Server-Sent Events (message_start,
content_block_start/delta/stop, message_delta, message_stop), so instrumentation libraries that
stream can be driven against the same server. Errors are always plain JSON responses.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

try:  # as a sibling module (capture venvs put tests/fakes on sys.path) or as tests.fakes
    from _http import LoopbackFake, LoopbackServer, read_body, send, sse_event
except ImportError:  # pragma: no cover - depends on how the module is imported
    from tests.fakes._http import LoopbackFake, LoopbackServer, read_body, send, sse_event

__all__ = [
    "FakeAnthropic",
    "RecordedRequest",
    "Reply",
    "context_too_long",
    "disconnect",
    "error",
    "forbidden",
    "overloaded",
    "raw",
    "rate_limited",
    "server_error",
    "structured",
    "text",
    "tool_use",
    "unauthorized",
]

FAKE_API_KEY = "sk-ant-fake-key-for-tests"


@dataclass
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The parsed JSON body, or None when it was not JSON."""
    raw_body: bytes
    received_at: float
    """`time.monotonic()` when the request arrived: use differences to measure waits."""

    @property
    def system_text(self) -> str:
        """The system prompt as one string (string or list-of-blocks form)."""
        return _blocks_text(self.body.get("system")) if isinstance(self.body, dict) else ""

    @property
    def user_text(self) -> str:
        """The text of every user message, joined by newlines."""
        if not isinstance(self.body, dict):
            return ""
        return "\n".join(_blocks_text(m.get("content")) for m in self.body.get("messages", [])
                         if isinstance(m, dict) and m.get("role") == "user")

    @property
    def forced_tool(self) -> str | None:
        """The tool name when the request forces a tool call, else None."""
        if not isinstance(self.body, dict):
            return None
        choice = self.body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") == "tool":
            name = choice.get("name")
            return name if isinstance(name, str) else None
        return None


def _blocks_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(b.get("text", "") for b in value
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


@dataclass
class Reply:
    """One scripted answer. Build it with the module's helper functions."""

    kind: str
    """`structured`, `text`, `tool_use`, `error`, `raw` or `disconnect`."""
    status: int = 200
    payload: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    input_tokens: int = 11
    output_tokens: int = 7
    stop_reason: str | None = None
    content_type: str = "application/json"


ReplySource = Reply | Callable[[RecordedRequest], Reply]


def structured(obj: Any, *, delay: float = 0.0, headers: dict[str, str] | None = None,
               input_tokens: int = 11, output_tokens: int = 7) -> Reply:
    """The JSON object the request asked for, in whichever form the request asked for it."""
    return Reply("structured", payload=obj, delay=delay, headers=dict(headers or {}),
                 input_tokens=input_tokens, output_tokens=output_tokens)


def text(value: str, *, delay: float = 0.0, headers: dict[str, str] | None = None,
         input_tokens: int = 11, output_tokens: int = 7, stop_reason: str = "end_turn") -> Reply:
    """One text content block (use it for replies that are not valid JSON, too)."""
    return Reply("text", payload=value, delay=delay, headers=dict(headers or {}),
                 input_tokens=input_tokens, output_tokens=output_tokens, stop_reason=stop_reason)


def tool_use(name: str, tool_input: Any, *, delay: float = 0.0, input_tokens: int = 11,
             output_tokens: int = 7, text: str | None = None,
             tool_use_id: str | None = None) -> Reply:
    """One tool_use content block with the given name and input.

    `text` puts a text block before it (an assistant that says something and calls a tool);
    `tool_use_id` fixes the block's id (random `toolu_…` otherwise), for reproducible captures.
    """
    return Reply("tool_use", payload={"name": name, "input": tool_input, "text": text,
                                      "id": tool_use_id}, delay=delay,
                 input_tokens=input_tokens, output_tokens=output_tokens)


def error(status: int, error_type: str, message: str, *, headers: dict[str, str] | None = None,
          delay: float = 0.0) -> Reply:
    """An Anthropic error response: `{"type": "error", "error": {"type", "message"}}`."""
    return Reply("error", status=status, payload={"type": error_type, "message": message},
                 headers=dict(headers or {}), delay=delay)


def rate_limited(*, retry_after: float | str | None = None, retry_after_ms: float | None = None,
                 delay: float = 0.0) -> Reply:
    """429 `rate_limit_error`, with `retry-after` (seconds or HTTP date) and/or `retry-after-ms`."""
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["retry-after"] = str(retry_after)
    if retry_after_ms is not None:
        headers["retry-after-ms"] = str(retry_after_ms)
    return error(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit.",
                 headers=headers, delay=delay)


def overloaded(*, headers: dict[str, str] | None = None) -> Reply:
    """529 `overloaded_error`."""
    return error(529, "overloaded_error", "Overloaded", headers=headers)


def server_error(*, headers: dict[str, str] | None = None) -> Reply:
    """500 `api_error`."""
    return error(500, "api_error", "Internal server error", headers=headers)


def unauthorized() -> Reply:
    """401 `authentication_error`."""
    return error(401, "authentication_error", "invalid x-api-key")


def forbidden() -> Reply:
    """403 `permission_error`."""
    return error(403, "permission_error", "Your API key does not have permission to use this.")


def context_too_long() -> Reply:
    """400 `invalid_request_error`: the prompt is too long."""
    return error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum")


def raw(status: int, body: bytes | str, *, content_type: str = "application/json",
        headers: dict[str, str] | None = None) -> Reply:
    """Arbitrary bytes with the given status (e.g. a 200 whose body is not JSON)."""
    data = body.encode() if isinstance(body, str) else body
    return Reply("raw", status=status, payload=data, content_type=content_type,
                 headers=dict(headers or {}))


def disconnect() -> Reply:
    """Close the connection without an answer: the client sees a connection error."""
    return Reply("disconnect")


def _default_reply(request: RecordedRequest) -> Reply:
    # Structured requests get a valid score; plain ones a short text.
    body = request.body if isinstance(request.body, dict) else {}
    if request.forced_tool or "output_config" in body:
        return structured({"score": 1.0})
    return text("This is the fake Anthropic server's default reply.")


class FakeAnthropic(LoopbackFake):
    """A scripted Messages API server on 127.0.0.1, on a free port.

    Attributes:
        base_url: pass it as the client's `base_url` (no trailing `/v1`).
        api_key: a fake key; any key is accepted unless a reply says otherwise.
        requests: every request received, in order.
        default_reply: used when the script is empty (a `Reply` or a callable of the request).
    """

    def __init__(self, *, default_reply: ReplySource | None = None) -> None:
        self.api_key = FAKE_API_KEY
        self.requests: list[RecordedRequest] = []
        self.default_reply: ReplySource = default_reply or _default_reply
        self._script: deque[ReplySource] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: LoopbackServer | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeAnthropic:
        """Start listening (idempotent). Returns self."""
        if self._server is not None:
            return self
        # The stdlib default backlog of 5 resets connections when many judge calls start at once.
        self._server = LoopbackServer(_make_handler(self), name="fake-anthropic", backlog=256,
                                      poll_interval=0.05)
        return self

    def stop(self) -> None:
        """Stop the server and wake any slow reply (idempotent)."""
        self._stopping.set()
        super().stop()

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        if self._server is None:
            raise RuntimeError("FakeAnthropic is not started")
        return self._server.port

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>`: the client's `base_url`."""
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """`ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY` pointing at this server."""
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": self.api_key}

    # ------------------------------------------------------------------ scripting

    def enqueue(self, *replies: ReplySource) -> None:
        """Append replies to the script; each request to /v1/messages takes the next one."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies are still unused."""
        with self._lock:
            return len(self._script)

    @property
    def message_requests(self) -> list[RecordedRequest]:
        """The recorded `POST /v1/messages` requests."""
        return [r for r in list(self.requests) if r.path.split("?")[0] == "/v1/messages"]

    def clear(self) -> None:
        """Forget recorded requests and unused scripted replies."""
        with self._lock:
            self.requests.clear()
            self._script.clear()

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            source = self._script.popleft() if self._script else self.default_reply
        return source(request) if callable(source) else source


# ---------------------------------------------------------------------- HTTP


def _message(request: RecordedRequest, reply: Reply) -> dict[str, Any]:
    body = request.body if isinstance(request.body, dict) else {}
    stop_reason = reply.stop_reason or "end_turn"
    if reply.kind == "structured":
        tool = request.forced_tool
        if tool:
            content = [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": tool,
                        "input": reply.payload}]
            stop_reason = "tool_use"
        else:
            content = [{"type": "text", "text": json.dumps(reply.payload)}]
    elif reply.kind == "tool_use":
        content = [{"type": "tool_use",
                    "id": reply.payload.get("id") or f"toolu_{uuid.uuid4().hex[:20]}",
                    "name": reply.payload["name"], "input": reply.payload["input"]}]
        if reply.payload.get("text"):
            content.insert(0, {"type": "text", "text": reply.payload["text"]})
        stop_reason = "tool_use"
    else:
        content = [{"type": "text", "text": str(reply.payload)}]
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-haiku-5-5"),
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }


def _sse_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    start = {**message, "content": [], "stop_reason": None,
             "usage": {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {**block, "input": {}}}))
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}}))
            delta = {"type": "text_delta", "text": block["text"]}
        events.append(("content_block_delta",
                       {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _make_handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like the real API
        disable_nagle_algorithm = True  # headers and body go out without a 40 ms delayed-ACK stall

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass  # keep test output clean

        def _send(self, status: int, body: bytes, content_type: str,
                  headers: dict[str, str]) -> None:
            # Every response carries a request id, as the real API's do.
            send(self, status, body, content_type,
                 {"request-id": f"req_{uuid.uuid4().hex[:20]}", **headers})

        def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
            self._send(status, json.dumps(obj).encode(), "application/json", headers or {})

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            request = self._read_and_record(b"")
            with fake._lock:
                fake.requests.append(request)
            self._send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                              "message": "Not found"}})

        def _read_and_record(self, raw_body: bytes) -> RecordedRequest:
            try:
                body = json.loads(raw_body) if raw_body else None
            except ValueError:
                body = None
            return RecordedRequest(method=self.command, path=self.path,
                                   headers={k.lower(): v for k, v in self.headers.items()},
                                   body=body, raw_body=raw_body, received_at=time.monotonic())

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            request = self._read_and_record(read_body(self))
            if request.path.split("?")[0] != "/v1/messages":
                with fake._lock:
                    fake.requests.append(request)
                self._send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                                  "message": "Not found"}})
                return
            reply = fake._next_reply(request)
            if reply.delay > 0 and fake._stopping.wait(reply.delay):
                return  # server stopping: drop the slow reply
            if reply.kind == "disconnect":
                self.close_connection = True
                self.connection.shutdown(2)  # SHUT_RDWR: the client sees the socket close
                return
            if reply.kind == "raw":
                self._send(reply.status, reply.payload, reply.content_type, reply.headers)
                return
            if reply.kind == "error":
                self._send_json(reply.status, {"type": "error", "error": reply.payload,
                                               "request_id": f"req_{uuid.uuid4().hex[:20]}"},
                                reply.headers)
                return
            message = _message(request, reply)
            if isinstance(request.body, dict) and request.body.get("stream"):
                # The whole stream in one response with a Content-Length (keep-alive).
                events = b"".join(sse_event(json.dumps(data), name)
                                  for name, data in _sse_events(message))
                self._send(200, events, "text/event-stream", reply.headers)
                return
            self._send_json(200, message, reply.headers)

    return Handler
