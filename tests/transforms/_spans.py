"""Hand-built spans for transforms unit tests (the convention fixtures and variations)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from transforms.types import LogEvent, Span

# A copy of ../shared/reference/convention-fixtures.json (the team's hand-made attribute sets), so
# a clone runs its tests on its own; tests/test_fixture_copy.py keeps it equal to the shared one.
FIXTURES_PATH = (Path(__file__).resolve().parents[1] / "testdata" / "conventions"
                 / "convention-fixtures.json")
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
_ids = itertools.count(1)


def new_span_id() -> str:
    return f"{next(_ids):016x}"


def span(name: str, attrs: dict[str, Any], *, span_id: str | None = None,
         parent: str | None = None, start: int = 1_000, end: int | None = None,
         trace_id: str = TRACE, scope: str = "", kind: str = "INTERNAL",
         status: str = "UNSET", resource: dict[str, Any] | None = None) -> Span:
    return Span(trace_id=trace_id, span_id=span_id or new_span_id(), name=name,
                parent_span_id=parent, kind=kind, start_time_unix_nano=start,
                end_time_unix_nano=end if end is not None else start + 500,
                status_code=status, attributes=dict(attrs), scope_name=scope,
                resource=resource or {"service.name": "test-app"})


def load_fixtures() -> dict[str, list[dict[str, Any]]]:
    data: dict[str, list[dict[str, Any]]] = json.loads(FIXTURES_PATH.read_text("utf-8"))
    return data


def log_event(e: dict[str, Any], time: int) -> LogEvent:
    return LogEvent(event_name=e["event_name"], trace_id=e["trace_id"], span_id=e["span_id"],
                    time_unix_nano=time, attributes=dict(e["attributes"]), body=e.get("body"))


def genai_agent_trace(trace_id: str = TRACE, *, t0: int = 1_000_000, name: str = "WeatherAgent",
                      question: str = "What's the weather in Paris?",
                      answer: str = "It's 14°C and raining in Paris, Ana.",
                      root_parent: str | None = None) -> list[Span]:
    """invoke_agent -> chat (tool call) -> execute_tool -> chat (answer), OTel GenAI, the
    fixture's conversation (history: "Hi, I'm Ana." / "Hi Ana! How can I help?")."""
    root = new_span_id()
    system = [{"role": "system", "parts": [{"type": "text",
                                           "content": "You are a helpful weather assistant."}]}]
    history = [
        {"role": "user", "parts": [{"type": "text", "content": "Hi, I'm Ana."}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "Hi Ana! How can I help?"}]},
        {"role": "user", "parts": [{"type": "text", "content": question}]},
    ]
    call = {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1",
                                           "name": "get_weather",
                                           "arguments": {"city": "Paris"}}],
            "finish_reason": "tool_call"}
    result = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                                        "response": {"temp_c": 14, "conditions": "rain"}}]}
    final = {"role": "assistant", "parts": [{"type": "text", "content": answer}],
             "finish_reason": "stop"}
    return [
        span(f"invoke_agent {name}", {"gen_ai.operation.name": "invoke_agent",
                                      "gen_ai.agent.name": name,
                                      "gen_ai.conversation.id": "conv_42"},
             span_id=root, parent=root_parent, start=t0, end=t0 + 1000, trace_id=trace_id),
        span("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                             "gen_ai.input.messages": json.dumps(system + history),
                             "gen_ai.output.messages": json.dumps([call])},
             parent=root, start=t0 + 10, end=t0 + 100, trace_id=trace_id, kind="CLIENT"),
        span("execute_tool get_weather", {"gen_ai.operation.name": "execute_tool",
                                          "gen_ai.tool.name": "get_weather",
                                          "gen_ai.tool.call.id": "call_1",
                                          "gen_ai.tool.call.arguments": '{"city":"Paris"}',
                                          "gen_ai.tool.call.result":
                                              '{"temp_c":14,"conditions":"rain"}'},
             parent=root, start=t0 + 110, end=t0 + 200, trace_id=trace_id),
        span("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                             "gen_ai.input.messages": json.dumps(system + history + [call,
                                                                                     result]),
                             "gen_ai.output.messages": json.dumps([final])},
             parent=root, start=t0 + 210, end=t0 + 900, trace_id=trace_id, kind="CLIENT"),
    ]
