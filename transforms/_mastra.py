"""Mastra (`@mastra/otel-exporter`, conventions.md §5 and mastra-scorers.md §7).

Current layout (1.x): `invoke_agent` AGENT_RUN root with `mastra.agent_run.input` (the new
input only) and `mastra.agent_run.output` (`{text, …}`), `gen_ai.system_instructions` as a
plain string; MODEL_GENERATION carries the full prompt in `mastra.model_generation.input`
(`{messages: [system…, remembered…, new…]}`) and `mastra.model_generation.output`
(`{text, toolCalls}`, the text of every step joined); each step is an `agent_step` (MODEL_STEP)
span with its own prompt (`mastra.model_step.input`: system messages in full, the rest
summarised) and output (`mastra.model_step.output`); the `chat` (MODEL_INFERENCE) span carries no
usable input; tool spans sit under the model step. Legacy layout: MODEL_GENERATION *is* the `chat` span with
`gen_ai.input.messages`. Older exporter (0.x): `agent.{id}` spans with raw `input`/`output`,
`gen_ai.prompt`/`gen_ai.completion`, `tool.execute {tool}` with `gen_ai.tool.input/output`.
"""

from __future__ import annotations

from typing import Any

from transforms import _genai
from transforms._attrs import ContextKeys, opt_str, output_text
from transforms._facts import SYSTEM_ROLES, Mark, NMessage, NPart, SpanFacts, StepFact
from transforms._json import decode_nested, is_redacted, json_attr
from transforms._normalize import call_id, messages_from_any
from transforms._system_tags import tag_for
from transforms.reasons import Reason
from transforms.types import Span

__all__ = ["CONTEXT", "extract", "mark", "matches"]

CONTEXT = ContextKeys(conversation=("mastra.metadata.threadId", "threadId"),
                      resource=("mastra.metadata.resourceId", "resourceId"),
                      prefixes=("mastra.metadata.",))
# Mastra marks strings it cut (deepClean) with this suffix.
_CUT_SUFFIX = "[truncated]"


def matches(span: Span) -> bool:
    """Mastra 1.x (`mastra.span.type`) or the 0.x exporter (its scope / span names)."""
    a = span.attributes
    if "mastra.span.type" in a:
        return True
    return "mastra" in span.scope_name.lower() and (
        span.name.startswith(("agent.", "tool.execute", "chat ", "llm"))
        or str(a.get("gen_ai.operation.name", "")).startswith(("agent.", "tool."))
    )


def _json(facts: SpanFacts, value: Any) -> tuple[Any, bool]:
    if isinstance(value, str) and value.endswith(_CUT_SUFFIX):
        facts.truncated = True
        facts.reasons.append(Reason.TRUNCATED_JSON)
        return value, False
    return json_attr(facts, value)


def _generation_output(value: Any) -> list[NMessage] | None:
    if not isinstance(value, dict):
        text = output_text(None, value, ("text",))
        return [NMessage("assistant", [NPart("text", text)], "stop")] if text else None
    parts: list[NPart] = []
    for c in value.get("toolCalls") or []:
        if isinstance(c, dict):
            parts.append(NPart("tool_call", tool_call_id=call_id(c.get("toolCallId", c.get("id"))),
                               tool_name=c.get("toolName", c.get("name")),
                               args=decode_nested(c.get("args", c.get("input")))))
    text = value.get("text")
    if isinstance(text, str) and text:
        parts.append(NPart("text", text))
    finish = value.get("finishReason")
    # A generation spans the whole tool loop: its text is the final answer.
    return [NMessage("assistant", parts, str(finish) if finish else ("stop" if text else None))]


def _check_redacted(facts: SpanFacts, msgs: list[NMessage] | None) -> None:
    for m in msgs or []:
        if any(p.kind == "text" and is_redacted(p.text) for p in m.parts):
            facts.redacted = True


def mark(span: Span) -> Mark:
    """`agent_run` (1.x) or an `agent.{id}` span (0.x) with the agent's id and name; tool calls
    (`tool_call`, `mcp_tool_call`, `tool.execute`); the model generation (or legacy `chat`)."""
    a = span.attributes
    kind = str(a.get("mastra.span.type", "") or "")
    op = str(a.get("gen_ai.operation.name", "") or "")
    if kind == "agent_run" or (not kind and (op in ("agent.run", "invoke_agent")
                                             or span.name.startswith("agent."))):
        agent_id = opt_str(a.get("gen_ai.agent.id")) or opt_str(a.get("agent.id")) or (
            span.name.removeprefix("agent.") if span.name.startswith("agent.") else None)
        return Mark("agent", opt_str(a.get("gen_ai.agent.name")) or opt_str(
            a.get("entityName")) or agent_id, agent_id)
    if kind in ("tool_call", "mcp_tool_call") or op in ("execute_tool", "tool.execute") or \
            span.name.startswith("tool.execute"):
        return Mark("tool")
    if kind == "model_generation" or (not kind and op == "chat"):
        return Mark("model")
    # model_inference (`chat`): a lossy summary of the prompt; chunks, …: nothing the run
    # needs that model_generation does not say better; model_step: read by `extract` (its own
    # answer and system messages), but no role.
    return Mark()


def extract(span: Span) -> SpanFacts:
    """Read one Mastra span."""
    a = span.attributes
    facts = mark(span).facts("mastra")
    if facts.role == "agent":
        facts.instructions = _genai.instructions_from(facts, a.get("gen_ai.system_instructions"))
        raw_in = a.get("mastra.agent_run.input", a.get("input"))
        value, ok = _json(facts, raw_in)
        msgs = messages_from_any(value) if ok else None
        if msgs is not None:
            facts.root_input = [m for m in msgs if m.role != "system"]
            facts.input_mode = "new"
            facts.remembered_exact = True
            _check_redacted(facts, facts.root_input)
        else:
            facts.input_mode = "unusable"
            if raw_in is None:
                facts.capture_off = True
            elif facts.truncated and isinstance(raw_in, str):
                facts.cut_input = raw_in
        raw_out = a.get("mastra.agent_run.output", a.get("output"))
        value, ok = _json(facts, raw_out)
        if not ok and isinstance(raw_out, str) and raw_out.strip()[:1] in ("{", "["):
            facts.cut_output = raw_out
        if ok:
            facts.root_output = output_text(facts, value, ("text",))
        return facts
    if facts.role == "tool":
        tool = _genai.tool_from_attrs(span)
        if tool.name is None:
            tool.name = span.name.removeprefix("execute_tool ").removeprefix("tool.execute ")
        if tool.call_id is None:
            tool.call_id = call_id(a.get("mastra.tool_call.toolCallId"))
        facts.tool = tool
        return facts
    if facts.role == "model":
        facts.model_name = opt_str(a.get("gen_ai.request.model")) or span.name.split(" ", 1)[-1]
        if "mastra.model_generation.input" in a or "mastra.model_generation.output" in a:
            value, ok = _json(facts, a.get("mastra.model_generation.input"))
            facts.model_input = messages_from_any(value) if ok else None
            value, ok = _json(facts, a.get("mastra.model_generation.output"))
            facts.model_output = _generation_output(value) if ok else None
        else:  # legacy: MODEL_GENERATION is the chat span, converted parts
            _genai.fill_model_call(facts, a)
            if facts.model_input is None and "gen_ai.prompt" in a:
                value, ok = _json(facts, a.get("gen_ai.prompt"))
                facts.model_input = messages_from_any(value) if ok else None
                value, ok = _json(facts, a.get("gen_ai.completion"))
                facts.model_output = _generation_output(value) if ok else None
        _check_redacted(facts, facts.model_input)
        _check_redacted(facts, facts.model_output)
        facts.capture_off = facts.model_input is None and facts.model_output is None
        facts.system_tags = _system_tags(facts.model_input)
    elif a.get("mastra.span.type") == "model_step":
        facts.step = _step(a)
    return facts


def _step(a: Any) -> StepFact | None:
    """An `agent_step` span: the step's own output text (the generation's output glues every
    step's text, a step an output processor rejected and retried included), whether it called
    tools, and the system messages of its own prompt (a retried step's prompt adds the
    processor's feedback, which the generation's prompt, the first step's, lacks). Read on a
    scratch record: the step's values never flag the run (its generation records the same)."""
    scratch = SpanFacts("mastra")
    out, ok = json_attr(scratch, a.get("mastra.model_step.output"))
    if not ok or not isinstance(out, dict) or not isinstance(out.get("text"), str):
        return None
    value, ok = json_attr(scratch, a.get("mastra.model_step.input"))
    if ok and isinstance(value, dict):
        value = value.get("messages")
    system: list[str] = []
    if ok and isinstance(value, list):  # only the system messages: the rest is summarised
        sys_msgs = messages_from_any([m for m in value if isinstance(m, dict)
                                      and m.get("role") in SYSTEM_ROLES])
        system = [m.text for m in sys_msgs or [] if m.text]
    return StepFact(out["text"], bool(out.get("toolCalls")), system)


def _system_tags(msgs: list[NMessage] | None) -> dict[str, str]:
    """Mastra's tags for the system messages of a prompt its export sent untagged, read back
    from their fixed headers (working memory, semantic recall, retry feedback); the others
    (instructions, the per-call `system` option, MCP guidance) have none."""
    tags: dict[str, str] = {}
    for m in msgs or []:
        if m.role in SYSTEM_ROLES and m.text and (tag := tag_for(m.text)) is not None:
            tags[m.text] = tag
    return tags
