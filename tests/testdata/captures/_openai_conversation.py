"""The scripted two-turn conversation over the real ``openai`` client (shared by the drivers).

The app side is written the way an application would: it keeps the history
itself (OpenAI's API is stateless), runs ``get_weather`` when asked and sends the
result back as a ``tool`` message. What it sent and received is returned as
``Turn`` records from which the drivers write the expectations.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from _common import (
    LOOKUP_TEXT,
    MULTI_CALL_IDS,
    MULTI_TURN1_ANSWER,
    MULTI_TURN1_USER,
    MULTI_TURN2_ANSWER,
    MULTI_TURN2_USER,
    RECHECK_TEXT,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    TOOL_PARAMETERS,
    TURN1_ANSWER,
    TURN1_USER,
    TURN2_ANSWER,
    TURN2_USER,
    ToolCallRecord,
    Turn,
    WeatherServiceError,
    get_weather,
    get_weather_or_fail,
)

TOOLS = [
    {
        "type": "function",
        "function": {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": TOOL_PARAMETERS},
    }
]

TurnWrapper = Callable[[int, str], AbstractContextManager[Any]]
ToolRunner = Callable[[ToolCallRecord, Callable[[], Any]], Any]


def scripted_replies(fake_openai_module: Any, *, call_id: str = "call_paris_1") -> list[Any]:
    """The provider's side of the script (fake OpenAI replies, in order)."""
    m = fake_openai_module
    return [
        m.ToolCallReply(
            tool_calls=(m.ToolCall(call_id, TOOL_NAME, json.dumps({"city": "Paris"})),),
            text=LOOKUP_TEXT,
        ),
        m.TextReply(TURN1_ANSWER),
        m.TextReply(TURN2_ANSWER),
    ]


def scripted_replies_two_tools_and_a_failure(fake_openai_module: Any) -> list[Any]:
    """The provider's side of `two_tools_and_a_failure` (fake OpenAI replies, in order).

    Turn 1: ONE reply with two parallel tool calls (Paris, Berlin) and a lead-in text, then
    the answer. Turn 2: get_weather(Rome), then after its result get_weather(Rome) again (a
    new call id, with the text "Let me check again."), then the answer.
    """
    m = fake_openai_module
    paris, berlin, rome1, rome2 = MULTI_CALL_IDS

    def call(cid: str, city: str) -> Any:
        return m.ToolCall(cid, TOOL_NAME, json.dumps({"city": city}))

    return [
        m.ToolCallReply(tool_calls=(call(paris, "Paris"), call(berlin, "Berlin")), text=LOOKUP_TEXT),
        m.TextReply(MULTI_TURN1_ANSWER),
        m.ToolCallReply(tool_calls=(call(rome1, "Rome"),)),
        m.ToolCallReply(tool_calls=(call(rome2, "Rome"),), text=RECHECK_TEXT),
        m.TextReply(MULTI_TURN2_ANSWER),
    ]


@contextlib.contextmanager
def _no_span(*_: Any) -> Iterator[None]:
    yield None


def _plain_tool(_: ToolCallRecord, run: Callable[[], Any]) -> Any:
    return run()


def _chat(client: Any, model: str, messages: list[dict[str, Any]], stream: bool) -> tuple[str | None, list[tuple[str, str, str]]]:
    """One chat completion; returns (text, [(id, name, arguments)])."""
    kwargs: dict[str, Any] = {"model": model, "messages": messages, "tools": TOOLS}
    if not stream:
        response = client.chat.completions.create(**kwargs)
        message = response.choices[0].message
        calls = [(c.id, c.function.name, c.function.arguments) for c in (message.tool_calls or [])]
        return message.content, calls
    text_parts: list[str] = []
    saw_text = False
    by_index: dict[int, dict[str, str]] = {}
    with client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True}) as chunks:
        for chunk in chunks:
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content is not None:
                    saw_text = saw_text or bool(delta.content)
                    text_parts.append(delta.content)
                for tc in delta.tool_calls or []:
                    slot = by_index.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function and tc.function.name:
                        slot["name"] = tc.function.name
                    if tc.function and tc.function.arguments:
                        slot["arguments"] += tc.function.arguments
    calls = [(s["id"], s["name"], s["arguments"]) for _, s in sorted(by_index.items())]
    return ("".join(text_parts) if saw_text else None), calls


def run_turn(
    client: Any,
    *,
    model: str,
    stream: bool,
    wire_history: list[dict[str, Any]],
    prior_turns: list[Turn],
    user_text: str,
    run_tool: ToolRunner | None = None,
    tool_fn: Callable[..., Any] = get_weather,
) -> tuple[Turn, list[dict[str, Any]]]:
    """One agent turn: call the model, run tools until it answers; return (turn, new wire history).

    Args:
        client: An ``openai.OpenAI`` pointed at the fake server.
        model: The model name to request.
        stream: Use ``stream=True`` (with the usage chunk) for every call.
        wire_history: The non-system messages of earlier turns, as sent on the wire.
        prior_turns: The earlier turns (for the expected remembered messages).
        user_text: This turn's new user message.
        run_tool: Runs one tool call (may wrap it in a span); gets the record and a thunk.
        tool_fn: The tool itself. When it raises `WeatherServiceError` the app sends the
            error text back as the tool message's content (chat completions has no error flag).
    """
    run_tool = run_tool or _plain_tool
    turn = Turn(user_text=user_text, history=[m for t in prior_turns for m in t.remembered_after()])
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    messages += wire_history
    messages.append({"role": "user", "content": user_text})
    text, calls = _chat(client, model, messages, stream)
    while calls:
        step: list[ToolCallRecord] = []
        messages.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                    for cid, name, args in calls
                ],
            }
        )
        for cid, name, args in calls:
            decoded = json.loads(args)
            record = ToolCallRecord(cid, name, decoded)
            try:
                result = run_tool(record, lambda decoded=decoded: tool_fn(**decoded))
            except WeatherServiceError as exc:
                record.error, record.error_in_history = str(exc), "result"
                content = str(exc)
            else:
                record.result, record.has_result = result, True
                content = json.dumps(result)
            step.append(record)
            messages.append({"role": "tool", "tool_call_id": cid, "content": content})
        turn.add_tool_step(text, step)
        text, calls = _chat(client, model, messages, stream)
    turn.final_text = text or ""
    messages.append({"role": "assistant", "content": turn.final_text})
    return turn, messages[1:]


def run_two_turns(
    client: Any,
    *,
    model: str,
    stream: bool,
    wrap_turn: TurnWrapper | None = None,
    run_tool: ToolRunner | None = None,
    two_tools_and_a_failure: bool = False,
) -> list[Turn]:
    """Run the two scripted turns; return what was sent and received.

    Args:
        client: An ``openai.OpenAI`` pointed at the fake server.
        model: The model name to request.
        stream: Use ``stream=True`` (with the usage chunk) for every call.
        wrap_turn: Context manager factory around each turn (the app's agent span).
        run_tool: Runs one tool call (may wrap it in a span); gets the record and a thunk.
        two_tools_and_a_failure: Run that scenario's two turns (script them with
            `scripted_replies_two_tools_and_a_failure`) with the failing tool.
    """
    wrap_turn = wrap_turn or _no_span
    wire_history: list[dict[str, Any]] = []
    turns: list[Turn] = []
    users = (MULTI_TURN1_USER, MULTI_TURN2_USER) if two_tools_and_a_failure else (TURN1_USER, TURN2_USER)
    tool_fn = get_weather_or_fail if two_tools_and_a_failure else get_weather
    for index, user_text in enumerate(users):
        with wrap_turn(index, user_text):
            turn, wire_history = run_turn(
                client,
                model=model,
                stream=stream,
                wire_history=wire_history,
                prior_turns=turns,
                user_text=user_text,
                run_tool=run_tool,
                tool_fn=tool_fn,
            )
        turns.append(turn)
    return turns
