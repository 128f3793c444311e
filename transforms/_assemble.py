"""Assembling one run, the builder's last job: a run root, the spans it owns and their model
calls -> the `ScorerRun` scorers see (DESIGN §3.4): system, new and remembered messages, the
output with every tool call and its result, the target (identity, context, flags)."""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import TypeAdapter

from scorers.types import (
    AgentRunInput,
    Message,
    RunTarget,
    ScorerRun,
    run_id_for,
)
from transforms._attrs import is_args_dump
from transforms._calls import has_content, repeated_event_calls, transcript_calls
from transforms._detection import conversation_id, request_context, resource_id
from transforms._facts import (
    SYSTEM_ROLES,
    ModelCall,
    NMessage,
    NPart,
    SpanFacts,
    StepFact,
    ToolFact,
)
from transforms._formats import is_python_repr
from transforms._json import decode_nested, is_redacted
from transforms._system_tags import tag_for
from transforms.reasons import Reason
from transforms.types import Span, ns_to_datetime

__all__ = ["assemble_run"]

_DERIVED_ORDER = ("systemMessages", "taggedSystemMessages", "inputMessages", "rememberedMessages")
_TOOL_FINISH = frozenset({"tool_call", "tool_calls", "tool-calls", "tool_use", "function_call"})


_Invocation = dict[str, Any]
"""A `ToolInvocation`'s fields (`_invocation`): filled in as results are found, validated
with the message that holds it."""


@dataclass(slots=True)
class _Inv:
    inv: _Invocation
    span_matched: bool = False


def _invocation(tool_call_id: str, tool_name: str, args: Any = None) -> _Invocation:
    """A tool call's `ToolInvocation` fields, no result yet."""
    return {"state": "call", "tool_call_id": tool_call_id, "tool_name": tool_name, "args": args,
            "result": None, "error_text": None}


def _is_exchange(m: NMessage) -> bool:
    """A message of a tool round: a tool result, or an assistant message calling tools."""
    return m.role == "tool" or (m.role == "user" and m.only_tool_results) or (
        m.role == "assistant" and any(p.kind == "tool_call" for p in m.parts))


def _trailing_user(msgs: list[NMessage]) -> tuple[int, int]:
    """(start, end) of the trailing user messages, skipping a tool round after them (a model
    call made after a tool ran sees the round after the user's question). Tool-result-only
    user messages (the Anthropic wire form) are never new input."""
    end = len(msgs)
    while end > 0 and _is_exchange(msgs[end - 1]):
        end -= 1
    if end < len(msgs) and (end == 0 or msgs[end - 1].role != "user"):
        end = len(msgs)  # not a round following a question: nothing to skip
    k = end
    while k > 0 and msgs[k - 1].role == "user" and not msgs[k - 1].only_tool_results:
        k -= 1
    return k, end


def _split_new_input(history: list[NMessage], new: list[NMessage]) -> tuple[int, bool]:
    """Where `new` starts in the model's `history`: (index, exact)."""
    n = len(new)
    texts = [m.text for m in new]
    if n and len(history) >= n and [m.text for m in history[-n:]] == texts:
        return len(history) - n, True
    if n:
        for j in range(len(history) - 1, -1, -1):
            if history[j].role == "user" and history[j].text == texts[0]:
                return j, False
    return len(history), not n


def _set_result(inv: _Invocation, p: NPart | ToolFact) -> None:
    # An error has no result: a result folded earlier (the error text an app sent back as a
    # plain tool message) must not survive as one.
    if isinstance(p, NPart):
        if p.is_error:
            inv["state"], inv["error_text"], inv["result"] = "output-error", str(p.result), None
        else:
            inv["state"], inv["result"], inv["error_text"] = "result", p.result, None
    elif p.error_text is not None:
        inv["state"], inv["error_text"], inv["result"] = "output-error", p.error_text, None
    elif p.has_result:
        # OTLP bytes become base64 text
        inv["state"], inv["result"], inv["error_text"] = "result", _jsonable(p.result), None


def _content(text: str | None, parts: list[Any]) -> Any:
    """A message's `MessageContent` as the fields pydantic validates it from, inside the
    `Message` it belongs to; its parts are field dicts too (`{"type": "text", "text"}`,
    `_invocation_part`). One validation of the message instead of a model per part."""
    return {"content": text, "parts": parts}


def _invocation_part(inv: _Invocation) -> dict[str, Any]:
    """A tool-invocation part as `_content` takes it: its fields."""
    return {"type": "tool-invocation", "tool_invocation": inv}


_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def _convert(msgs: list[NMessage], created_at: Any) -> list[Message]:
    """Normalized messages -> Mastra messages; tool results fold into their invocation.
    The messages are built as their fields (`_content`) and validated together at the end."""
    if not msgs:
        return []
    out: list[dict[str, Any]] = []
    by_id: dict[str, _Invocation] = {}
    waiting: list[_Invocation] = []

    def fold(p: NPart) -> None:
        inv = by_id.get(p.tool_call_id) if p.tool_call_id else None
        if inv is None:
            inv = next((i for i in waiting if i["state"] == "call" and (
                p.tool_name is None or i["tool_name"] == p.tool_name) and (
                p.tool_call_id is None or not i["tool_call_id"])), None)
        if inv is None:  # a result whose call we never saw: keep it, on an assistant message
            inv = _invocation(p.tool_call_id or "", p.tool_name or "unknown")
            part = _invocation_part(inv)
            if out and out[-1]["role"] == "assistant":
                out[-1]["content"]["parts"].append(part)
            else:
                out.append({"role": "assistant", "created_at": created_at,
                            "content": _content(None, [part])})
        _set_result(inv, p)
        if inv in waiting:
            waiting.remove(inv)

    for m in msgs:
        if m.role in SYSTEM_ROLES:
            continue
        if m.role == "tool" or (m.role == "user" and m.only_tool_results):
            for p in m.parts:
                if p.kind == "tool_result":
                    fold(p)
            continue
        role: Literal["user", "assistant"] = (
            "assistant" if m.role in ("assistant", "model", "ai", "bot") else "user")
        parts: list[dict[str, Any]] = []
        texts: list[str] = []
        for p in m.parts:
            if p.kind == "text" and p.text:
                parts.append({"type": "text", "text": p.text})
                texts.append(p.text)
            elif p.kind == "reasoning" and p.text:
                parts.append({"type": "reasoning", "reasoning": p.text})
            elif p.kind == "tool_call":
                inv = _invocation(p.tool_call_id or "", p.tool_name or "unknown", p.args)
                parts.append(_invocation_part(inv))
                if p.tool_call_id:
                    by_id[p.tool_call_id] = inv
                waiting.append(inv)
            elif p.kind == "tool_result":
                fold(p)
        if role == "assistant" and not texts and parts and out and out[-1]["role"] == "assistant" \
                and all(p["type"] == "tool-invocation" for p in parts):
            # One assistant turn split into a text item and a tool-call item (the Responses
            # API does this): the calls join the turn's message.
            out[-1]["content"]["parts"].extend(parts)
            continue
        out.append({"role": role, "created_at": created_at,
                    "content": _content("\n".join(texts) if texts else None, parts)})
    return _MESSAGES.validate_python(out)


def _fold_results(msgs: list[NMessage], invs: dict[str, _Inv]) -> None:
    """Give this run's tool calls the results a later model call was sent: by call id, and a
    result recorded without one (`gen_ai.tool.message` events without `id`) to the earliest
    call still waiting that an assistant message of the same input made before it."""
    if not invs:
        return
    waiting: list[_Invocation] = []
    for m in msgs:
        for p in m.parts:
            if p.kind == "tool_call" and p.tool_call_id in invs:
                called = invs[p.tool_call_id].inv
                if called["state"] == "call":
                    waiting.append(called)
            elif p.kind == "tool_result":
                slot = invs.get(p.tool_call_id) if p.tool_call_id else None
                inv = slot.inv if slot is not None else None if p.tool_call_id else next(
                    (i for i in waiting if p.tool_name is None or i["tool_name"] == p.tool_name),
                    None)
                if inv is not None and inv["state"] == "call":
                    _set_result(inv, p)
                if inv in waiting:
                    waiting.remove(inv)


def _used_facts(facts: Mapping[str, SpanFacts], calls: Mapping[str, list[ModelCall]],
                owned: list[str], root: str, root_used: bool) -> list[SpanFacts]:
    """The facts of the run's spans whose content the run may use: not a model-call span
    whose call was merged into another record of it (or that made none), not the agent
    span when none of its own content was used."""
    out = []
    for sid in owned:
        f = facts.get(sid)
        if f is None or (sid == root and not root_used):
            continue
        if f.is_model_call and f.role != "agent" and sid not in calls:
            continue
        out.append(f)
    return out


def _not_conversation(msgs: list[NMessage]) -> bool:
    """An input whose text is a Python repr or a call-arguments dump (a framework's view of
    its arguments): never the user's conversation."""
    for m in msgs:
        t = m.text
        if t and (is_python_repr(t) or (t.lstrip()[:1] == "{" and is_args_dump(decode_nested(t)))):
            return True
    return False


def _unglued(final_text: str | None, steps: list[tuple[Span, StepFact]]
             ) -> tuple[str, list[tuple[Span, StepFact]]] | None:
    """The answer when `final_text` is the run's steps' texts glued together (Mastra's agent and
    generation output join every step's text, a step an output processor rejected and retried
    included): (the last step's own text, the earlier steps that said something before calling
    tools: intermediate text). A step with text that called no tool and was not the last was
    rejected and asked again: it is neither. None when the final text is not glued that way
    (one step with text, or texts that do not add up to it)."""
    if not final_text or len(steps) < 2:
        return None
    last = steps[-1][1].text
    if not last or last == final_text or not final_text.endswith(last):
        return None
    if "".join(st.text for _, st in steps) != final_text:
        return None
    return last, [(sp, st) for sp, st in steps[:-1] if st.text and st.called_tools]


def _is_tool_finish(c: ModelCall) -> bool:
    out = c.facts.model_output or []
    reasons = {m.finish_reason for m in out if m.finish_reason}
    if reasons:
        return bool(reasons & _TOOL_FINISH)
    has_call = any(p.kind == "tool_call" for m in out for p in m.parts)
    has_text = any(p.kind == "text" and p.text for m in out for p in m.parts)
    return has_call and not has_text


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _jsonable(value: Any) -> Any:
    """Attribute values as JSON-safe values: OTLP bytes become base64 text."""
    if type(value) is dict:  # the common case: a flat map of plain values, copied in one go
        if _PLAIN.issuperset(map(type, value.values())):  # in C, no generator
            return dict(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def assemble_run(trace_id: str, spans: Mapping[str, Span], facts: Mapping[str, SpanFacts],
                 calls_by_span: Mapping[str, list[ModelCall]], root: str, owned: list[str],
                 reasons: Counter[str]) -> ScorerRun:
    """The `ScorerRun` of the run rooted at span `root`, which owns the spans `owned`."""
    rs = spans[root]
    rf = facts[root]
    bare = rf.role not in ("agent", "workflow")
    echoes = repeated_event_calls(spans, facts, calls_by_span, owned)
    run_calls = sorted((c for sid in owned if sid not in echoes
                        for c in calls_by_span.get(sid, ())), key=lambda c: (c.start, c.end))
    if not run_calls and rf.transcript and not bare:
        run_calls = transcript_calls(rf, rs.start_time_unix_nano)
    tools = [(spans[sid], facts[sid].tool) for sid in owned
             if sid in facts and facts[sid].tool is not None]
    tools.sort(key=lambda t: t[0].start_time_unix_nano)
    # The steps of a model call that spans several, each a span of its own (Mastra).
    steps = [(spans[sid], st) for sid in owned
             if sid in facts and (st := facts[sid].step) is not None]
    if len(steps) > 1:
        steps.sort(key=lambda t: (t[0].start_time_unix_nano, t[0].end_time_unix_nano))
    all_facts = [facts[sid] for sid in owned if sid in facts] + [c.facts for c in run_calls]
    derived: list[str] = []
    started, ended = rs.started_at, rs.ended_at

    # The first model call that shows its input (a span without content may come first when
    # the content went to events on another span, or hold only placeholders for it).
    first = next((c.facts for c in run_calls if has_content(c.facts.model_input)), None) or next(
        (c.facts for c in run_calls if c.facts.model_input),
        run_calls[0].facts if run_calls else None)
    fc_msgs = (first.model_input or []) if first else []
    if not bare and not has_content(fc_msgs) and has_content(rf.root_input):
        fc_msgs = []  # only placeholders (or a skeleton): the agent span's input is the source
    history = [m for m in fc_msgs if m.role not in SYSTEM_ROLES]
    if first is not None and first.stitched:
        derived.append("rememberedMessages")  # from the thread's earlier calls

    # System messages: explicit instructions, else the first model call's first system one.
    explicit = rf.instructions
    if explicit is None and first is not None:
        explicit = first.instructions
    sys_texts = [m.text for m in fc_msgs if m.role in SYSTEM_ROLES and m.text]
    tagged: dict[str, list[Any]] = {}  # SystemMessage fields (`_convert`: validated once)
    if explicit:
        system = list(explicit)
        joined = "\n".join(explicit).strip()
        rest = [t for t in sys_texts if t.strip() not in (joined, *[e.strip() for e in explicit])]
    else:
        system = sys_texts[:1]
        rest = sys_texts[1:]
        if rest:
            derived.append("systemMessages")
    if steps:
        # A system message a later step's prompt adds (a retrying output processor's feedback)
        # is one of the run's too, after the first call's.
        seen = {*sys_texts, *system}
        for _, st in steps:
            for t in st.system:
                if t not in seen:
                    seen.add(t)
                    rest.append(t)
    for t in rest:
        tag = (rf.system_tags.get(t) or (first.system_tags.get(t) if first else None)
               or tag_for(t) or "runtime")  # a framework header read back, whoever exported it
        tagged.setdefault(tag, []).append({"content": t})
    if tagged:
        derived.append("taggedSystemMessages")

    # New input and remembered history; `exchange` is a tool round of this invocation that
    # the first model call we see already had in its input (its calls belong to the output).
    root_in = None if bare else rf.root_input
    if root_in is not None and (_not_conversation(root_in) or (
            not has_content(root_in) and has_content(fc_msgs))):
        root_in = None  # an argument dump, or placeholders where the model call has content
    exchange: list[NMessage] = []
    if root_in is not None and rf.input_mode == "new":
        new_n = [m for m in root_in if m.role not in SYSTEM_ROLES]
        k, exact = _split_new_input(history, new_n)
        remembered_n = history[:k]
        exchange = history[k + len(new_n):]
        # Exact when the convention says so, or when the model saw nothing before the new
        # input (then nothing was remembered).
        if history and not (exact and (rf.remembered_exact or k == 0 or (
                first is not None and first.remembered_exact))):
            derived.append("rememberedMessages")
    elif root_in is not None and rf.input_mode == "conversation":
        conv = [m for m in root_in if m.role not in SYSTEM_ROLES]
        k, end = _trailing_user(conv)
        new_n = conv[k:end]
        if history:
            k = _split_new_input(history, new_n)[0]
            remembered_n = history[:k]
            exchange = history[k + len(new_n):]
        else:
            remembered_n = conv[:k]
        if not rf.remembered_exact:
            derived.extend(["inputMessages", "rememberedMessages"])
    else:
        k, end = _trailing_user(history)
        new_n, remembered_n, exchange = history[k:end], history[:k], history[end:]
        derived.extend(["inputMessages", "rememberedMessages"])
    if not all(_is_exchange(m) or m.role == "assistant" for m in exchange):
        exchange = []
    if not new_n:
        cut = rf.cut_input or (first.cut_input if first is not None else None)
        if cut:  # JSON cut by a length limit: keep the text rather than nothing
            new_n = [NMessage("user", [NPart("text", cut)])]
    input_messages = _convert(new_n, started)
    remembered = _convert(remembered_n,
                          ns_to_datetime(run_calls[0].start) if run_calls else started)
    if not input_messages:
        reasons[Reason.NO_INPUT] += 1

    # Output: intermediate text, every tool call under the root with its result, final text.
    # The last-ending call that did not stop for a tool wrote the final answer; its text is
    # never intermediate text, even when the root's output (the answer, perhaps formatted
    # differently: AI SDK objects) is what the run reports.
    final_text: str | None = None
    final_call: ModelCall | None = None
    finals = [c for c in run_calls if c.facts.model_output and not _is_tool_finish(c)]
    if finals:
        final_call = max(finals, key=lambda c: (c.end, c.start))
    root_answer = not bare and rf.root_output is not None and not is_redacted(rf.root_output)
    if root_answer:
        final_text = rf.root_output
    elif final_call is not None:
        texts = [m.text for m in final_call.facts.model_output or []
                 if m.role != "user" and m.text]
        final_text = texts[-1] if texts else None
    invs: dict[str, _Inv] = {}
    entries: list[tuple[int, int, Any]] = []
    seq = 0
    if (unglued := _unglued(final_text, steps)) is not None:
        final_text, lead_ins = unglued
        for sp, st in lead_ins:
            entries.append((sp.end_time_unix_nano, seq, {"type": "text", "text": st.text}))
            seq += 1
    if exchange:
        run_calls.insert(0, ModelCall(run_calls[0].start, run_calls[0].start, SpanFacts(
            rf.convention, role="model", model_output=[m for m in exchange
                                                       if m.role == "assistant"])))
    for c in run_calls:
        for m in c.facts.model_output or []:
            if m.role == "user":
                continue
            for p in m.parts:
                if p.kind == "text" and p.text and c is not final_call and p.text != final_text:
                    entries.append((c.end, seq, {"type": "text", "text": p.text}))
                    seq += 1
            for p in m.parts:
                if p.kind != "tool_call":
                    continue
                key = p.tool_call_id or f"#{len(invs)}"
                if key in invs:
                    continue
                inv = _invocation(p.tool_call_id or "", p.tool_name or "unknown", p.args)
                invs[key] = _Inv(inv)
                entries.append((c.end, seq, _invocation_part(inv)))
                seq += 1
    for c in run_calls:  # results fed back to later calls
        _fold_results(c.facts.model_input or [], invs)
    # Tool spans whose call id names a call first, so that one without an id (a failed tool
    # of a parallel round may have none) only picks among the calls left, by its arguments
    # when they tell, else in order.
    tools.sort(key=lambda t: t[1] is None or t[1].call_id is None or t[1].call_id not in invs)
    for span, tf in tools:
        assert tf is not None
        slot = invs.get(tf.call_id) if tf.call_id else None
        if slot is None:
            free = [v for v in invs.values() if not v.span_matched and (
                tf.name is None or v.inv["tool_name"] == tf.name) and (
                tf.call_id is None or not v.inv["tool_call_id"])]
            slot = next((v for v in free if tf.args is not None and v.inv["args"] == tf.args),
                        free[0] if free else None)
        if slot is None:
            inv = _invocation(tf.call_id or span.span_id, tf.name or "unknown",
                              _jsonable(tf.args))
            slot = invs[tf.call_id or span.span_id] = _Inv(inv)
            entries.append((span.start_time_unix_nano, seq, _invocation_part(inv)))
            seq += 1
        slot.span_matched = True
        if slot.inv["args"] is None and tf.args is not None:
            slot.inv["args"] = _jsonable(tf.args)
        if slot.inv["tool_name"] == "unknown" and tf.name:
            slot.inv["tool_name"] = tf.name
        if tf.error_text is not None or tf.has_result:
            _set_result(slot.inv, tf)
    entries.sort(key=lambda e: (e[0], e[1]))
    parts: list[Any] = [e[2] for e in entries]
    if final_text is None and not parts:
        cut = rf.cut_output or (final_call.facts.cut_output if final_call else None) or next(
            (c.facts.cut_output for c in reversed(run_calls) if c.facts.cut_output), None)
        final_text = cut  # JSON cut by a length limit: keep the text rather than nothing
    if final_text:
        parts.append({"type": "text", "text": final_text})
    output: list[Message] = []
    if parts or final_text is not None:
        output.append(Message(role="assistant", created_at=ended or started,
                              content=_content(final_text, parts)))
    else:
        reasons[Reason.NO_OUTPUT] += 1

    truncated = redacted = capture_off = False
    for f in all_facts:  # one pass for the three flags
        truncated = truncated or f.truncated
        redacted = redacted or f.redacted
        capture_off = capture_off or f.capture_off
    # A span without content counts only when the run lacks it: content recorded elsewhere
    # (e.g. events pointing at the agent span instead of the model span) is content.
    input_ok = any(m.text for m in input_messages)
    output_ok = bool(final_text) or any(
        t.args is not None for m in output for t in m.tool_invocations)
    capture_off = capture_off and not (input_ok and output_ok)
    if redacted and input_ok and output_ok:
        # A placeholder counts only in a record whose content the run uses: not in a model
        # call's second record (merged into the first, which had the content), nor on the
        # agent span when the run's input and answer came from its model calls.
        redacted = any(f.redacted for f in _used_facts(facts, calls_by_span, owned, root,
                                                       root_in is not None or root_answer)
                       ) or any(c.facts.redacted for c in run_calls)
    if redacted:
        reasons[Reason.REDACTED] += 1
    if capture_off:
        reasons[Reason.CAPTURE_OFF] += 1

    owned_spans = [spans[sid] for sid in owned]
    # An unnamed agent (e.g. a tool-runner span) is named after its model, like a bare run.
    entity_name = (rf.agent_name or rf.agent_id or rf.model_name) if not bare else (
        rf.model_name or rs.name)
    entity_id = (rf.agent_id or rf.agent_name or entity_name) if not bare else entity_name
    target = RunTarget(
        trace_id=trace_id, span_id=root, entity_type="agent_run", entity_id=entity_id,
        entity_name=entity_name,
        conversation_id=conversation_id(owned_spans), resource_id=resource_id(owned_spans),
        convention=rf.convention, resource=_jsonable(rs.resource), started_at=started,
        ended_at=ended, derived=sorted(set(derived), key=_DERIVED_ORDER.index), truncated=truncated,
        content_captured=not (redacted or capture_off),
    )
    system_messages: list[Any] = [{"content": t} for t in system]
    return ScorerRun(
        run_id=run_id_for(trace_id, root),
        input=AgentRunInput(input_messages=input_messages, remembered_messages=remembered,
                            system_messages=system_messages,
                            tagged_system_messages=tagged),
        output=output, request_context=_jsonable(request_context(rs)), target=target,
    )
