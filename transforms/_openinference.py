"""OpenInference (conventions.md §2): `openinference.span.kind` AGENT / LLM / TOOL / CHAIN,
flattened `llm.input_messages.{i}.message.*`, `input.value` / `output.value`, and the
`__REDACTED__` placeholder of the `OPENINFERENCE_HIDE_*` settings."""

from __future__ import annotations

import re
from typing import Any

from transforms._toolkit import (
    ContextKeys,
    Mark,
    NMessage,
    NPart,
    SpanFacts,
    flag_redacted,
    indexed_list,
    is_redacted,
    json_attr,
    message_from_any,
    messages_from_any,
    output_text,
    set_path,
    tool_fact,
)
from transforms.types import Span

__all__ = ["CONTEXT", "extract", "mark", "matches", "unflatten_messages"]

CONTEXT = ContextKeys(conversation=("group_id",), maps=("metadata",))
"""`metadata` (a JSON object) is OpenInference's; `group_id` the OpenAI Agents SDK's trace group."""
_INDEXED = re.compile(r"^(\d+)\.(.*)$")


def matches(span: Span) -> bool:
    """An `openinference.span.kind` attribute."""
    return "openinference.span.kind" in span.attributes


def unflatten_messages(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]] | None:
    """`{prefix}.{i}.message.*` attributes as a list of OpenAI-like message dicts, in index
    order (gaps skipped). None when there are none."""
    rows: dict[int, dict[str, Any]] = {}
    plen = len(prefix) + 1
    for key, value in attrs.items():
        if not key.startswith(prefix) or len(key) <= plen or key[plen - 1] != ".":
            continue
        m = _INDEXED.match(key[plen:])
        if m is None:
            continue
        set_path(rows.setdefault(int(m.group(1)), {}), m.group(2), value)
    if not rows:
        return None
    out: list[dict[str, Any]] = []
    for _, row in sorted(rows.items()):
        msg = row.get("message", {})
        if not isinstance(msg, dict):
            continue
        converted: dict[str, Any] = {"role": msg.get("role", "user")}
        contents = indexed_list(msg.get("contents"))
        if contents:
            parts = []
            for c in contents:
                mc = c.get("message_content", {}) if isinstance(c, dict) else {}
                kind = mc.get("type", "text")
                if kind == "text":
                    parts.append({"type": "text", "text": mc.get("text", "")})
                elif kind == "reasoning":
                    parts.append({"type": "reasoning", "text": mc.get("text", "")})
                else:  # image, audio, …: kept as an opaque part, never a tool call
                    parts.append({"type": f"other:{kind}"})
            converted["content"] = parts
        elif "content" in msg:
            converted["content"] = msg["content"]
        if msg.get("tool_call_id") is not None:
            converted["tool_call_id"] = msg["tool_call_id"]
        if msg.get("name") is not None:
            converted["name"] = msg["name"]
        calls = []
        for tc in indexed_list(msg.get("tool_calls")):
            call = tc.get("tool_call", {}) if isinstance(tc, dict) else {}
            fn = call.get("function", {}) if isinstance(call.get("function"), dict) else {}
            calls.append({"id": call.get("id"), "function": {
                "name": fn.get("name"), "arguments": fn.get("arguments")}})
        if calls:
            converted["tool_calls"] = calls
        out.append(converted)
    return out


def _messages(facts: SpanFacts, raw: list[dict[str, Any]] | None) -> list[NMessage] | None:
    if raw is None:
        return None
    msgs: list[NMessage] = []
    for r in raw:
        m = message_from_any(r)
        if m is None:
            continue
        if m.role == "tool" and not m.parts:
            m.parts = []
        msgs.append(m)
        for p in m.parts:
            if (p.kind == "text" and is_redacted(p.text)) or is_redacted(p.result):
                facts.redacted = True
    return msgs


def _io_value(facts: SpanFacts, a: dict[str, Any], key: str) -> tuple[Any, bool]:
    """`input.value`/`output.value`: (decoded value, usable)."""
    if key not in a:
        return None, False
    raw = a[key]
    mime = str(a.get(key.replace(".value", ".mime_type"), "") or "")
    if "json" in mime or (isinstance(raw, str) and raw.strip()[:1] in ("{", "[")):
        return json_attr(facts, raw, text_ok=False)
    return (None, False) if flag_redacted(facts, raw) else (raw, True)


def _request_messages(facts: SpanFacts, value: Any) -> list[NMessage] | None:
    # Some instrumentations only put the raw provider request in input.value
    # ({"messages": [...], "system": "..."}).
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        return None
    msgs = messages_from_any(value["messages"]) or []
    system = value.get("system")
    if isinstance(system, str) and system:
        msgs.insert(0, NMessage("system", [NPart("text", system)]))
    elif isinstance(system, list):
        m = message_from_any({"role": "system", "content": system})
        if m is not None:
            msgs.insert(0, m)
    return msgs


def _response_messages(value: Any) -> list[NMessage] | None:
    """Output messages from a raw provider response: Anthropic `{role, content: [blocks],
    stop_reason}` or OpenAI `{choices: [{message, finish_reason}]}`."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("choices"), list):
        out = []
        for choice in value["choices"]:
            if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
                m = message_from_any(choice["message"])
                if m is not None:
                    m.finish_reason = m.finish_reason or choice.get("finish_reason")
                    out.append(m)
        return out or None
    if value.get("role") == "assistant" and isinstance(value.get("content"), list):
        m = message_from_any({"role": "assistant", "content": value["content"]})
        if m is not None:
            stop = value.get("stop_reason")
            m.finish_reason = str(stop) if stop else None
            return [m]
    return None


_ROLES = {"AGENT": "agent", "TOOL": "tool", "LLM": "model"}


def mark(span: Span) -> Mark:
    """AGENT (named by `agent.name`, else the span name), TOOL or LLM; CHAIN and the other
    kinds are nothing of note."""
    a = span.attributes
    role = _ROLES.get(str(a.get("openinference.span.kind", "")).upper(), "other")
    if role == "agent":
        return Mark(role, str(a.get("agent.name") or span.name or "") or None)
    return Mark(role)


def extract(span: Span) -> SpanFacts:
    """Read one OpenInference span."""
    a = span.attributes
    facts = mark(span).facts("openinference")
    if facts.role == "agent":
        value, ok = _io_value(facts, a, "input.value")
        if ok and isinstance(value, str):
            facts.root_input = messages_from_any(value)
            facts.input_mode = "new"
        elif ok and (isinstance(value, list) or (isinstance(value, dict) and "messages" in value)):
            facts.root_input = messages_from_any(value)
            facts.input_mode = "conversation"
        else:
            facts.input_mode = "unusable"
        out, ok = _io_value(facts, a, "output.value")
        if ok:
            facts.root_output = output_text(facts, out, ("text", "content", "output",
                                                         "final_output"))
        return facts
    if facts.role == "tool":
        args, _ = _io_value(facts, a, "input.value")
        result, _ = _io_value(facts, a, "output.value")
        facts.tool = tool_fact(span, call=a.get("tool.id") or a.get("tool_call.id"),
                               name=a.get("tool.name") or span.name, args=args, result=result,
                               has_result="output.value" in a)
        return facts
    if facts.role == "model":
        facts.model_name = str(a.get("llm.model_name") or "") or None
        # The raw provider request/response in input.value/output.value is the most faithful
        # source (system prompt, tool_use / tool_result blocks); the flattened messages are
        # the fallback.
        value, ok = _io_value(facts, a, "input.value")
        facts.model_input = _request_messages(facts, value) if ok else None
        if facts.model_input is None:
            facts.model_input = _messages(facts, unflatten_messages(a, "llm.input_messages"))
        value, ok = _io_value(facts, a, "output.value")
        facts.model_output = _response_messages(value) if ok else None
        if facts.model_output is None:
            facts.model_output = _messages(facts, unflatten_messages(a, "llm.output_messages"))
        finish = a.get("llm.finish_reason")
        if facts.model_output and finish is not None:
            for m in facts.model_output:
                m.finish_reason = m.finish_reason or str(finish)
        if facts.model_input is None and facts.model_output is None:
            facts.capture_off = True
        return facts
    return facts
