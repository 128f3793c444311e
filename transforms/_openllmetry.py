"""OpenLLMetry / Traceloop (conventions.md §3).

Decorator spans (`traceloop.span.kind` = workflow|task|agent|tool, `traceloop.entity.*`,
`traceloop.association.properties.*`), legacy LLM spans with indexed
`gen_ai.prompt.{i}.*` / `gen_ai.completion.{i}.*`, the 2026 structured
`gen_ai.input.messages`/`output.messages`, and log-event mode (GenAI events joined by the
builder to whatever span they point at).

The LangChain/LangGraph instrumentation (`opentelemetry-instrumentation-langchain`) also writes
an `invoke_agent {graph}` span per graph invocation in plain GenAI terms, recognisable as
OpenLLMetry's by its `gen_ai.workflow.nodes`/`edges` (Traceloop's extension keys), and records
LangChain's callback arguments on its spans (a tool span's entity input is
`{"input_str", "inputs", "kwargs": {"tool_call_id"}, …}`, its output `{"output", "kwargs"}`):
the toolkit unwraps them; the call id is read here.
"""

from __future__ import annotations

from typing import Any

from transforms import _genai
from transforms._attrs import (
    ContextKeys,
    indexed_list,
    is_args_dump,
    output_text,
    set_path,
    tool_fact,
)
from transforms._facts import Mark, NMessage, SpanFacts
from transforms._formats import callback_payload
from transforms._json import is_redacted, json_attr, parse_json_attr
from transforms._normalize import message_from_any, messages_from_any
from transforms.types import Span

__all__ = ["CONTEXT", "PREFIXES", "extract", "mark", "unflatten_prompts"]


_PROPS = "traceloop.association.properties."
CONTEXT = ContextKeys(
    conversation=tuple(_PROPS + k for k in ("session_id", "chat_id", "conversation_id")),
    resource=(_PROPS + "user_id",), prefixes=(_PROPS,))
_GRAPH_KEYS = ("gen_ai.workflow.nodes", "gen_ai.workflow.edges")
PREFIXES = ("traceloop.span.kind", "traceloop.entity.", "gen_ai.prompt.", "gen_ai.completion.",
            "llm.request.type", *_GRAPH_KEYS)
"""Attribute keys that mark a span OpenLLMetry's: `traceloop.*`, indexed `gen_ai.prompt.{i}` /
`gen_ai.completion.{i}`, or the graph structure of its LangGraph `invoke_agent` span."""


def unflatten_prompts(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]] | None:
    """`gen_ai.prompt.{i}.{role,content,tool_call_id,tool_calls.{k}.*}` as OpenAI-like
    message dicts in index order. None when there are none."""
    rows: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    plen = len(start)
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        rest = key[plen:]
        idx, _, path = rest.partition(".")
        if not idx.isdigit() or not path:
            continue
        set_path(rows.setdefault(int(idx), {}), path, value)
    if not rows:
        return None
    out: list[dict[str, Any]] = []
    for _, row in sorted(rows.items()):
        msg: dict[str, Any] = {"role": row.get("role", "user")}
        content = row.get("content")
        if isinstance(content, str):
            parsed = parse_json_attr(content)
            # content is a string, or JSON of a part list
            msg["content"] = parsed.value if parsed.ok and isinstance(parsed.value, list) \
                else content
        if row.get("tool_call_id") is not None:
            msg["tool_call_id"] = row["tool_call_id"]
        calls = [{"id": c.get("id"), "function": {"name": c.get("name"),
                                                    "arguments": c.get("arguments")}}
                 for c in indexed_list(row.get("tool_calls")) if isinstance(c, dict)]
        if calls:
            msg["tool_calls"] = calls
        if row.get("finish_reason") is not None:
            msg["finish_reason"] = row["finish_reason"]
        out.append(msg)
    return out


def _msgs(facts: SpanFacts, raw: list[dict[str, Any]] | None) -> list[NMessage] | None:
    if raw is None:
        return None
    out = [m for m in (message_from_any(r) for r in raw) if m is not None]
    for m in out:
        if any(p.kind == "text" and is_redacted(p.text) for p in m.parts):
            facts.redacted = True
    return out


def _has_indexed(attrs: dict[str, Any], prefix: str) -> bool:
    """`unflatten_prompts(attrs, prefix)` would find a message (without building it)."""
    start = prefix + "."
    for key in attrs:
        if key.startswith(start):
            idx, _, path = key[len(start):].partition(".")
            if idx.isdigit() and path:
                return True
    return False


def _is_graph_span(attrs: dict[str, Any]) -> bool:
    """The LangGraph `invoke_agent {graph}` span (GenAI attributes plus the graph's shape)."""
    return any(k in attrs for k in _GRAPH_KEYS)


def _callback_call_id(value: Any) -> Any:
    """The tool call id in LangChain's `on_tool_start` arguments as the instrumentation
    records them (`{"input_str", "inputs", "kwargs": {"tool_call_id": …}, "tags",
    "metadata"}`); None for anything else."""
    if not callback_payload(value)[0]:
        return None
    kwargs = value.get("kwargs")
    return kwargs.get("tool_call_id") if isinstance(kwargs, dict) else None


def mark(span: Span) -> Mark:
    """`@agent` / `@workflow` (named by `traceloop.entity.name`), `@tool`, and model calls:
    indexed prompts or completions, the structured messages, or `llm.request.type`."""
    a = span.attributes
    kind = str(a.get("traceloop.span.kind", "") or "")
    if not kind and _is_graph_span(a):
        return _genai.mark(span)
    if kind in ("agent", "workflow"):
        return Mark(kind, str(a.get("traceloop.entity.name") or a.get(
            "traceloop.workflow.name") or span.name.rsplit(".", 1)[0]) or None)
    if kind == "tool":
        return Mark("tool")
    if _has_indexed(a, "gen_ai.prompt") or _has_indexed(a, "gen_ai.completion") or \
            "gen_ai.input.messages" in a or "gen_ai.output.messages" in a or \
            a.get("llm.request.type") is not None:
        return Mark("model")
    return Mark()


def extract(span: Span) -> SpanFacts:
    """Read one OpenLLMetry span."""
    a = span.attributes
    if not a.get("traceloop.span.kind") and _is_graph_span(a):
        return _genai.extract(span, "openllmetry")
    facts = mark(span).facts("openllmetry")
    if facts.role in ("agent", "workflow"):
        raw_in = a.get("traceloop.entity.input")
        value, ok = json_attr(facts, raw_in)
        if raw_in is None:
            facts.capture_off = True
        msgs = None
        if ok and not is_args_dump(value):
            msgs = messages_from_any(value)
        if msgs:
            facts.root_input = msgs
            facts.input_mode = "conversation"
        else:
            facts.input_mode = "unusable"  # a Python-args dump, not a conversation
        value, ok = json_attr(facts, a.get("traceloop.entity.output"))
        if ok:
            facts.root_output = output_text(facts, value)
        return facts
    if facts.role == "tool":
        value, _ = json_attr(facts, a.get("traceloop.entity.input"))
        result, _ = json_attr(facts, a.get("traceloop.entity.output"))
        # The decorator dumps Python call arguments: {"args": [...], "kwargs": {...}};
        # under LangChain, the callback's arguments (the toolkit unwraps both).
        facts.tool = tool_fact(
            span, call=a.get("gen_ai.tool.call.id") or _callback_call_id(value),
            name=a.get("traceloop.entity.name") or span.name.rsplit(".", 1)[0],
            args=value, result=result, has_result="traceloop.entity.output" in a,
            python_args=True)
        return facts
    if facts.role != "model":
        return facts
    facts.model_name = str(a.get("gen_ai.request.model") or a.get(
        "gen_ai.response.model") or "") or None
    prompts = unflatten_prompts(a, "gen_ai.prompt")
    completions = unflatten_prompts(a, "gen_ai.completion")
    if prompts is not None or completions is not None:
        facts.model_input = _msgs(facts, prompts)
        out = _msgs(facts, completions)
        if out:
            for m in out:
                if m.role == "user":
                    m.role = "assistant"
        facts.model_output = out
    else:
        # 2026 releases: upstream structured attributes; or content off (no prompts at all).
        _genai.fill_model_call(facts, a)
    return facts
