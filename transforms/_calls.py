"""Model calls, the builder's third job: the facts of every span and the model calls each
records, then the reconciling of calls recorded more than once or only in part — one API call
recorded by two spans or libraries (merged), a call that continues a server-held thread (its
history given back), a span whose content went to events (filled from them)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from transforms._detection import extract_span
from transforms._facts import SYSTEM_ROLES, ModelCall, NMessage, SpanFacts
from transforms._genai import calls_from_events, thread_id
from transforms._input import Event
from transforms._tree import SpanTree
from transforms.reasons import Reason
from transforms.types import Span

__all__ = ["drop_partials", "has_content", "has_usage", "made_call", "merge_nested_calls", "read_spans",
           "repeated_event_calls", "stitch_threads", "transcript_calls"]


def read_spans(spans: Mapping[str, Span], events: Mapping[str, list[Event]],
               reasons: Counter[str]) -> tuple[dict[str, SpanFacts], dict[str, list[ModelCall]]]:
    """The facts of every span a convention reads (or that has GenAI events), and the model
    calls each span records: a model-call span is one call (its events only fill what the
    span lacks); a tool span's events are the tool's own record, never a model call; any
    other span's events are calls of their own. A span its extractor fails
    on is counted (`extract_error`) and left out."""
    facts: dict[str, SpanFacts] = {}
    calls: dict[str, list[ModelCall]] = {}
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
            if made_call(s, f):
                calls[sid] = [ModelCall(s.start_time_unix_nano, s.end_time_unix_nano, f)]
        elif ev_calls and f.role != "tool":  # a tool span's events record the tool's run
            calls[sid] = ev_calls
        for c in calls.get(sid, ()):
            out = c.facts.model_output
            if out is not None and len(out) > 1:
                c.facts.model_output = drop_partials(out)
    return facts, calls


def drop_partials(msgs: list[NMessage]) -> list[NMessage]:
    """A model's output without the streamed chunks a framework listed before the whole
    message: an assistant message whose every text is part of a later message's text and
    whose every tool call (by id) a later message repeats says nothing of its own."""
    keep: list[NMessage] = []
    for i, m in enumerate(msgs):
        if m.role == "user" or not m.parts or not any(
                _covers(later, m) for later in msgs[i + 1:] if later.role == m.role):
            keep.append(m)
    return keep


def _covers(later: NMessage, m: NMessage) -> bool:
    text = later.text
    ids = {p.tool_call_id for p in later.parts if p.kind == "tool_call"}
    for p in m.parts:
        if p.kind == "text":
            if p.text and p.text not in text:
                return False
        elif p.kind != "tool_call" or p.tool_call_id is None or p.tool_call_id not in ids:
            return False
    return True


def has_usage(span: Span) -> bool:
    """The span records token usage (`gen_ai.usage.*`, `llm.token_count.*`, `ai.usage.*`, …):
    whatever convention wrote it, a model answered."""
    return any("usage" in k or "token_count" in k for k in span.attributes)


def made_call(span: Span, f: SpanFacts) -> bool:
    """Whether a span marked as a model call records one: content (even cut by a length
    limit), or token usage when content capture was off. A span with neither — a framework's
    preparation or wrapper span around the call, or one that failed before calling — is no
    model call: never a bare run, never a run's first or last call."""
    return bool(f.model_input or f.model_output or f.cut_input or f.cut_output) or \
        has_usage(span)


def has_content(msgs: list[NMessage] | None) -> bool:
    """Whether messages say anything: a text (a placeholder for hidden content is no text), a
    tool call or a recorded tool result. Role skeletons (capture off) say nothing."""
    for m in msgs or ():
        for p in m.parts:
            if p.text if p.kind == "text" else (
                    p.kind == "tool_call" or (p.kind == "tool_result" and not p.absent)):
                return True
    return False


def repeated_event_calls(spans: Mapping[str, Span], facts: Mapping[str, SpanFacts],
                         calls: Mapping[str, list[ModelCall]], owned: list[str]) -> set[str]:
    """The spans among `owned` whose GenAI events only repeat the model calls recorded under
    them (the same content counts once). Events on an agent, step or task span that
    encloses model-call spans are that span's record of those calls: one event call per
    model-call span below it is the same call (the span gets from it what it lacks, e.g.
    its input when only its output was on the span); otherwise, when the spans below carry
    content, the events are the span's own record of its input and output. When nothing
    below carries content, the events are the source and stay."""
    holders = [sid for sid in calls if not _is_call_span(facts.get(sid))]
    if holders:  # rare: checked over the trace's calls first, the run's spans only then
        found = set(holders)
        holders = [sid for sid in owned if sid in found]
    if not holders:
        return set()
    below: dict[str, list[str]] = {h: [] for h in holders}
    for sid in owned:
        if sid in below or sid not in calls or not _is_call_span(facts.get(sid)):
            continue
        seen: set[str] = set()
        p = spans[sid].parent_span_id
        while p is not None and p in spans and p not in seen:
            seen.add(p)
            if p in below:
                below[p].append(sid)
            p = spans[p].parent_span_id
    repeated: set[str] = set()
    for h, under in below.items():
        if not under:
            continue
        own = calls[h]
        if len(own) == len(under):
            for c, sid in zip(own, under, strict=True):
                _merge_call(calls[sid][0].facts, c.facts)
            repeated.add(h)
        elif any(has_content(c.facts.model_input) or has_content(c.facts.model_output)
                 for sid in under for c in calls[sid]):
            repeated.add(h)
    return repeated


def _is_call_span(f: SpanFacts | None) -> bool:
    return f is not None and f.is_model_call and f.role != "agent"


def merge_nested_calls(tree: SpanTree, facts: Mapping[str, SpanFacts],
                       calls: dict[str, list[ModelCall]], reasons: Counter[str]) -> None:
    """One API call recorded by two libraries (OpenInference's LLM span around the Anthropic
    SDK's own, a Langfuse generation around its OpenAI integration's) is one model call: a
    model-call span nested in another one, with no agent or tool span between them, is
    merged into the outer one (`nested_call`)."""
    order, parent = tree.order, tree.parent
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
    """Two records of one model call: the outer one, with what it lacks from the inner (an
    empty side, or one holding only placeholders where the inner record has content). A
    placeholder in a record whose content is not used (the other record has it) does not
    make the call redacted."""
    took = False
    if _lacks(outer.model_input, inner.model_input):
        outer.model_input, took = inner.model_input, True
    if _lacks(outer.model_output, inner.model_output):
        outer.model_output, took = inner.model_output, True
    if outer.instructions is None:
        outer.instructions = inner.instructions
    outer.model_name = outer.model_name or inner.model_name
    outer.continues = outer.continues or inner.continues
    outer.truncated = outer.truncated or inner.truncated
    if took or not (has_content(outer.model_input) or has_content(outer.model_output)):
        outer.redacted = outer.redacted or inner.redacted
    outer.capture_off = outer.capture_off and inner.capture_off


def _lacks(mine: list[NMessage] | None, other: list[NMessage] | None) -> bool:
    """Whether one record's messages should be the other record's: it has none, or only
    placeholders (or a skeleton) where the other has content."""
    if not other:
        return False
    return not mine or (not has_content(mine) and has_content(other))


def _texts(msgs: list[NMessage]) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in msgs]


def stitch_threads(spans: Mapping[str, Span], calls: Mapping[str, list[ModelCall]],
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
        key = thread_id(spans[sid]) or ""
        own = [m for m in f.model_input if m.role not in SYSTEM_ROLES]
        prev = last.get(key)  # key "" holds the trace's latest call, whatever its thread
        if f.continues and prev is not None and prev[0] <= start:
            history = prev[1]
            if _texts(own[:len(history)]) != _texts(history):  # not already resent whole
                system = [m for m in f.model_input if m.role in SYSTEM_ROLES]
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
            sys_texts = [m.text for m in f.model_input if m.role in SYSTEM_ROLES and m.text]
            instructions = sys_texts[:1] or None
        last[key] = last[""] = (
            end, own + [m for m in f.model_output or [] if m.role != "user"], instructions)


def transcript_calls(rf: SpanFacts, t0: int) -> list[ModelCall]:
    """The model calls an agent's transcript implies when no model-call span was seen: one
    per assistant message after the last user input, each with everything before it as
    input (so tool calls, their results and the final answer come out as usual)."""
    msgs = rf.transcript or []
    start = 0
    for i, m in enumerate(msgs):
        if m.role == "user" and not m.only_tool_results:
            start = i + 1
    out: list[ModelCall] = []
    for i in range(start, len(msgs)):
        if msgs[i].role == "assistant":
            out.append(ModelCall(t0 + i, t0 + i, SpanFacts(
                rf.convention, role="model", model_input=msgs[:i], model_output=[msgs[i]],
                instructions=rf.instructions, capture_off=rf.capture_off)))
    return out
