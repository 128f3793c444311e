"""Google ADK's own tracing (scope `gcp.vertex.agent`; conventions.md §1 and §6).

ADK writes OTel GenAI spans, in one of two schemas (`ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN`):

* Schema 2 (the default): `invoke_workflow {app}` > `invoke_agent {agent}` (identity and
  `gen_ai.conversation.id` = the session id, never content) > `generate_content {model}` per
  model call and `execute_tool {tool}`. Content (opt-in,
  `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`) is `gen_ai.{system_instructions,input,
  output}.messages` and `gen_ai.tool.call.{arguments,result}` on the spans and/or the
  `gen_ai.client.inference.operation.details` log records. A streamed call's
  `gen_ai.output.messages` lists every chunk as a message of its own (finish reason `""`)
  and then the whole answer (with its finish reason): the run builder's rule for streamed
  chunks listed before the whole message leaves the chunks out.
* Schema 1 (legacy): `invocation` > `invoke_agent` > `call_llm` (ADK's record of the call:
  `gcp.vertex.agent.llm_request` = `{model, config: {system_instruction, tools, …},
  contents: [Content…]}`, `gcp.vertex.agent.llm_response` = the `LlmResponse` with its
  `content`, `finish_reason`, `partial`, usage) > `generate_content {model}` (the same call in
  the stable GenAI semconv: the `gen_ai.{system,user}.message` / `gen_ai.choice` log records,
  bodies `<elided>` unless the OTel content capture is on; with the experimental semconv opted
  in, `gen_ai.*.messages` attributes too). Tool spans carry `gcp.vertex.agent.tool_call_args` /
  `.tool_response`. With `ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false` every one of these is
  `{}`: a placeholder for content that was not captured, never an empty request or result.

Messages are Google GenAI `Content` objects (`{role: user|model, parts: [{text} |
{function_call: {id, name, args}} | {function_response: {id, name, response}}]}`); role
`model` is the assistant. A tool span without a call id says `<not specified>`. The runs
keep the `genai` convention (DESIGN §3): ADK is OTel GenAI with extra attributes.
"""

from __future__ import annotations

from typing import Any

from transforms import _genai
from transforms._attrs import opt_str, tool_fact
from transforms._facts import Mark, NMessage, SpanFacts, ToolFact
from transforms._json import decode_nested, json_attr
from transforms._normalize import call_id, message_from_any
from transforms.types import Span

__all__ = ["SCOPE", "adk_message", "extract", "mark", "matches"]

SCOPE = "gcp.vertex.agent"
"""ADK's tracer and logger name (`google.adk.telemetry.tracing`)."""

LLM_REQUEST = "gcp.vertex.agent.llm_request"
LLM_RESPONSE = "gcp.vertex.agent.llm_response"
TOOL_ARGS = "gcp.vertex.agent.tool_call_args"
TOOL_RESPONSE = "gcp.vertex.agent.tool_response"

_NOT_CAPTURED = "{}"
"""What ADK writes into its own content attributes when content capture is off."""
MERGED_TOOLS = "(merged tools)"
"""The tool name of the span ADK opens around the joint response of parallel tool calls."""
_NO_CALL_ID = "<not specified>"
"""ADK's tool call id when the tool's response event has none."""
_ROLES = {"model": "assistant", "user": "user", "system": "system"}


def matches(span: Span) -> bool:
    """A span of ADK's tracer (its instrumentation scope)."""
    return span.scope_name == SCOPE


def mark(span: Span) -> Mark:
    """What the GenAI attributes say; ADK's `call_llm` span (schema 1) is a model call, and
    its `execute_tool (merged)` span (the parallel calls' joint response event, named
    `(merged tools)`, its "call id" the event id) is no tool call: each call has its own."""
    m = _genai.mark(span)
    if m.role == "tool" and span.attributes.get("gen_ai.tool.name") == MERGED_TOOLS:
        return Mark()
    if m.role == "other" and (span.name == "call_llm" or LLM_REQUEST in span.attributes):
        return Mark("model")
    return m


def extract(span: Span) -> SpanFacts:
    """Read one ADK span."""
    a = span.attributes
    m = mark(span)
    if m.role == "model" and LLM_REQUEST in a:
        return _call_llm(span, m.facts("genai"))
    facts = _genai.extract(span)
    facts.role, facts.agent_name, facts.agent_id = m.role, m.agent_name, m.agent_id
    if facts.role == "tool":
        facts.tool = _tool(span, facts)
    elif facts.tool is not None:  # the merged response span: no call of its own
        facts.tool = None
    return facts


# --------------------------------------------------------------------------- model calls


def adk_message(content: Any) -> NMessage | None:
    """A Google GenAI `Content` (`{role, parts}`) as a message; role `model` is the
    assistant."""
    if not isinstance(content, dict):
        return None
    role = str(content.get("role") or "user")
    return message_from_any({"role": _ROLES.get(role, role), "parts": content.get("parts") or []})


def _system_texts(value: Any) -> list[str] | None:
    """`config.system_instruction`: a string, a `Content`, a part or a list of them."""
    if isinstance(value, str):
        return [value] if value else None
    if isinstance(value, dict):
        value = value.get("parts", [value])
    if not isinstance(value, list):
        return None
    texts = [p if isinstance(p, str) else p.get("text") for p in value
             if isinstance(p, (str, dict))]
    return [t for t in texts if isinstance(t, str) and t] or None


def _captured(facts: SpanFacts, value: Any) -> dict[str, Any] | None:
    """An ADK content attribute as a JSON object; None (and the facts marked) when it is the
    `{}` ADK writes with content capture off, a redaction placeholder or not JSON."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip() == _NOT_CAPTURED:
        facts.capture_off = True
        return None
    decoded, ok = json_attr(facts, value, text_ok=False)
    return decoded if ok and isinstance(decoded, dict) and decoded else None


def _call_llm(span: Span, facts: SpanFacts) -> SpanFacts:
    """Schema 1's `call_llm`: the request ADK built and the response it got."""
    a = span.attributes
    facts.model_name = opt_str(a.get("gen_ai.request.model"))
    request = _captured(facts, a.get(LLM_REQUEST))
    if request is not None:
        config = request.get("config")
        if isinstance(config, dict):
            facts.instructions = _system_texts(config.get("system_instruction"))
        contents = request.get("contents")
        if isinstance(contents, list):
            facts.model_input = [m for c in contents if (m := adk_message(c)) is not None]
        facts.model_name = facts.model_name or opt_str(request.get("model"))
    response = _captured(facts, a.get(LLM_RESPONSE))
    if response is not None:
        message = adk_message(response.get("content"))
        if message is not None:
            reason = response.get("finish_reason")
            message.finish_reason = str(reason).lower() if reason else None
            facts.model_output = [message]
    return facts


# --------------------------------------------------------------------------- tools


def _tool(span: Span, facts: SpanFacts) -> ToolFact:
    """The tool call: `gen_ai.tool.*` (schema 2), else ADK's own attributes (schema 1)."""
    a = span.attributes
    cid = a.get("gen_ai.tool.call.id")
    cid = None if cid == _NO_CALL_ID else cid
    if TOOL_ARGS not in a and TOOL_RESPONSE not in a:
        result_attr = a.get("gen_ai.tool.call.result")
        tool = facts.tool or _genai.tool_from_attrs(span)
        tool.call_id = call_id(cid)
        if tool.error_text is not None:
            tool.error_text = _error_text(span, decode_nested(result_attr)) or tool.error_text
        return tool
    args = a.get(TOOL_ARGS)
    raw = a.get(TOOL_RESPONSE)
    result = _captured(facts, raw)
    if facts.capture_off:  # ADK writes `{}` for both: the arguments were not captured either
        args = None
    elif raw is not None and result is None:
        result = decode_nested(raw)  # a response that is no JSON object: kept as it is
    return tool_fact(span, call=cid, name=a.get("gen_ai.tool.name"), args=args,
                     result=result, has_result=result is not None,
                     error=_error_text(span, result))


def _error_text(span: Span, response: Any) -> str | None:
    """A failed tool's error (ADK puts only an error type in the status): the recorded
    exception's message (the tool raised and nothing handled it), else the `error` text of
    the response that failed it (a `FunctionTool` response dict with a truthy `error` is a
    failure, status ERROR and `error.type` TOOL_ERROR: what an `on_tool_error_callback`
    returns, or a tool that reports its own failure), else `error.type`."""
    for e in span.events:
        if e.name == "exception" and e.attributes.get("exception.message"):
            return str(e.attributes["exception.message"])
    if isinstance(response, dict) and isinstance(response.get("error"), str) and response["error"]:
        return str(response["error"])
    return opt_str(span.attributes.get("error.type"))
