"""Vercel AI SDK `ai.*` spans, v3–v6 (`experimental_telemetry`; conventions.md §4).

Scope `ai`. Root `ai.generateText|streamText|generateObject|streamObject` with `ai.prompt` =
`{system, prompt, messages}` exactly as the app passed them (the SDK has no memory: history is
what the app resends in `messages`) and `ai.response.text|object` of the **last step only**;
one step span `….doGenerate|doStream` per model call with the provider prompt in
`ai.prompt.messages` and `ai.response.{text,toolCalls,reasoning,finishReason}`; `ai.toolCall`
spans with `ai.toolCall.{name,id,args,result}` — under the root for generateText, under the
`doStream` step that produced the call for streamText. Tool-call `input` is a JSON string in
doGenerate and an object in doStream (v4: `args`); a tool returning a string gives a
double-encoded result. v3 wrote `ai.result.*` where later versions write `ai.response.*`.
`recordInputs`/`recordOutputs: false` remove the content attributes entirely.

AI SDK 7's `@ai-sdk/otel` spans are plain OTel GenAI (`transforms._genai`).
"""

from __future__ import annotations

from typing import Any

from transforms._attrs import ContextKeys, opt_str, read_by_role, tool_fact
from transforms._facts import Mark, NMessage, NPart, SpanFacts
from transforms._genai import cut_text, read_messages
from transforms._json import is_redacted, json_attr
from transforms._normalize import message_from_any, messages_from_any, part_text
from transforms.types import Span

__all__ = ["CONTEXT", "extract", "mark", "matches", "reads_first"]

_METADATA = "ai.telemetry.metadata."  # experimental_telemetry.metadata
_CONTEXT = "ai.settings.context."  # AI SDK 7 (@ai-sdk/otel): the context the app exports
CONTEXT = ContextKeys(
    conversation=(*(_METADATA + k for k in ("conversationId", "sessionId")),
                  *(_CONTEXT + k for k in ("conversationId", "sessionId", "threadId"))),
    resource=(_METADATA + "userId", _CONTEXT + "userId"), prefixes=(_METADATA, _CONTEXT))
ROOT_OPERATIONS = frozenset({"ai.generateText", "ai.streamText", "ai.generateObject",
                             "ai.streamObject"})
_ROOT_PREFIXES = tuple(ROOT_OPERATIONS)
_STEP_SUFFIXES = (".doGenerate", ".doStream")
_OUTPUT_KEYS = ("ai.response.text", "ai.response.object", "ai.response.toolCalls",
                "ai.result.text", "ai.result.object", "ai.result.toolCalls")


def matches(span: Span) -> bool:
    """Scope `ai`, or an `ai.operationId` attribute."""
    return span.scope_name == "ai" or "ai.operationId" in span.attributes


def reads_first(span: Span) -> bool:
    """The AI SDK's own `ai.*` attributes beat a translation of them added to the same span
    (openinference-vercel marks the root a CHAIN and copies messages into `llm.*`)."""
    return "ai.operationId" in span.attributes


def _response(a: dict[str, Any], name: str) -> Any:
    # v3 named the outputs ai.result.*; v4+ ai.response.*.
    v = a.get(f"ai.response.{name}")
    return a.get(f"ai.result.{name}") if v is None else v


def _system_texts(value: Any) -> list[str]:
    """`system`: a string, a system message, or a list of them (v6)."""
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, list):
        texts = [part_text(v.get("content")) if isinstance(v, dict) else part_text(v)
                 for v in value]
        return [t for t in texts if t]
    return []


def _root(span: Span, facts: SpanFacts) -> None:
    a = span.attributes
    facts.model_name = opt_str(a.get("ai.model.id"))
    raw = a.get("ai.prompt")
    facts.input_mode = "unusable"
    if raw is None:
        facts.capture_off = True  # recordInputs: false
    else:
        prompt, ok = json_attr(facts, raw, text_ok=False)
        if ok and isinstance(prompt, dict):
            facts.instructions = _system_texts(prompt.get("system")) or None
            if isinstance(prompt.get("prompt"), str):
                # A string prompt is this call's new input.
                facts.root_input = [NMessage("user", [NPart("text", prompt["prompt"])])]
                facts.input_mode = "new"
            else:
                msgs = prompt.get("messages", prompt.get("prompt"))
                conv = messages_from_any(msgs) if isinstance(msgs, list) else None
                if conv is not None:
                    facts.root_input = conv
                    facts.input_mode = "conversation"
        elif facts.truncated and isinstance(raw, str):
            facts.cut_input = raw
    text = _response(a, "text")
    if not isinstance(text, str):
        text = _response(a, "object")  # generateObject: the object's JSON text
    if isinstance(text, str):
        if is_redacted(text):
            facts.redacted = True
        else:
            facts.root_output = text
    elif not any(k in a for k in _OUTPUT_KEYS) and span.status_code != "ERROR":
        facts.capture_off = True  # recordOutputs: false


def _step_output(facts: SpanFacts, a: dict[str, Any]) -> list[NMessage] | None:
    parts: list[NPart] = []
    reasoning = _response(a, "reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append(NPart("reasoning", reasoning))
    text = _response(a, "text")
    if not isinstance(text, str):
        text = _response(a, "object")
    if isinstance(text, str) and text:
        parts.append(NPart("text", text))
        if is_redacted(text):
            facts.redacted = True
    raw_calls = _response(a, "toolCalls")
    if raw_calls is not None:
        calls, ok = json_attr(facts, raw_calls, text_ok=False)
        if ok and isinstance(calls, list):
            # {toolCallId, toolName, input: JSON string | object} (v4: args) — the
            # OpenAI-like tool-call reader takes every variant.
            m = message_from_any({"role": "assistant", "tool_calls": calls})
            if m is not None:
                parts.extend(m.parts)
    if not parts and not any(k in a for k in _OUTPUT_KEYS):
        return None
    finish = opt_str(a.get("ai.response.finishReason", a.get("ai.finishReason")))
    return [NMessage("assistant", parts, finish)]


def _step(span: Span, facts: SpanFacts) -> None:
    a = span.attributes
    facts.model_name = opt_str(a.get("ai.model.id")) or opt_str(a.get("gen_ai.request.model"))
    facts.model_input = read_messages(facts, a.get("ai.prompt.messages"))
    if facts.model_input is None:
        facts.cut_input = cut_text(a.get("ai.prompt.messages"))
    facts.model_output = _step_output(facts, a)
    if facts.model_input is None and facts.model_output is None and not facts.truncated:
        facts.capture_off = True


def _exception_message(span: Span) -> Any:
    for e in span.events:
        if e.name == "exception" and e.attributes.get("exception.message"):
            return e.attributes["exception.message"]
    return None


def _tool(span: Span, facts: SpanFacts) -> None:
    a = span.attributes
    facts.tool = tool_fact(
        span, call=a.get("ai.toolCall.id"), name=a.get("ai.toolCall.name"),
        args=a.get("ai.toolCall.args", a.get("ai.toolCall.input")),
        result=a.get("ai.toolCall.result", a.get("ai.toolCall.output")),
        has_result="ai.toolCall.result" in a or "ai.toolCall.output" in a,
        error=_exception_message(span) if span.status_code == "ERROR" else None)


def mark(span: Span) -> Mark:
    """A root `ai.generateText|streamText|…Object` (named by `functionId`), one of its
    `doGenerate|doStream` steps (a model call), or an `ai.toolCall`; `ai.embed*`,
    `ai.rerank` and their steps are no agent or chat calls."""
    a = span.attributes
    op = str(a.get("ai.operationId") or span.name)
    if op in ROOT_OPERATIONS:
        return Mark("agent", opt_str(a.get("ai.telemetry.functionId")) or opt_str(
            a.get("ai.telemetry.metadata.agent")))
    if op.endswith(_STEP_SUFFIXES) and op.startswith(_ROOT_PREFIXES):
        return Mark("model")
    return Mark("tool" if op == "ai.toolCall" else "other")


def extract(span: Span) -> SpanFacts:
    """Read one `ai.*` span."""
    return read_by_role(span, mark(span).facts("vercel"),
                        {"agent": _root, "model": _step, "tool": _tool})
