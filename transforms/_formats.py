"""Framework serialisation formats, rewritten into the shapes the toolkit already reads.

Agent frameworks record messages and tool results in their own object formats: LangChain's
`lc` constructor objects and message dicts (`messages_to_dict`, `model_dump`), Bedrock
Converse content blocks (Strands), tool results wrapped in message objects (a LangChain
`ToolMessage`, a Strands `ToolResult`, an MCP `CallToolResult`). The functions here recognise
them by cheap key checks and rewrite them into plain dicts (OpenAI-like messages, typed
parts); `transforms._normalize` normalizes those. Placeholders for hidden content and Python
reprs are recognised here too. Nothing here imports the toolkit (`_json`, `_normalize`, `_attrs`).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "LANGCHAIN_TYPES",
    "PLACEHOLDER_FIRST",
    "REPR_FIRST",
    "callback_payload",
    "content_blocks",
    "typeless_part",
    "is_placeholder",
    "is_python_repr",
    "langchain_message",
    "unwrap_tool_output",
]

# --------------------------------------------------------------------------- placeholders

# Prefixes recognised since the first captures: kept exactly (Logfire's "[Scrubbed due to
# 'password']" and OpenInference's "__REDACTED__" carry text after the marker).
_PLACEHOLDER_PREFIXES = ("__REDACTED__", "[Scrubbed", "<redacted>", "[REDACTED]")
# Whole-value placeholders, compared lower-cased (only values this short are lower-cased).
_PLACEHOLDER_WORDS = frozenset({
    "[redacted]", "<redacted>", "(redacted)", "{redacted}", "__redacted__", "<elided>",
    "[elided]", "(elided)", "{elided}", "[scrubbed]",
})
_MAX_WORD = max(len(w) for w in _PLACEHOLDER_WORDS)
PLACEHOLDER_FIRST = frozenset("_[<({R*" + " \t\r\n")
"""The characters a placeholder can start with (a cheap first test before `is_placeholder`)."""


def is_placeholder(value: Any) -> bool:
    """True for text a library put where content was withheld.

    `__REDACTED__`, `[Scrubbed…]`, `<redacted>…` and `[REDACTED]…` as a prefix; a whole value
    that is `REDACTED`, a bracketed `redacted`/`elided` in any case (`<elided>`, `[Redacted]`,
    …) or only asterisks (three or more).
    """
    # `not value` would miss the toolkit's falsy Placeholder; most text fails the first check.
    if not isinstance(value, str) or value[:1] not in PLACEHOLDER_FIRST:
        return False
    s = value.strip()
    if s.startswith(_PLACEHOLDER_PREFIXES):
        return True
    n = len(s)
    if n < 3 or n > _MAX_WORD:
        return False
    return s == "REDACTED" or s.lower() in _PLACEHOLDER_WORDS or not s.strip("*")


# --------------------------------------------------------------------------- Python reprs

# After any opening brackets: a single-quoted dict key (`{'messages': …`) or a class call with
# a keyword, a quoted or an empty argument list (`HumanMessage(content=…`, `Task('…')`).
_REPR_HEAD = re.compile(
    r"[\s\[{(]*(?:'[^'\n]{0,200}'\s*:|[A-Za-z_][\w.]{0,80}\((?:\s*\w+=|\s*['\"]|\)))")
REPR_FIRST = frozenset("[{(ABCDEFGHIJKLMNOPQRSTUVWXYZ" + " \t\r\n")
"""The characters a Python repr can start with (a cheap first test before `is_python_repr`)."""


def is_python_repr(value: Any) -> bool:
    """True for the `repr()` of Python objects recorded as text.

    `"{'messages': [HumanMessage(content='hi')]}"`, `"[HumanMessage(content=…)]"`,
    `"Task(description=…)"`, dict reprs with single-quoted keys: a framework's view of its
    arguments, never a conversation. Only text that opens with a bracket or a capital letter
    and closes with a bracket is examined further.
    """
    if not isinstance(value, str):
        return False
    s = value.strip()
    if len(s) < 4 or s[0] not in REPR_FIRST or s[-1] not in ")]}":
        return False
    return _REPR_HEAD.match(s) is not None


# --------------------------------------------------------------------------- LangChain

# What a LangChain callback handler records for a run (OpenLLMetry's `traceloop.entity.input`
# / `.output` under LangChain): the run's inputs or outputs next to its tags, metadata and
# keyword arguments.
_CALLBACK_KEYS = frozenset({"inputs", "outputs", "output", "input_str", "tags", "metadata",
                            "kwargs"})
_CALLBACK_PAYLOADS = ("inputs", "input_str", "outputs", "output")


def callback_payload(value: Any) -> tuple[bool, Any]:
    """(True, payload) for a LangChain callback handler's dump of a run's inputs or outputs
    (`{"inputs": …, "tags", "metadata", "kwargs"}`, a tool's `{"input_str", "inputs", …}`,
    `{"output": …, "kwargs"}`): the payload is `inputs`, else `input_str`, else `outputs`,
    else `output`. (False, None) for anything else."""
    if not isinstance(value, dict) or "kwargs" not in value or not value.keys() <= _CALLBACK_KEYS:
        return False, None
    for key in _CALLBACK_PAYLOADS:
        if key in value:
            return True, value[key]
    return False, None


# Message type (`kwargs.type`, `data.type`, `model_dump()["type"]`) and class name -> role.
_LC_ROLES = {
    "human": "user", "ai": "assistant", "system": "system", "tool": "tool",
    "function": "tool", "developer": "developer",
    "HumanMessage": "user", "HumanMessageChunk": "user",
    "AIMessage": "assistant", "AIMessageChunk": "assistant",
    "SystemMessage": "system", "SystemMessageChunk": "system",
    "ToolMessage": "tool", "ToolMessageChunk": "tool",
    "FunctionMessage": "tool", "FunctionMessageChunk": "tool",
    "ChatMessage": "", "ChatMessageChunk": "", "chat": "",
}
LANGCHAIN_TYPES = frozenset(_LC_ROLES)
"""Values of a message dict's `type` that mark it a LangChain message (no `role` key)."""


def _lc_fields(m: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(role key, fields) of a LangChain message in any of its serialisations."""
    if "lc" in m:  # dumpd(): {"lc": 1, "type": "constructor", "id": [..., "AIMessage"], ...}
        ident, kwargs = m.get("id"), m.get("kwargs")
        if m.get("type") != "constructor" or not isinstance(kwargs, dict) or \
                not isinstance(ident, list) or not ident:
            return None
        return str(ident[-1]), kwargs
    kind = m.get("type")
    if not isinstance(kind, str) or kind not in _LC_ROLES:
        return None
    data = m.get("data")
    if isinstance(data, dict) and "content" not in m:  # messages_to_dict(): {type, data}
        return kind, data
    return kind, m


def langchain_message(m: dict[str, Any]) -> dict[str, Any] | None:
    """A LangChain message as an OpenAI-like message dict, else None.

    Reads `lc` constructor objects (`dumpd`), `{"type", "data"}` (`messages_to_dict`) and
    `model_dump()` dicts. Tool calls come from `tool_calls` (`{name, args, id}`), else from
    `additional_kwargs.tool_calls` (OpenAI form). A `ToolMessage` becomes one tool-result
    part with its `tool_call_id`; `status: "error"` marks it an error.
    """
    found = _lc_fields(m)
    if found is None:
        return None
    key, f = found
    role = _LC_ROLES.get(key)
    if role is None:  # an lc object of another class (a prompt, a document, …)
        return None
    if not role:  # ChatMessage: the role is a field
        role = str(f.get("role") or "user")
    content = f.get("content")
    if role == "tool":
        return {"role": "tool", "content": [{
            "type": "tool_call_response", "id": f.get("tool_call_id"), "name": f.get("name"),
            "response": content, "is_error": f.get("status") == "error"}]}
    out: dict[str, Any] = {"role": role, "content": content}
    calls = f.get("tool_calls")
    if not calls:
        extra = f.get("additional_kwargs")
        calls = extra.get("tool_calls") if isinstance(extra, dict) else None
    if calls:
        out["tool_calls"] = calls
    return out


# --------------------------------------------------------------------------- Converse blocks


def _converse_content(blocks: Any) -> Any:
    """A Converse tool result's content: one `{"json"}` block is its value, text blocks are
    their text joined by newlines; anything else is kept as it is."""
    if not isinstance(blocks, list):
        return blocks
    if len(blocks) == 1 and isinstance(blocks[0], dict) and "json" in blocks[0]:
        return blocks[0]["json"]
    texts = [b.get("text") for b in blocks if isinstance(b, dict)]
    if texts and len(texts) == len(blocks) and all(isinstance(t, str) for t in texts):
        return "\n".join(t for t in texts if isinstance(t, str))
    return blocks


def typeless_part(p: dict[str, Any]) -> dict[str, Any] | None:
    """A content block without `type` (Bedrock Converse, Strands; Google GenAI `Part`, ADK)
    as a typed part, else None (a plain `{"text"}` block: the toolkit reads it as text).

    Converse: `{"toolUse": {toolUseId, name, input}}` is a tool call, `{"toolResult":
    {toolUseId, content, status}}` a tool result (error when `status` is `error`),
    `{"reasoningContent": {"reasoningText": {"text"}}}` reasoning. Google GenAI:
    `{"function_call": {id, name, args}}` (or `functionCall`) a tool call,
    `{"function_response": {id, name, response}}` a tool result, `{"text", "thought": true}`
    reasoning; a `model_dump()` of a `Part` carries every field, unset ones as null, so
    fields are read by value. Images, documents, files, code, cache points and the like are
    `other`.
    """
    text = p.get("text")
    if isinstance(text, str):
        return {"type": "reasoning", "text": text} if p.get("thought") is True else None
    use = p.get("toolUse")
    if isinstance(use, dict):
        return {"type": "tool_call", "id": use.get("toolUseId"), "name": use.get("name"),
                "arguments": use.get("input")}
    res = p.get("toolResult")
    if isinstance(res, dict):
        return {"type": "tool_call_response", "id": res.get("toolUseId"),
                "response": _converse_content(res.get("content")),
                "is_error": res.get("status") == "error"}
    call = p.get("function_call") or p.get("functionCall")
    if isinstance(call, dict):
        return {"type": "tool_call", "id": call.get("id"), "name": call.get("name"),
                "arguments": call.get("args")}
    resp = p.get("function_response") or p.get("functionResponse")
    if isinstance(resp, dict):
        return {"type": "tool_call_response", "id": resp.get("id"), "name": resp.get("name"),
                "response": resp.get("response")}
    reasoning = p.get("reasoningContent")
    if isinstance(reasoning, dict):
        rt = reasoning.get("reasoningText")
        rtext = rt.get("text") if isinstance(rt, dict) else None
        return {"type": "reasoning", "text": rtext if isinstance(rtext, str) else ""}
    if p.get("content") is None and any(p.get(k) is not None for k in _TYPELESS_OTHER):
        return {"type": "other"}
    return None


_TYPELESS_OTHER = (
    "image", "document", "video", "cachePoint", "guardContent", "citationsContent", "json",
    "inline_data", "inlineData", "file_data", "fileData", "executable_code", "executableCode",
    "code_execution_result", "codeExecutionResult")


# --------------------------------------------------------------------------- tool outputs

_MCP_KEYS = frozenset({"content", "isError", "structuredContent", "meta", "_meta"})


def _blocks_text(content: Any) -> Any:
    """Content blocks (`{"type": "text", "text"}` or `{"text"}`, `{"json"}`) as their text
    or value; other content as it is."""
    if not isinstance(content, list):
        return content
    if content and all(isinstance(b, dict) and b.get("type", "text") == "text"
                       and isinstance(b.get("text"), str) for b in content):
        return "\n".join(b["text"] for b in content)
    return _converse_content(content)


_TEXT_BLOCK_KEYS = frozenset({"type", "text", "annotations", "meta", "_meta", "citations"})


def content_blocks(value: Any) -> tuple[bool, Any]:
    """(True, value) for a bare list of content blocks standing for one tool result: text
    blocks (`{"text"}` Converse, `{"type": "text", "text"}` MCP/Anthropic, nothing else in
    them) are their text joined by newlines, one `{"json": v}` block is `v`. (False, None)
    for anything else (a list a tool returned as its data stays a list)."""
    if not isinstance(value, list) or not value:
        return False, None
    if len(value) == 1 and isinstance(value[0], dict) and value[0].keys() == {"json"}:
        return True, value[0]["json"]
    for b in value:
        if not isinstance(b, dict) or not isinstance(b.get("text"), str) or \
                b.get("type", "text") != "text" or not b.keys() <= _TEXT_BLOCK_KEYS:
            return False, None
    return True, "\n".join(b["text"] for b in value)


def unwrap_tool_output(value: Any) -> tuple[Any, bool] | None:
    """(content, is_error) of a tool output wrapped in a message object, else None.

    A LangChain `ToolMessage` (`lc` object or dict, `status: "error"`), a `{"type": "tool",
    "content"}` message, a Strands `ToolResult` (`{toolUseId, status, content: [{text} |
    {json}]}`) or an MCP `CallToolResult` (`{content: [{type: text, text}], isError}`). The
    content is the wrapped value (text blocks joined); JSON text is left to the caller.
    """
    if not isinstance(value, dict):
        return None
    if "lc" in value or value.get("type") == "tool":
        found = _lc_fields(value)
        if found is None or _LC_ROLES.get(found[0]) != "tool":
            return None
        f = found[1]
        return _blocks_text(f.get("content")), f.get("status") == "error"
    if "toolUseId" in value and isinstance(value.get("content"), list):
        return _converse_content(value["content"]), value.get("status") == "error"
    if "isError" in value and isinstance(value.get("content"), list) and \
            value.keys() <= _MCP_KEYS:
        return _blocks_text(value["content"]), bool(value["isError"])
    return None
