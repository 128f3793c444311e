"""A fake OpenAI chat-completions server on a loopback port.

Real HTTP on ``127.0.0.1`` (port 0), so the real ``openai`` client and the
instrumentations wrapped around it run unchanged. Replies are scripted in order
(text, tool calls, or an HTTP error); both the JSON response and the streaming
SSE form (``stream: true``, with the usage chunk when
``stream_options.include_usage`` is set) are served. Every request is recorded.

Standard library only, so it runs inside the capture virtual environments too::

    with FakeOpenAI([ToolCallReply(...), TextReply("It is 14°C.")]) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="test")

Strict mode (`FakeOpenAI(strict=True)`, what the judge's tests use) answers as the real API
would refuse, taking no scripted reply (`rejections` records each):

- a missing or wrong key (`Authorization: Bearer …`, or Azure's `api-key`): 401;
- a body the installed `openai` SDK's request types refuse, or with a key they do not have
  (`CompletionCreateParams*`): 400 — as `fake_anthropic` checks Anthropic bodies;
- `reject_json_schema=True`: 400 for `response_format: {type: json_schema}` (a server without
  structured outputs; drives the judge's fallback); `reject_tools=True` likewise for tools.

Azure OpenAI's route `/openai/deployments/{deployment}/chat/completions?api-version=…` is
served too (`RecordedRequest.path` keeps the deployment and the query). Scripted replies beyond
text and tool calls: `structured(obj)` (a forced tool call when the request forced one, else the
JSON as content), `rate_limited(...)` (429 with `retry-after-ms` / `retry-after` /
`x-ratelimit-reset-*`), `insufficient_quota()`, `cut_at_length()` (`finish_reason: length`, no
content), `refusal(text)`. When the script is empty the answer is a 500 "script exhausted".
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
    "FAKE_OPENAI_KEY",
    "ErrorReply",
    "FakeOpenAI",
    "RecordedRequest",
    "Reply",
    "StructuredReply",
    "TextReply",
    "ToolCall",
    "ToolCallReply",
    "cut_at_length",
    "insufficient_quota",
    "rate_limited",
    "refusal",
    "structured",
]

FAKE_OPENAI_KEY = "sk-openai-fake-key-for-tests"


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

    text: str | None
    prompt_tokens: int = 20
    completion_tokens: int = 10
    finish_reason: str = "stop"
    refusal: str | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None


@dataclass(frozen=True)
class StructuredReply:
    """A JSON answer that follows the request: the arguments of the forced tool call when the
    request forced one, else the JSON as the message content."""

    value: Any
    prompt_tokens: int = 20
    completion_tokens: int = 10
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None


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
    code: str | None = None
    headers: tuple[tuple[str, str], ...] = ()


Reply = TextReply | ToolCallReply | ErrorReply | StructuredReply


def structured(value: Any, **usage: Any) -> StructuredReply:
    """`value` as JSON, the way the request asked for it (see `StructuredReply`)."""
    return StructuredReply(value, **usage)


def rate_limited(*, retry_after: float | str | None = None, retry_after_ms: float | None = None,
                 reset_requests: str | None = None, reset_tokens: str | None = None
                 ) -> ErrorReply:
    """429 `rate_limit_exceeded`, with the wait headers given (`reset_*` like `1m30s`)."""
    headers = [(name, str(value)) for name, value in (
        ("retry-after", retry_after), ("retry-after-ms", retry_after_ms),
        ("x-ratelimit-reset-requests", reset_requests),
        ("x-ratelimit-reset-tokens", reset_tokens)) if value is not None]
    return ErrorReply(429, "Rate limit reached for requests", "requests", "rate_limit_exceeded",
                      tuple(headers))


def insufficient_quota() -> ErrorReply:
    """429 `insufficient_quota`: the plan's quota is used up (not transient)."""
    return ErrorReply(429, "You exceeded your current quota, please check your plan and "
                      "billing details.", "insufficient_quota", "insufficient_quota")


def cut_at_length(*, reasoning_tokens: int = 1024) -> TextReply:
    """`finish_reason: length` with empty content: a reasoning model spent its budget."""
    return TextReply("", completion_tokens=reasoning_tokens, finish_reason="length",
                     reasoning_tokens=reasoning_tokens)


def refusal(text: str) -> TextReply:
    """The model refuses (`message.refusal`, no content)."""
    return TextReply(None, refusal=text)


@dataclass
class RecordedRequest:
    """What the client sent."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any = field(default=None)
    received_at: float = field(default_factory=time.monotonic)
    """`time.monotonic()` when the request arrived."""

    @property
    def system_text(self) -> str:
        """The system (and developer) messages' text, joined by newlines."""
        return _messages_text(self.body, ("system", "developer"))

    @property
    def user_text(self) -> str:
        """The user messages' text, joined by newlines."""
        return _messages_text(self.body, ("user",))

    @property
    def forced_tool(self) -> str | None:
        """The function name `tool_choice` forces, or None."""
        choice = self.body.get("tool_choice") if isinstance(self.body, dict) else None
        if isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name")
            return name if isinstance(name, str) else None
        return None

    @property
    def response_format(self) -> str | None:
        """`response_format.type` (`json_schema`, `json_object`, `text`), or None."""
        fmt = self.body.get("response_format") if isinstance(self.body, dict) else None
        return fmt.get("type") if isinstance(fmt, dict) else None


@dataclass(frozen=True)
class Rejection:
    """A request strict mode refused as the real API would (it took no scripted reply)."""

    status: int
    message: str
    request: RecordedRequest


def _messages_text(body: Any, roles: tuple[str, ...]) -> str:
    if not isinstance(body, dict):
        return ""
    texts: list[str] = []
    for message in body.get("messages") or ():
        if not isinstance(message, dict) or message.get("role") not in roles:
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(texts)


class FakeOpenAI(LoopbackFake):
    """Serves scripted chat-completion replies on ``127.0.0.1`` and records requests.

    Args:
        replies: Replies served in order, one per ``POST /v1/chat/completions``.
            When the script is exhausted the server answers 500 (a test that
            makes more calls than it scripted should fail loudly).
        model: The model name echoed in responses when the request names none.
        stream_chunk_size: Characters per streamed content delta.
        strict: refuse what the real API refuses (see the module docstring).
        api_key: the only key strict mode accepts.
        reject_json_schema: strict mode answers 400 to `response_format` `json_schema`.
        reject_tools: strict mode answers 400 to requests with `tools`.
        default_reply: opt-in answer (a reply or a callable of the request) when the script
            is empty; None: a 500 "script exhausted", recorded in `problems`.

    Attributes:
        requests: Every request received, in order.
        rejections: the requests strict mode refused.
        problems: the fake's complaints about the script (exhausted).
    """

    def __init__(
        self,
        replies: list[Reply] | tuple[Reply, ...] = (),
        *,
        model: str = "gpt-4o-mini",
        stream_chunk_size: int = 8,
        strict: bool = False,
        api_key: str = FAKE_OPENAI_KEY,
        reject_json_schema: bool = False,
        reject_tools: bool = False,
        default_reply: Any = None,
    ) -> None:
        self.strict = strict
        self.api_key = api_key
        self.reject_json_schema = reject_json_schema
        self.reject_tools = reject_tools
        self.default_reply = default_reply
        self.rejections: list[Rejection] = []
        self.problems: list[str] = []
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

    def enqueue(self, *replies: Reply) -> None:
        """Append replies to the script (as `add`)."""
        self.add(*replies)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The requests to a chat-completions route (OpenAI's or Azure's), in order."""
        with self._lock:
            return [r for r in self.requests if r.path.split("?", 1)[0].rstrip("/").endswith(
                "/chat/completions")]

    def clear(self) -> None:
        """Forget recorded requests, rejections, problems and unused scripted replies."""
        with self._lock:
            self.requests.clear()
            self.rejections.clear()
            self.problems.clear()
            self._replies.clear()

    def take_rejections(self) -> list[Rejection]:
        """The rejections so far, forgotten (a test that provokes them takes them)."""
        with self._lock:
            taken, self.rejections = self.rejections, []
        return taken

    def verify(self) -> None:
        """Raise AssertionError unless every scripted reply was used, no request was refused
        and the script never ran out."""
        with self._lock:
            complaints = ([f"{len(self._replies)} scripted replies unused"] if self._replies
                          else [])
            complaints += list(self.problems)
            complaints += [f"refused {r.status}: {r.message}" for r in self.rejections]
        if complaints:
            raise AssertionError("fake OpenAI: " + "; ".join(complaints))

    def start(self) -> Self:
        """Bind a free loopback port and serve in a daemon thread."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between header and body

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                fake._handle_post(self)

        self._server = LoopbackServer(Handler, backlog=256)
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
        recorded = RecordedRequest("POST", http.path, dict(http.headers.items()), body)
        with self._lock:
            self.requests.append(recorded)
        route = http.path.split("?", 1)[0].rstrip("/")
        if route.startswith("/openai/deployments/") and route.endswith("/chat/completions"):
            route = "/v1/chat/completions"  # Azure OpenAI: the deployment is in the path
        if route not in self._ROUTES:
            send_json(http, 404, _error_body(f"no route {http.path}", "invalid_request_error"))
            return
        if not isinstance(body, dict):
            send_json(http, 400, _error_body("body is not a JSON object", "invalid_request_error"))
            return
        if self.strict:
            refused = self._refusal(recorded, route)
            if refused is not None:
                status, message = refused
                with self._lock:
                    self.rejections.append(Rejection(status, message, recorded))
                kind = "invalid_request_error"
                send_json(http, status, _error_body(message, kind,
                                                    "invalid_api_key" if status == 401 else None))
                return
        with self._lock:
            source: Any = self._replies.popleft() if self._replies else self.default_reply
            self._served += 1
            number = self._served
            if source is None:
                self.problems.append(f"script exhausted: request #{number} has no scripted "
                                     "reply")
        if source is None:
            send_json(http, 500, _error_body("fake OpenAI: script exhausted (no scripted reply "
                                             "left)", "server_error"))
            return
        reply = source(recorded) if callable(source) else source
        if isinstance(reply, ErrorReply):
            send_json(http, reply.status, _error_body(reply.message, reply.type, reply.code),
                      headers=dict(reply.headers))
            return
        if isinstance(reply, StructuredReply):
            reply = _structured_reply(reply, recorded)
        self._answer(http, route, body, reply, number)

    def _refusal(self, request: RecordedRequest, route: str) -> tuple[int, str] | None:
        headers = {k.lower(): v for k, v in request.headers.items()}
        authorization = headers.get("authorization", "")
        key = headers.get("api-key") or (authorization[7:] if authorization.startswith("Bearer ")
                                          else None)
        if key != self.api_key:
            return 401, "Incorrect API key provided."
        if request.path.startswith("/openai/") and "api-version=" not in request.path:
            return 404, "Resource not found (no api-version)"
        if route != "/v1/chat/completions":
            return None
        body = request.body
        problem = check_chat_body(body)
        if problem is not None:
            return 400, problem
        if self.reject_json_schema and request.response_format == "json_schema":
            return 400, "response_format json_schema is not supported by this model"
        if self.reject_tools and body.get("tools"):
            return 400, "tools are not supported by this model"
        return None

    def _answer(
        self,
        http: BaseHTTPRequestHandler,
        route: str,
        body: dict[str, Any],
        reply: Any,
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


# ---------------------------------------------------------------------- strict checks


def check_chat_body(body: Any) -> str | None:
    """Why the real API would refuse this chat-completions body (None: it would not): the
    installed `openai` SDK's request types (`CompletionCreateParams{Non,}Streaming`), with
    unknown keys refused. Without the SDK (a capture venv), only the required keys."""
    if not isinstance(body, dict):
        return "body is not a JSON object"
    for name in ("model", "messages"):
        if name not in body:
            return f"{name}: Field required"
    try:
        from openai.types.chat import completion_create_params as params
        from pydantic import ValidationError
    except ImportError:  # pragma: no cover - capture venvs
        return None
    try:
        from fake_anthropic import _error_text, _extra_inputs, _Invalid, _materialize
    except ImportError:  # pragma: no cover - depends on how the module is imported
        from tests.fakes.fake_anthropic import _error_text, _extra_inputs, _Invalid, _materialize
    kind = (params.CompletionCreateParamsStreaming if body.get("stream") is True
            else params.CompletionCreateParamsNonStreaming)
    try:
        _materialize(_adapter(kind).validate_python(body), "")
    except ValidationError as exc:
        return _error_text(exc.errors(), "")
    except _Invalid as exc:
        return str(exc)
    extra = _extra_inputs(body, kind)
    if extra:
        return f"{extra[0]}: Unrecognized request argument supplied"
    return None


_ADAPTERS: dict[Any, Any] = {}


def _adapter(kind: Any) -> Any:
    if kind not in _ADAPTERS:
        from pydantic import TypeAdapter

        _ADAPTERS[kind] = TypeAdapter(kind)
    return _ADAPTERS[kind]


def _structured_reply(reply: StructuredReply, request: RecordedRequest) -> TextReply | ToolCallReply:
    text = json.dumps(reply.value)
    tool = request.forced_tool
    if tool is not None:
        return ToolCallReply((ToolCall("call_fake", tool, text),), None, reply.prompt_tokens,
                             reply.completion_tokens)
    return TextReply(text, reply.prompt_tokens, reply.completion_tokens,
                     cached_tokens=reply.cached_tokens, reasoning_tokens=reply.reasoning_tokens)


# ---------------------------------------------------------------------- wire shapes


def _error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _usage(reply: TextReply | ToolCallReply) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
    cached = getattr(reply, "cached_tokens", None)
    reasoning = getattr(reply, "reasoning_tokens", None)
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


def _finish_reason(reply: TextReply | ToolCallReply) -> str:
    return "tool_calls" if isinstance(reply, ToolCallReply) else reply.finish_reason


def _completion(reply: TextReply | ToolCallReply, model: str, cid: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text,
                               "refusal": getattr(reply, "refusal", None)}
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
