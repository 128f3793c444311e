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
    MULTI_TURN1_ANSWER,
    MULTI_TURN2_ANSWER,
    RECHECK_TEXT,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    TOOL_PARAMETERS,
    TURN1_ANSWER,
    TURN2_ANSWER,
    ToolCallRecord,
    Turn,
    WeatherServiceError,
    get_weather,
)

MODEL = "claude-haiku-5-5"
CALL_ID = "toolu_paris_1"
TOOLS = [{"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": TOOL_PARAMETERS}]
MULTI_TOOL_USE_IDS = ("toolu_paris_1", "toolu_berlin_1", "toolu_rome_1", "toolu_rome_2")


def parallel_tool_use(
    fake_anthropic_module: Any,
    calls: list[tuple[str, str, Any]],
    *,
    text: str | None = None,
    model: str = MODEL,
    message_id: str = "msg_parallel_tools",
) -> Any:
    """One assistant message with several tool_use blocks (parallel tool calls), non-streaming.

    The fake's ``tool_use`` reply has one block only, so the Messages API response is written
    here in full (the shape of the fake's own ``_message``) and served with ``raw``.
    """
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": cid, "name": name, "input": args} for cid, name, args in calls]
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 7},
    }
    return fake_anthropic_module.raw(200, json.dumps(message))


def scripted_replies_two_tools_and_a_failure(fake_anthropic_module: Any, *, model: str = MODEL) -> list[Any]:
    """The provider's side of `two_tools_and_a_failure` (fake Anthropic replies, in order).

    Turn 1: ONE reply with two tool_use blocks (Paris, Berlin) after "Let me look that up.",
    then the answer. Turn 2: get_weather(Rome), then after its result get_weather(Rome) again
    (new id, text "Let me check again."), then the answer. Non-streaming only (``raw``).
    """
    m = fake_anthropic_module
    paris, berlin, rome1, rome2 = MULTI_TOOL_USE_IDS
    return [
        parallel_tool_use(m, [(paris, TOOL_NAME, {"city": "Paris"}), (berlin, TOOL_NAME, {"city": "Berlin"})],
                          text=LOOKUP_TEXT, model=model),
        m.text(MULTI_TURN1_ANSWER),
        m.tool_use(TOOL_NAME, {"city": "Rome"}, tool_use_id=rome1),
        m.tool_use(TOOL_NAME, {"city": "Rome"}, text=RECHECK_TEXT, tool_use_id=rome2),
        m.text(MULTI_TURN2_ANSWER),
    ]


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
    """One agent turn; returns (turn, the wire history including this turn).

    A tool that raises `WeatherServiceError` is reported back as a ``tool_result`` block with
    ``is_error: true`` and the error text as its content.
    """
    tool_fn = tool_fn or get_weather
    turn = Turn(user_text=user_text, history=[m for t in prior_turns for m in t.remembered_after()])
    messages = history + [{"role": "user", "content": user_text}]
    blocks, stop = _call(client, messages, stream)
    while stop == "tool_use":
        texts = [b["text"] for b in blocks if b["type"] == "text"]
        messages = messages + [{"role": "assistant", "content": blocks}]
        results = []
        step: list[ToolCallRecord] = []
        for b in blocks:
            if b["type"] != "tool_use":
                continue
            record = ToolCallRecord(b["id"], b["name"], b["input"])
            try:
                record.result, record.has_result = tool_fn(**b["input"]), True
            except WeatherServiceError as exc:  # reported the Anthropic way: is_error
                record.error = str(exc)
                results.append({"type": "tool_result", "tool_use_id": b["id"], "content": record.error,
                                "is_error": True})
            else:
                results.append({"type": "tool_result", "tool_use_id": b["id"],
                                "content": json.dumps(record.result)})
            step.append(record)
        turn.add_tool_step("".join(texts) if texts else None, step)
        messages = messages + [{"role": "user", "content": results}]
        blocks, stop = _call(client, messages, stream)
    turn.final_text = "".join(b["text"] for b in blocks if b["type"] == "text")
    return turn, messages + [{"role": "assistant", "content": blocks}]
