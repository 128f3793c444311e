"""A fake OpenAI chat-completions server on a loopback port.

Real HTTP on ``127.0.0.1`` (port 0), so the real ``openai`` client and the
instrumentations wrapped around it run unchanged. Replies are scripted in order
(text, tool calls, or an HTTP error); both the JSON response and the streaming
SSE form (``stream: true``, with the usage chunk when
``stream_options.include_usage`` is set) are served. Every request is recorded.

Standard library only, so it runs inside the capture virtual environments too::

    with FakeOpenAI([ToolCallReply(...), TextReply("It is 14°C.")]) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="test")
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Self

try:  # as a sibling module (capture venvs put tests/fakes on sys.path) or as tests.fakes
    from _http import LoopbackFake, LoopbackServer, read_body, send_json, sse_event, stream_sse
except ImportError:  # pragma: no cover - depends on how the module is imported
    from tests.fakes._http import (
        LoopbackFake,
        LoopbackServer,
        read_body,
        send_json,
        sse_event,
        stream_sse,
    )

__all__ = [
    "ErrorReply",
    "FakeOpenAI",
    "RecordedRequest",
    "Reply",
    "TextReply",
    "ToolCall",
    "ToolCallReply",
]


@dataclass(frozen=True)
class ToolCall:
    """One function tool call the fake model makes.

    Attributes:
        id: The call id (``call_…``).
        name: The function name.
        arguments: The arguments as the JSON string OpenAI sends.
    """

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class TextReply:
    """A final text answer (``finish_reason=stop``)."""

    text: str
    prompt_tokens: int = 20
    completion_tokens: int = 10


@dataclass(frozen=True)
class ToolCallReply:
    """An assistant turn asking for tool calls (``finish_reason=tool_calls``).

    Attributes:
        tool_calls: The calls, in order.
        text: Optional assistant text sent with the calls ("Let me look that up.").
    """

    tool_calls: tuple[ToolCall, ...]
    text: str | None = None
    prompt_tokens: int = 20
    completion_tokens: int = 10


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error in OpenAI's error shape."""

    status: int = 500
    message: str = "scripted failure"
    type: str = "server_error"


Reply = TextReply | ToolCallReply | ErrorReply


@dataclass
class RecordedRequest:
    """What the client sent."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any = field(default=None)


class FakeOpenAI(LoopbackFake):
    """Serves scripted chat-completion replies on ``127.0.0.1`` and records requests.

    Args:
        replies: Replies served in order, one per ``POST /v1/chat/completions``.
            When the script is exhausted the server answers 500 (a test that
            makes more calls than it scripted should fail loudly).
        model: The model name echoed in responses when the request names none.
        stream_chunk_size: Characters per streamed content delta.

    Attributes:
        requests: Every request received, in order.
    """

    def __init__(
        self,
        replies: list[Reply] | tuple[Reply, ...] = (),
        *,
        model: str = "gpt-4o-mini",
        stream_chunk_size: int = 8,
    ) -> None:
        self._replies: deque[Reply] = deque(replies)
        self.model = model
        self.stream_chunk_size = max(1, stream_chunk_size)
        self.requests: list[RecordedRequest] = []
        self._served = 0
        self._lock = threading.Lock()
        self._server: LoopbackServer | None = None

    # ------------------------------------------------------------------ control

    def add(self, *replies: Reply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies have not been served yet."""
        with self._lock:
            return len(self._replies)

    @property
    def port(self) -> int:
        """The bound port (only while started)."""
        assert self._server is not None, "server not started"
        return self._server.port

    @property
    def base_url(self) -> str:
        """The ``base_url`` for ``openai.OpenAI`` (ends in ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Self:
        """Bind a free loopback port and serve in a daemon thread."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                fake._handle_post(self)

        self._server = LoopbackServer(Handler)
        return self


    # ------------------------------------------------------------------ serving

    _ROUTES: tuple[str, ...] = ("/v1/chat/completions",)
    """The paths answered from the script (anything else is a 404)."""

    def _handle_post(self, http: BaseHTTPRequestHandler) -> None:
        raw = read_body(http)
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        with self._lock:
            self.requests.append(RecordedRequest("POST", http.path, dict(http.headers.items()), body))
        route = http.path.split("?", 1)[0].rstrip("/")
        if route not in self._ROUTES:
            send_json(http, 404, _error_body(f"no route {http.path}", "invalid_request_error"))
            return
        if not isinstance(body, dict):
            send_json(http, 400, _error_body("body is not a JSON object", "invalid_request_error"))
            return
        with self._lock:
            reply = self._replies.popleft() if self._replies else None
            self._served += 1
            number = self._served
        if reply is None:
            send_json(http, 500, _error_body("fake OpenAI: no scripted reply left", "server_error"))
            return
        if isinstance(reply, ErrorReply):
            send_json(http, reply.status, _error_body(reply.message, reply.type))
            return
        self._answer(http, route, body, reply, number)

    def _answer(
        self,
        http: BaseHTTPRequestHandler,
        route: str,
        body: dict[str, Any],
        reply: TextReply | ToolCallReply,
        number: int,
    ) -> None:
        """Serve one scripted reply on ``route`` (a chat completion, JSON or streamed)."""
        model = str(body.get("model") or self.model)
        completion_id = f"chatcmpl-fake{number:04d}"
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = _chunks(reply, model, completion_id, include_usage, self.stream_chunk_size)
            stream_sse(http, [sse_event(json.dumps(c)) for c in chunks] + [sse_event("[DONE]")])
        else:
            send_json(http, 200, _completion(reply, model, completion_id))


# ---------------------------------------------------------------------- wire shapes


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _usage(reply: TextReply | ToolCallReply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _finish_reason(reply: TextReply | ToolCallReply) -> str:
    return "tool_calls" if isinstance(reply, ToolCallReply) else "stop"


def _completion(reply: TextReply | ToolCallReply, model: str, cid: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if isinstance(reply, ToolCallReply):
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    return {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish_reason(reply)}
        ],
        "usage": _usage(reply),
    }


def _chunks(
    reply: TextReply | ToolCallReply, model: str, cid: str, include_usage: bool, size: int
) -> list[dict[str, Any]]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    out = [chunk({"role": "assistant", "content": "" if reply.text is not None else None})]
    text = reply.text or ""
    out.extend(chunk({"content": text[i : i + size]}) for i in range(0, len(text), size))
    if isinstance(reply, ToolCallReply):
        for index, call in enumerate(reply.tool_calls):
            out.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call.id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
            args = call.arguments
            for i in range(0, len(args), size):
                out.append(
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": args[i : i + size]}}]})
                )
    out.append(chunk({}, _finish_reason(reply)))
    if include_usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = _usage(reply)
        out.append(last)
    return out
