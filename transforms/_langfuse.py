"""Langfuse SDK observations (`langfuse.observation.*`, `langfuse.trace.*`; conventions.md §6).

The Langfuse SDKs (v3+) are OTel-based: every observation is a span with
`langfuse.observation.type` (`agent`, `generation`, `tool`, `span`, `chain`, …) and its
explicit IO as JSON strings in `langfuse.observation.input` / `.output`; `session.id` and
`user.id` on every span. What an observation's IO holds is up to the app: an `@observe`d
function's input is its arguments (`{"args": [...], "kwargs": {...}}`, not a conversation), a
generation's input is the messages sent (the OpenAI integration: `{"tools", "messages"}`),
its output the assistant message or, streamed, its plain text.
"""

from __future__ import annotations

from typing import Any

from transforms._attrs import ContextKeys, is_args_dump, output_text, read_by_role, tool_fact
from transforms._facts import Mark, NMessage, NPart, SpanFacts
from transforms._json import decode_nested, is_redacted, json_attr
from transforms._normalize import message_from_any, messages_from_any
from transforms.types import Span

__all__ = ["CONTEXT", "PREFIXES", "extract", "mark"]

PREFIXES = ("langfuse.observation.", "langfuse.trace.")
"""Attribute keys that mark a span Langfuse's (explicit IO: it wins, conventions.md §0)."""
CONTEXT = ContextKeys(conversation=("langfuse.session.id",), resource=("langfuse.user.id",),
                      prefixes=("langfuse.observation.metadata.", "langfuse.trace.metadata."))
_INPUT = "langfuse.observation.input"
_OUTPUT = "langfuse.observation.output"


def _output_text(facts: SpanFacts, value: Any) -> str | None:
    value = decode_nested(value)
    if isinstance(value, list):  # a message list: the last assistant text
        msgs = messages_from_any(value) or []
        texts = [m.text for m in msgs if m.role == "assistant" and m.text]
        return texts[-1] if texts else None
    return output_text(facts, value)


def _agent(span: Span, facts: SpanFacts) -> None:
    a = span.attributes
    raw = a.get(_INPUT, a.get("langfuse.trace.input"))
    value, ok = json_attr(facts, raw)
    facts.input_mode = "unusable"
    if raw is None:
        facts.capture_off = True
    elif ok and not is_args_dump(value):
        msgs = messages_from_any(value)
        if msgs:
            facts.root_input = msgs
            # Only user messages: this turn's input; anything else: a whole conversation.
            facts.input_mode = "new" if all(m.role in ("user", "system") for m in msgs) \
                else "conversation"
    elif not ok and facts.truncated and isinstance(raw, str):
        facts.cut_input = raw
    raw_out = a.get(_OUTPUT, a.get("langfuse.trace.output"))
    value, ok = json_attr(facts, raw_out)
    if ok:
        facts.root_output = _output_text(facts, value)
    elif facts.truncated and isinstance(raw_out, str):
        facts.cut_output = raw_out


def _generation(span: Span, facts: SpanFacts) -> None:
    a = span.attributes
    model = a.get("langfuse.observation.model.name")
    facts.model_name = str(model) if model else None
    value, ok = json_attr(facts, a.get(_INPUT))
    if ok:
        facts.model_input = messages_from_any(value)
    value, ok = json_attr(facts, a.get(_OUTPUT))
    if ok:
        out: list[NMessage] | None
        if isinstance(value, str):
            out = [NMessage("assistant", [NPart("text", value)])]
        elif isinstance(value, dict) and "role" not in value and "choices" in value:
            first = value["choices"][0] if value["choices"] else {}
            m = message_from_any(first.get("message") if isinstance(first, dict) else None)
            out = [m] if m is not None else None
        else:
            out = messages_from_any(value)
        for m in out or []:
            if m.role == "user":
                m.role = "assistant"  # a bare message without a role is the model's
        finish = decode_nested(a.get("langfuse.observation.metadata.finish_reason"))
        if out and isinstance(finish, str):
            out[-1].finish_reason = out[-1].finish_reason or finish
        facts.model_output = out
    for msgs in (facts.model_input, facts.model_output):
        for m in msgs or []:
            if any(p.kind == "text" and is_redacted(p.text) for p in m.parts):
                facts.redacted = True
    if facts.model_input is None and facts.model_output is None and not facts.truncated:
        facts.capture_off = True


def _tool(span: Span, facts: SpanFacts) -> None:
    a = span.attributes
    args, _ = json_attr(facts, a.get(_INPUT))
    result, _ = json_attr(facts, a.get(_OUTPUT))
    # An @observe'd tool's input is its Python call arguments.
    facts.tool = tool_fact(
        span, call=decode_nested(a.get("langfuse.observation.metadata.tool_call_id")),
        name=span.name, args=args, result=result, has_result=_OUTPUT in a, python_args=True,
        error=a.get("langfuse.observation.status_message"),
        failed=str(a.get("langfuse.observation.level", "")).upper() == "ERROR")


_ROLES = {"agent": "agent", "generation": "model", "tool": "tool"}


def mark(span: Span) -> Mark | None:
    """An `agent` (named by the span), `generation` or `tool` observation; None for a span
    that only carries propagated Langfuse attributes (another library's span)."""
    a = span.attributes
    kind = a.get("langfuse.observation.type")
    if kind is None and _INPUT not in a and _OUTPUT not in a:
        return None
    role = _ROLES.get(str(kind or "span").lower(), "other")
    return Mark(role, (span.name or None) if role == "agent" else None)


def extract(span: Span) -> SpanFacts | None:
    """Read one Langfuse observation; None for a span that only carries propagated Langfuse
    attributes (another library's span: its own convention reads it)."""
    m = mark(span)
    if m is None:
        return None
    return read_by_role(span, m.facts("langfuse"),
                        {"agent": _agent, "model": _generation, "tool": _tool})
