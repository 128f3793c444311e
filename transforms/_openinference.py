"""OpenInference (conventions.md §2): `openinference.span.kind` AGENT / LLM / TOOL / CHAIN,
flattened `llm.input_messages.{i}.message.*`, `input.value` / `output.value`, and the
`__REDACTED__` placeholder of the `OPENINFERENCE_HIDE_*` settings.

smolagents (`openinference-instrumentation-smolagents`) records what its agent memory renders
as text: the task as `New task:\n<task>`, tool calls as a `tool-call` message `Calling
tools:\n[<Python repr of the calls>]`, results as a `tool-response` message
`Observation:\n<text>`; the agent answers by calling its `final_answer` tool. Those are
decoded here (`_smolagents_memory`, `_smolagents_output`): the `final_answer` call is the
answer text, not a tool invocation of the run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from transforms._attrs import ContextKeys, indexed_list, output_text, set_path, tool_fact
from transforms._facts import Mark, NMessage, NPart, SpanFacts
from transforms._formats import is_python_repr
from transforms._json import decode_nested, flag_redacted, is_redacted, json_attr, parse_json_attr
from transforms._normalize import message_from_any, messages_from_any
from transforms.types import Span

__all__ = ["CONTEXT", "extract", "mark", "matches", "unflatten_messages"]

CONTEXT = ContextKeys(conversation=("group_id",), maps=("metadata",))
"""`metadata` (a JSON object) is OpenInference's; `group_id` the OpenAI Agents SDK's trace group."""
_INDEXED = re.compile(r"^(\d+)\.(.*)$")


def matches(span: Span) -> bool:
    """An `openinference.span.kind` attribute."""
    return "openinference.span.kind" in span.attributes


# Per prefix: what each attribute key seen so far says under it, `(message index, path)` of
# `{prefix}.{i}.{path}`, or None. Spans of one library repeat the same keys; each memo starts
# over past `_FLAT_MEMO_MAX` keys all the same.
_FLAT_KEYS: dict[str, dict[str, tuple[int, str] | None]] = {}
_FLAT_MEMO_MAX = 8192
_UNSEEN = (-1, "")


def _flat_key(key: str, prefix: str) -> tuple[int, str] | None:
    plen = len(prefix) + 1
    if not key.startswith(prefix) or len(key) <= plen or key[plen - 1] != ".":
        return None
    # `_INDEXED` without the regex for the common key: decimal digits, a dot, one line.
    idx, dot, path = key[plen:].partition(".")
    if not dot or not idx.isdecimal() or "\n" in path:
        m = _INDEXED.match(key[plen:])
        if m is None:
            return None
        idx, path = m.group(1), m.group(2)
    return int(idx), path


def unflatten_messages(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]] | None:
    """`{prefix}.{i}.message.*` attributes as a list of OpenAI-like message dicts, in index
    order (gaps skipped). None when there are none."""
    rows: dict[int, dict[str, Any]] = {}
    memo = _FLAT_KEYS.get(prefix)
    if memo is None or len(memo) >= _FLAT_MEMO_MAX:
        memo = _FLAT_KEYS[prefix] = {}
    for key, value in attrs.items():
        found = memo.get(key, _UNSEEN)
        if found is _UNSEEN:
            found = memo[key] = _flat_key(key, prefix)
        if found is not None:
            set_path(rows.setdefault(found[0], {}), found[1], value)
    if not rows:
        return None
    out: list[dict[str, Any]] = []
    for _, row in sorted(rows.items()):
        msg = row.get("message", {})
        if not isinstance(msg, dict):
            continue
        converted: dict[str, Any] = {"role": msg.get("role", "user")}
        contents = indexed_list(msg.get("contents"))
        if contents:
            parts = []
            for c in contents:
                mc = c.get("message_content", {}) if isinstance(c, dict) else {}
                kind = mc.get("type", "text")
                if kind == "text":
                    parts.append({"type": "text", "text": mc.get("text", "")})
                elif kind == "reasoning":
                    parts.append({"type": "reasoning", "text": mc.get("text", "")})
                else:  # image, audio, …: kept as an opaque part, never a tool call
                    parts.append({"type": f"other:{kind}"})
            converted["content"] = parts
        elif "content" in msg:
            converted["content"] = msg["content"]
        if msg.get("tool_call_id") is not None:
            converted["tool_call_id"] = msg["tool_call_id"]
        if msg.get("name") is not None:
            converted["name"] = msg["name"]
        calls = []
        for tc in indexed_list(msg.get("tool_calls")):
            call = tc.get("tool_call", {}) if isinstance(tc, dict) else {}
            fn = call.get("function", {}) if isinstance(call.get("function"), dict) else {}
            calls.append({"id": call.get("id"), "function": {
                "name": fn.get("name"), "arguments": fn.get("arguments")}})
        if calls:
            converted["tool_calls"] = calls
        out.append(converted)
    return out


# --------------------------------------------------------------------------- smolagents

_SMOLAGENTS_SCOPE = "openinference.instrumentation.smolagents"
FINAL_ANSWER_TOOL = "final_answer"
"""The tool a smolagents agent calls to return its answer."""
_TASK_PREFIX = "New task:\n"
_CALLS_PREFIX = "Calling tools:\n"
_OBSERVATION_PREFIX = "Observation:\n"
_WIRE_ROLES = {"tool-call": "assistant", "tool-response": "user"}
"""The roles smolagents sends its own memory roles as (`tool_role_conversions`)."""


def _is_smolagents(span: Span) -> bool:
    return span.scope_name == _SMOLAGENTS_SCOPE


def _raw_text(m: dict[str, Any]) -> str:
    content = m.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content
                         if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _answer_text(args: Any) -> str:
    """The answer a `final_answer` call carries (`{"answer": …}` or the bare value)."""
    args = decode_nested(args)
    if isinstance(args, dict) and "answer" in args:
        args = args["answer"]
    return args if isinstance(args, str) else "" if args is None else str(args)


def _rendered_calls(text: str) -> list[dict[str, Any]] | None:
    """The calls of a `Calling tools:\n[...]` message (a Python literal), else None."""
    try:
        calls = ast.literal_eval(text[len(_CALLS_PREFIX):].strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # TypeError:
        # an unhashable key or set member (`{[1]: 2}`) in a hostile or garbled message
        return None
    if not isinstance(calls, list) or not all(
            isinstance(c, dict) and isinstance(c.get("function"), dict) for c in calls):
        return None
    return calls


def _smolagents_memory(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """smolagents' memory as OpenInference recorded it, as the conversation it stands for.

    `New task:\n<task>` is the user's `<task>`; a `tool-call` message is an assistant message
    with those tool calls, except a `final_answer` call, which is an assistant message with
    the answer text; a `tool-response` `Observation:\n<text>` is the result of the calls
    before it (one observation per call, in the order smolagents joins them: call ids
    sorted), dropped after a `final_answer` call (it only repeats the answer). An empty
    assistant text (a streamed step that only called tools) is no message. Anything that
    does not parse stays the text it was, under the role smolagents sends it as.
    """
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for m in raw:
        role, text = m.get("role"), _raw_text(m)
        if role == "user" and text.startswith(_TASK_PREFIX):
            out.append({"role": "user", "content": text[len(_TASK_PREFIX):]})
            pending = []
        elif role == "tool-call" and text.startswith(_CALLS_PREFIX) and \
                (calls := _rendered_calls(text)) is not None:
            pending = []
            tools = []
            for c in calls:
                fn = c["function"]
                if fn.get("name") == FINAL_ANSWER_TOOL:
                    out.append({"role": "assistant",
                                "content": _answer_text(fn.get("arguments"))})
                    continue
                tools.append({"id": c.get("id"), "function": {
                    "name": fn.get("name"), "arguments": fn.get("arguments")}})
            if tools:
                out.append({"role": "assistant", "tool_calls": tools})
                pending = tools
        elif role == "tool-response" and text.startswith(_OBSERVATION_PREFIX):
            out.extend(_observations(text[len(_OBSERVATION_PREFIX):], pending))
            pending = []
        elif role == "assistant" and not text.strip() and not m.get("tool_calls"):
            continue  # the empty text a streamed tool-calling step recorded in memory
        else:
            out.append({**m, "role": _WIRE_ROLES.get(str(role), role)})
            pending = []
    return out


def _observations(text: str, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool messages for the observation of `calls` (none after a `final_answer` call)."""
    n = len(calls)
    if not n:
        return []
    ordered = sorted(calls, key=lambda c: str(c.get("id") or ""))
    lines = text.split("\n")
    chunks = [text] if n == 1 else lines if len(lines) == n else None
    if chunks is None:  # several results that cannot be told apart: all of it to each
        chunks = [text] * n
    return [{"role": "tool", "tool_call_id": c.get("id"), "name": c["function"].get("name"),
             "content": chunk} for c, chunk in zip(ordered, chunks)]


def _smolagents_output(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A model reply: a `final_answer` call is the answer text (the reply did not stop for a
    tool); a reply that calls other tools stopped for them."""
    out = []
    for m in raw:
        calls = m.get("tool_calls") or []
        answers = [c for c in calls if (c.get("function") or {}).get("name") == FINAL_ANSWER_TOOL]
        rest = [c for c in calls if c not in answers]
        m = dict(m)
        if answers:
            m["content"] = "\n".join(_answer_text(c["function"].get("arguments"))
                                     for c in answers)
        m.pop("tool_calls", None)
        if rest:
            m["tool_calls"] = rest
        m["finish_reason"] = "tool_calls" if rest else "stop"
        out.append(m)
    return out


def _messages(facts: SpanFacts, raw: list[dict[str, Any]] | None) -> list[NMessage] | None:
    if raw is None:
        return None
    msgs: list[NMessage] = []
    for r in raw:
        m = message_from_any(r)
        if m is None:
            continue
        if m.role == "tool" and not m.parts:
            m.parts = []
        msgs.append(m)
        for p in m.parts:
            if (p.kind == "text" and is_redacted(p.text)) or (
                    p.result is not None and is_redacted(p.result)):
                facts.redacted = True
    return msgs


def _io_value(facts: SpanFacts, a: dict[str, Any], key: str) -> tuple[Any, bool]:
    """`input.value`/`output.value`: (decoded value, usable)."""
    if key not in a:
        return None, False
    raw = a[key]
    mime = str(a.get(key.replace(".value", ".mime_type"), "") or "")
    if "json" in mime or (isinstance(raw, str) and raw.strip()[:1] in ("{", "[")):
        return json_attr(facts, raw, text_ok=False)
    return (None, False) if flag_redacted(facts, raw) else (raw, True)


def _request_messages(facts: SpanFacts, value: Any) -> list[NMessage] | None:
    # Some instrumentations only put the raw provider request in input.value
    # ({"messages": [...], "system": "..."}).
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        return None
    if any(isinstance(m, str) for m in value["messages"]):
        return None  # the reprs of a framework's message objects (smolagents)
    msgs = messages_from_any(value["messages"]) or []
    system = value.get("system")
    if isinstance(system, str) and system:
        msgs.insert(0, NMessage("system", [NPart("text", system)]))
    elif isinstance(system, list):
        m = message_from_any({"role": "system", "content": system})
        if m is not None:
            msgs.insert(0, m)
    return msgs


def _response_messages(value: Any) -> list[NMessage] | None:
    """Output messages from a raw provider response: Anthropic `{role, content: [blocks],
    stop_reason}` or OpenAI `{choices: [{message, finish_reason}]}`."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("choices"), list):
        out = []
        for choice in value["choices"]:
            if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
                m = message_from_any(choice["message"])
                if m is not None:
                    m.finish_reason = m.finish_reason or choice.get("finish_reason")
                    out.append(m)
        return out or None
    if value.get("role") == "assistant" and isinstance(value.get("content"), list):
        m = message_from_any({"role": "assistant", "content": value["content"]})
        if m is not None:
            stop = value.get("stop_reason")
            m.finish_reason = str(stop) if stop else None
            return [m]
    return None


_ROLES = {"AGENT": "agent", "TOOL": "tool", "LLM": "model", "CHAIN": "workflow"}
_ROOT_ONLY = frozenset({"workflow"})
"""Roles a span has only when it starts its trace (no parent at all)."""


def mark(span: Span) -> Mark:
    """AGENT (named by `agent.name`, else the span name without a `.run` suffix), TOOL, LLM,
    or a CHAIN that starts its trace as a workflow (a run root when no agent span is below
    it: an unnamed LangGraph graph is a CHAIN `LangGraph`; a CHAIN whose parent is missing
    is a piece of an invocation, not one); the other kinds are nothing of note. An
    AGENT span that is a node of a LangGraph graph (LangChain's instrumentation marks any
    runnable whose name contains "agent" as one, e.g. `create_react_agent`'s model node
    `agent`) is a step of the graph's invocation, not an agent of its own."""
    a = span.attributes
    role = _ROLES.get(str(a.get("openinference.span.kind", "")).upper(), "other")
    if role == "agent":
        if _is_graph_node(span):
            return Mark("other")
        return Mark(role, str(a.get("agent.name") or _run_span_agent(span.name)) or None)
    if role in _ROOT_ONLY and span.parent_span_id is not None:
        return Mark("other")
    if role == "workflow":
        return Mark(role, span.name or None)
    return Mark(role)


def _is_graph_node(span: Span) -> bool:
    """The span is a LangGraph node run (its metadata's `langgraph_node` is its name)."""
    meta = span.attributes.get("metadata")
    if not isinstance(meta, str) or "langgraph_node" not in meta:
        return False
    parsed = parse_json_attr(meta)
    return isinstance(parsed.value, dict) and parsed.value.get("langgraph_node") == span.name


def _run_span_agent(name: str) -> str:
    """The agent an unnamed AGENT span is about: smolagents names it `<agent name>.run`."""
    return name[: -len(".run")] if name.endswith(".run") and len(name) > 4 else name


def _agent_input(facts: SpanFacts, a: dict[str, Any]) -> None:
    value, ok = _io_value(facts, a, "input.value")
    if ok and isinstance(value, str) and not is_python_repr(value):
        facts.root_input = messages_from_any(value)
        facts.input_mode = "new"
    elif ok and (isinstance(value, list) or (isinstance(value, dict) and "messages" in value)):
        facts.root_input = messages_from_any(value)
        facts.input_mode = "conversation"
    elif ok and isinstance(value, dict) and isinstance(value.get("task"), str):
        # The bound arguments of an agent's `run(task, …)` (smolagents): the task is the
        # new user input, the other arguments are settings.
        facts.root_input = messages_from_any(value["task"])
        facts.input_mode = "new"
    else:
        facts.input_mode = "unusable"


def _agent_output(facts: SpanFacts, a: dict[str, Any]) -> None:
    out, ok = _io_value(facts, a, "output.value")
    if not ok and isinstance(out, str) and out and not facts.truncated and \
            not is_redacted(out) and out.strip()[:1] not in ("{", "["):
        ok = True  # plain text under a JSON mime type (Agno): the text itself
    if ok and not is_python_repr(out):  # streamed smolagents runs: the events' reprs
        facts.root_output = output_text(facts, out, ("text", "content", "output",
                                                     "final_output"))


def _wrapped_call_id(value: Any) -> Any:
    """The call id a tool output wrapped in a message object carries (a LangChain
    `ToolMessage` as `{type: tool, data}` or an `lc` object: `tool_call_id`)."""
    if not isinstance(value, dict):
        return None
    for inner in (value, value.get("data"), value.get("kwargs")):
        if isinstance(inner, dict) and inner.get("tool_call_id"):
            return inner["tool_call_id"]
    return None


def _exception_message(span: Span) -> str | None:
    """The message of the exception a span recorded (OpenInference records failures as an
    `exception` event; its status message may add the traceback)."""
    for e in span.events:
        if e.name == "exception":
            msg = e.attributes.get("exception.message")
            if isinstance(msg, str) and msg:
                return msg
    return None


def _call_messages(span: Span, facts: SpanFacts, a: dict[str, Any], value_key: str,
                   from_value: Callable[[Any], list[NMessage] | None], flat_key: str,
                   smolagents: Callable[[list[Any]], list[Any]]) -> list[NMessage] | None:
    """One side of a model call: the raw provider payload in `value_key` is the most faithful
    source (system prompt, tool_use / tool_result blocks); the flattened messages under
    `flat_key` are the fallback (smolagents' own wrapping undone)."""
    value, ok = _io_value(facts, a, value_key)
    msgs = from_value(value) if ok else None
    if msgs is not None:
        return msgs
    raw = unflatten_messages(a, flat_key)
    if raw is not None and _is_smolagents(span):
        raw = smolagents(raw)
    return _messages(facts, raw)


def _model_input(span: Span, facts: SpanFacts, a: dict[str, Any]) -> list[NMessage] | None:
    return _call_messages(span, facts, a, "input.value",
                          lambda value: _request_messages(facts, value),
                          "llm.input_messages", _smolagents_memory)


def _history_marked(value: Any) -> bool:
    """Whether a model call's request marks exactly which messages are remembered: every
    message carries a boolean `from_history` (Agno's messages do), the marked ones come first
    and at least one unmarked message follows them. Then the messages before this turn's new
    input are the remembered history, exactly, not inferred."""
    if not isinstance(value, str) or '"from_history"' not in value:
        return False
    parsed = parse_json_attr(value)
    msgs = parsed.value.get("messages") if parsed.ok and isinstance(parsed.value, dict) else None
    if not isinstance(msgs, list) or not msgs:
        return False
    said = [m for m in msgs if not (isinstance(m, dict) and m.get("role") in ("system", "developer"))]
    flags = [m.get("from_history") if isinstance(m, dict) else None for m in said]
    if not all(isinstance(f, bool) for f in flags):
        return False
    n = flags.index(False) if False in flags else len(flags)
    return n < len(flags) and not any(flags[n:])


def _model_output(span: Span, facts: SpanFacts, a: dict[str, Any]) -> list[NMessage] | None:
    return _call_messages(span, facts, a, "output.value", _response_messages,
                          "llm.output_messages", _smolagents_output)


def extract(span: Span) -> SpanFacts:
    """Read one OpenInference span."""
    a = span.attributes
    facts = mark(span).facts("openinference")
    if facts.role in ("agent", "workflow"):
        _agent_input(facts, a)
        _agent_output(facts, a)
        return facts
    if facts.role == "tool":
        name = a.get("tool.name") or span.name
        if name == FINAL_ANSWER_TOOL and _is_smolagents(span):
            return facts  # how the agent returns its answer, not a tool it used
        args, _ = _io_value(facts, a, "input.value")
        result, _ = _io_value(facts, a, "output.value")
        call = a.get("tool.id") or a.get("tool_call.id") or _wrapped_call_id(result)
        facts.tool = tool_fact(span, call=call, name=name, args=args, result=result,
                               has_result="output.value" in a, error=_exception_message(span))
        return facts
    if facts.role == "model":
        facts.model_name = str(a.get("llm.model_name") or "") or None
        facts.model_input = _model_input(span, facts, a)
        facts.remembered_exact = _history_marked(a.get("input.value"))
        facts.model_output = _model_output(span, facts, a)
        finish = a.get("llm.finish_reason")
        if facts.model_output and finish is not None:
            for m in facts.model_output:
                m.finish_reason = m.finish_reason or str(finish)
        if facts.model_input is None and facts.model_output is None:
            facts.capture_off = True
        return facts
    return facts
