"""The attribute readers every extractor shares: which keys hold an invocation's context
(`ContextKeys`), text and id values, the reader per span role, a recorded output's text,
flattened indexed attributes, and a tool span's call (`tool_fact`, by the one rule every
convention follows).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from transforms._facts import SpanFacts, ToolFact
from transforms._formats import callback_payload, is_python_repr
from transforms._json import decode_nested, flag_redacted, is_redacted
from transforms._normalize import call_id, tool_output
from transforms.types import Span

__all__ = [
    "ContextKeys",
    "first_attr",
    "indexed_list",
    "is_args_dump",
    "opt_str",
    "output_text",
    "read_by_role",
    "set_path",
    "tool_args",
    "tool_fact",
]

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
