"""The Anthropic Python SDK's own tracing (anthropic ≥ 2.x, scope `com.anthropic.sdk.python`).

The SDK traces by itself once an OTel tracer provider is set: metadata only by default, the
GenAI content attributes in content mode. Spans: `anthropic.messages.create` (CLIENT,
`chat`, `gen_ai.{system_instructions,input,output}.messages` in the OTel parts format), the
tool runner `anthropic.messages.tool_runner` (`invoke_agent`, no agent name: the builder
names it after its model) and per tool run `anthropic.custom_tool_use {name}` (also
`anthropic.tool_use`, `anthropic.mcp_tool_use`; `execute_tool`, the result as
`anthropic.tool_result.content`, a list of content blocks; an error result sets status ERROR
with `error.type=tool_error`).

The tool runner keeps a server-held message thread: after its first request every call sends
only the new messages and no system prompt. Such a call is marked `continues`, and the run
builder gives it the thread's history back from the earlier calls of the trace.
"""

from __future__ import annotations

from typing import Any

from transforms import _genai
from transforms._facts import SpanFacts
from transforms._json import decode_nested, parse_json_attr
from transforms._normalize import part_text
from transforms.reasons import Reason
from transforms.types import Span

__all__ = ["extract", "matches"]

SCOPE_PREFIX = "com.anthropic.sdk"
_THREAD_BETA = "message-threads"


def matches(span: Span) -> bool:
    """A span of the SDK's own tracer (its instrumentation scope)."""
    return span.scope_name.startswith(SCOPE_PREFIX)


def _uses_threads(value: Any) -> bool:
    betas = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    return any(isinstance(b, str) and b.startswith(_THREAD_BETA) for b in betas)


def extract(span: Span) -> SpanFacts:
    """Read one span of the SDK's own tracing (the GenAI attributes plus its own)."""
    a = span.attributes
    facts = _genai.extract(span, "anthropic")
    if a.get("anthropic.content.truncated") is True:
        # The SDK drops whole old parts to fit its byte limit: the JSON stays valid, the
        # content is incomplete.
        facts.truncated = True
        facts.reasons.append(Reason.TRUNCATED_CONTENT)
    if facts.role == "tool" and facts.tool is not None:
        tool = facts.tool
        raw = a.get("anthropic.tool_result.content")
        if raw is not None:
            parsed = parse_json_attr(raw)
            value = parsed.value if parsed.ok else raw
            if isinstance(value, list):  # content blocks: their text, decoded
                value = part_text(value)
            result = decode_nested(value)
            if span.status_code == "ERROR":
                tool.error_text = str(result) if result not in (None, "") else (
                    tool.error_text or "tool_error")
                tool.has_result = False
            else:
                tool.result, tool.has_result = result, True
    elif facts.is_model_call and facts.role != "agent":
        stop = a.get("anthropic.message.stop_reason")
        if stop and facts.model_output:  # the SDK sets no gen_ai.response.finish_reasons
            for m in facts.model_output:
                m.finish_reason = m.finish_reason or str(stop)
        # A continued thread sends only the new messages and no system prompt.
        facts.continues = _uses_threads(a.get("anthropic.beta")) and \
            "gen_ai.system_instructions" not in a and facts.model_input is not None
    return facts
