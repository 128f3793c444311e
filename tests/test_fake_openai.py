"""The fake OpenAI server speaks the real chat-completions protocol (real `openai` client)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fakes"))

from fake_openai import ErrorReply, FakeOpenAI, TextReply, ToolCall, ToolCallReply

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _client(fake: FakeOpenAI) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)


def test_tool_call_then_text_round_trip_records_requests(fake: FakeOpenAI) -> None:
    fake.add(
        ToolCallReply((ToolCall("call_1", "get_weather", '{"city": "Paris"}'),), text="Checking."),
        TextReply("It is 14°C in Paris."),
    )
    client = _client(fake)
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Checking."
    assert choice.message.tool_calls is not None
    call = choice.message.tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call_1",
        "get_weather",
        {"city": "Paris"},
    )
    second = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    assert second.choices[0].message.content == "It is 14°C in Paris."
    assert second.choices[0].finish_reason == "stop"
    assert first.id != second.id
    assert [r.body["messages"] for r in fake.requests] == [messages, messages]
    assert fake.requests[0].body["tools"] == TOOLS
    assert fake.pending == 0


def test_streaming_text_tool_calls_and_usage_chunk(fake: FakeOpenAI) -> None:
    fake.add(ToolCallReply((ToolCall("call_9", "get_weather", '{"city": "Paris, France"}'),), text="One moment please."))
    text, args, name, finish, usage = "", "", "", None, None
    with _client(fake).chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    ) as stream:
        chunks = list(stream)
    for chunk in chunks:
        if chunk.usage is not None:
            usage = chunk.usage.total_tokens
        for c in chunk.choices:
            text += c.delta.content or ""
            for tc in c.delta.tool_calls or []:
                name = tc.function.name or name if tc.function else name
                args += (tc.function.arguments or "") if tc.function else ""
            finish = c.finish_reason or finish
    assert len(chunks) > 4  # really split into deltas
    assert text == "One moment please."
    assert (name, json.loads(args)) == ("get_weather", {"city": "Paris, France"})
    assert finish == "tool_calls"
    assert usage == 30
    assert fake.requests[0].body["stream"] is True


def test_exhausted_script_and_scripted_errors_are_http_errors(fake: FakeOpenAI) -> None:
    client = _client(fake)
    fake.add(ErrorReply(status=429, message="slow down", type="rate_limit_error"))
    with pytest.raises(openai.RateLimitError, match="slow down"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.InternalServerError, match="no scripted reply"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="m", input="x")
    assert len(fake.requests) == 3


def test_listens_on_loopback_and_stops() -> None:
    server = FakeOpenAI([TextReply("hi")]).start()
    assert server.base_url.startswith("http://127.0.0.1:")
    port = server.port
    server.stop()
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
