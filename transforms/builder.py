"""The run builder: the spans and log events of one trace -> agent `ScorerRun`s (DESIGN §3).

Per-convention extractors (`transforms._detection.extract_span`) say what each span holds; this
module merges those facts per agent root. Nothing here raises on bad input: what cannot be
used is counted under a fixed reason code in `BuildResult.reasons`, and the other runs of the
same trace still come out.

Reason codes: `transforms.reasons.Reason`.
"""

from __future__ import annotations

import base64
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from scorers.semconv import EVALUATION_EVENT, INSTRUMENTATION_SCOPE
from scorers.types import (
    AgentRunInput,
    Message,
    MessageContent,
    ReasoningPart,
    RunTarget,
    ScorerRun,
    SystemMessage,
    TextPart,
    ToolInvocation,
    ToolInvocationPart,
    run_id_for,
)
from transforms._detection import extract_span
from transforms._genai import MESSAGE_EVENTS, calls_from_events
from transforms._toolkit import NMessage, NPart, SpanFacts, ToolFact, parse_json_attr
from transforms.reasons import Reason
from transforms.types import LogEvent, Span, Trace, ns_to_datetime

__all__ = ["BuildResult", "build_runs", "group_traces"]

_SYSTEM_ROLES = frozenset({"system", "developer"})
_DERIVED_ORDER = ("systemMessages", "taggedSystemMessages", "inputMessages", "rememberedMessages")
_TOOL_FINISH = frozenset({"tool_call", "tool_calls", "tool-calls", "tool_use", "function_call"})

_CONVERSATION_KEYS = (
    "gen_ai.conversation.id", "session.id", "mastra.metadata.threadId", "threadId",
    "ai.telemetry.metadata.conversationId", "ai.telemetry.metadata.sessionId",
    "traceloop.association.properties.session_id", "traceloop.association.properties.chat_id",
    "traceloop.association.properties.conversation_id", "group_id", "langfuse.session.id",
    # AI SDK 7 (@ai-sdk/otel): the runtime context the app opted in to export.
    "ai.settings.context.conversationId", "ai.settings.context.sessionId",
    "ai.settings.context.threadId",
)
_RESOURCE_KEYS = (
    "mastra.metadata.resourceId", "resourceId", "user.id",
    "traceloop.association.properties.user_id", "ai.telemetry.metadata.userId",
    "langfuse.user.id", "ai.settings.context.userId",
)
_CONTEXT_PREFIXES = (
    "mastra.metadata.", "traceloop.association.properties.", "ai.telemetry.metadata.",
    "langfuse.observation.metadata.", "langfuse.trace.metadata.", "ai.settings.context.",
)


@dataclass(slots=True)
class BuildResult:
    """The runs of one trace and why anything was not used.

    Attributes:
        runs: one `ScorerRun` per agent invocation (or bare model call), sorted by
            (startedAt, traceId, spanId).
        reasons: counts per reason code (`Reason` members; a `Counter` keyed by str).
    """

    runs: list[ScorerRun] = field(default_factory=list)
    reasons: Counter[str] = field(default_factory=Counter)


def group_traces(spans: Iterable[Span], logs: Iterable[LogEvent] = ()) -> dict[str, Trace]:
    """Group spans and log events by trace id, keeping arrival order."""
    traces: dict[str, Trace] = {}
    for s in spans:
        t = traces.get(s.trace_id)
        if t is None:
            t = traces[s.trace_id] = Trace(s.trace_id)
        t.spans.append(s)
    for lg in logs:
        t = traces.get(lg.trace_id)
        if t is None:
            t = traces[lg.trace_id] = Trace(lg.trace_id)
        t.logs.append(lg)
    return traces


@dataclass(slots=True)
class _Call:
    """One model call of a run: a model span, or a call rebuilt from events."""

    start: int
    end: int
    facts: SpanFacts


@dataclass(slots=True)
class _Inv:
    inv: ToolInvocation
    span_matched: bool = False


def _event_body(attrs: dict[str, Any]) -> Any:
    # Per-message span events carry the content in attributes (sometimes as JSON in
    # gen_ai.event.content); log records carry it in the body.
    if "gen_ai.event.content" in attrs:
        parsed = parse_json_attr(attrs["gen_ai.event.content"])
        return parsed.value if parsed.ok else {"content": attrs["gen_ai.event.content"]}
    return attrs


def _identity(f: SpanFacts) -> tuple[str | None, str | None]:
    return (f.agent_name, f.agent_id)


def build_runs(trace: Trace) -> BuildResult:
    """Rebuild every agent invocation of one trace into a `ScorerRun`.

    Args:
        trace: the spans and log events of one trace id, in any order, duplicates allowed.

    Returns:
        The runs (sorted by start time, trace id, span id) and the reason counts.
    """
    result = BuildResult()
    reasons = result.reasons

    # 1. De-duplicate (OTLP allows duplicate delivery) and apply the loop guard.
    spans: dict[str, Span] = {}
    for s in trace.spans:
        if s.scope_name == INSTRUMENTATION_SCOPE:
            reasons[Reason.OWN_SPAN] += 1
            continue
        old = spans.get(s.span_id)
        if old is not None:
            reasons[Reason.DUPLICATE] += 1
            if old.end_time_unix_nano == 0 and s.end_time_unix_nano:
                spans[s.span_id] = s  # the ended copy knows more
            continue
        spans[s.span_id] = s

    # 2. GenAI events per span: span events and log records joined by span id.
    events: dict[str, list[tuple[int, str, dict[str, Any], Any]]] = defaultdict(list)
    for s in spans.values():
        for e in s.events:
            if e.name in MESSAGE_EVENTS:
                events[s.span_id].append((e.time_unix_nano, e.name, e.attributes,
                                          _event_body(e.attributes)))
    seen_logs: set[tuple[Any, ...]] = set()
    for lg in trace.logs:
        if lg.scope_name == INSTRUMENTATION_SCOPE:
            reasons[Reason.OWN_SPAN] += 1
            continue
        if lg.event_name == EVALUATION_EVENT:
            reasons[Reason.EVALUATION_EVENT] += 1
            continue
        if lg.event_name not in MESSAGE_EVENTS:
            reasons[Reason.NOT_GENAI] += 1
            continue
        if lg.span_id not in spans:
            reasons[Reason.ORPHAN_LOG] += 1
            continue
        # A re-delivered record repeats its span, time and name; distinct records differ in
        # time (SDK timestamps are ns) — a record without a time falls back to its content.
        key = (lg.span_id, lg.time_unix_nano, lg.event_name,
               repr(lg.body) if not lg.time_unix_nano else "")
        if key in seen_logs:
            reasons[Reason.DUPLICATE] += 1
            continue
        seen_logs.add(key)
        events[lg.span_id].append((lg.time_unix_nano, lg.event_name, lg.attributes, lg.body))

    # 3. Facts per span, and the model calls each span records.
    facts: dict[str, SpanFacts] = {}
    calls: dict[str, list[_Call]] = {}
    for sid, s in spans.items():
        try:
            f = extract_span(s)
            evs = events.get(sid)
            ev_calls = calls_from_events(evs, f.convention if f else "genai") if evs else []
        except Exception:  # noqa: BLE001 - an unusable span is counted, never fatal
            reasons[Reason.EXTRACT_ERROR] += 1
            continue
        if f is None and ev_calls:
            f = SpanFacts(ev_calls[0].facts.convention)
        if f is None:
            continue
        facts[sid] = f
        if f.reasons:  # Counter.update costs a Mapping check even for an empty list
            reasons.update(f.reasons)
        own: list[_Call] = []
        if f.is_model_call and f.role != "agent":
            # Every event on a model-call span describes that one call (openlit repeats a
            # call in one or two operation-details records): it only fills what the span
            # lacks, and is never a call of its own.
            if ev_calls and not f.model_input and not f.model_output:
                src = next((c.facts for c in ev_calls
                            if c.facts.model_input or c.facts.model_output), ev_calls[0].facts)
                f.model_input, f.model_output = src.model_input, src.model_output
                f.instructions = f.instructions or src.instructions
                f.redacted = f.redacted or src.redacted
                f.truncated = f.truncated or src.truncated
                f.capture_off = src.capture_off
            own.append(_Call(s.start_time_unix_nano, s.end_time_unix_nano, f))
        else:
            own.extend(_Call(c.start, c.end, c.facts) for c in ev_calls)
        if own:
            calls[sid] = own

    # 4. The tree: orphans become local roots, parent cycles are cut.
    children: dict[str, list[str]] = defaultdict(list)
    roots: list[str] = []
    true_roots = 0
    for sid, s in spans.items():
        p = s.parent_span_id
        if p is None:
            roots.append(sid)
            true_roots += 1
        elif p == sid:
            reasons[Reason.PARENT_CYCLE] += 1
            roots.append(sid)
        elif p not in spans:
            reasons[Reason.ORPHAN] += 1
            roots.append(sid)
        else:
            children[p].append(sid)
    if spans and true_roots == 0:
        reasons[Reason.NO_ROOT] += 1

    def start_key(x: str) -> tuple[int, str]:
        return (spans[x].start_time_unix_nano, x)

    for lst in children.values():
        lst.sort(key=start_key)
    roots.sort(key=start_key)
    parent: dict[str, str | None] = {}
    order: list[str] = []

    def walk(top: str) -> None:
        parent.setdefault(top, None)
        stack = [top]
        while stack:
            sid = stack.pop()
            order.append(sid)
            kids = children.get(sid, ())
            for k in reversed(kids):
                parent[k] = sid
                stack.append(k)

    for r in roots:
        walk(r)
    if len(order) < len(spans):
        reached = set(order)
        for sid in spans:
            if sid in reached:
                continue
            seen: set[str] = set()
            cur = sid
            while cur not in reached and cur not in seen:
                seen.add(cur)
                nxt = spans[cur].parent_span_id
                assert nxt is not None
                cur = nxt
            if cur in reached:
                continue
            reasons[Reason.PARENT_CYCLE] += 1
            p = spans[cur].parent_span_id
            if p is not None and cur in children.get(p, []):
                children[p].remove(cur)
            before = len(order)
            walk(cur)
            reached.update(order[before:])

    # 5. One API call recorded by two libraries (OpenInference's LLM span around the
    #    Anthropic SDK's own, a Langfuse generation around its OpenAI integration's) is one
    #    model call: a model-call span nested in another one, with no agent or tool span
    #    between them, is merged into the outer one.
    if len(calls) > 1:
        _merge_nested_calls(order, parent, facts, calls, reasons)
    # Calls that sent only the new messages of a server-held thread get its history back.
    _stitch_threads(spans, calls, reasons)

    # 6. Agent roots: agent spans with no agent ancestor of the same identity; OpenLLMetry
    #    workflows only when no agent span is around them.
    has_agent_below: dict[str, bool] = {}
    for sid in reversed(order):
        below = False
        for k in children.get(sid, ()):
            kf = facts.get(k)
            if has_agent_below.get(k) or (kf is not None and kf.role == "agent"):
                below = True
                break
        has_agent_below[sid] = below
    owner: dict[str, str | None] = {}
    run_roots: list[str] = []
    for sid in order:
        par = parent.get(sid)
        run_of = owner.get(par) if par is not None else None
        f = facts.get(sid)
        new_root = False
        if f is not None and f.role == "agent":
            new_root = run_of is None or _identity(facts[run_of]) != _identity(f) or \
                facts[run_of].role != "agent"
        elif f is not None and f.role == "workflow":
            new_root = run_of is None and not has_agent_below[sid]
        if new_root:
            run_roots.append(sid)
            owner[sid] = sid
        else:
            owner[sid] = run_of
    if not run_roots:
        # No agent span: one "bare" run per outermost model call.
        for sid in order:
            par = parent.get(sid)
            run_of = owner.get(par) if par is not None else None
            if run_of is None and sid in calls:
                run_roots.append(sid)
                owner[sid] = sid
            else:
                owner[sid] = run_of
    if not run_roots:
        reasons[Reason.NOT_GENAI if not facts else "no_run"] += 1
        return result

    owned: dict[str, list[str]] = defaultdict(list)
    for sid in order:
        o = owner.get(sid)
        if o is not None:
            owned[o].append(sid)
    # An agent span that only wraps other agent spans (the OpenAI Agents SDK's trace span,
    # a framework's session span) is not an invocation: no model call and no content of its
    # own. Its agents are the runs.
    for root in list(run_roots):
        rf = facts[root]
        if has_agent_below.get(root) and rf.root_input is None and rf.root_output is None \
                and not any(sid in calls for sid in owned[root]):
            run_roots.remove(root)
            reasons[Reason.AGENT_WRAPPER] += 1

    for root in run_roots:
        try:
            run = _build_run(trace.trace_id, spans, facts, calls, root, owned[root], reasons)
        except Exception:  # noqa: BLE001 - one bad run never costs the others
            reasons[Reason.BUILD_ERROR] += 1
            continue
        result.runs.append(run)
    result.runs.sort(key=_run_sort_key)
    return result


def _is_call_span(f: SpanFacts | None) -> bool:
    return f is not None and f.is_model_call and f.role != "agent"


def _merge_nested_calls(order: list[str], parent: dict[str, str | None],
                        facts: dict[str, SpanFacts], calls: dict[str, list[_Call]],
                        reasons: Counter[str]) -> None:
    outer_call: dict[str, str | None] = {}  # nearest model-call ancestor, per span
    for sid in order:
        par = parent.get(sid)
        outer: str | None = None
        if par is not None:
            pf = facts.get(par)
            if _is_call_span(pf) and par in calls:
                outer = par
            elif pf is None or pf.role not in ("agent", "workflow", "tool"):
                outer = outer_call.get(par)
        outer_call[sid] = outer
        if outer is None or sid not in calls or not _is_call_span(facts.get(sid)):
            continue
        _merge_call(calls[outer][0].facts, calls.pop(sid)[0].facts)
        reasons[Reason.NESTED_CALL] += 1


def _merge_call(outer: SpanFacts, inner: SpanFacts) -> None:
    """Two records of one model call: the outer one, with what it lacks from the inner."""
    if not outer.model_input and inner.model_input:
        outer.model_input = inner.model_input
    if not outer.model_output and inner.model_output:
        outer.model_output = inner.model_output
    if outer.instructions is None:
        outer.instructions = inner.instructions
    outer.model_name = outer.model_name or inner.model_name
    outer.continues = outer.continues or inner.continues
    outer.truncated = outer.truncated or inner.truncated
    outer.redacted = outer.redacted or inner.redacted
    outer.capture_off = outer.capture_off and inner.capture_off


_THREAD_KEYS = ("gen_ai.conversation.id", "session.id")


def _texts(msgs: list[NMessage]) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in msgs]


def _stitch_threads(spans: dict[str, Span], calls: dict[str, list[_Call]],
                    reasons: Counter[str]) -> None:
    """Give a call that continues a server-held thread (`SpanFacts.continues`) the history
    of the thread's earlier calls in this trace: their input and output, in order, and the
    instructions the thread was created with. A thread is the trace's calls with the same
    conversation id; a call without one (e.g. another library's record of it) continues the
    trace's latest call. A continued thread whose earlier calls are not in this trace is
    counted (`thread_history_missing`): its history is unknown here."""
    flagged = [sid for sid, cs in calls.items() if cs[0].facts.continues]
    if not flagged:
        return
    seq = sorted(((c.start, c.end, sid, c.facts) for sid, cs in calls.items() for c in cs),
                 key=lambda x: (x[0], x[1], x[2]))
    # Per thread: (end of the last call, its whole conversation, the instructions).
    last: dict[str, tuple[int, list[NMessage], list[str] | None]] = {}
    for start, end, sid, f in seq:
        if f.model_input is None:
            continue
        key = _first_attr([spans[sid]], _THREAD_KEYS) or ""
        own = [m for m in f.model_input if m.role not in _SYSTEM_ROLES]
        prev = last.get(key)  # key "" holds the trace's latest call, whatever its thread
        if f.continues and prev is not None and prev[0] <= start:
            history = prev[1]
            if _texts(own[:len(history)]) != _texts(history):  # not already resent whole
                system = [m for m in f.model_input if m.role in _SYSTEM_ROLES]
                own = history + own
                f.model_input = system + own
                if f.instructions is None and not system:
                    f.instructions = prev[2]
                f.stitched = True
        elif f.continues:
            reasons[Reason.THREAD_HISTORY_MISSING] += 1
        instructions = f.instructions if f.instructions is not None else (
            prev[2] if prev is not None and f.continues else None)
        if instructions is None:
            sys_texts = [m.text for m in f.model_input if m.role in _SYSTEM_ROLES and m.text]
            instructions = sys_texts[:1] or None
        last[key] = last[""] = (
            end, own + [m for m in f.model_output or [] if m.role != "user"], instructions)


def _transcript_calls(rf: SpanFacts, t0: int) -> list[_Call]:
    """The model calls an agent's transcript implies when no model-call span was seen: one
    per assistant message after the last user input, each with everything before it as
    input (so tool calls, their results and the final answer come out as usual)."""
    msgs = rf.transcript or []
    start = 0
    for i, m in enumerate(msgs):
        if m.role == "user" and not m.only_tool_results:
            start = i + 1
    out: list[_Call] = []
    for i in range(start, len(msgs)):
        if msgs[i].role == "assistant":
            out.append(_Call(t0 + i, t0 + i, SpanFacts(
                rf.convention, role="model", model_input=msgs[:i], model_output=[msgs[i]],
                instructions=rf.instructions, capture_off=rf.capture_off)))
    return out


def _run_sort_key(run: ScorerRun) -> tuple[float, str, str]:
    t = run.target
    assert t is not None
    return (t.started_at.timestamp() if t.started_at else 0.0, t.trace_id or "", t.span_id or "")


# --------------------------------------------------------------------------- one run


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


def _set_result(inv: ToolInvocation, p: NPart | ToolFact) -> None:
    if isinstance(p, NPart):
        if p.is_error:
            inv.state, inv.error_text = "output-error", str(p.result)
        else:
            inv.state, inv.result = "result", p.result
    elif p.error_text is not None:
        inv.state, inv.error_text = "output-error", p.error_text
    elif p.has_result:
        inv.state, inv.result = "result", p.result


def _convert(msgs: list[NMessage], created_at: Any) -> list[Message]:
    """Normalized messages -> Mastra messages; tool results fold into their invocation."""
    if not msgs:
        return []
    out: list[Message] = []
    by_id: dict[str, ToolInvocation] = {}
    waiting: list[ToolInvocation] = []

    def fold(p: NPart) -> None:
        inv = by_id.get(p.tool_call_id) if p.tool_call_id else None
        if inv is None:
            inv = next((i for i in waiting if i.state == "call" and (
                p.tool_name is None or i.tool_name == p.tool_name) and (
                p.tool_call_id is None or not i.tool_call_id)), None)
        if inv is None:  # a result whose call we never saw: keep it, on an assistant message
            inv = ToolInvocation(tool_call_id=p.tool_call_id or "",
                                 tool_name=p.tool_name or "unknown")
            part = ToolInvocationPart(tool_invocation=inv)
            if out and out[-1].role == "assistant":
                out[-1].content.parts.append(part)
            else:
                out.append(Message(role="assistant", created_at=created_at,
                                   content=MessageContent(content=None, parts=[part])))
        _set_result(inv, p)
        if inv in waiting:
            waiting.remove(inv)

    for m in msgs:
        if m.role in _SYSTEM_ROLES:
            continue
        if m.role == "tool" or (m.role == "user" and m.only_tool_results):
            for p in m.parts:
                if p.kind == "tool_result":
                    fold(p)
            continue
        role: Literal["user", "assistant"] = (
            "assistant" if m.role in ("assistant", "model", "ai", "bot") else "user")
        parts: list[Any] = []
        texts: list[str] = []
        for p in m.parts:
            if p.kind == "text" and p.text:
                parts.append(TextPart(text=p.text))
                texts.append(p.text)
            elif p.kind == "reasoning" and p.text:
                parts.append(ReasoningPart(reasoning=p.text))
            elif p.kind == "tool_call":
                inv = ToolInvocation(tool_call_id=p.tool_call_id or "",
                                     tool_name=p.tool_name or "unknown", args=p.args)
                parts.append(ToolInvocationPart(tool_invocation=inv))
                if p.tool_call_id:
                    by_id[p.tool_call_id] = inv
                waiting.append(inv)
            elif p.kind == "tool_result":
                fold(p)
        if role == "assistant" and not texts and parts and out and out[-1].role == "assistant" \
                and all(isinstance(p, ToolInvocationPart) for p in parts):
            # One assistant turn split into a text item and a tool-call item (the Responses
            # API does this): the calls join the turn's message.
            out[-1].content.parts.extend(parts)
            continue
        out.append(Message(role=role, created_at=created_at, content=MessageContent(
            content="\n".join(texts) if texts else None, parts=parts)))
    return out


def _is_tool_finish(c: _Call) -> bool:
    out = c.facts.model_output or []
    reasons = {m.finish_reason for m in out if m.finish_reason}
    if reasons:
        return bool(reasons & _TOOL_FINISH)
    has_call = any(p.kind == "tool_call" for m in out for p in m.parts)
    has_text = any(p.kind == "text" and p.text for m in out for p in m.parts)
    return has_call and not has_text


def _first_attr(spans: list[Span], keys: tuple[str, ...]) -> str | None:
    for s in spans:
        for k in keys:
            v = s.attributes.get(k)
            if v is not None and v != "":
                return str(v)
    return None


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _jsonable(value: Any) -> Any:
    """Attribute values as JSON-safe values: OTLP bytes become base64 text."""
    if type(value) is dict:  # the common case: a flat map of plain values, copied in one go
        plain = _PLAIN
        if all(type(v) in plain for v in value.values()):
            return dict(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _request_context(span: Span) -> dict[str, Any]:
    ctx: dict[str, Any] = {}
    for k, v in span.attributes.items():
        if not k.startswith(_CONTEXT_PREFIXES):  # one C call for the common miss
            continue
        for prefix in _CONTEXT_PREFIXES:
            if k.startswith(prefix):
                ctx[k[len(prefix):]] = v
                break
    meta = span.attributes.get("metadata")
    if isinstance(meta, str):
        parsed = parse_json_attr(meta)
        if parsed.ok and isinstance(parsed.value, dict):
            ctx.update(parsed.value)
    elif isinstance(meta, dict):
        ctx.update(meta)
    return _jsonable(ctx)  # type: ignore[no-any-return]


def _build_run(trace_id: str, spans: dict[str, Span], facts: dict[str, SpanFacts],
               calls_by_span: dict[str, list[_Call]], root: str, owned: list[str],
               reasons: Counter[str]) -> ScorerRun:
    rs = spans[root]
    rf = facts[root]
    bare = rf.role not in ("agent", "workflow")
    run_calls = sorted((c for sid in owned for c in calls_by_span.get(sid, ())),
                       key=lambda c: (c.start, c.end))
    if not run_calls and rf.transcript and not bare:
        run_calls = _transcript_calls(rf, rs.start_time_unix_nano)
    tools = [(spans[sid], facts[sid].tool) for sid in owned
             if sid in facts and facts[sid].tool is not None]
    tools.sort(key=lambda t: t[0].start_time_unix_nano)
    all_facts = [facts[sid] for sid in owned if sid in facts] + [c.facts for c in run_calls]
    derived: list[str] = []
    started, ended = rs.started_at, rs.ended_at

    # The first model call that shows its input (a span without content may come first when
    # the content went to events on another span).
    first = next((c.facts for c in run_calls if c.facts.model_input),
                 run_calls[0].facts if run_calls else None)
    fc_msgs = (first.model_input or []) if first else []
    history = [m for m in fc_msgs if m.role not in _SYSTEM_ROLES]
    if first is not None and first.stitched:
        derived.append("rememberedMessages")  # from the thread's earlier calls

    # System messages: explicit instructions, else the first model call's first system one.
    explicit = rf.instructions
    if explicit is None and first is not None:
        explicit = first.instructions
    sys_texts = [m.text for m in fc_msgs if m.role in _SYSTEM_ROLES and m.text]
    tagged: dict[str, list[SystemMessage]] = {}
    if explicit:
        system = list(explicit)
        joined = "\n".join(explicit).strip()
        rest = [t for t in sys_texts if t.strip() not in (joined, *[e.strip() for e in explicit])]
    else:
        system = sys_texts[:1]
        rest = sys_texts[1:]
        if rest:
            derived.append("systemMessages")
    for t in rest:
        tag = rf.system_tags.get(t) or (first.system_tags.get(t) if first else None) or "runtime"
        tagged.setdefault(tag, []).append(SystemMessage(content=t))
    if tagged:
        derived.append("taggedSystemMessages")

    # New input and remembered history; `exchange` is a tool round of this invocation that
    # the first model call we see already had in its input (its calls belong to the output).
    root_in = None if bare else rf.root_input
    exchange: list[NMessage] = []
    if root_in is not None and rf.input_mode == "new":
        new_n = [m for m in root_in if m.role not in _SYSTEM_ROLES]
        k, exact = _split_new_input(history, new_n)
        remembered_n = history[:k]
        exchange = history[k + len(new_n):]
        # Exact when the convention says so, or when the model saw nothing before the new
        # input (then nothing was remembered).
        if history and not (exact and (rf.remembered_exact or k == 0)):
            derived.append("rememberedMessages")
    elif root_in is not None and rf.input_mode == "conversation":
        conv = [m for m in root_in if m.role not in _SYSTEM_ROLES]
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
    final_call: _Call | None = None
    finals = [c for c in run_calls if c.facts.model_output and not _is_tool_finish(c)]
    if finals:
        final_call = max(finals, key=lambda c: (c.end, c.start))
    if not bare and rf.root_output is not None:
        final_text = rf.root_output
    elif final_call is not None:
        texts = [m.text for m in final_call.facts.model_output or []
                 if m.role != "user" and m.text]
        final_text = texts[-1] if texts else None
    invs: dict[str, _Inv] = {}
    entries: list[tuple[int, int, Any]] = []
    seq = 0
    if exchange:
        run_calls.insert(0, _Call(run_calls[0].start, run_calls[0].start, SpanFacts(
            rf.convention, role="model", model_output=[m for m in exchange
                                                       if m.role == "assistant"])))
    for c in run_calls:
        for m in c.facts.model_output or []:
            if m.role == "user":
                continue
            for p in m.parts:
                if p.kind == "text" and p.text and c is not final_call and p.text != final_text:
                    entries.append((c.end, seq, TextPart(text=p.text)))
                    seq += 1
            for p in m.parts:
                if p.kind != "tool_call":
                    continue
                key = p.tool_call_id or f"#{len(invs)}"
                if key in invs:
                    continue
                inv = ToolInvocation(tool_call_id=p.tool_call_id or "",
                                     tool_name=p.tool_name or "unknown", args=p.args)
                invs[key] = _Inv(inv)
                entries.append((c.end, seq, ToolInvocationPart(tool_invocation=inv)))
                seq += 1
    for c in run_calls:  # results fed back to later calls
        for m in c.facts.model_input or []:
            for p in m.parts:
                if p.kind == "tool_result" and p.tool_call_id and p.tool_call_id in invs \
                        and invs[p.tool_call_id].inv.state == "call":
                    _set_result(invs[p.tool_call_id].inv, p)
    for span, tf in tools:
        assert tf is not None
        slot = invs.get(tf.call_id) if tf.call_id else None
        if slot is None:
            slot = next((v for v in invs.values() if not v.span_matched and (
                tf.name is None or v.inv.tool_name == tf.name) and (
                tf.call_id is None or not v.inv.tool_call_id)), None)
        if slot is None:
            inv = ToolInvocation(tool_call_id=tf.call_id or span.span_id,
                                 tool_name=tf.name or "unknown", args=tf.args)
            slot = invs[tf.call_id or span.span_id] = _Inv(inv)
            entries.append((span.start_time_unix_nano, seq, ToolInvocationPart(tool_invocation=inv)))
            seq += 1
        slot.span_matched = True
        if slot.inv.args is None and tf.args is not None:
            slot.inv.args = tf.args
        if slot.inv.tool_name == "unknown" and tf.name:
            slot.inv.tool_name = tf.name
        if tf.error_text is not None or tf.has_result:
            _set_result(slot.inv, tf)
    entries.sort(key=lambda e: (e[0], e[1]))
    parts: list[Any] = [e[2] for e in entries]
    if final_text is None and not parts:
        cut = rf.cut_output or (final_call.facts.cut_output if final_call else None) or next(
            (c.facts.cut_output for c in reversed(run_calls) if c.facts.cut_output), None)
        final_text = cut  # JSON cut by a length limit: keep the text rather than nothing
    if final_text:
        parts.append(TextPart(text=final_text))
    output: list[Message] = []
    if parts or final_text is not None:
        output.append(Message(role="assistant", created_at=ended or started,
                              content=MessageContent(content=final_text, parts=parts)))
    else:
        reasons[Reason.NO_OUTPUT] += 1

    truncated = any(f.truncated for f in all_facts)
    redacted = any(f.redacted for f in all_facts)
    capture_off = any(f.capture_off for f in all_facts)
    # A span without content counts only when the run lacks it: content recorded elsewhere
    # (e.g. events pointing at the agent span instead of the model span) is content.
    input_ok = any(m.text for m in input_messages)
    output_ok = bool(final_text) or any(
        t.args is not None for m in output for t in m.tool_invocations)
    capture_off = capture_off and not (input_ok and output_ok)
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
        conversation_id=_first_attr(owned_spans, _CONVERSATION_KEYS),
        resource_id=_first_attr(owned_spans, _RESOURCE_KEYS),
        convention=rf.convention, resource=_jsonable(rs.resource), started_at=started,
        ended_at=ended, derived=sorted(set(derived), key=_DERIVED_ORDER.index), truncated=truncated,
        content_captured=not (redacted or capture_off),
    )
    return ScorerRun(
        run_id=run_id_for(trace_id, root),
        input=AgentRunInput(input_messages=input_messages, remembered_messages=remembered,
                            system_messages=[SystemMessage(content=t) for t in system],
                            tagged_system_messages=tagged),
        output=output, request_context=_request_context(rs), target=target,
    )
