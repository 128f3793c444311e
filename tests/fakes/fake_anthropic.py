"""A fake Anthropic Messages API: a real HTTP server on a loopback port.

The real `anthropic` client talks to it through `base_url`, so the judge adapter, its error
mapping and its retries are exercised over HTTP exactly as in production. Replies are scripted
per test as a FIFO queue. Every request is recorded (method, path, lower-cased headers, parsed
JSON body, arrival time).

It is as strict as the real Messages API, so a test cannot pass on a request the API would refuse:

- no key (`x-api-key`, or `Authorization: Bearer` as the current SDK sends it) → 401
  `authentication_error`; a key other than `api_key` → 401 `invalid x-api-key`;
- no `anthropic-version` header (or an unknown version) → 400 `invalid_request_error`;
- a body that is not a JSON object, that lacks `model`/`max_tokens`/`messages`, or that does not
  match the installed `anthropic` SDK's own request schema (`anthropic.types.MessageCreateParams`,
  or `anthropic.types.beta.MessageCreateParams` when an `anthropic-beta` header is sent; checked
  with a pydantic `TypeAdapter`, unknown keys at any depth refused as "Extra inputs are not
  permitted", `API_FIELDS_NOT_IN_SDK` excepted) → 400 `invalid_request_error`. Without the SDK
  (a capture venv that lacks it) only the required keys are checked; `schema` says which.

A refused request takes no scripted reply (the real API answers before any model runs) and is
listed in `rejections`. The fake also refuses to cover for a test's mistakes, with a 500
`api_error` whose message starts with "fake Anthropic:" and an entry in `problems`:

- a request arriving when the script is empty ("script exhausted"), unless the test opted in
  to `default_reply=` (a `Reply`, or a callable of the request);
- `structured(obj)` scripted for a request that asked for no structured output (neither a forced
  tool nor `output_config.format` / beta `output_format`): use `text(json.dumps(obj))` to play a
  model that answers JSON in prose.

`verify()` raises if a scripted reply was not used, or if there are problems or rejections the
test did not take (`take_rejections()`); the `fake_anthropic` fixture calls it at teardown.

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
  (`tool_choice: {"type": "tool"}`) gets a `tool_use` block with `obj` as input; native structured
  output (`output_config.format`, or the beta `output_format`) gets a text block holding
  `json.dumps(obj)` — which is what Anthropic structured outputs return. Any other request is an
  error (see above).
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

import functools
import json
import threading
import time
import types
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
    "API_FIELDS_NOT_IN_SDK",
    "ANTHROPIC_VERSIONS",
    "FakeAnthropic",
    "RecordedRequest",
    "Rejection",
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

ANTHROPIC_VERSIONS = frozenset({"2023-01-01", "2023-06-01"})
"""The long-standing `anthropic-version` values; the installed SDK's own version is known too."""


@functools.cache
def _known_versions() -> frozenset[str]:
    try:
        from anthropic._constants import ANTHROPIC_API_VERSION
    except ImportError:  # no SDK in this venv
        return ANTHROPIC_VERSIONS
    return ANTHROPIC_VERSIONS | {ANTHROPIC_API_VERSION}

API_FIELDS_NOT_IN_SDK = frozenset({"temperature", "top_p", "top_k"})
"""Top-level body fields the API takes that the installed SDK's `MessageCreateParams` no longer
lists (the judge sends `temperature` through `extra_body`)."""


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
    def asks_structured_output(self) -> bool:
        """True when the request forces a tool or asks for native structured output."""
        if not isinstance(self.body, dict):
            return False
        config = self.body.get("output_config")
        return (self.forced_tool is not None or "output_format" in self.body
                or (isinstance(config, dict) and "format" in config))

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


@dataclass
class Rejection:
    """A request the fake refused as the real API would (it took no scripted reply)."""

    status: int
    error_type: str
    """`authentication_error` or `invalid_request_error`."""
    message: str
    request: RecordedRequest


# ---------------------------------------------------------------------- request checks


@functools.cache
def _sdk_params(beta: bool, stream: bool = False) -> Any:
    """The SDK's request TypedDict: `MessageCreateParams{Streaming,NonStreaming}` (beta or not).

    `MessageCreateParams` is the union of the two; the one the body's `stream` selects is used,
    so errors name the field, not the union member. None without the SDK.
    """
    try:
        if beta:
            from anthropic.types.beta import message_create_params as params
        else:
            from anthropic.types import message_create_params as params  # type: ignore[no-redef]
    except ImportError:  # a capture venv without the SDK: required keys only
        return None
    return (params.MessageCreateParamsStreaming if stream
            else params.MessageCreateParamsNonStreaming)


@functools.cache
def _sdk_validator(beta: bool, stream: bool = False) -> Callable[[Any], Any] | None:
    """`validate_python` of a pydantic TypeAdapter of `_sdk_params`, or None."""
    params = _sdk_params(beta, stream)
    if params is None:
        return None
    from pydantic import TypeAdapter

    return TypeAdapter(params).validate_python


def schema_name(beta: bool = False) -> str | None:
    """The SDK schema requests are checked against (None: required keys only)."""
    if _sdk_validator(beta) is None:
        return None
    import anthropic

    module = "anthropic.types.beta" if beta else "anthropic.types"
    return f"{module}.MessageCreateParams (anthropic {anthropic.__version__})"


def _error_text(errors: list[Any], prefix: str) -> str:
    first = errors[0]
    # drop the union members pydantic names in the location (`UserMessageParam`, …)
    parts = [str(p) for p in first["loc"] if not (isinstance(p, str) and p[:1].isupper())]
    loc = ".".join([prefix, *parts] if prefix else parts)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{loc}: {first['msg']}{more}"


class _Invalid(Exception):
    pass


def _materialize(value: Any, path: str) -> Any:
    """Consume the lazy `Iterable` validators pydantic returns, validating their items."""
    if isinstance(value, dict):
        return {k: _materialize(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_materialize(v, f"{path}.{i}") for i, v in enumerate(value)]
    if type(value).__name__ == "ValidatorIterator":
        from pydantic import ValidationError

        items: list[Any] = []
        try:
            for item in value:
                items.append(item)
        except ValidationError as exc:
            raise _Invalid(_error_text(exc.errors(), path)) from None
        return [_materialize(v, f"{path}.{i}") for i, v in enumerate(items)]
    return value


def _unwrap(annotation: Any) -> Any:
    import typing_extensions as typing  # the SDK's TypedDicts and Required are its own

    while True:
        origin = typing.get_origin(annotation)
        if origin in (typing.Annotated, typing.Required, typing.NotRequired):
            annotation = typing.get_args(annotation)[0]
        else:
            return annotation


def _is_open_mapping(annotation: Any) -> bool:
    """`Dict[str, object]`, `object` or `Any`: any keys are allowed under it."""
    from collections.abc import Mapping

    import typing_extensions as typing

    annotation = _unwrap(annotation)
    origin = typing.get_origin(annotation)
    return (annotation in (object, Any, dict)
            or (isinstance(origin, type) and issubclass(origin, Mapping)))


def _extra_inputs(sent: Any, annotation: Any, path: str = "") -> list[str]:
    """Keys of `sent` that the SDK type `annotation` (a TypedDict tree) does not have.

    Pydantic ignores unknown keys of a TypedDict; the real API refuses them. A union that
    admits any mapping (`Union[InputSchemaTyped, Dict[str, object]]`) allows any key, and a
    TypedDict the SDK marks `extra: allow` too; in a union of TypedDicts the one whose `type`
    literal matches is followed.
    """
    from collections.abc import Iterable

    import typing_extensions as typing

    annotation = _unwrap(annotation)
    origin = typing.get_origin(annotation)
    found: list[str] = []
    if origin in (typing.Union, types.UnionType):
        members = [_unwrap(m) for m in typing.get_args(annotation)]
        if isinstance(sent, dict):
            if any(_is_open_mapping(m) for m in members):
                return []
            typed = [m for m in members if typing.is_typeddict(m)]
            tag = sent.get("type")
            matching = [m for m in typed if typing.get_args(_unwrap(
                typing.get_type_hints(m).get("type", Any))) == (tag,)] or typed[:1]
            return _extra_inputs(sent, matching[0], path) if matching else []
        if isinstance(sent, list):
            listy = [m for m in members if typing.get_origin(m) is not None
                     and isinstance(typing.get_origin(m), type)
                     and issubclass(typing.get_origin(m), Iterable)
                     and not issubclass(typing.get_origin(m), dict)]
            return _extra_inputs(sent, listy[0], path) if listy else []
        return []
    if typing.is_typeddict(annotation) and isinstance(sent, dict):
        hints = typing.get_type_hints(annotation, include_extras=True)
        config = getattr(annotation, "__pydantic_config__", None) or {}
        for key, value in sent.items():
            where = f"{path}.{key}" if path else str(key)
            if key in hints:
                found += _extra_inputs(value, hints[key], where)
            elif config.get("extra") != "allow":
                found.append(where)
        return found
    if (isinstance(sent, list) and isinstance(origin, type) and issubclass(origin, Iterable)
            and not issubclass(origin, (dict, str))):
        (item,) = typing.get_args(annotation)[:1] or (Any,)
        for index, value in enumerate(sent):
            found += _extra_inputs(value, item, f"{path}.{index}")
    return found


def check_request(request: RecordedRequest, api_key: str) -> tuple[int, str, str] | None:
    """What the real API would refuse `request` with: (status, error type, message), or None."""
    headers = request.headers
    authorization = headers.get("authorization", "")
    key = headers.get("x-api-key") or (authorization[len("Bearer "):]
                                       if authorization.startswith("Bearer ") else None)
    if not key:
        return 401, "authentication_error", "x-api-key header is required"
    if key != api_key:
        return 401, "authentication_error", "invalid x-api-key"
    version = headers.get("anthropic-version")
    if not version:
        return 400, "invalid_request_error", "anthropic-version: header is required"
    if version not in _known_versions():
        return 400, "invalid_request_error", f"anthropic-version: invalid version {version!r}"
    body = request.body
    if not isinstance(body, dict):
        return 400, "invalid_request_error", "There was an error parsing the body as a JSON object"
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return 400, "invalid_request_error", f"{name}: Field required"
    beta = "anthropic-beta" in headers
    validate = _sdk_validator(beta, body.get("stream") is True)
    if validate is None:
        return None
    from pydantic import ValidationError

    checked = {k: v for k, v in body.items() if k not in API_FIELDS_NOT_IN_SDK}
    try:
        _materialize(validate(checked), "")
    except ValidationError as exc:
        return 400, "invalid_request_error", _error_text(exc.errors(), "")
    except _Invalid as exc:
        return 400, "invalid_request_error", str(exc)
    extra = _extra_inputs(checked, _sdk_params(beta, body.get("stream") is True))
    if extra:
        return 400, "invalid_request_error", f"{extra[0]}: Extra inputs are not permitted"
    return None


def _fake_error(message: str) -> Reply:
    return error(500, "api_error", f"fake Anthropic: {message}")


class FakeAnthropic(LoopbackFake):
    """A scripted, strict Messages API server on 127.0.0.1, on a free port.

    Attributes:
        base_url: pass it as the client's `base_url` (no trailing `/v1`).
        api_key: the one key the server accepts (`FAKE_API_KEY` unless given).
        requests: every request received, in order (refused ones too).
        default_reply: opt-in answer when the script is empty (a `Reply` or a callable of the
            request); None (the default) answers a 500 "script exhausted" and records a problem.
        rejections: requests refused as the real API would (401/400), in order.
        problems: the fake's own complaints about the test's script (exhausted, `structured()`
            for a request that asked for no structured output).
    """

    def __init__(self, *, default_reply: ReplySource | None = None,
                 api_key: str = FAKE_API_KEY) -> None:
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self.default_reply: ReplySource | None = default_reply
        self.rejections: list[Rejection] = []
        self.problems: list[str] = []
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

    @property
    def schema(self) -> str | None:
        """The SDK schema request bodies are checked against (None: required keys only)."""
        return schema_name()

    def clear(self) -> None:
        """Forget recorded requests, rejections, problems and unused scripted replies."""
        with self._lock:
            self.requests.clear()
            self.rejections.clear()
            self.problems.clear()
            self._script.clear()

    def take_rejections(self) -> list[Rejection]:
        """The refused requests so far, forgotten (a test that provokes them takes them)."""
        with self._lock:
            taken, self.rejections = self.rejections, []
        return taken

    def verify(self) -> None:
        """Raise AssertionError unless every scripted reply was used and nothing went wrong.

        "Wrong" is a request refused as the real API would (not taken with `take_rejections`)
        or a problem with the script (exhausted, `structured()` for an unstructured request).
        """
        with self._lock:
            pending, problems = len(self._script), list(self.problems)
            rejections = list(self.rejections)
        complaints = [f"{pending} scripted repl{'y was' if pending == 1 else 'ies were'} "
                      "never requested"] if pending else []
        complaints += problems
        complaints += [f"request #{self.requests.index(r.request) + 1} refused: {r.status} "
                       f"{r.error_type}: {r.message}" for r in rejections]
        if complaints:
            raise AssertionError("fake Anthropic: " + "; ".join(complaints))

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
            refusal = check_request(request, self.api_key)
            if refusal is not None:
                status, error_type, message = refusal
                self.rejections.append(Rejection(status, error_type, message, request))
                return error(status, error_type, message)
            if self._script:
                source: ReplySource | None = self._script.popleft()
            else:
                source = self.default_reply
            if source is None:
                problem = (f"script exhausted: request #{number} has no scripted reply "
                           "(enqueue one, or opt in to default_reply=)")
                self.problems.append(problem)
                return _fake_error(problem)
        reply = source(request) if callable(source) else source
        if reply.kind == "structured" and not request.asks_structured_output:
            problem = (f"structured() scripted for request #{number}, which asked for no "
                       "structured output (no forced tool, no output_config.format): script "
                       "text(json.dumps(obj)) for a model answering JSON in prose")
            with self._lock:
                self.problems.append(problem)
            return _fake_error(problem)
        return reply


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
