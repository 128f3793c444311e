"""One judge test, both providers: the strict fake OpenAI server behind `FakeAnthropic`'s
scripting interface, so tests written for the Anthropic fake run unchanged against OpenAI.

`OpenAIJudgeServer` takes `fake_anthropic` replies (`structured(obj)`, `text(s)`, `error(...)`)
and serves their OpenAI equivalents; `message_requests` shows each chat-completions request in
the Anthropic fake's shape (`body["system"]`-less messages, the structured-output schema as
`body["output_config"]["format"]["schema"]`, `system_text`, `user_text`), which is what the
judge tests assert on. `JUDGE_MODELS` is the model each provider's judge uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.fakes.fake_anthropic import Reply
from tests.fakes.fake_openai import (
    ErrorReply,
    FakeOpenAI,
    RecordedRequest,
    StructuredReply,
    TextReply,
)

__all__ = ["JUDGE_MODELS", "OpenAIJudgeServer", "ViewedRequest"]

JUDGE_MODELS = {"anthropic": None, "openai": "openai/gpt-4.1-mini"}
"""The judge model per provider (None: Anthropic's default)."""


@dataclass
class ViewedRequest:
    """A chat-completions request seen as the Anthropic fake records one."""

    body: dict[str, Any]
    system_text: str
    user_text: str
    original: RecordedRequest

    @property
    def raw_body(self) -> bytes:
        """The request body as sent (JSON)."""
        return json.dumps(self.original.body).encode()


def _view(request: RecordedRequest) -> ViewedRequest:
    body = dict(request.body)
    body["messages"] = [m for m in body.get("messages", [])
                        if m.get("role") not in ("system", "developer")]
    fmt = body.pop("response_format", None)
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        body["output_config"] = {"format": {"type": "json_schema",
                                            "schema": fmt["json_schema"]["schema"]}}
    return ViewedRequest(body, request.system_text, request.user_text, request)


class OpenAIJudgeServer:
    """`FakeOpenAI` (strict) scripted with `fake_anthropic` replies."""

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake

    @property
    def api_key(self) -> str:
        return self.fake.api_key

    @property
    def base_url(self) -> str:
        return self.fake.base_url

    def enqueue(self, *replies: Reply) -> None:
        self.fake.enqueue(*(_translate(r) for r in replies))

    @property
    def message_requests(self) -> list[ViewedRequest]:
        return [_view(r) for r in self.fake.chat_requests]

    @property
    def pending(self) -> int:
        return self.fake.pending

    def clear(self) -> None:
        self.fake.clear()

    def verify(self) -> None:
        self.fake.verify()


def _translate(reply: Reply) -> Any:
    if reply.kind == "structured":
        return StructuredReply(reply.payload, reply.input_tokens, reply.output_tokens)
    if reply.kind == "text":
        return TextReply(str(reply.payload), reply.input_tokens, reply.output_tokens)
    if reply.kind == "error":
        payload = reply.payload or {}
        return ErrorReply(reply.status, str(payload.get("message", "")),
                          str(payload.get("type", "server_error")), None,
                          tuple(reply.headers.items()))
    raise ValueError(f"no OpenAI equivalent for a {reply.kind!r} reply")
