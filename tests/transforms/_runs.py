"""Helpers for transforms tests: decode OTLP JSON lines and build runs (from a capture or from
spans made in the test); read a run's parts; compare runs with the capture expectations' compact
form."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from collector.otlp import Decoded, decode_json_bytes
from scorers.types import Message, ScorerRun
from transforms import BuildResult, LogEvent, Span, Trace, build_runs, group_traces
from transforms.reasons import Reason


def decode_file(path: Path) -> Decoded:
    out = Decoded()
    for line in path.read_bytes().splitlines():
        if line.strip():
            out.extend(decode_json_bytes(line))
    return out


def runs_of(decoded: Decoded) -> tuple[list[ScorerRun], Counter[str]]:
    runs: list[ScorerRun] = []
    reasons: Counter[str] = Counter()
    for trace in group_traces(decoded.spans, decoded.logs).values():
        built = checked_build_runs(trace)
        runs.extend(built.runs)
        reasons.update(built.reasons)
    runs.sort(key=lambda r: (r.target.started_at, r.target.trace_id, r.target.span_id))
    return runs, reasons


def _tool_calls(msg: Message | None) -> list[dict[str, Any]]:
    if msg is None:
        return []
    return [{"toolName": t.tool_name, "toolCallId": t.tool_call_id, "args": t.args,
             "result": t.result, "state": t.state, "errorText": t.error_text}
            for t in msg.tool_invocations]


def _check_tool_calls(where: str, expected: list[dict[str, Any]], msg: Message | None,
                      problems: list[str]) -> None:
    got = _tool_calls(msg)
    if len(got) != len(expected):
        problems.append(f"{where}: {len(got)} tool calls {got}, expected {len(expected)} "
                        f"{expected}")
        return
    for i, (e, g) in enumerate(zip(expected, got)):
        for key, value in e.items():
            if g.get(key) != value:
                problems.append(f"{where} tool call {i} {key}: got {g.get(key)!r}, "
                                f"expected {value!r}")


def _check_messages(where: str, expected: list[dict[str, Any]], got: list[Message],
                    problems: list[str]) -> None:
    if len(got) != len(expected):
        problems.append(f"{where}: {len(got)} messages "
                        f"{[(m.role, m.text) for m in got]}, expected {len(expected)} "
                        f"{[(m.get('role'), m.get('text')) for m in expected]}")
        return
    for i, (e, g) in enumerate(zip(expected, got)):
        if "role" in e and g.role != e["role"]:
            problems.append(f"{where}[{i}] role: got {g.role!r}, expected {e['role']!r}")
        if "text" in e and g.text != e["text"]:
            problems.append(f"{where}[{i}] text: got {g.text!r}, expected {e['text']!r}")
        if "toolCalls" in e:
            _check_tool_calls(f"{where}[{i}]", e["toolCalls"], g, problems)


def compare_run(expected: dict[str, Any], run: ScorerRun) -> list[str]:
    """Every difference between the expectation's listed fields and the run."""
    problems: list[str] = []
    target = run.target
    assert target is not None
    inp = run.input
    for key, attr in (("convention", "convention"), ("entityName", "entity_name"),
                      ("entityId", "entity_id"), ("conversationId", "conversation_id"),
                      ("resourceId", "resource_id"), ("contentCaptured", "content_captured"),
                      ("truncated", "truncated")):
        if key in expected and getattr(target, attr) != expected[key]:
            problems.append(f"{key}: got {getattr(target, attr)!r}, expected {expected[key]!r}")
    if "systemMessages" in expected:
        got = [s.content for s in inp.system_messages]
        if got != expected["systemMessages"]:
            problems.append(f"systemMessages: got {got!r}, expected {expected['systemMessages']!r}")
    if "taggedSystemMessages" in expected:
        got_t = {k: [s.content for s in v] for k, v in inp.tagged_system_messages.items()}
        if got_t != expected["taggedSystemMessages"]:
            problems.append(f"taggedSystemMessages: got {json.dumps(got_t)[:400]}, expected "
                            f"{json.dumps(expected['taggedSystemMessages'])[:400]}")
    if "inputMessages" in expected:
        _check_messages("inputMessages", expected["inputMessages"], inp.input_messages, problems)
    if "rememberedMessages" in expected:
        _check_messages("rememberedMessages", expected["rememberedMessages"],
                        inp.remembered_messages, problems)
    if "output" in expected:
        out = run.output[0] if run.output else None
        exp_out = expected["output"]
        if "text" in exp_out:
            got_text = out.text if out is not None else None
            if got_text != exp_out["text"]:
                problems.append(f"output text: got {got_text!r}, expected {exp_out['text']!r}")
        if "toolCalls" in exp_out:
            _check_tool_calls("output", exp_out["toolCalls"], out, problems)
    return problems


def checked_build_runs(trace: Trace) -> BuildResult:
    """`build_runs`, asserting that every reason it counts is a `Reason` member."""
    result = build_runs(trace)
    stray = [k for k in result.reasons if not isinstance(k, Reason)]
    assert not stray, f"reason codes outside transforms.Reason: {stray}"
    return result


def build_one_trace(spans: Iterable[Span], logs: Iterable[LogEvent] | None = None) -> BuildResult:
    """`checked_build_runs` on the one trace `spans` (and `logs`) make; asserts they make one."""
    traces = group_traces(spans, logs or [])
    assert len(traces) == 1, list(traces)
    (trace,) = traces.values()
    return checked_build_runs(trace)


def one_trace_runs(spans: Iterable[Span], logs: Iterable[LogEvent] | None = None
                   ) -> list[ScorerRun]:
    """The runs of the one trace `spans` (and `logs`) make (`build_one_trace`)."""
    return build_one_trace(spans, logs).runs


def one_run(spans: Iterable[Span], logs: Iterable[LogEvent] | None = None) -> ScorerRun:
    """The one run of the one trace `spans` (and `logs`) make; asserts both are one."""
    runs = build_one_trace(spans, logs).runs
    assert len(runs) == 1, [r.target.entity_name if r.target else None for r in runs]
    return runs[0]


def all_runs(spans: Iterable[Span], logs: Iterable[LogEvent] | None = None) -> list[ScorerRun]:
    """The runs of every trace `spans` (and `logs`) make, trace by trace in arrival order."""
    runs: list[ScorerRun] = []
    for trace in group_traces(spans, logs or []).values():
        runs += checked_build_runs(trace).runs
    return runs


def history_of(run: ScorerRun) -> list[tuple[str, str]]:
    """(role, text) of each remembered message."""
    return [(m.role, m.text) for m in run.input.remembered_messages]


def tools_of(run: ScorerRun) -> list[tuple[str, str, Any, Any, str]]:
    """(name, call id, arguments, result, state) of each tool call of the run's first output
    message."""
    return [(t.tool_name, t.tool_call_id, t.args, t.result, t.state)
            for t in run.output[0].tool_invocations]


def calls_of(m: Message) -> list[tuple[str, str, Any, str, Any]]:
    """(call id, name, arguments, state, result) of each tool call of one message."""
    return [(t.tool_call_id, t.tool_name, t.args, t.state, t.result) for t in m.tool_invocations]


def tags_of(run: ScorerRun) -> dict[str, list[str]]:
    """The tagged system messages' contents, by tag."""
    return {k: [m.content for m in v] for k, v in run.input.tagged_system_messages.items()}
