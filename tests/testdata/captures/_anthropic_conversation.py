"""The scripted two-turn conversation over the real ``anthropic`` client (shared by the drivers).

The app keeps the history in the Anthropic wire form: the assistant turn that asked for a tool
(text + tool_use blocks), then a user message of tool_result blocks, then the answer. What it sent
and received is returned as ``Turn`` records from which the drivers write the expectations.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from _common import (
    LOOKUP_TEXT,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    TOOL_PARAMETERS,
    TURN1_ANSWER,
    TURN2_ANSWER,
    ToolCallRecord,
    Turn,
    get_weather,
)

MODEL = "claude-haiku-5-5"
CALL_ID = "toolu_paris_1"
TOOLS = [{"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": TOOL_PARAMETERS}]


def scripted_replies(fake_anthropic_module: Any) -> list[Any]:
    """The provider's side of the script (fake Anthropic replies, in order)."""
    m = fake_anthropic_module
    return [
        m.tool_use(TOOL_NAME, {"city": "Paris"}, text=LOOKUP_TEXT, tool_use_id=CALL_ID),
        m.text(TURN1_ANSWER),
        m.text(TURN2_ANSWER),
    ]


def _call(client: Any, messages: list[dict[str, Any]], stream: bool) -> tuple[list[dict[str, Any]], str]:
    """One Messages API call; returns (assistant content blocks as dicts, stop_reason)."""
    kwargs: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 256,
        "system": SYSTEM_PROMPT,
        "messages": messages,
        "tools": TOOLS,
    }
    if stream:
        with client.messages.stream(**kwargs) as s:
            message = s.get_final_message()
    else:
        message = client.messages.create(**kwargs)
    blocks = [b.model_dump(exclude_none=True) for b in message.content]
    return blocks, str(message.stop_reason)


def run_turn(
    client: Any,
    *,
    stream: bool,
    history: list[dict[str, Any]],
    prior_turns: list[Turn],
    user_text: str,
    tool_fn: Callable[..., Any] | None = None,
) -> tuple[Turn, list[dict[str, Any]]]:
    """One agent turn; returns (turn, the wire history including this turn)."""
    tool_fn = tool_fn or get_weather
    turn = Turn(user_text=user_text, history=[m for t in prior_turns for m in t.remembered_after()])
    messages = history + [{"role": "user", "content": user_text}]
    blocks, stop = _call(client, messages, stream)
    while stop == "tool_use":
        texts = [b["text"] for b in blocks if b["type"] == "text"]
        turn.intermediate_text = "".join(texts) if texts else None
        messages = messages + [{"role": "assistant", "content": blocks}]
        results = []
        for b in blocks:
            if b["type"] != "tool_use":
                continue
            record = ToolCallRecord(b["id"], b["name"], b["input"])
            record.result, record.has_result = tool_fn(**b["input"]), True
            turn.tool_calls.append(record)
            results.append({"type": "tool_result", "tool_use_id": b["id"], "content": json.dumps(record.result)})
        messages = messages + [{"role": "user", "content": results}]
        blocks, stop = _call(client, messages, stream)
    turn.final_text = "".join(b["text"] for b in blocks if b["type"] == "text")
    return turn, messages + [{"role": "assistant", "content": blocks}]
