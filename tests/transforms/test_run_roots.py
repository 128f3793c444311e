"""`run_roots`: the sidecar's ready-check. It names the same roots as `build_runs`, in the
same order, on every capture and every capture missing any one span (the agent span
included), and says whether each root has ended and whether its ancestors have arrived."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.transforms._runs import decode_file
from tests.transforms._spans import TRACE, genai_agent_trace, span
from transforms import RunRoot, Trace, build_runs, group_traces, run_roots

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = sorted((ROOT / "tests" / "testdata" / "captures").glob("*/*.otlp.jsonl")) + sorted(
    (ROOT / "examples" / "traces").glob("*.otlp.jsonl"))


def _built_roots(trace: Trace) -> list[str]:
    return [r.target.span_id for r in build_runs(trace).runs if r.target and r.target.span_id]


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_same_roots_as_build_runs_on_whole_and_partial_traces(path: Path) -> None:
    decoded = decode_file(path)
    for trace in group_traces(decoded.spans, decoded.logs).values():
        assert [r.span_id for r in run_roots(trace)] == _built_roots(trace)
        for drop in range(len(trace.spans)):
            partial = Trace(trace.trace_id, trace.spans[:drop] + trace.spans[drop + 1:],
                            trace.logs)
            assert [r.span_id for r in run_roots(partial)] == _built_roots(partial), (
                f"without span {trace.spans[drop].name!r}")


def test_an_agent_still_running_is_a_root_that_has_not_ended() -> None:
    spans = genai_agent_trace()
    spans[0].end_time_unix_nano = 0  # the invoke_agent span has not ended yet
    assert run_roots(Trace(TRACE, spans)) == [RunRoot(spans[0].span_id, False, True)]


def test_missing_agent_span_gives_incomplete_bare_roots() -> None:
    # The agent span has not arrived: its model calls are roots for now, and they say their
    # parent is missing, so the assembly waits for it.
    agent, first_chat, tool, second_chat = genai_agent_trace()
    roots = run_roots(Trace(TRACE, [first_chat, tool, second_chat]))
    assert [(r.span_id, r.ended, r.complete) for r in roots] == [
        (first_chat.span_id, True, False), (second_chat.span_id, True, False)]
    assert [r.span_id for r in run_roots(Trace(TRACE, [agent, first_chat, tool, second_chat]))
            ] == [agent.span_id]


def test_no_genai_spans_no_roots() -> None:
    assert run_roots(Trace(TRACE, [span("GET /health", {"http.method": "GET"})])) == []
