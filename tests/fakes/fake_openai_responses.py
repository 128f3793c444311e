"""A fake OpenAI server that speaks the Responses API (and chat completions) on a loopback port.

``FakeOpenAIResponses`` answers ``POST /v1/responses`` from the same scripted replies as
``fake_openai.FakeOpenAI`` (``TextReply``, ``ToolCallReply``, ``ErrorReply``): a ``ToolCallReply``
with text becomes two output items, an assistant ``message`` and a ``function_call`` (the Responses
API's shape). Both the JSON response and the streaming form (``stream: true``: ``response.created``,
``response.output_item.added``, ``response.output_text.delta``,
``response.function_call_arguments.delta``, ``…done``, ``response.completed``) are served.
``POST /v1/chat/completions`` is still answered as ``FakeOpenAI`` does, from the same script.

Standard library only (plus ``fake_openai`` beside it), so it runs inside the capture virtual
environments::

    with FakeOpenAIResponses([ToolCallReply(...), TextReply("It is 14°C.")]) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="test")
        client.responses.create(model="gpt-4o-mini", input="hi")
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

try:  # as a sibling module (capture venvs put tests/fakes on sys.path) or as tests.fakes
    from _http import send_json, sse_event, stream_sse
    from fake_openai import (
        ErrorReply,
        FakeOpenAI,
        RecordedRequest,
        Reply,
        TextReply,
        ToolCall,
        ToolCallReply,
    )
except ImportError:  # pragma: no cover - depends on how the module is imported
    from tests.fakes._http import send_json, sse_event, stream_sse
    from tests.fakes.fake_openai import (
        ErrorReply,
        FakeOpenAI,
        RecordedRequest,
        Reply,
        TextReply,
        ToolCall,
        ToolCallReply,
    )

__all__ = [
    "ErrorReply",
    "FakeOpenAIResponses",
    "RecordedRequest",
    "Reply",
    "TextReply",
    "ToolCall",
    "ToolCallReply",
    "response_events",
    "response_object",
]


def _usage(reply: TextReply | ToolCallReply) -> dict[str, Any]:
    return {
        "input_tokens": reply.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": reply.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _output_items(reply: TextReply | ToolCallReply, number: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_fake{number:04d}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}],
            }
        )
    if isinstance(reply, ToolCallReply):
        for index, call in enumerate(reply.tool_calls):
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_fake{number:04d}_{index}",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                    "status": "completed",
                }
            )
    return items


def response_object(
    reply: TextReply | ToolCallReply, body: dict[str, Any], number: int, *, status: str = "completed"
) -> dict[str, Any]:
    """The Responses API ``response`` object for a scripted reply.

    Args:
        reply: The scripted reply.
        body: The request body (model, instructions, tools are echoed as the real API does).
        number: The request's sequence number (stable ids: ``resp_fake0001``…).
        status: ``completed``, or ``in_progress`` for the ``response.created`` event (no output).
    """
    done = status == "completed"
    return {
        "id": f"resp_fake{number:04d}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": str(body.get("model") or "gpt-4o-mini"),
        "output": _output_items(reply, number) if done else [],
        "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
        "previous_response_id": body.get("previous_response_id"),
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": _usage(reply) if done else None,
        "metadata": body.get("metadata") or {},
    }


def response_events(
    reply: TextReply | ToolCallReply, body: dict[str, Any], number: int, chunk: int = 8
) -> list[dict[str, Any]]:
    """The streaming events of one response, in order, with sequence numbers."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response_object(reply, body, number, status="in_progress")},
        {"type": "response.in_progress", "response": response_object(reply, body, number, status="in_progress")},
    ]
    for output_index, item in enumerate(_output_items(reply, number)):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": output_index,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            )
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            events.append(
                {
                    "type": "response.content_part.added",
                    "item_id": item["id"],
                    "output_index": output_index,
                    "content_index": 0,
                    "part": part,
                }
            )
            for i in range(0, len(text), chunk):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": output_index,
                        "content_index": 0,
                        "delta": text[i : i + chunk],
                        "logprobs": [],
                    }
                )
            events.append(
                {
                    "type": "response.output_text.done",
                    "item_id": item["id"],
                    "output_index": output_index,
                    "content_index": 0,
                    "text": text,
                    "logprobs": [],
                }
            )
            events.append(
                {
                    "type": "response.content_part.done",
                    "item_id": item["id"],
                    "output_index": output_index,
                    "content_index": 0,
                    "part": {**part, "text": text},
                }
            )
        else:
            args = item["arguments"]
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": output_index,
                    "item": {**item, "status": "in_progress", "arguments": ""},
                }
            )
            for i in range(0, len(args), chunk):
                events.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": output_index,
                        "delta": args[i : i + chunk],
                    }
                )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": output_index,
                    "name": item["name"],
                    "arguments": args,
                }
            )
        events.append({"type": "response.output_item.done", "output_index": output_index, "item": item})
    events.append({"type": "response.completed", "response": response_object(reply, body, number)})
    for sequence, event in enumerate(events):
        event["sequence_number"] = sequence
    return events


class FakeOpenAIResponses(FakeOpenAI):
    """``FakeOpenAI`` that also answers ``POST /v1/responses`` from the same reply script.

    Args:
        replies: Replies served in order, one per model request (either endpoint). When the
            script is exhausted the server answers 500.
        model: The model name echoed when the request names none.
        stream_chunk_size: Characters per streamed text or arguments delta.

    Attributes:
        requests: Every request received, in order.
    """

    _ROUTES = ("/v1/responses", "/v1/chat/completions")

    def _answer(
        self,
        http: BaseHTTPRequestHandler,
        route: str,
        body: dict[str, Any],
        reply: TextReply | ToolCallReply,
        number: int,
    ) -> None:
        """Serve one scripted reply: a Responses API response (JSON or events) or a completion."""
        if route == "/v1/chat/completions":
            super()._answer(http, route, body, reply, number)
        elif body.get("stream"):
            events = response_events(reply, body, number, self.stream_chunk_size)
            # The Responses API names each event after its type.
            stream_sse(http, [sse_event(json.dumps(e), e["type"]) for e in events])
        else:
            send_json(http, 200, response_object(reply, body, number))
