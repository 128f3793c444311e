"""OTel GenAI semantic conventions (conventions.md §1): new attributes and the older
per-message events.

Spans: `invoke_agent` (agent root), `execute_tool` (tool), `chat` / `generate_content` /
`text_completion` (model calls) with `gen_ai.input.messages`, `gen_ai.output.messages` and
`gen_ai.system_instructions`. Events (≤v1.36, as span events or OTLP log records):
`gen_ai.{system,user,assistant,tool}.message`, `gen_ai.choice`, and the opt-in
`gen_ai.client.inference.operation.details`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from transforms._attrs import ContextKeys, first_attr, opt_str, tool_fact
from transforms._facts import Mark, ModelCall, NMessage, NPart, SpanFacts, ToolFact
from transforms._formats import PLACEHOLDER_FIRST
from transforms._json import decode_nested, is_redacted, json_attr, parse_json_attr
from transforms._normalize import call_id, message_from_any, messages_from_any, tool_output
from transforms.types import Span

__all__ = [
    "CONTEXT",
    "MESSAGE_EVENTS",
    "thread_id",
    "event_body",
    "mark",
    "matches",
    "calls_from_events",
    "extract",
    "instructions_from",
    "read_messages",
]

CONTEXT = ContextKeys(conversation=("gen_ai.conversation.id", "session.id"),
                      resource=("user.id",))
"""OTel's own keys (GenAI `gen_ai.conversation.id`; general `session.id`, `user.id`): read
before every library's."""
_THREAD_KEYS = ("gen_ai.conversation.id", "session.id")
_DETAIL_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")

MODEL_OPERATIONS = frozenset({"chat", "generate_content", "text_completion", "model_generation"})
MESSAGE_EVENTS = frozenset({
    "gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message",
    "gen_ai.tool.message", "gen_ai.choice", "gen_ai.client.inference.operation.details",
})


def matches(span: Span) -> bool:
    """`gen_ai.operation.name`, `gen_ai.input.messages`, or a `gen_ai.*` span event."""
    a = span.attributes
    return "gen_ai.operation.name" in a or "gen_ai.input.messages" in a or any(
        e.name.startswith("gen_ai.") for e in span.events)


def read_messages(facts: SpanFacts, value: Any) -> list[NMessage] | None:
    """Messages from a (JSON string or structured) messages attribute; flags the facts
    when the JSON was cut or content redacted."""
    if value is None:
        return None
    decoded, ok = json_attr(facts, value, text_ok=False)
    if not ok:
        return None
    msgs = messages_from_any(decoded)
    if msgs is not None:
        for m in msgs:
            for p in m.parts:
                if p.absent:
                    facts.capture_off = True  # content left out, the part skeleton kept
                elif p.kind == "text" and p.text[:1] in PLACEHOLDER_FIRST and is_redacted(p.text):
                    facts.redacted = True
    return msgs


def cut_text(value: Any) -> str | None:
    """The raw text of a JSON attribute that was cut mid-way by a length limit, else None."""
    if isinstance(value, str) and parse_json_attr(value).truncated:
        return value
    return None


def instructions_from(facts: SpanFacts, value: Any) -> list[str] | None:
    """`gen_ai.system_instructions`: a part array (OTel), or a plain string (Mastra)."""
    if value is None:
        return None
    v, ok = json_attr(facts, value)
    if not ok:  # cut or nested too deep: the text as it is; a placeholder is no text
        text = str(value)
        if is_redacted(text):
            facts.redacted = True
            return None
        return [text] if text else None
    if isinstance(v, str):
        return [v] if v else None
    if isinstance(v, dict):
        v = [v]
    texts: list[str] = []
    if isinstance(v, list):
        for p in v:
            if isinstance(p, str):
                texts.append(p)
            elif isinstance(p, dict):
                t = p.get("content", p.get("text"))
                if isinstance(t, str) and t:
                    texts.append(t)
    if any(is_redacted(t) for t in texts):  # a placeholder is redaction, never instructions
        facts.redacted = True
        texts = [t for t in texts if not is_redacted(t)]
    return texts or None


def _finish_reasons(value: Any) -> list[str]:
    parsed = parse_json_attr(value) if isinstance(value, str) else None
    if parsed is not None and parsed.ok:
        value = parsed.value
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(x) for x in value]
    return []


def mark(span: Span) -> Mark:
    """`invoke_agent` (with the agent's name and id), `execute_tool` (or a bare tool call id),
    a model operation or a span with messages and no operation; else nothing of note (a span
    that names another operation, e.g. a loop step, only repeats its calls' messages)."""
    a = span.attributes
    op = str(a.get("gen_ai.operation.name", "") or "")
    if op == "invoke_agent":
        return Mark("agent", opt_str(a.get("gen_ai.agent.name")), opt_str(a.get("gen_ai.agent.id")))
    if op == "execute_tool" or (not op and "gen_ai.tool.call.id" in a):
        return Mark("tool")
    if op in MODEL_OPERATIONS or (not op and (
            "gen_ai.input.messages" in a or "gen_ai.output.messages" in a)):
        return Mark("model")
    return Mark()  # another named operation (a loop step: Strands' execute_event_loop_cycle)


def extract(span: Span, convention: str = "genai") -> SpanFacts:
    """Read one span's GenAI attributes."""
    a = span.attributes
    facts = mark(span).facts(convention)
    if facts.role == "agent":
        facts.model_name = opt_str(a.get("gen_ai.request.model"))
        facts.instructions = instructions_from(facts, a.get("gen_ai.system_instructions"))
        facts.root_input = read_messages(facts, a.get("gen_ai.input.messages"))
        facts.input_mode = "conversation"
        if facts.root_input is None:
            facts.cut_input = cut_text(a.get("gen_ai.input.messages"))
        out = read_messages(facts, a.get("gen_ai.output.messages"))
        if out is None:
            facts.cut_output = cut_text(a.get("gen_ai.output.messages"))
        if out:
            texts = [m.text for m in out if m.role == "assistant" and m.text]
            facts.root_output = _answer(texts)
        if facts.root_input is None and out is None and not facts.truncated:
            agent_from_events(facts, span)
        return facts
    if facts.role == "tool":
        facts.tool = tool_from_attrs(span)
    elif facts.role == "model":
        facts.model_name = opt_str(a.get("gen_ai.request.model")) or opt_str(
            a.get("gen_ai.response.model"))
        fill_model_call(facts, a)
    return facts


def _answer(texts: list[str]) -> str | None:
    """The agent's final text: the last assistant text, without the line end an agent's
    string form may add (Strands' `str(AgentResult)` ends every text block with one)."""
    return texts[-1].rstrip("\n") if texts else None


_Memo = dict[str, tuple[Any, Any, SpanFacts]]
"""What `fill_model_call` read from each attribute of one call's records: (attribute value,
what was read, the facts the reading flagged), so that a record joining the call does not
read again what the earlier records held."""


def _read_once(memo: _Memo, key: str, facts: SpanFacts, value: Any,
               reader: Callable[[SpanFacts, Any], Any]) -> Any:
    """`reader(facts, value)`, or what it read before from the same value (its flags and
    reason codes applied to `facts` again, as a second reading would)."""
    if value is None:
        return reader(facts, value)
    hit = memo.get(key)
    if hit is None or hit[0] is not value:
        flagged = SpanFacts(facts.convention)
        hit = memo[key] = (value, reader(flagged, value), flagged)
    _, read, flagged = hit
    if flagged.truncated:
        facts.truncated = True
    if flagged.redacted:
        facts.redacted = True
    if flagged.capture_off:
        facts.capture_off = True
    if flagged.reasons:
        facts.reasons.extend(flagged.reasons)
    return read


def fill_model_call(facts: SpanFacts, a: dict[str, Any], memo: _Memo | None = None) -> None:
    """Model-call content from GenAI attributes (span attributes or an operation-details
    event's attributes). `memo`: kept across the records of one call, each read with the
    records before it (`calls_from_events`)."""
    if memo is None:
        facts.instructions = instructions_from(facts, a.get("gen_ai.system_instructions"))
        facts.model_input = read_messages(facts, a.get("gen_ai.input.messages"))
        facts.model_output = read_messages(facts, a.get("gen_ai.output.messages"))
    else:
        facts.instructions = _read_once(memo, "gen_ai.system_instructions", facts,
                                        a.get("gen_ai.system_instructions"), instructions_from)
        facts.model_input = _read_once(memo, "gen_ai.input.messages", facts,
                                       a.get("gen_ai.input.messages"), read_messages)
        facts.model_output = _read_once(memo, "gen_ai.output.messages", facts,
                                        a.get("gen_ai.output.messages"), read_messages)
    if facts.model_input is None:
        facts.cut_input = cut_text(a.get("gen_ai.input.messages"))
    if facts.model_output is None:
        facts.cut_output = cut_text(a.get("gen_ai.output.messages"))
    reasons = _finish_reasons(a.get("gen_ai.response.finish_reasons"))
    if facts.model_output and reasons:
        for i, m in enumerate(facts.model_output):
            if m.finish_reason is None and i < len(reasons):
                m.finish_reason = reasons[i]
    # Capture off: no content attributes, or (openlit) empty message lists. A real call always
    # sends something, so an empty input is never content.
    if not facts.model_input and not facts.model_output and not facts.truncated:
        facts.capture_off = True


def tool_from_attrs(span: Span) -> ToolFact:
    """A tool call from `gen_ai.tool.*` attributes and the span status; arguments and result
    missing there are read from the span's own events (`tool_events`)."""
    a = span.attributes
    args = a.get("gen_ai.tool.call.arguments", a.get("gen_ai.tool.input"))
    result = a.get("gen_ai.tool.call.result", a.get("gen_ai.tool.output"))
    has_result = "gen_ai.tool.call.result" in a or "gen_ai.tool.output" in a
    if (args is None or not has_result) and span.events:
        ev_args, ev_result, ev_has = tool_events(span)
        args = ev_args if args is None else args
        if not has_result:
            result, has_result = ev_result, ev_has
    return tool_fact(
        span, call=a.get("gen_ai.tool.call.id"), name=a.get("gen_ai.tool.name"),
        args=args, result=result, has_result=has_result,
        error=a.get("error.message") or _told_text(span, result, has_result)
        or span.status_message or a.get("error.type"))


def _told_text(span: Span, result: Any, has_result: bool) -> str | None:
    """The text a failed tool span recorded as its result: what the model was told of the
    failure (Strands: `Error: <type> - <message>`; the status has only the message)."""
    if span.status_code != "ERROR" or not has_result or result is None:
        return None
    value, _ = tool_output(result)
    return value if isinstance(value, str) and value else None


def tool_events(span: Span) -> tuple[Any, Any, bool]:
    """A tool span's run as its own ≤v1.36 events (Strands' default mode): the arguments in a
    `gen_ai.tool.message` event that names the call `id`, the result in a `gen_ai.choice`
    event's `message`; or as operation-details events: a `tool_call` part's arguments, a
    `tool_call_response` part's response. Returns (arguments, result, has result)."""
    args: Any = None
    result: Any = None
    has_result = False
    for e in span.events:
        ea = e.attributes
        if e.name == "gen_ai.tool.message" and "id" in ea and "content" in ea:
            args = ea["content"]
        elif e.name == "gen_ai.choice" and "id" in ea and "message" in ea:
            result, has_result = ea["message"], True
        elif e.name == "gen_ai.client.inference.operation.details":
            for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
                for p in _raw_parts(ea.get(key)):
                    if p.get("type") == "tool_call" and args is None:
                        args = p.get("arguments")
                    elif p.get("type") == "tool_call_response" and not has_result:
                        result, has_result = p.get("response", p.get("result")), True
    return args, result, has_result


def _raw_parts(value: Any) -> list[dict[str, Any]]:
    """The parts of every message of a (JSON) messages value, as written."""
    parsed = parse_json_attr(value) if isinstance(value, str) else None
    msgs = parsed.value if parsed is not None and parsed.ok else value
    out: list[dict[str, Any]] = []
    if isinstance(msgs, list):
        for m in msgs:
            parts = m.get("parts") if isinstance(m, dict) else None
            if isinstance(parts, list):
                out.extend(p for p in parts if isinstance(p, dict))
    return out


def agent_from_events(facts: SpanFacts, span: Span) -> None:
    """An `invoke_agent` span whose content went to its own span events (Strands): the
    input messages of its input events (the ≤v1.36 per-message events, or operation-details
    records), the final text of its `gen_ai.choice` or output messages, and its
    instructions from a system event when no attribute gave them."""
    evs = [(e.time_unix_nano, e.name, e.attributes, event_body(e.attributes))
           for e in span.events if e.name in MESSAGE_EVENTS]
    if not evs:
        return
    msgs: list[NMessage] = []
    out: list[NMessage] = []
    instructions: list[str] = []
    for c in calls_from_events(evs, facts.convention):
        f = c.facts
        msgs.extend(m for m in f.model_input or () if m.role not in ("system", "developer"))
        instructions.extend(m.text for m in f.model_input or ()
                            if m.role in ("system", "developer") and m.text)
        instructions.extend(f.instructions or ())
        out.extend(f.model_output or ())
        facts.redacted = facts.redacted or f.redacted
        facts.capture_off = facts.capture_off or f.capture_off
    facts.root_input = msgs or None
    facts.root_output = _answer([m.text for m in out if m.role == "assistant" and m.text])
    if facts.instructions is None and instructions:
        facts.instructions = instructions


# --------------------------------------------------------------------------- events


def _event_message(name: str, body: Any) -> NMessage | None:
    body = body if isinstance(body, dict) else ({"content": body} if body is not None else {})
    blocks = _block_list(body.get("content"))
    if blocks is not None and name == "gen_ai.tool.message" and "id" not in body:
        # Tool results as content blocks (Converse `toolResult`s carry their own ids).
        m = message_from_any({"role": "tool", "content": blocks})
        if m is not None and any(p.kind == "tool_result" for p in m.parts):
            return m
    if name == "gen_ai.choice":
        body = _choice_body(body)
    if name == "gen_ai.system.message":
        return message_from_any({"role": "system", "content": body.get("content", "")})
    if name == "gen_ai.user.message":
        return message_from_any({"role": body.get("role") or "user",
                                 "content": body.get("content", "")})
    if name == "gen_ai.assistant.message":
        return message_from_any({"role": "assistant", "content": body.get("content"),
                                 "tool_calls": body.get("tool_calls")})
    if name == "gen_ai.tool.message":
        content = body.get("content")
        return NMessage("tool", [NPart("tool_result", tool_call_id=call_id(body.get("id")),
                                       result=decode_nested(content))])
    if name == "gen_ai.choice":
        msg = body.get("message") if isinstance(body.get("message"), dict) else {}
        m = message_from_any({"role": msg.get("role") or "assistant",
                              "content": msg.get("content"),
                              "tool_calls": body.get("tool_calls", msg.get("tool_calls"))})
        if m is not None and body.get("finish_reason") is not None:
            m.finish_reason = str(body["finish_reason"])
        return m
    return None


def _choice_body(body: dict[str, Any]) -> dict[str, Any]:
    """A `gen_ai.choice` body with its reply as a `message` object: the spec's shape, or the
    reply itself as `message` (content blocks or a plain text: Strands), or the reply as
    `content` without any `message` (a Google GenAI Content: ADK)."""
    msg = body.get("message")
    if msg is None and "content" in body:
        return {**body, "message": {"content": body["content"]}}
    if msg is not None and not isinstance(msg, dict):
        return {**body, "message": {"content": msg}}
    return body


def thread_id(span: Span) -> str | None:
    """The id of the server-held thread a model-call span belongs to (its conversation id)."""
    return first_attr(span.attributes, _THREAD_KEYS)


def event_body(attrs: dict[str, Any]) -> Any:
    """The content of a per-message span event: its attributes, or the JSON of
    `gen_ai.event.content` when it has one (log records carry the content in their body).
    Span event attributes cannot hold lists, so a `content` or `message` that is a JSON
    list of content blocks (Strands writes `[{"text": …}, {"toolUse": …}]`) is decoded."""
    if "gen_ai.event.content" in attrs:
        parsed = parse_json_attr(attrs["gen_ai.event.content"])
        return parsed.value if parsed.ok else {"content": attrs["gen_ai.event.content"]}
    decoded: dict[str, Any] | None = None
    for k in ("content", "message"):
        v = attrs.get(k)
        if v is not None and (b := _block_list(v)) is not None:
            if decoded is None:
                decoded = {}
            decoded[k] = b
    return {**attrs, **decoded} if decoded else attrs


def _block_list(value: Any) -> list[dict[str, Any]] | None:
    """A JSON text (or a list) that is a list of content-block objects, decoded; else None."""
    if isinstance(value, str):
        if not value.startswith("[{"):
            return None
        parsed = parse_json_attr(value)
        value = parsed.value if parsed.ok else None
    if not isinstance(value, list) or not value:
        return None
    for b in value:
        if not isinstance(b, dict):
            return None
    return value


def calls_from_events(events: list[tuple[int, str, dict[str, Any], Any]],
                      convention: str = "genai") -> list[ModelCall]:
    """Model calls from GenAI events `(time_ns, name, attributes, body)` of one span, in time
    order. A new call starts at an input event that follows a `gen_ai.choice`, so events of
    several calls that point at one span (OpenLLMetry's log mode) stay apart. Consecutive
    operation-details records that each add content keys the others lack are one call; a
    record that repeats a key is another call (openlit's second record of a call)."""
    calls: list[ModelCall] = []
    current: ModelCall | None = None
    details: tuple[ModelCall, set[str], dict[str, Any], _Memo] | None = None  # the last record
    seen_choice = False
    for t, name, attrs, body in sorted(events, key=lambda e: e[0]):
        if name == "gen_ai.client.inference.operation.details":
            merged = dict(attrs)
            if isinstance(body, dict):
                merged.update({k: v for k, v in body.items() if k.startswith("gen_ai.")})
            keys = {k for k in _DETAIL_KEYS if k in merged}
            if details is not None and keys and not keys & details[1]:
                # One call's record split over several events, each holding what the
                # others lack (Strands: instructions, input, output): one call.
                details[1].update(keys)
                details[2].update(merged)
                fill_model_call(details[0].facts, details[2], details[3])
                details[0].end = t
                continue
            facts = SpanFacts(convention, role="model")
            memo: _Memo = {}
            fill_model_call(facts, merged, memo)
            calls.append(ModelCall(t, t, facts))
            details = (calls[-1], keys, merged, memo)
            current, seen_choice = None, False
            continue
        details = None
        msg = _event_message(name, body)
        if msg is None:
            continue
        absent = _content_absent(name, body)
        is_choice = name == "gen_ai.choice"
        if current is None or (seen_choice and not is_choice):
            current = ModelCall(t, t, SpanFacts(convention, role="model", model_input=[]))
            calls.append(current)
            seen_choice = False
        current.end = max(current.end, t)
        if is_choice:
            seen_choice = True
            if current.facts.model_output is None:
                current.facts.model_output = []
            current.facts.model_output.append(msg)
        else:
            assert current.facts.model_input is not None
            current.facts.model_input.append(msg)
        if absent:
            current.facts.capture_off = True
        for p in msg.parts:
            if p.kind == "text" and p.text[:1] in PLACEHOLDER_FIRST and is_redacted(p.text):
                current.facts.redacted = True
    return calls


def _content_absent(name: str, body: Any) -> bool:
    """With content capture off, instrumentations still emit the events, minus `content`
    (and minus tool-call arguments)."""
    b = body if isinstance(body, dict) else {}
    if name in ("gen_ai.system.message", "gen_ai.user.message", "gen_ai.tool.message"):
        return "content" not in b
    if name == "gen_ai.choice":
        b = _choice_body(b)
        msg: dict[str, Any] = b["message"] if isinstance(b.get("message"), dict) else {}
        calls = b.get("tool_calls", msg.get("tool_calls"))
        if calls:
            return any(isinstance(c, dict) and isinstance(c.get("function"), dict)
                       and "arguments" not in c["function"] for c in calls)
        return "content" not in msg
    if name == "gen_ai.assistant.message":
        calls = b.get("tool_calls")
        if calls:
            return any(isinstance(c, dict) and isinstance(c.get("function"), dict)
                       and "arguments" not in c["function"] for c in calls)
        return "content" not in b
    return False
