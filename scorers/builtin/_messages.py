"""How Mastra's code scorers read an agent run: message text and tool calls.

Ports of `@mastra/evals` `scorers/utils` (`getTextContentFromMastraDBMessage`,
`mergeToolInvocations`, `extractToolCalls`), working on scorecar's `Message` model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from scorers.types import AgentRunInput, Message, ScorerRun, ToolInvocation, ToolInvocationPart

__all__ = [
    "extract_tool_calls",
    "input_messages",
    "input_text",
    "merge_tool_invocations",
    "output_messages",
    "output_text",
]


def _messages(value: Any) -> list[Message] | None:
    if not isinstance(value, list):
        return None
    try:
        return [m if isinstance(m, Message) else Message.model_validate(m) for m in value]
    except ValidationError:
        return None


def input_messages(run: ScorerRun) -> list[Message] | None:
    """The run's new input messages, or None when the input is not an agent input.

    A run validated from JSON may hold its input as a plain dict (`ScorerRun.input` accepts
    any value); its `inputMessages` are read and validated here.
    """
    value = run.input
    if isinstance(value, AgentRunInput):
        return list(value.input_messages)
    if isinstance(value, Mapping):
        return _messages(value.get("inputMessages", value.get("input_messages")))
    return None


def output_messages(run: ScorerRun) -> list[Message] | None:
    """The run's output messages, or None when the output is not a list of messages."""
    return _messages(run.output)


def input_text(run: ScorerRun) -> str:
    """Every input message's text joined with `", "` (Mastra's code scorers' input)."""
    return ", ".join(m.text for m in input_messages(run) or [])


def output_text(run: ScorerRun) -> str:
    """Every output message's text, whatever its role, joined with `", "`."""
    return ", ".join(m.text for m in output_messages(run) or [])


def merge_tool_invocations(message: Message) -> list[ToolInvocation]:
    """The message's tool invocations: its parts, merged with the legacy
    `content.toolInvocations` (parts win on a shared id; legacy-only ones keep their place)."""
    legacy: Sequence[ToolInvocation] = message.content.tool_invocations or []
    from_parts = [p.tool_invocation for p in message.content.parts
                  if isinstance(p, ToolInvocationPart)]
    part_ids = {inv.tool_call_id for inv in from_parts if inv.tool_call_id}
    # Map: the last legacy position of each id (a JavaScript Map keeps the last set).
    legacy_positions = {inv.tool_call_id: i for i, inv in enumerate(legacy)}
    merged: list[ToolInvocation] = []
    legacy_index = 0
    for inv in from_parts:
        shared = legacy_positions.get(inv.tool_call_id) if inv.tool_call_id else None
        if shared is not None and shared >= legacy_index:
            while legacy_index < shared:
                previous = legacy[legacy_index]
                if previous.tool_call_id not in part_ids:
                    merged.append(previous)
                legacy_index += 1
            legacy_index += 1
        merged.append(inv)
    while legacy_index < len(legacy):
        inv = legacy[legacy_index]
        if inv.tool_call_id not in part_ids:
            merged.append(inv)
        legacy_index += 1
    return merged


_CALL_STATES = frozenset({"result", "call", "output-error"})


def extract_tool_calls(messages: Sequence[Message]) -> tuple[list[str], list[dict[str, Any]]]:
    """Tool names in call order, and `{toolName, toolCallId, messageIndex, invocationIndex}`
    per call. A call counts whatever its outcome (`result`, `call`, `output-error`)."""
    tools: list[str] = []
    infos: list[dict[str, Any]] = []
    for message_index, message in enumerate(messages):
        for invocation_index, inv in enumerate(merge_tool_invocations(message)):
            if inv.tool_name and inv.state in _CALL_STATES:
                tools.append(inv.tool_name)
                infos.append({
                    "toolName": inv.tool_name,
                    "toolCallId": inv.tool_call_id or f"{message_index}-{invocation_index}",
                    "messageIndex": message_index,
                    "invocationIndex": invocation_index,
                })
    return tools, infos
