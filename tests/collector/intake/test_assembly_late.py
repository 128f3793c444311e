"""Late pieces of handed-over traces, as a user sees them: a re-delivered log record is a
duplicate, not a reason to score again; a new subtree's records are new work, not late; a trace
rebuilt from the request bodies it came in is the whole trace (the ended copy of a span wins),
and can be rebuilt again by a second late piece. (Found by mutation testing: each test fails
when the rule it names is inverted.)"""

from __future__ import annotations

from pathlib import Path

from collector._telemetry import Metrics
from collector.intake import Assembly, Body, ReadyTrace, decode_body
from tests.fakes.metrics import sample
from transforms import LogEvent, Span, build_runs

CAPTURES = Path(__file__).resolve().parents[2] / "testdata" / "captures"
EVENTS = CAPTURES / "genai-openai-v2-events" / "two_turns_tool.otlp.jsonl"
ADK = CAPTURES / "google-adk" / "legacy_two_turns_tool_events.otlp.jsonl"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def requests(path: Path) -> list[tuple[Body, list[Span], list[LogEvent]]]:
    out = []
    for line in path.read_bytes().splitlines():
        body = Body("traces_json", line)
        decoded = decode_body(body.kind, body.data)
        out.append((body, decoded.spans, decoded.logs))
    return out


def make() -> tuple[Assembly, Metrics, Clock]:
    clock, metrics = Clock(), Metrics()
    return (Assembly(metrics=metrics, clock=clock, rescore_late=True, log_wait=5.0,
                     max_trace_age=600.0), metrics, clock)


def reason(metrics: Metrics, name: str) -> float:
    return sample(metrics, "scorecar_transform_reasons_total", reason=name)


def settle(asm: Assembly, clock: Clock, seconds: float = 60.0) -> list[ReadyTrace]:
    ready: list[ReadyTrace] = []
    end = clock.now + seconds
    while (deadline := asm.next_deadline()) is not None and deadline <= end:
        clock.now = max(clock.now, deadline)
        ready.extend(asm.poll())
    clock.now = end
    return ready


def send_all(asm: Assembly, path: Path) -> None:
    for body, spans, logs in requests(path):
        asm.add(spans, logs, None, body)


def test_a_log_record_delivered_again_after_its_trace_was_handed_over_is_a_duplicate() -> None:
    asm, metrics, clock = make()
    send_all(asm, EVENTS)
    first = settle(asm, clock)
    assert first
    dup_before = reason(metrics, "duplicate")
    _, _, logs = next(r for r in requests(EVENTS) if r[2])
    asm.add([], logs[:3], None)  # the SDK retried a batch that had been received
    assert settle(asm, clock) == []  # nothing rebuilt, nothing scored again
    assert reason(metrics, "duplicate") == dup_before + 3
    assert reason(metrics, "late") == 0


def test_records_of_a_new_span_after_the_hand_over_are_new_work_not_late() -> None:
    asm, metrics, clock = make()
    send_all(asm, EVENTS)
    settle(asm, clock)
    handed = next(s for r in requests(EVENTS) for s in r[1])
    new = Span(handed.trace_id, "7" * 16, "chat gpt-4o-mini", None, "CLIENT", 5, 6,
               attributes={"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                           "gen_ai.request.model": "gpt-4o-mini"})
    log = LogEvent("gen_ai.user.message", handed.trace_id, new.span_id, 5,
                   {"gen_ai.system": "openai"}, {"content": "And tomorrow?"})
    asm.add([new], [log], None)
    [ready] = settle(asm, clock)
    assert not ready.late and reason(metrics, "late") == 0
    assert reason(metrics, "late_not_rescored") == 0
    assert {s.span_id for s in ready.trace.spans} >= {new.span_id}


def test_a_trace_rebuilt_from_its_bodies_is_whole_and_can_be_rebuilt_again() -> None:
    """The ADK capture comes in two span requests and three log requests (two traces): its
    logs arrive late, one trace's in two pieces — each time the trace is rebuilt from every
    body it came in."""
    asm, metrics, clock = make()
    reqs = requests(ADK)
    spans_first = [r for r in reqs if r[1]]
    logs_later = [r for r in reqs if r[2] and not r[1]]
    assert len(spans_first) == 2 and len(logs_later) >= 2
    for body, spans, _ in spans_first:
        asm.add(spans, [], None, body)
    settle(asm, clock)  # handed over without the records (past log_wait)
    whole: dict[str, list[str]] = {}
    for i, (body, _, logs) in enumerate(logs_later):
        asm.add([], logs, None, body)
        ready = settle(asm, clock)
        assert ready and all(r.late for r in ready), f"late piece {i} rebuilt nothing"
        for r in ready:
            whole[r.trace.trace_id] = sorted(s.span_id for s in r.trace.spans)
    every = sorted({s.span_id for _, spans, _ in spans_first for s in spans})
    assert sorted(sid for ids in whole.values() for sid in ids) == every
    assert reason(metrics, "late_not_rescored") == 0


def test_the_ended_copy_of_a_span_wins_when_a_trace_is_rebuilt_from_its_bodies() -> None:
    """A span first exported unfinished (the SDK's on-start export of some processors), then
    ended: a late piece rebuilds the trace from both bodies, and the run is the ended one."""
    import json

    asm, _, clock = make()
    (body, spans, logs), *_ = [r for r in requests(EVENTS) if r[1]]
    doc = json.loads(body.data)
    open_doc = json.loads(body.data)
    for rs in open_doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                s.pop("endTimeUnixNano", None)
    unfinished = Body("traces_json", json.dumps(open_doc).encode())
    asm.add(decode_body("traces_json", unfinished.data).spans, [], None, unfinished)
    asm.add(spans, [], None, Body("traces_json", json.dumps(doc).encode()))
    settle(asm, clock)
    _, _, all_logs = next(r for r in requests(EVENTS) if r[2])
    asm.add([], all_logs, None)
    ready = settle(asm, clock)
    assert ready
    for r in ready:
        assert all(s.end_time_unix_nano for s in r.trace.spans)
        assert all(run.target and run.target.ended_at for run in build_runs(r.trace).runs)


# --------------------------------------------------------------------------- remembered bodies


def _two_trace_bodies() -> tuple[Body, list[Span], Body, list[LogEvent]]:
    """The events capture as one request of both traces' spans and one of their records."""
    import json

    docs = [json.loads(line) for line in EVENTS.read_bytes().splitlines()]
    spans = Body("traces_json", json.dumps(
        {"resourceSpans": [rs for d in docs for rs in d.get("resourceSpans", [])]}).encode())
    logs = Body("logs_json", json.dumps(
        {"resourceLogs": [rl for d in docs for rl in d.get("resourceLogs", [])]}).encode())
    decoded_spans = decode_body(spans.kind, spans.data).spans
    assert len({s.trace_id for s in decoded_spans}) == 2
    return spans, decoded_spans, logs, decode_body(logs.kind, logs.data).logs


def test_a_body_shared_by_two_traces_is_counted_once_and_freed_with_them() -> None:
    asm, _, clock = make()
    asm.late_window = 100.0
    body, spans, logs_body, logs = _two_trace_bodies()
    asm.add(spans, [], None, body)
    asm.add([], logs, None, logs_body)
    settle(asm, clock, 30.0)
    assert asm.remembered_traces == 2
    assert asm.remembered_bytes == len(body.data) + len(logs_body.data)  # each counted once
    clock.now += 100.0  # past the late window
    asm.add([Span("f" * 32, "d" * 16, "x", None)], [], None)  # any arrival forgets old ones
    assert asm.remembered_traces == 0 and asm.remembered_bytes == 0


def test_a_rebuild_from_a_shared_body_takes_only_its_own_traces_records() -> None:
    asm, _, clock = make()
    body, spans, logs_body, logs = _two_trace_bodies()
    tid_a = spans[0].trace_id
    asm.add(spans, [], None, body)  # both traces' spans, the records held back
    settle(asm, clock)
    asm.add([], logs, None, logs_body)  # both traces' records, late, in one request
    ready = settle(asm, clock)
    assert {r.trace.trace_id for r in ready} == {s.trace_id for s in spans}
    for r in ready:
        assert r.late and r.trace.logs
        assert all(lg.trace_id == r.trace.trace_id for lg in r.trace.logs)
        assert all(s.trace_id == r.trace.trace_id for s in r.trace.spans)
    # and once more: a further late record of one trace rebuilds it from both bodies
    extra = LogEvent("gen_ai.user.message", tid_a, spans[0].span_id, 7, {}, {"content": "x"})
    asm.add([], [extra], None)
    [again] = settle(asm, clock)
    assert again.trace.trace_id == tid_a
    assert all(lg.trace_id == tid_a for lg in again.trace.logs)
    assert len(again.trace.logs) == 1 + sum(lg.trace_id == tid_a for lg in logs)


def test_after_the_hand_over_an_unfinished_copy_is_a_duplicate_and_children_are_late() -> None:
    """A span re-sent unfinished after its ended copy was handed over is a duplicate; a new
    span under a handed-over span, and that new span's own children, are late pieces of it."""
    asm, metrics, clock = make()
    root = Span("a" * 32, "1" * 16, "invoke_agent a", None, "INTERNAL", 1, 9, attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
    asm.add([root], [], None)
    settle(asm, clock)
    unfinished = Span(root.trace_id, root.span_id, root.name, None, "INTERNAL", 1, 0,
                      attributes=dict(root.attributes))
    dup = reason(metrics, "duplicate")
    asm.add([unfinished], [], None)
    assert reason(metrics, "duplicate") == dup + 1 and settle(asm, clock) == []
    child = Span(root.trace_id, "2" * 16, "tool", root.span_id, "INTERNAL", 2, 3)
    grandchild = Span(root.trace_id, "3" * 16, "http", child.span_id, "CLIENT", 2, 3)
    asm.add([grandchild, child], [], None)
    assert reason(metrics, "late") == 2
    [ready] = settle(asm, clock)
    assert ready.late and {s.span_id for s in ready.trace.spans} == {"1" * 16, "2" * 16, "3" * 16}


def test_log_records_without_a_time_are_told_apart_by_their_body() -> None:
    asm, metrics, clock = make()
    a = LogEvent("gen_ai.user.message", "b" * 32, "1" * 16, 0, {}, {"content": "one"})
    b = LogEvent("gen_ai.user.message", "b" * 32, "1" * 16, 0, {}, {"content": "two"})
    asm.add([], [a, b, a], None)
    assert reason(metrics, "duplicate") == 1 and asm.pending_spans == 2
