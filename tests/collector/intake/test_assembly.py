"""Trace assembly with a fake clock: readiness (quiet period, open or missing agent spans,
max_wait), de-duplication, eviction, late spans with and without `rescore_late`."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from collector._telemetry import Metrics
from collector.intake import Assembly
from tests.fakes.metrics import sample
from transforms import LogEvent, Span, build_runs, run_roots

T1, T2, T3 = "1" * 32, "2" * 32, "3" * 32
AGENT, CHAT, TOOL, HTTP = "a" * 16, "b" * 16, "c" * 16, "d" * 16
AGENT2, CHAT2 = "e" * 16, "f" * 16


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def at(self, offset: float) -> Clock:
        self.now = 100.0 + offset
        return self


def agent(sid: str = AGENT, parent: str | None = None, *, trace: str = T1, end: int = 9,
          name: str = "weather") -> Span:
    return Span(trace, sid, f"invoke_agent {name}", parent, "INTERNAL", 1, end, attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name})


def chat(sid: str = CHAT, parent: str | None = AGENT, *, trace: str = T1, end: int = 5,
         text: str = "Hi") -> Span:
    return Span(trace, sid, "chat gpt-4o", parent, "CLIENT", 2, end, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 3, "gen_ai.usage.output_tokens": 2,
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
            {"type": "text", "content": text}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "Hello"}], "finish_reason": "stop"}])})


def plain(sid: str, parent: str | None = None, *, trace: str = T1) -> Span:
    return Span(trace, sid, "GET /weather", parent, "SERVER", 1, 9)


def make(clock: Clock, **kw: object) -> tuple[Assembly, Metrics]:
    metrics = Metrics()
    return Assembly(metrics=metrics, clock=clock, **kw), metrics  # type: ignore[arg-type]


def reason(metrics: Metrics, name: str) -> float:
    return sample(metrics, "scorecar_transform_reasons_total", reason=name)


def test_ready_after_quiet_period_when_roots_ended() -> None:
    clock = Clock()
    asm, metrics = make(clock)
    assert asm.next_deadline() is None
    asm.add([chat(), agent()], [], 1)
    assert asm.pending_spans == 2 and asm.pending_traces == 1
    assert metrics.registry.get_sample_value("scorecar_traces_pending") == 1
    assert asm.next_deadline() == 101.0
    assert asm.poll() == []
    clock.at(0.5)
    asm.add([plain(HTTP)], [], 2)  # a new span restarts the quiet period
    clock.at(1.2)
    assert asm.poll() == []
    clock.at(1.5)
    [ready] = asm.poll()
    assert ready.reason == "quiet" and not ready.rebuild and ready.roots is None
    assert ready.trace.trace_id == T1
    assert {s.span_id for s in ready.trace.spans} == {AGENT, CHAT, HTTP}
    assert ready.segments == Counter({1: 1, 2: 1})
    assert asm.pending_spans == asm.pending_traces == 0
    assert metrics.registry.get_sample_value("scorecar_traces_pending") == 0
    assert asm.next_deadline() is None


def test_inner_model_call_waits_for_its_agent_span() -> None:
    clock = Clock()
    asm, _ = make(clock)
    asm.add([chat()], [], 1)  # its agent span is still open in the app
    for t in (1.0, 2.0, 5.0, 20.0):
        assert asm.poll() == [], t
        clock.at(t)
    assert asm.stats["roots_checked"] == 1  # once per change, not on every poll
    asm.add([agent()], [], 2)
    clock.at(21.0)
    [ready] = asm.poll()
    assert ready.reason == "quiet"
    [root] = run_roots(ready.trace)
    assert root.span_id == AGENT  # scored as the agent's run, not a bare model call


def test_open_agent_span_waits_until_its_ended_copy() -> None:
    clock = Clock()
    asm, metrics = make(clock)
    asm.add([agent(end=0), chat()], [], 1)
    clock.at(2.0)
    assert asm.poll() == []
    asm.add([agent(end=9)], [], 2)  # re-sent once ended
    assert reason(metrics, "duplicate") == 1
    clock.at(3.0)
    [ready] = asm.poll()
    [span] = [s for s in ready.trace.spans if s.span_id == AGENT]
    assert span.end_time_unix_nano == 9
    assert len(ready.trace.spans) == 2


def test_max_wait_hands_over_whatever_is_there() -> None:
    clock = Clock()
    asm, _ = make(clock, max_wait=30.0)
    asm.add([chat()], [], 1)  # the agent span never comes
    asm.add([plain(HTTP, trace=T2)], [], 1)  # no run root at all
    clock.at(1.0)
    assert asm.poll() == []  # a trace without run roots is not handed over at quiet
    assert asm.next_deadline() == 130.0
    clock.at(29.9)
    assert asm.poll() == []
    clock.at(30.0)
    ready = asm.poll()
    assert [(r.trace.trace_id, r.reason) for r in ready] == [(T1, "max_wait"), (T2, "max_wait")]
    assert build_runs(ready[1].trace).reasons["not_genai"] == 1  # the builder says why


def test_duplicates_are_kept_once_and_counted() -> None:
    clock = Clock()
    asm, metrics = make(clock)
    log = LogEvent("gen_ai.user.message", T1, CHAT, 7, {}, {"content": "Hi"})
    asm.add([chat(), agent()], [log], 1)
    asm.add([chat(), agent()], [log], 2)  # the exporter retried the whole request
    assert asm.pending_spans == 3
    assert reason(metrics, "duplicate") == 3
    clock.at(1.0)
    [ready] = asm.poll()
    assert len(ready.trace.spans) == 2 and len(ready.trace.logs) == 1
    assert ready.segments == Counter({1: 1, 2: 1})


def test_out_of_order_arrival_and_logs_before_spans() -> None:
    clock = Clock()
    asm, _ = make(clock)
    log = LogEvent("gen_ai.user.message", T1, CHAT, 7, {}, {"content": "Hi"})
    asm.add([], [log], 1)
    asm.add([chat()], [], 2)
    asm.add([agent()], [], 3)
    clock.at(1.0)
    [ready] = asm.poll()
    assert len(ready.trace.spans) == 2 and len(ready.trace.logs) == 1


def test_eviction_by_spans_oldest_first_and_counted() -> None:
    clock = Clock()
    asm, metrics = make(clock, max_pending_spans=5)
    assert asm.add([chat(trace=T1), plain(HTTP, trace=T1), plain(TOOL, trace=T1)], [], 1) == []
    clock.at(0.1)
    assert asm.add([chat(trace=T2), plain(HTTP, trace=T2)], [], 2) == []
    clock.at(0.2)
    [evicted] = asm.add([chat(trace=T3)], [], 3)
    assert (evicted.trace_id, evicted.reason, evicted.items) == (T1, "evicted", 3)
    assert evicted.segments == Counter({1: 1})
    assert asm.pending_spans == 3 and asm.pending_traces == 2
    assert metrics.registry.get_sample_value("scorecar_spans_refused_total",
                                             {"reason": "evicted"}) == 3
    clock.at(60)
    assert sorted(r.trace.trace_id for r in asm.poll()) == [T2, T3]


def test_eviction_by_traces_oldest_first() -> None:
    clock = Clock()
    asm, metrics = make(clock, max_traces=2)
    asm.add([chat(trace=T1)], [], 1)
    clock.at(0.1)
    asm.add([chat(trace=T2)], [], 1)
    asm.add([chat(trace=T1, sid=TOOL)], [], 2)  # an old trace stays old when it grows
    clock.at(0.2)
    [evicted] = asm.add([chat(trace=T3)], [], 3)
    assert evicted.trace_id == T1 and evicted.segments == Counter({1: 1, 2: 1})
    assert asm.pending_traces == 2
    assert metrics.registry.get_sample_value("scorecar_spans_refused_total",
                                             {"reason": "evicted"}) == 2


def _hand_over_t1(asm: Assembly, clock: Clock) -> None:
    asm.add([agent(), chat()], [], 1)
    clock.at(1.0)
    [ready] = asm.poll()
    assert ready.trace.trace_id == T1


def test_late_span_counted_and_dropped_without_rescore() -> None:
    clock = Clock()
    asm, metrics = make(clock)
    _hand_over_t1(asm, clock)
    clock.at(5.0)
    tool = plain(TOOL, AGENT)
    [dropped] = asm.add([tool, chat()], [], 2)  # a late child and a re-delivered span
    assert (dropped.trace_id, dropped.reason, dropped.segments) == (T1, "dropped", {2: 1})
    assert reason(metrics, "late") == 1 and reason(metrics, "duplicate") == 1
    assert asm.pending_traces == 0
    clock.at(100)
    assert asm.poll() == []


def test_new_subtree_of_a_scheduled_trace_is_new_work() -> None:
    clock = Clock()
    asm, metrics = make(clock)
    _hand_over_t1(asm, clock)
    clock.at(5.0)
    assert asm.add([chat(CHAT2, AGENT2), agent(AGENT2, name="planner")], [], 2) == []
    assert reason(metrics, "late") == 0
    clock.at(6.0)
    [ready] = asm.poll()
    assert not ready.rebuild
    assert {s.span_id for s in ready.trace.spans} == {AGENT2, CHAT2}
    assert ready.segments == Counter({2: 1})


def test_rescore_late_rebuilds_with_the_same_run_ids() -> None:
    clock = Clock()
    asm, metrics = make(clock, rescore_late=True)
    asm.add([agent(), chat()], [], 1)
    clock.at(1.0)
    [first] = asm.poll()
    first_ids = [r.run_id for r in build_runs(first.trace).runs]
    clock.at(3.0)
    assert asm.add([plain(TOOL, CHAT)], [], 2) == []
    assert reason(metrics, "late") == 1
    clock.at(4.0)
    [again] = asm.poll()
    assert again.rebuild and again.late and again.late_spans == 1
    assert again.roots == frozenset({AGENT})
    assert again.segments == Counter({2: 1})  # the old holds were released with the first
    assert {s.span_id for s in again.trace.spans} == {AGENT, CHAT, TOOL}
    assert [r.run_id for r in build_runs(again.trace).runs] == first_ids


def test_rescore_late_of_a_missing_agent_span_after_max_wait() -> None:
    clock = Clock()
    asm, metrics = make(clock, rescore_late=True, max_wait=10.0)
    asm.add([chat()], [], 1)
    clock.at(10.0)
    [bare] = asm.poll()
    assert bare.reason == "max_wait"
    assert [r.span_id for r in run_roots(bare.trace)] == [CHAT]
    clock.at(12.0)
    asm.add([agent()], [], 2)  # the enclosing agent span, at last
    assert reason(metrics, "late") == 1
    clock.at(13.0)
    [again] = asm.poll()
    assert again.rebuild and again.roots == frozenset({AGENT})


def test_rescore_late_new_subtree_only_schedules_its_own_run() -> None:
    clock = Clock()
    asm, metrics = make(clock, rescore_late=True)
    _hand_over_t1(asm, clock)
    clock.at(5.0)
    asm.add([chat(CHAT2, AGENT2), agent(AGENT2, name="planner")], [], 2)
    assert reason(metrics, "late") == 0
    clock.at(6.0)
    [ready] = asm.poll()
    assert ready.roots == frozenset({AGENT2})  # the first run is not scored again
    assert ready.rebuild and not ready.late


def test_late_with_rescore_but_old_spans_forgotten() -> None:
    clock = Clock()
    asm, metrics = make(clock, rescore_late=True, late_window=10.0)
    _hand_over_t1(asm, clock)
    clock.at(20.0)
    assert asm.add([plain(TOOL, AGENT)], [], 2) == []  # forgotten: assembled as new work
    assert asm.remembered_traces == 0 and asm.pending_traces == 1
    assert reason(metrics, "late") == 0


def test_flush_hands_over_everything() -> None:
    clock = Clock()
    asm, _ = make(clock)
    asm.add([chat(trace=T1), chat(trace=T2)], [], 1)
    ready = asm.flush()
    assert [r.reason for r in ready] == ["flush", "flush"]
    assert asm.pending_traces == 0 and asm.next_deadline() is None


def test_readiness_does_not_rebuild_on_every_poll() -> None:
    clock = Clock()
    asm, _ = make(clock)
    for i in range(200):
        asm.add([chat(trace=f"{i + 1:032x}")], [], 1)  # all wait for their agent spans
    for step in range(1, 50):
        clock.at(step * 0.5)
        assert asm.poll() == []
    assert asm.stats["roots_checked"] == 200


# --------------------------------------------------------------------------- log_wait

EVENTS_CAPTURE = (Path(__file__).resolve().parents[2] / "testdata" / "captures"
                  / "genai-openai-v2-events" / "two_turns_tool.otlp.jsonl")


def _events_capture() -> tuple[list[Span], list[LogEvent]]:
    from collector.otlp import read_otlp_file

    decoded = read_otlp_file(EVENTS_CAPTURE)
    assert decoded.spans and decoded.logs
    return decoded.spans, decoded.logs


def _inputs(trace_spans: list[Span], logs: list[LogEvent], trace_id: str) -> list[object]:
    from transforms import Trace

    runs = build_runs(Trace(trace_id, trace_spans, logs)).runs
    return [r.input.model_dump(mode="json", by_alias=True) for r in runs]


def test_content_in_log_records_sent_after_the_spans_is_waited_for() -> None:
    """OTel GenAI's event mode: the model calls carry no content, their log records come 2 s
    after the spans (the SDK's log processor exports apart). The trace is not handed over
    without them, and is handed over as soon as they are there (one quiet period later)."""
    spans, logs = _events_capture()
    clock = Clock()
    asm, _ = make(clock, log_wait=5.0)
    asm.add(spans, [], 1)
    clock.at(1.5)
    assert asm.poll() == []
    assert asm.stats["awaiting_logs"] >= 1
    clock.at(2.0)
    asm.add([], logs, 2)
    clock.at(2.5)
    assert asm.poll() == []  # a quiet period after the records
    clock.at(3.01)
    ready = asm.poll()
    assert ready and all(r.reason == "quiet" for r in ready)
    for r in ready:
        whole = [lg for lg in logs if lg.trace_id == r.trace.trace_id]
        got = _inputs(r.trace.spans, r.trace.logs, r.trace.trace_id)
        assert got == _inputs([s for s in spans if s.trace_id == r.trace.trace_id], whole,
                              r.trace.trace_id)
        assert all(i["inputMessages"] for i in got)  # type: ignore[index]


def test_content_that_never_comes_is_waited_for_log_wait_only() -> None:
    spans, _ = _events_capture()
    clock = Clock()
    asm, _ = make(clock, log_wait=5.0)
    asm.add(spans, [], 1)
    clock.at(5.9)
    assert asm.poll() == []
    assert asm.next_deadline() == 106.0  # quiet period + log_wait after the last arrival
    clock.at(6.0)
    ready = asm.poll()
    assert ready and all(r.reason == "quiet" for r in ready)
    assert asm.pending_traces == 0


def test_runs_with_content_of_their_own_never_wait_for_logs() -> None:
    clock = Clock()
    asm, _ = make(clock, log_wait=5.0)
    asm.add([chat(), agent()], [], 1)
    clock.at(1.0)
    [ready] = asm.poll()
    assert ready.reason == "quiet"
    assert asm.stats["awaiting_logs"] == 0


def test_log_wait_off_hands_content_free_runs_over_after_the_quiet_period() -> None:
    spans, _ = _events_capture()
    clock = Clock()
    asm, _ = make(clock)  # log_wait 0, the constructor's default
    asm.add(spans, [], 1)
    clock.at(1.0)
    assert asm.poll()


# --------------------------------------------------------------------------- export timing
# The OTel SDK's batch processor exports finished child spans every few seconds while the agent
# span is still open; the agent span comes last, a run can last minutes.

LOCAL, REMOTE = 0x100, 0x300  # OTLP span flags: parent known local / known remote


def _with_flags(span: Span, flags: int) -> Span:
    span.flags = flags
    return span


def test_a_run_exported_in_batches_15_s_apart_is_handed_over_once_whole() -> None:
    clock = Clock()
    asm, metrics = make(clock, quiet_period=1.0, max_wait=30.0, max_trace_age=600.0)
    calls = [chat(f"{i:016x}", text=f"step {i}") for i in range(1, 5)]
    for n, call in enumerate(calls):  # at +0, +15, +30, +45: never 30 s without an arrival
        clock.at(15.0 * n)
        asm.add([call], [], n + 1)
        clock.at(15.0 * n + 14.9)
        assert asm.poll() == [], f"cut after batch {n + 1}"
    clock.at(50.0)
    asm.add([agent()], [], 5)  # the agent span, last
    clock.at(51.0)
    [ready] = asm.poll()
    assert ready.reason == "quiet"
    assert {s.span_id for s in ready.trace.spans} == {AGENT} | {c.span_id for c in calls}
    [run] = build_runs(ready.trace).runs
    assert run.target.span_id == AGENT
    assert asm.stats["partial"] == 0 and reason(metrics, "partial") == 0


def test_child_spans_first_and_the_agent_span_6_s_later() -> None:
    clock = Clock()
    asm, _ = make(clock)
    asm.add([chat()], [], 1)
    clock.at(5.9)
    assert asm.poll() == []  # the chat's parent (the agent span) has not arrived
    clock.at(6.0)
    asm.add([agent()], [], 2)
    clock.at(7.0)
    [ready] = asm.poll()
    assert ready.reason == "quiet" and {s.span_id for s in ready.trace.spans} == {AGENT, CHAT}


def test_a_trace_that_keeps_receiving_is_cut_by_max_trace_age_and_counted_partial() -> None:
    clock = Clock()
    asm, metrics = make(clock, quiet_period=1.0, max_wait=30.0, max_trace_age=60.0)
    for n in range(4):  # +0, +20, +40, +60: the agent span never comes
        clock.at(20.0 * n)
        asm.add([chat(f"{n + 1:016x}")], [], n + 1)
        if n < 3:
            clock.at(20.0 * n + 19.9)
            assert asm.poll() == []
    [ready] = asm.poll()
    assert ready.reason == "max_trace_age"
    assert asm.stats["partial"] >= 1 and reason(metrics, "partial") == asm.stats["partial"]


def test_max_wait_cuts_a_trace_that_went_quiet_without_its_agent_span() -> None:
    clock = Clock()
    asm, metrics = make(clock, max_wait=30.0, max_trace_age=600.0)
    asm.add([chat()], [], 1)  # no span flags: whether the parent will come is not known
    clock.at(29.9)
    assert asm.poll() == []
    clock.at(30.0)
    [ready] = asm.poll()
    assert ready.reason == "max_wait"
    assert reason(metrics, "partial") == 1


def test_a_parent_known_to_be_local_is_waited_for_past_max_wait() -> None:
    clock = Clock()
    asm, metrics = make(clock, max_wait=30.0, max_trace_age=600.0)
    asm.add([_with_flags(chat(), LOCAL)], [], 1)  # the tool runs 45 s; the agent span is open
    clock.at(30.0)
    assert asm.poll() == []
    assert asm.stats["awaiting_parent"] == 1
    clock.at(45.0)
    asm.add([_with_flags(agent(), LOCAL)], [], 2)
    clock.at(46.0)
    [ready] = asm.poll()
    assert ready.reason == "quiet" and {s.span_id for s in ready.trace.spans} == {AGENT, CHAT}
    assert reason(metrics, "partial") == 0


def test_a_local_parent_is_waited_for_up_to_max_trace_age_only() -> None:
    clock = Clock()
    asm, metrics = make(clock, max_wait=30.0, max_trace_age=120.0)
    asm.add([_with_flags(chat(), LOCAL)], [], 1)
    clock.at(119.9)
    assert asm.poll() == []
    clock.at(120.0)
    [ready] = asm.poll()
    assert ready.reason == "max_trace_age" and reason(metrics, "partial") == 1


def test_a_remote_parent_is_never_waited_for() -> None:
    """An agent invoked by another service: its span's parent lives in the caller's process
    and never comes here. The run is ready after the quiet period, not after max_wait."""
    clock = Clock()
    asm, metrics = make(clock, max_wait=30.0, max_trace_age=600.0)
    caller = "9" * 16
    asm.add([chat(), _with_flags(agent(parent=caller), REMOTE)], [], 1)
    clock.at(1.0)
    [ready] = asm.poll()
    assert ready.reason == "quiet"
    assert [r.complete for r in run_roots(ready.trace)] == [True]
    assert reason(metrics, "partial") == 0


def test_max_trace_age_below_max_wait_is_refused() -> None:
    import pytest

    with pytest.raises(ValueError, match="max_trace_age"):
        Assembly(metrics=Metrics(), max_wait=30.0, max_trace_age=10.0)
