"""Each convention's extractor, on its own: the facts it reads from one span (role, identity,
messages, tool call), what detection says about the span, and the toolkit rules every
extractor shares (JSON attributes, tool spans, call ids). Spans from
reference/convention-fixtures.json unless said otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.transforms._runs import decode_file
from tests.transforms._spans import load_fixtures, span
from transforms import detect_conventions
from transforms._attrs import tool_fact
from transforms._detection import (
    conversation_id,
    extract_span,
    mark_span,
    request_context,
    resource_id,
)
from transforms._facts import SpanFacts
from transforms._json import json_attr
from transforms._normalize import call_id
from transforms.reasons import Reason
from transforms.types import Span

FIX = load_fixtures()
QUESTION = "What's the weather in Paris?"
ANSWER = "It's 14°C and raining in Paris, Ana."
SYSTEM = "You are a helpful weather assistant."
RESULT = {"temp_c": 14, "conditions": "rain"}
ROOT = Path(__file__).resolve().parents[2]


def _fx(conv: str, name: str) -> Span:
    f = next(x for x in FIX[conv] if x["name"].startswith(name))
    return span(f["span_name"], f["attributes"], scope=f.get("scope", ""),
                kind=f.get("kind", "INTERNAL"))


def _facts(s: Span) -> SpanFacts:
    facts = extract_span(s)
    assert facts is not None
    return facts


def _texts(msgs: Any) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in msgs or []]


def _tool(s: Span) -> tuple[Any, ...]:
    t = _facts(s).tool
    assert t is not None
    return (t.call_id, t.name, t.args, t.result, t.has_result, t.error_text)


def test_genai_agent_and_tool_spans() -> None:
    agent = _facts(_fx("otel_genai", "invoke_agent"))
    assert (agent.convention, agent.role, agent.agent_name, agent.agent_id) == (
        "genai", "agent", "WeatherAgent", "asst_5j66UpCp")
    assert agent.instructions == [SYSTEM] and agent.root_output == ANSWER
    assert agent.input_mode == "conversation" and _texts(agent.root_input)[-1] == (
        "user", QUESTION)
    assert _tool(_fx("otel_genai", "execute_tool")) == (
        "call_1", "get_weather", {"city": "Paris"}, RESULT, True, None)


def test_openinference_agent_llm_and_tool_spans() -> None:
    agent = _facts(_fx("openinference", "AGENT"))
    assert (agent.role, agent.agent_name, agent.input_mode) == ("agent", "WeatherAgent", "new")
    assert _texts(agent.root_input) == [("user", QUESTION)] and agent.root_output == ANSWER
    llm = _facts(_fx("openinference", "LLM"))
    assert (llm.role, llm.model_name) == ("model", "gpt-4o")
    assert [m.role for m in llm.model_input or []][:2] == ["system", "user"]
    assert [p.tool_call_id for m in llm.model_output or [] for p in m.parts] == ["call_1"]
    assert _tool(_fx("openinference", "TOOL")) == (
        "call_1", "get_weather", {"city": "Paris"}, RESULT, True, None)


def test_openllmetry_decorator_and_legacy_chat_spans() -> None:
    agent = _facts(_fx("openllmetry", "@agent"))
    # The entity input is a Python-arguments dump: not a conversation.
    assert (agent.role, agent.agent_name, agent.input_mode) == (
        "agent", "weather_agent", "unusable")
    assert agent.root_output == ANSWER
    chat = _facts(_fx("openllmetry", "legacy"))
    assert (chat.role, chat.model_name) == ("model", "gpt-4o")
    assert _texts(chat.model_input)[3] == ("user", QUESTION)
    assert _tool(_fx("openllmetry", "@tool")) == (
        None, "get_weather", {"city": "Paris"}, RESULT, True, None)


def test_vercel_root_step_and_tool_spans() -> None:
    root = _facts(_fx("vercel_ai_sdk", "ai.generateText root"))
    assert (root.role, root.agent_name, root.model_name) == ("agent", "weather-agent", "gpt-4o")
    assert root.instructions == [SYSTEM] and root.root_output == ANSWER
    step = _facts(_fx("vercel_ai_sdk", "ai.generateText.doGenerate"))
    assert step.role == "model" and _texts(step.model_input)[0] == ("system", SYSTEM)
    assert _tool(_fx("vercel_ai_sdk", "ai.toolCall")) == (
        "call_1", "get_weather", {"city": "Paris"}, RESULT, True, None)


def test_mastra_agent_generation_and_tool_spans() -> None:
    s = _fx("mastra_otel_exporter", "AGENT_RUN")
    assert detect_conventions(s) == ["mastra", "genai"]  # Mastra reads it, GenAI is the fallback
    agent = _facts(s)
    assert (agent.convention, agent.agent_name, agent.agent_id) == (
        "mastra", "Weather Agent", "weather-agent")
    assert agent.input_mode == "new" and agent.remembered_exact
    assert _texts(agent.root_input) == [("user", QUESTION)]
    gen = _facts(_fx("mastra_otel_exporter", "MODEL_GENERATION"))
    assert gen.role == "model" and [m.role for m in gen.model_input or []][0] == "system"
    assert _facts(_fx("mastra_otel_exporter", "MODEL_INFERENCE")).role == "other"  # lossy
    assert _tool(_fx("mastra_otel_exporter", "TOOL_CALL"))[:4] == (
        "call_1", "get_weather", {"city": "Paris"}, RESULT)


def test_langfuse_observation_and_propagated_attributes() -> None:
    agent = _facts(_fx("langfuse_pydantic", "Langfuse"))
    assert (agent.convention, agent.role, agent.agent_name) == ("langfuse", "agent",
                                                                "weather-agent")
    assert _texts(agent.root_input) == [("user", QUESTION)] and agent.root_output == ANSWER
    # Only attributes Langfuse propagates: another library's span, read by its convention.
    other = span("chat gpt-4o", {"langfuse.trace.name": "x", "gen_ai.operation.name": "chat"})
    assert detect_conventions(other) == ["langfuse", "genai"]
    assert _facts(other).convention == "genai"
    tool = span("get_weather", {"langfuse.observation.type": "tool",
                                "langfuse.observation.input": json.dumps(
                                    {"args": [], "kwargs": {"city": "Paris"}}),
                                "langfuse.observation.level": "ERROR",
                                "langfuse.observation.status_message": "service down"})
    assert _tool(tool) == (None, "get_weather", {"city": "Paris"}, None, False, "service down")


def test_pydantic_ai_run_span() -> None:
    run = _facts(_fx("langfuse_pydantic", "Pydantic"))
    assert (run.convention, run.role, run.agent_name) == ("pydantic_ai", "agent", "weather_agent")
    assert run.remembered_exact and run.transcript is not None
    assert _texts(run.root_input)[-1] == ("user", QUESTION) and run.root_output == ANSWER
    v2_tool = span("running tool", {"gen_ai.tool.name": "get_weather",
                                    "gen_ai.tool.call.id": " call_1 ",
                                    "tool_arguments": '{"city": "Paris"}'},
                   scope="pydantic-ai", status="ERROR")
    assert _tool(v2_tool) == ("call_1", "get_weather", {"city": "Paris"}, None, False, "error")


def test_anthropic_sdk_tool_and_thread_call() -> None:
    scope = "com.anthropic.sdk.python"
    tool = span("anthropic.custom_tool_use get_weather", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "toolu_1", "error.type": "tool_error",
        "anthropic.tool_result.content": json.dumps([{"type": "text", "text": "no such city"}]),
    }, scope=scope, status="ERROR")
    assert detect_conventions(tool) == ["anthropic", "genai"]
    assert _tool(tool) == ("toolu_1", "get_weather", None, None, False, "no such city")
    call = _facts(span("anthropic.messages.create", {
        "gen_ai.operation.name": "chat", "anthropic.beta": ["message-threads-2026-01-01"],
        "anthropic.content.truncated": True,
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
            {"type": "text", "content": "And tomorrow?"}]}])}, scope=scope))
    assert call.continues and call.truncated and Reason.TRUNCATED_CONTENT in call.reasons


def test_context_keys_are_read_on_any_span() -> None:
    s = span("chat", {"gen_ai.operation.name": "chat",
                      "traceloop.association.properties.session_id": "s1",
                      "traceloop.association.properties.user_id": "u1",
                      "ai.telemetry.metadata.tier": "gold", "metadata": '{"team": "blue"}'})
    assert (conversation_id([s]), resource_id([s])) == ("s1", "u1")
    assert request_context(s) == {"session_id": "s1", "user_id": "u1", "tier": "gold",
                                  "team": "blue"}


def test_mark_is_what_extract_says_on_every_captured_span() -> None:
    # run_roots reads marks, build_runs facts: they must agree span by span.
    captures = sorted((ROOT / "tests" / "testdata" / "captures").glob("*/*.otlp.jsonl"))
    checked = 0
    for path in captures:
        for s in decode_file(path).spans:
            facts, mark = extract_span(s), mark_span(s)
            assert (facts is None) == (mark is None), s.name
            if facts is not None and mark is not None:
                assert (mark.role, mark.agent_name, mark.agent_id) == (
                    facts.role, facts.agent_name, facts.agent_id), (path.name, s.name)
                checked += 1
    assert checked > 300


# --------------------------------------------------------------------------- the toolkit


@pytest.mark.parametrize(("value", "expected", "flags"), [
    (None, (None, False), (False, False, [])),
    ('{"a": 1}', ({"a": 1}, True), (False, False, [])),
    ("plain text", ("plain text", True), (False, False, [])),
    ('{"a": "cut mid-', ('{"a": "cut mid-', False), (True, False, [Reason.TRUNCATED_JSON])),
    ("[" * 60 + "]" * 60, ("[" * 60 + "]" * 60, False), (False, False, [Reason.TOO_DEEP])),
    ("[REDACTED]", (None, False), (False, True, [])),  # a placeholder, not cut JSON
])
def test_json_attribute_rule(value: Any, expected: tuple[Any, bool],
                             flags: tuple[bool, bool, list[Reason]]) -> None:
    facts = SpanFacts("genai")
    assert json_attr(facts, value) == expected
    assert (facts.truncated, facts.redacted, facts.reasons) == flags


def test_tool_span_rule_error_status_means_no_result() -> None:
    failed = span("t", {}, status="ERROR")
    failed.status_message = "boom"
    fact = tool_fact(failed, call=" id_1\n", name="", args='{"x": 1}', result="r",
                     has_result=True)
    assert (fact.call_id, fact.name, fact.args, fact.result, fact.has_result,
            fact.error_text) == ("id_1", None, {"x": 1}, "r", False, "boom")
    assert call_id(" ") is None and call_id(7) == "7"

