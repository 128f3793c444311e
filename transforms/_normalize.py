"""Messages normalized to OTel GenAI parts (`NMessage`/`NPart`), whatever shape a convention
wrote: OTel parts, OpenAI, Anthropic, AI SDK, LangChain, Converse or Google GenAI messages, tool
results in their wrappers, tool call ids. Placeholder texts become falsy `Placeholder`s.
"""

from __future__ import annotations

from typing import Any

from transforms._facts import NMessage, NPart
from transforms._formats import (
    LANGCHAIN_TYPES,
    PLACEHOLDER_FIRST,
    REPR_FIRST,
    callback_payload,
    content_blocks,
    is_placeholder,
    is_python_repr,
    langchain_message,
    typeless_part,
    unwrap_tool_output,
)
from transforms._json import decode_nested

__all__ = [
    "Placeholder",
    "call_id",
    "message_from_any",
    "messages_from_any",
    "part_text",
    "tool_output",
]

class Placeholder(str):
    """Text a library put where content was withheld (`is_redacted`), kept as a message part's
    text so that extractors still see it and flag the run redacted, but falsy: every
    `if part.text` (the run builder's, `NMessage.text`) reads it as no text at all."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False


def _text(value: str) -> str:
    """Message text as it is, or a `Placeholder` when it stands for hidden content."""
    if value[:1] in PLACEHOLDER_FIRST and is_placeholder(value):
        return Placeholder(value)
    return value


def call_id(value: Any) -> str | None:
    """A tool call id as text, surrounding whitespace removed (some libraries pad it; the
    builder joins tool spans to message parts by exact id); None when absent or empty."""
    return str(value).strip() or None if value else None


def part_text(value: Any) -> str:
    """Text of a content value that may be a string, a part list or a part object."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (part_text(x) for x in value if _is_text_part(x)) if t)
    if isinstance(value, dict):
        for key in ("text", "content", "value"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return ""


def _is_text_part(x: Any) -> bool:
    return isinstance(x, str) or (isinstance(x, dict) and x.get("type", "text") in (
        "text", "input_text", "output_text"))


def _tool_output(value: Any) -> Any:
    # AI SDK v5 tool outputs are {type: json|text|error-text|error-json|content, value}.
    if isinstance(value, dict) and "type" in value and "value" in value and len(value) <= 3:
        return value["value"]
    return value


def tool_output(value: Any) -> tuple[Any, bool]:
    """A tool's result as recorded, unwrapped: (result, is_error).

    A result wrapped in a message object (a LangChain `ToolMessage`, a Strands `ToolResult`,
    an MCP `CallToolResult`, `{"type": "tool", "content"}`: `_formats.unwrap_tool_output`) is
    its content, an error when the wrapper says so; a LangChain callback handler's dump
    (`{"output": …, "kwargs"}`) is its output; a bare list of text blocks (Strands, MCP) is
    their text (`_formats.content_blocks`). JSON text is decoded (also inside a wrapper);
    anything else stays as it is.
    """
    value = decode_nested(value)
    dumped, payload = callback_payload(value)
    if dumped:
        value = decode_nested(payload)
    wrapped = unwrap_tool_output(value)
    if wrapped is not None:
        return decode_nested(wrapped[0]), wrapped[1]
    blocks, inner = content_blocks(value)
    if blocks:
        return decode_nested(inner), False
    return value, False


_TEXT_KINDS = frozenset({"text", "input_text", "output_text"})
_CALL_KINDS = frozenset({"tool_call", "tool-call", "tool_use", "function_call",
                         "server_tool_call"})
_RESULT_KINDS = frozenset({"tool_call_response", "tool-result", "tool_result",
                           "function_call_output", "server_tool_call_response"})


def _norm_part(p: Any) -> NPart | None:
    """One part in any of the shapes the conventions use, normalized."""
    if isinstance(p, str):
        return NPart("text", _text(p))
    if not isinstance(p, dict):
        return None
    kind = p.get("type")
    if kind is None:
        rewritten = typeless_part(p)
        if rewritten is not None:
            p, kind = rewritten, rewritten["type"]
        else:
            kind = "text"
    elif not isinstance(kind, str):
        kind = str(kind)
    if kind in _TEXT_KINDS:
        if "content" in p:
            text = p["content"]
        elif "text" in p:
            text = p["text"]
        else:  # capture off: the skeleton stays
            return NPart("text", absent=True)
        if not isinstance(text, str):
            return NPart("text", part_text(text))
        if text[:1] in PLACEHOLDER_FIRST and is_placeholder(text):
            text = Placeholder(text)
        return NPart("text", text)
    if kind in ("reasoning", "thinking"):
        text = p.get("content", p.get("text", p.get("thinking", p.get("reasoning", ""))))
        return NPart("reasoning", text if isinstance(text, str) else "")
    if kind in _CALL_KINDS:
        cid = p.get("id", p.get("toolCallId", p.get("call_id")))
        name = p.get("name", p.get("toolName"))
        args = p.get("arguments", p.get("input", p.get("args")))
        return NPart("tool_call", tool_call_id=call_id(cid),
                     tool_name=str(name) if name is not None else None,
                     args=decode_nested(args))
    if kind in _RESULT_KINDS:
        cid = p.get("id", p.get("toolCallId", p.get("tool_use_id", p.get("call_id"))))
        result: Any = None
        absent = True
        for key in ("response", "result", "output", "content"):
            if key in p:
                result, absent = p[key], False
                break
        wrapped = unwrap_tool_output(result) if isinstance(result, dict) else None
        wrapped_error = False
        if wrapped is not None:
            result, wrapped_error = wrapped
        result = _tool_output(result)
        if isinstance(result, list) and result and all(_is_text_part(x) for x in result):
            result = part_text(result)  # Anthropic tool_result content blocks
        is_error = wrapped_error or bool(p.get("is_error")) or (
            isinstance(p.get("output"), dict) and str(p["output"].get("type", "")).startswith(
                "error"))
        name = p.get("name", p.get("toolName"))
        return NPart("tool_result", tool_call_id=call_id(cid),
                     tool_name=str(name) if name is not None else None,
                     result=decode_nested(result), is_error=is_error, absent=absent)
    return NPart("other")


def _norm_openai_tool_calls(calls: Any) -> list[NPart]:
    parts: list[NPart] = []
    if not isinstance(calls, list):
        return parts
    for c in calls:
        if not isinstance(c, dict):
            continue
        fn: dict[str, Any] = c["function"] if isinstance(c.get("function"), dict) else c
        cid = c.get("id", c.get("toolCallId"))
        parts.append(NPart("tool_call", tool_call_id=call_id(cid),
                           tool_name=fn.get("name", fn.get("toolName")),
                           args=decode_nested(fn.get("arguments", fn.get("args",
                                                                        fn.get("input"))))))
    return parts


def _norm_parts(items: list[Any]) -> list[NPart]:
    return [p for x in items if (p := _norm_part(x)) is not None]


def _repeats_call(text: str, calls: list[NPart]) -> bool:
    """The text says nothing but what a tool-call part of its message says: the call's id,
    or the JSON of its arguments, of the call, or of the message's calls."""
    s = text.strip()
    if s[:1] not in ("{", "["):
        for c in calls:
            if s == c.tool_call_id:
                return True
        return False
    value = decode_nested(s)
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or len(value) != len(calls):
        return False
    return all(_is_call_json(v, c) for v, c in zip(value, calls, strict=True))


def _is_call_json(value: Any, call: NPart) -> bool:
    if value == call.args:
        return True
    if not isinstance(value, dict):
        return False
    fn = value.get("function") if isinstance(value.get("function"), dict) else value
    assert isinstance(fn, dict)
    name = fn.get("name", fn.get("toolName"))
    args = decode_nested(fn.get("arguments", fn.get("args", fn.get("input"))))
    return name == call.tool_name and args == call.args


def _drop_call_echoes(parts: list[NPart]) -> list[NPart]:
    """Parts without tool calls repeated under one id and without text that only repeats a
    tool call of the same message (frameworks that put both on a message: LangChain's
    `tool_use` blocks next to `tool_calls`, a call's JSON written out as text). `parts` is
    returned as it is when nothing is dropped (the common case)."""
    calls = [p for p in parts if p.kind == "tool_call"]
    if not calls:
        return parts
    drop: list[NPart] = []
    if len(calls) > 1:
        seen: set[str] = set()
        for c in calls:
            if c.tool_call_id is not None:
                if c.tool_call_id in seen:
                    drop.append(c)
                seen.add(c.tool_call_id)
        if drop:
            calls = [c for c in calls if not any(c is d for d in drop)]
    for p in parts:
        if p.kind == "text" and p.text and _repeats_call(p.text, calls):
            drop.append(p)
    if not drop:
        return parts
    return [p for p in parts if not any(p is d for d in drop)]


class _NotAConversation(Exception):
    """A message list holds a Python repr: the whole list is no conversation."""


def message_from_any(m: Any) -> NMessage | None:
    """One message in OTel-parts, OpenAI, Anthropic, AI SDK, LangChain, Converse or Google
    GenAI shape, normalized. Placeholder texts become `Placeholder`s; a text that only
    repeats a tool call of the message is dropped. None for what is not a message (an `lc`
    object of another class, a Python repr, a value that is neither text nor an object)."""
    try:
        return _message(m)
    except _NotAConversation:
        return None


def _message(m: Any) -> NMessage | None:
    """`message_from_any`, raising `_NotAConversation` for a Python repr."""
    if not isinstance(m, dict):
        if isinstance(m, str):
            if m[:1] in REPR_FIRST and is_python_repr(m):
                raise _NotAConversation
            return NMessage("user", [NPart("text", _text(m))])
        return None
    if "role" not in m and ("lc" in m or m.get("type") in LANGCHAIN_TYPES):
        lc = langchain_message(m)
        if lc is None:
            return None
        m = lc
    role = m.get("role") or "user"
    if type(role) is not str:  # a str subclass becomes a plain str too
        role = str(role)
    finish = m.get("finish_reason")
    if finish is None and "finish_reason" not in m:
        finish = m.get("finishReason")
    parts: list[NPart] = []
    raw_parts = m.get("parts")
    if isinstance(raw_parts, list):
        parts = _norm_parts(raw_parts)
    else:
        content = m.get("content")
        if isinstance(content, str):
            if role == "tool":
                parts.append(NPart("tool_result",
                                   tool_call_id=call_id(m.get("tool_call_id", m.get("id"))),
                                   tool_name=m.get("name") or m.get("tool_name"),
                                   result=decode_nested(content),
                                   is_error=m.get("tool_call_error") is True or m.get(
                                       "status") == "error"))
            elif content:
                if content[:1] in PLACEHOLDER_FIRST and is_placeholder(content):
                    content = Placeholder(content)
                parts.append(NPart("text", content))
        elif isinstance(content, list):
            parts = _norm_parts(content)
        elif isinstance(content, dict):
            if isinstance(content.get("parts"), list):  # a Google GenAI Content: its role
                parts = _norm_parts(content["parts"])  # is the one the framework meant
                role = str(content.get("role") or role)
            elif (p := _norm_part(content)) is not None:
                parts.append(p)
        calls = m.get("tool_calls")
        if calls is None and "tool_calls" not in m:
            calls = m.get("toolCalls")
        if calls:
            parts.extend(_norm_openai_tool_calls(calls))
    if len(parts) > 1:
        parts = _drop_call_echoes(parts)
    return NMessage(role, parts, str(finish) if finish is not None else None)


def _generations(gens: list[Any]) -> list[NMessage] | None:
    """The messages of a LangChain `LLMResult` (`{"generations": [[{text, message,
    generation_info}]]}`): each generation's message (its `finish_reason` from
    `generation_info`), else its text as an assistant message. None for a batch of several."""
    if gens and isinstance(gens[0], list):
        if len(gens) != 1:
            return None
        gens = gens[0]
    out: list[NMessage] = []
    for g in gens:
        if not isinstance(g, dict):
            continue
        m = message_from_any(g["message"]) if isinstance(g.get("message"), dict) else None
        if m is None and isinstance(g.get("text"), str):
            m = NMessage("assistant", [NPart("text", _text(g["text"]))])
        if m is None:
            continue
        info = g.get("generation_info")
        if m.finish_reason is None and isinstance(info, dict) and info.get("finish_reason"):
            m.finish_reason = str(info["finish_reason"])
        out.append(m)
    return out


def messages_from_any(value: Any) -> list[NMessage] | None:
    """A message list from decoded JSON: a list, `{messages: [...]}` (a graph's state), a
    single message or a plain string (one user message). A batch of one conversation
    (`[[...]]`, LangChain chat-model inputs) is that conversation; a LangChain `LLMResult`
    (`{"generations": [[...]]}`) its generated messages. None when the value is not a
    conversation: a Python repr (`is_python_repr`) or a list holding one, a batch of
    several, anything else.
    """
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list):
            value = value["messages"]
        elif isinstance(value.get("generations"), list):
            return _generations(value["generations"])
    if isinstance(value, str):
        if is_python_repr(value):
            return None
        return [NMessage("user", [NPart("text", _text(value))])] if value else []
    if isinstance(value, dict) and ("role" in value or "parts" in value or "lc" in value or
                                    value.get("type") in LANGCHAIN_TYPES):
        value = [value]
    if not isinstance(value, list):
        return None
    if value and isinstance(value[0], list):
        if len(value) != 1:
            return None
        value = value[0]
    try:
        return [msg for m in value if (msg := _message(m)) is not None]
    except _NotAConversation:  # e.g. smolagents' ["ChatMessage(role=…)", …]
        return None
