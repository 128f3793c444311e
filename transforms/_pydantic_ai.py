"""Pydantic AI's own instrumentation (scope `pydantic-ai`; conventions.md §6).

Run span `invoke_agent {name}` (instrumentation v3+) or `agent run` (v2) with
`gen_ai.agent.name` (v2: `agent_name`), `gen_ai.conversation.id`, `gen_ai.system_instructions`,
`final_result`, `pydantic_ai.all_messages` (the whole conversation in OTel parts format, tool
responses under `result`) and `pydantic_ai.new_message_index` — set when `message_history` was
passed: the exact boundary between the history and this run's messages. Model calls are
`chat {model}` spans (`gen_ai.input/output.messages`), tools `execute_tool {name}`
(`gen_ai.tool.call.*`) or `running tool` (`tool_arguments` / `tool_response`).
With `include_content=False` the message skeleton stays and the texts go.
"""

from __future__ import annotations

from typing import Any

from transforms import _genai
from transforms._attrs import tool_fact
from transforms._facts import Mark, NMessage, SpanFacts
from transforms._json import is_redacted
from transforms.types import Span

__all__ = ["extract", "mark", "matches"]


def matches(span: Span) -> bool:
    """Scope `pydantic-ai`, or the run span's own attributes (Logfire keeps them)."""
    a = span.attributes
    return span.scope_name == "pydantic-ai" or "pydantic_ai.all_messages" in a or \
        "final_result" in a or "all_messages_events" in a or "logfire.msg" in a


def _index(value: Any) -> int | None:
    try:
        idx = int(value)
    except (TypeError, ValueError):
        return None
    return idx if idx >= 0 else None


def _new_input_end(msgs: list[NMessage], idx: int) -> int:
    """Where this run's new input ends: after the user (and system) messages at the start of
    `msgs[idx:]` (a user message that only returns tool results is not input)."""
    end = idx
    while end < len(msgs) and msgs[end].role in ("user", "system", "developer") and \
            not msgs[end].only_tool_results:
        end += 1
    return end


def _is_run(span: Span) -> bool:
    return span.attributes.get("gen_ai.operation.name") == "invoke_agent" or \
        span.name == "agent run" or "pydantic_ai.all_messages" in span.attributes


def _is_running_tool(span: Span) -> bool:
    return span.name == "running tool" or "tool_arguments" in span.attributes


def mark(span: Span) -> Mark:
    """An agent run (`invoke_agent {name}`, v2 `agent run`: named by `gen_ai.agent.name`, v2
    `agent_name`), a v2 `running tool`, else what the GenAI attributes say."""
    m = _genai.mark(span)
    if _is_run(span):
        a = span.attributes
        return Mark("agent", m.agent_name or (str(a["agent_name"]) if a.get("agent_name")
                                              else None), m.agent_id)
    return Mark("tool") if _is_running_tool(span) else m


def _run(span: Span, m: Mark) -> SpanFacts:
    a = span.attributes
    facts = _genai.extract(span, "pydantic_ai")
    facts.role, facts.agent_name, facts.agent_id = m.role, m.agent_name, m.agent_id
    facts.model_name = facts.model_name or (str(a["model_name"]) if a.get("model_name") else None)
    history = _genai.read_messages(facts, a.get("pydantic_ai.all_messages"))
    idx = _index(a.get("pydantic_ai.new_message_index"))
    if facts.root_input is None:
        facts.input_mode = "unusable"
    facts.transcript = history
    if history is not None and idx is not None and idx <= len(history):
        end = _new_input_end(history, idx)
        if any(m.role == "user" for m in history[idx:end]):
            # The history up to and including the new input; new_message_index makes the
            # boundary exact.
            facts.root_input = history[:end]
            facts.input_mode = "conversation"
            facts.remembered_exact = True
    final = a.get("final_result")
    if isinstance(final, str):  # the output text, or a structured output's JSON text
        if is_redacted(final):
            facts.redacted = True
        else:
            facts.root_output = final
    elif final is not None:
        facts.root_output = str(final)
    elif history:
        texts = [m.text for m in history[(idx or 0):] if m.role == "assistant" and m.text]
        facts.root_output = texts[-1] if texts else None
    if history is None and final is None and "gen_ai.input.messages" not in a:
        facts.capture_off = True  # include_content=False drops them
    return facts


def extract(span: Span) -> SpanFacts:
    """Read one Pydantic AI span."""
    a = span.attributes
    m = mark(span)
    if m.role == "agent":
        return _run(span, m)
    if _is_running_tool(span):
        facts = m.facts("pydantic_ai")
        facts.tool = tool_fact(span, call=a.get("gen_ai.tool.call.id"),
                               name=a.get("gen_ai.tool.name"), args=a.get("tool_arguments"),
                               result=a.get("tool_response"), has_result="tool_response" in a)
        return facts
    return _genai.extract(span, "pydantic_ai")
