"""What the per-convention extractors produce, and the helpers they share.

Every extractor turns one span into `SpanFacts`: what that span says about an agent
invocation (identity, new input, output), a model call (its messages), or a tool call. The
run builder merges facts per agent root. Messages are normalized to OTel GenAI "parts"
(`NMessage`/`NPart`) whatever the convention wrote.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
from transforms.reasons import Reason
from transforms.types import Span

__all__ = [
    "SYSTEM_ROLES",
    "NMessage",
    "NPart",
    "Parsed",
    "Placeholder",
    "SpanFacts",
    "StepFact",
    "ToolFact",
    "ContextKeys",
    "Mark",
    "ModelCall",
    "call_id",
    "decode_nested",
    "first_attr",
    "flag_redacted",
    "indexed_list",
    "is_args_dump",
    "is_python_repr",
    "is_redacted",
    "json_attr",
    "message_from_any",
    "messages_from_any",
    "opt_str",
    "output_text",
    "parse_json_attr",
    "part_text",
    "read_by_role",
    "set_path",
    "tool_args",
    "tool_fact",
    "tool_output",
]

SYSTEM_ROLES = frozenset({"system", "developer"})
"""Message roles that carry instructions rather than conversation."""

# JSON deeper than this is kept as text: real conversations are shallow, and deep values
# would cost stack in every later step (pydantic, serialization).
MAX_JSON_DEPTH = 48


@dataclass(slots=True)
class NPart:
    """One normalized message part.

    `kind` is `text`, `reasoning`, `tool_call`, `tool_result` or `other`. `absent` marks a
    part whose content the library left out (capture off keeps the part skeleton).
    """

    kind: str
    text: str = ""
    tool_call_id: str | None = None
    tool_name: str | None = None
    args: Any = None
    result: Any = None
    is_error: bool = False
    absent: bool = False


@dataclass(slots=True)
class NMessage:
    """One normalized message: role plus parts (OTel GenAI shape)."""

    role: str
    parts: list[NPart] = field(default_factory=list)
    finish_reason: str | None = None

    @property
    def text(self) -> str:
        """The text parts joined (no separator between parts is added beyond newlines)."""
        parts = self.parts
        if len(parts) == 1:  # the common message: its one part's text, without a generator
            p = parts[0]
            return p.text if p.kind == "text" and p.text else ""
        return "\n".join(p.text for p in parts if p.kind == "text" and p.text)

    @property
    def only_tool_results(self) -> bool:
        """True when every part is a tool result (the Anthropic wire form of a tool reply)."""
        parts = self.parts
        if not parts:
            return False
        for p in parts:  # a loop, not all() over a generator: this runs for every message
            if p.kind != "tool_result":
                return False
        return True


@dataclass(slots=True)
class ToolFact:
    """A tool execution span: call id, name, arguments and result or error. `redacted`: the
    arguments or the result were a placeholder for hidden content (they are None here)."""

    call_id: str | None
    name: str | None
    args: Any = None
    result: Any = None
    has_result: bool = False
    error_text: str | None = None
    redacted: bool = False


@dataclass(slots=True)
class StepFact:
    """One step of a model call that spans several (a tool loop recorded as one generation,
    each step a span of its own: Mastra's `agent_step`): the step's own output text, whether it
    called tools, and the system messages of the step's own prompt (in order)."""

    text: str
    called_tools: bool = False
    system: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Mark:
    """What a span is, read without its content (the run roots need no more): its role and,
    for an agent span, the agent's identity. Every extractor starts its `SpanFacts` from
    its convention's mark, so the two never disagree."""

    role: str = "other"
    agent_name: str | None = None
    agent_id: str | None = None

    def facts(self, convention: str) -> SpanFacts:
        """Empty facts of `convention` with this role and identity."""
        # Positional (SpanFacts' first four fields): one per span, keywords cost a third more.
        return SpanFacts(convention, self.role, self.agent_name, self.agent_id)


@dataclass(slots=True)
class ModelCall:
    """One model call: a model-call span, or a call rebuilt from events or a transcript."""

    start: int
    end: int
    facts: SpanFacts


@dataclass(slots=True)
class Parsed:
    """A JSON attribute parsed: `value` is the decoded JSON, or the raw text when it did
    not parse (`truncated` when it looked like JSON, i.e. was cut mid-way)."""

    value: Any
    ok: bool
    truncated: bool = False
    too_deep: bool = False


@dataclass(slots=True)
class SpanFacts:
    """What one span says, as read by its convention's extractor.

    Attributes:
        convention: `genai`, `mastra`, `openinference`, `openllmetry`, `vercel`, `anthropic`,
            `langfuse`, `pydantic_ai` (DESIGN §3).
        role: `agent`, `workflow` (an agent root only when no agent span is around it),
            `model`, `tool` or `other`.
        agent_name / agent_id: the agent identity on agent spans.
        model_name: the model on model-call spans.
        instructions: explicit agent instructions (None = not given).
        root_input: the invocation's input messages on agent spans.
        input_mode: `new` (root_input holds only this turn), `conversation` (whole history:
            take its trailing user messages) or `unusable` (args dump, redacted, cut).
        root_output: the invocation's final text on agent spans.
        model_input / model_output: messages sent to / received from a model.
        remembered_exact: the model input minus `root_input` is exactly the history (or, for a
            `conversation` input, its trailing user messages are exactly the new input).
        transcript: the whole conversation an agent span records, this invocation's replies
            included (Pydantic AI `all_messages`): it stands in for model calls not seen.
        tool: the tool call a tool span executed.
        system_tags: tag per system-message text, when the convention names one.
        step: on a step span of a model call that spans several steps, what that step says.
        continues: a model call that sent only the new messages of a server-held thread
            (the Anthropic tool runner): its history is on the earlier calls of the thread.
        stitched: the builder gave `model_input` that history back (so it is inferred).
        truncated / redacted / capture_off: faithfulness flags for the run.
        cut_input / cut_output: the raw text of an input/output value whose JSON was cut
            by a length limit (kept when nothing better is known).
        reasons: reason codes to count for this span (e.g. `truncated_json`).
    """

    convention: str
    role: str = "other"
    agent_name: str | None = None
    agent_id: str | None = None
    model_name: str | None = None
    instructions: list[str] | None = None
    root_input: list[NMessage] | None = None
    input_mode: str = "conversation"
    root_output: str | None = None
    model_input: list[NMessage] | None = None
    model_output: list[NMessage] | None = None
    remembered_exact: bool = False
    transcript: list[NMessage] | None = None
    tool: ToolFact | None = None
    system_tags: dict[str, str] = field(default_factory=dict)
    step: StepFact | None = None
    continues: bool = False
    stitched: bool = False
    truncated: bool = False
    cut_input: str | None = None
    cut_output: str | None = None
    redacted: bool = False
    capture_off: bool = False
    reasons: list[Reason] = field(default_factory=list)

    @property
    def is_model_call(self) -> bool:
        """The span records a model call (its messages, or at least that it happened)."""
        return self.role == "model" or self.model_input is not None or (
            self.model_output is not None and self.role != "agent")


# --------------------------------------------------------------------------- JSON helpers


def _depth_ok(value: Any) -> bool:
    """True when containers nest at most `MAX_JSON_DEPTH` deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if d > MAX_JSON_DEPTH:
            return False
        children = v.values() if isinstance(v, dict) else v
        for x in children:
            if isinstance(x, (dict, list)):
                stack.append((x, d + 1))
    return True


def _text_depth_ok(text: str) -> bool:
    # Cheap pre-check in C: fewer opening brackets than the limit cannot nest deeper.
    return text.count("[") + text.count("{") <= MAX_JSON_DEPTH


# json.loads' own (C) scanner, called without json.loads' Python layers (BOM check, two
# whitespace regex matches, decode/raw_decode): this runs once per JSON attribute.
_scan_once: Callable[[str, int], tuple[Any, int]] = (
    json.JSONDecoder().scan_once)  # type: ignore[attr-defined]  # set in __init__, not in typeshed


# A JSON escape of a lone UTF-16 surrogate (`\ud800` without its pair) parses into a str that
# cannot be encoded as UTF-8: the run holding it could not be stored in the queue or exported,
# and the whole scheduling pass failed with it (found by bench/faults.py fuzz). Such escapes
# become U+FFFD before parsing; pairs (emoji) are kept. collector/otlp/_decode.py does the same to
# OTLP/JSON bodies.
_SURROGATE_HINT = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE = re.compile(
    r"(?<!\\)((?:\\\\)*)\\u(?:[dD][89abAB][0-9a-fA-F]{2}(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    r"|[dD][c-fC-F][0-9a-fA-F]{2})")


def _lone_surrogate(match: re.Match[str]) -> str:
    return match.group(0) if match.group(2) else match.group(1) + "\\ufffd"


def _loads(text: str) -> Any:
    """`json.loads` for text without surrounding whitespace (callers strip it).

    Same values and the same failures (ValueError, RecursionError) as `json.loads`, except
    that an escaped lone surrogate becomes U+FFFD.
    """
    if "\\u" in text and _SURROGATE_HINT.search(text):
        text = _SURROGATE_ESCAPE.sub(_lone_surrogate, text)
    try:
        value, end = _scan_once(text, 0)
    except StopIteration as exc:
        raise json.JSONDecodeError("Expecting value", text, exc.value) from None
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


# How `_parse_json` read a value: parsed (or already structured), plain text, JSON cut by a
# length limit, nested too deep.
_OK, _TEXT, _CUT, _DEEP = 0, 1, 2, 3


def _parse_json(value: Any) -> tuple[Any, int]:
    """`parse_json_attr` as (value, how): no `Parsed` built on the extractors' common path."""
    if not isinstance(value, str):
        if isinstance(value, (dict, list)) and not _depth_ok(value):
            return str(value)[:1000], _DEEP
        return value, _OK
    text = value.strip()
    if not text or text[0] not in "[{\"":
        return value, _TEXT
    try:
        decoded = _loads(text)
    except RecursionError:
        return value, _DEEP
    except ValueError:
        # A Python repr (`{'messages': [...]}`) or a placeholder (`[REDACTED]`) opens like
        # JSON but was never JSON: not cut.
        return value, _TEXT if is_python_repr(text) or is_placeholder(text) else _CUT
    if isinstance(decoded, (dict, list)) and not _text_depth_ok(text) and not _depth_ok(decoded):
        return value, _DEEP
    return decoded, _OK


def parse_json_attr(value: Any) -> Parsed:
    """Parse an attribute that may hold JSON text (or already structured values).

    Strings that start like JSON (`{`, `[`, `"`) but do not parse are kept as text and
    flagged `truncated` (attribute length limits cut them mid-string), unless they are a
    Python repr (`is_python_repr`) or a placeholder (`is_redacted`). Other strings are plain
    text. JSON nested deeper than `MAX_JSON_DEPTH` is kept as text (`too_deep`).
    """
    parsed, how = _parse_json(value)
    return Parsed(parsed, how == _OK, truncated=how == _CUT, too_deep=how == _DEEP)


def decode_nested(value: Any) -> Any:
    """Decode JSON strings again while they still parse (some libraries encode twice).

    A string that does not parse stays the raw string (DESIGN §2).
    """
    if not isinstance(value, str):  # the common call (decoded arguments): no loop set up
        return value
    for _ in range(4):
        if not isinstance(value, str):
            return value
        text = value.strip()
        if not text or text[0] not in "[{\"-0123456789tfn":
            return value
        try:
            decoded = _loads(text)
        except (ValueError, RecursionError):
            return value
        if isinstance(decoded, (dict, list)) and not _text_depth_ok(text) and \
                not _depth_ok(decoded):
            return value
        value = decoded
    return value


is_redacted = is_placeholder
"""True for the placeholders libraries put where content was withheld (`__REDACTED__`,
`[Scrubbed…]`, `[REDACTED]`, `<elided>`, `***`, …): `_formats.is_placeholder` itself (this
runs on every message part, so without a wrapper's call)."""


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


# --------------------------------------------------------------------------- messages


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


# --------------------------------------------------------------------------- extractor toolkit


@dataclass(frozen=True, slots=True)
class ContextKeys:
    """The attributes in which a convention records an invocation's context (reference §7.2,
    §7.4). Libraries propagate them onto every span of the trace, other libraries' spans
    included, so they are read on any span whatever convention reads its content.

    Attributes:
        conversation: keys holding the conversation (thread, session) id, in priority order.
        resource: keys holding the resource (user) id, in priority order.
        prefixes: key prefixes of flattened metadata maps (`requestContext`, prefix removed).
        maps: keys holding a metadata map as a JSON object (`requestContext`, merged).
    """

    conversation: tuple[str, ...] = ()
    resource: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    maps: tuple[str, ...] = ()


def opt_str(value: Any) -> str | None:
    """An attribute value as text; None when it is absent or empty."""
    return str(value) if value is not None and value != "" else None


def call_id(value: Any) -> str | None:
    """A tool call id as text, surrounding whitespace removed (some libraries pad it; the
    builder joins tool spans to message parts by exact id); None when absent or empty."""
    return str(value).strip() or None if value else None


def first_attr(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of `keys` with a non-empty value, as text; None when none has one."""
    for k in keys:
        v = attrs.get(k)
        if v is not None and v != "":
            return str(v)
    return None


def read_by_role(span: Span, facts: SpanFacts,
                 readers: Mapping[str, Callable[[Span, SpanFacts], None]]) -> SpanFacts:
    """`facts`, filled by the reader of its role (a role without one stays empty)."""
    reader = readers.get(facts.role)
    if reader is not None:
        reader(span, facts)
    return facts


def flag_redacted(facts: SpanFacts, value: Any) -> bool:
    """True (and `facts.redacted` set) when `value` is a redaction placeholder."""
    if is_redacted(value):
        facts.redacted = True
        return True
    return False


def json_attr(facts: SpanFacts, value: Any, *, text_ok: bool = True) -> tuple[Any, bool]:
    """A JSON-valued attribute, read the one way every extractor reads it: (value, usable).

    Absent (None): `(None, False)`. A redaction placeholder: `(None, False)`, the facts marked
    redacted. JSON cut by a length limit: `(raw text, False)`, the facts marked truncated and
    `truncated_json` counted. JSON nested too deep: `(raw text, False)`, `too_deep` counted.
    Text that is not JSON: `(text, text_ok)`. Anything else: `(decoded value, True)`.
    """
    if value is None:
        return None, False
    parsed, how = _parse_json(value)
    if how == _OK:  # no placeholder parses as JSON: checked only when the value did not
        return parsed, True
    if flag_redacted(facts, value):
        return None, False
    if how == _CUT:
        facts.truncated = True
        facts.reasons.append(Reason.TRUNCATED_JSON)
        return value, False
    if how == _DEEP:
        facts.reasons.append(Reason.TOO_DEEP)
        return value, False
    return value, text_ok


def output_text(facts: SpanFacts | None, value: Any,
                keys: tuple[str, ...] = ("content", "text", "output")) -> str | None:
    """A final text from a recorded output: the output itself when it is text (decoded again
    if it was encoded twice), else the first text under `keys` of an object, else None. With
    `facts`, a redaction placeholder is None and marks the facts redacted."""
    value = decode_nested(value)
    text: str | None = None
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict):
        text = next((value[k] for k in keys if isinstance(value.get(k), str)), None)
    return None if facts is not None and flag_redacted(facts, text) else text


def set_path(target: dict[str, Any], path: str, value: Any) -> None:
    """Un-flatten one indexed attribute: `"message.tool_calls.0.tool_call.function.name"`
    becomes nested dicts; numeric segments stay dict keys (lists later, `indexed_list`), so
    sparse indexes (0, 3) survive."""
    node = target
    keys = path.split(".")
    for k in keys[:-1]:
        nxt = node.get(k)
        if not isinstance(nxt, dict):
            nxt = {}
            node[k] = nxt
        node = nxt
    node[keys[-1]] = value


def indexed_list(d: Any) -> list[Any]:
    """The values of a `set_path` dict with numeric keys, in index order (gaps skipped)."""
    if not isinstance(d, dict):
        return []
    items = [(int(k), v) for k, v in d.items() if k.isdigit()]
    return [v for _, v in sorted(items)]


def _is_args_dump(value: Any) -> bool:
    return isinstance(value, dict) and set(value) <= {"args", "kwargs"}


def _framework_args(value: Any) -> Any:
    """Tool arguments as recorded, a framework's dump of them unwrapped: a LangChain callback
    dump (`{"input_str", "inputs", "kwargs", …}`) is its `inputs` (else its `input_str`), a
    call dump with both `args` (a list) and `kwargs` (an object), whatever else it holds
    (smolagents adds `sanitize_inputs_outputs`), is read as `tool_args` reads one."""
    value = decode_nested(value)
    dumped, payload = callback_payload(value)
    if dumped:
        return decode_nested(payload)
    if isinstance(value, dict) and isinstance(value.get("args"), list) and \
            isinstance(value.get("kwargs"), dict):
        args, kwargs = value["args"], value["kwargs"]
        if not args:
            return kwargs
        if len(args) == 1 and not kwargs:
            return decode_nested(args[0])
    return value


def tool_args(value: Any) -> Any:
    """Tool arguments that a Python decorator recorded as its call arguments
    (`{"args": [...], "kwargs": {...}}`): the keyword arguments, or the one positional
    argument; anything else as `tool_fact` reads it (decoded, a framework's dump
    unwrapped)."""
    if _is_args_dump(value):
        args, kwargs = value.get("args") or [], value.get("kwargs") or {}
        if not args and isinstance(kwargs, dict):
            return kwargs
        if len(args) == 1 and not kwargs:
            return decode_nested(args[0])
        return decode_nested(value)
    return _framework_args(value)


def is_args_dump(value: Any) -> bool:
    """A Python call-arguments dump (`{"args": [...], "kwargs": {...}}`), a LangChain callback
    handler's dump of a run's inputs (`{"inputs", "tags", "metadata", "kwargs"}`) or the
    `repr()` of Python objects (`is_python_repr`): never a conversation."""
    if isinstance(value, str):
        return is_python_repr(value)
    return bool(value) and (_is_args_dump(value) or callback_payload(value)[0])


def tool_fact(span: Span, *, call: Any, name: Any, args: Any, result: Any, has_result: bool,
              error: Any = None, failed: bool = False, python_args: bool = False) -> ToolFact:
    """The tool call a tool span executed, by the one rule every convention follows: a span
    with status ERROR (or that its convention marks `failed`, or whose result is a wrapper
    that says it failed: `tool_output`) has no result, and its error text is the convention's
    own message (`error`), else the status message, else the wrapped result's text, else
    "error". Ids go through `call_id`, names through `opt_str`; arguments and results are
    decoded, wrapped results and LangChain callback dumps unwrapped (`python_args`:
    arguments may be a decorator's call-arguments dump, see `tool_args`). Arguments or a
    result that are a placeholder for hidden content are None, and the fact `redacted`."""
    error_text = None
    value, wrapped_error = tool_output(result) if result is not None else (None, False)
    if failed or wrapped_error or span.status_code == "ERROR":
        fallback = value if wrapped_error and isinstance(value, str) and value else None
        error_text = str(error or span.status_message or fallback or "error")
        has_result = False
    args = tool_args(args) if python_args else _framework_args(args)
    redacted = False
    if is_redacted(args):
        args, redacted = None, True
    if is_redacted(value):
        value, redacted = None, True
    return ToolFact(call_id=call_id(call), name=opt_str(name), args=args, result=value,
                    has_result=has_result, error_text=error_text, redacted=redacted)
