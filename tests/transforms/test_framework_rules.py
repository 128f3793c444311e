"""The run builder's rules for agent frameworks (DESIGN §3.4, "Agent frameworks"), each on a
hand-built span set shaped like a framework nobody wrote an extractor for: one run per
invocation of the agent the user called (graph nodes and loop steps are parts of it, a
sub-agent with its own name is a run), content read once from attributes, span events and
log records, model-call spans that made no call left out, the agent span's own input and
output as the source when the model calls carry none (placeholders fall back to the real
content), and an argument dump never taken for the conversation."""

from __future__ import annotations

import json
from typing import Any

from scorers.types import ScorerRun
from tests.transforms._spans import TRACE, new_span_id, span
from transforms import Trace, build_runs, run_roots
from transforms.types import LogEvent, Span, SpanEvent

SYSTEM = "You are a weather bot."
QUESTION = "What is the weather in Paris?"
LOOKUP = "Let me look that up."
ANSWER = "It is 14°C and raining in Paris."
USAGE = {"gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 10}


def _build(spans: list[Span], logs: list[LogEvent] | None = None) -> list[ScorerRun]:
    """The runs of one trace; `run_roots` (the sidecar's ready-check) must name their roots."""
    trace = Trace(TRACE, spans, logs or [])
    built = build_runs(trace)
    assert [r.span_id for r in run_roots(trace)] == [
        run.target.span_id for run in built.runs if run.target]
    return built.runs


def _summary(run: ScorerRun) -> dict[str, Any]:
    """What a user sees of a run: who, what was asked and remembered, the instructions, the
    answer and every tool call with its result."""
    assert run.target is not None
    out = run.output[0] if run.output else None
    return {
        "entity": run.target.entity_name,
        "input": [m.text for m in run.input.input_messages],
        "remembered": [(m.role, m.text) for m in run.input.remembered_messages],
        "system": [m.content for m in run.input.system_messages],
        "answer": out.text if out else None,
        "tools": [(t.tool_name, t.args, t.result, t.state) for t in out.tool_invocations]
        if out else [],
        "texts": [p.text for p in out.content.parts if getattr(p, "type", "") == "text"]
        if out else [],
    }


def _msgs(*pairs: tuple[str, Any]) -> str:
    """GenAI (parts) messages: ("user", "text"), ("assistant", "text"), ("call", args) for
    an assistant tool call `call_1`, ("result", value) for its result."""
    out: list[dict[str, Any]] = []
    for role, value in pairs:
        if role == "call":
            out.append({"role": "assistant", "parts": [
                {"type": "text", "content": LOOKUP},
                {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": value}],
                "finish_reason": "tool_call"})
        elif role == "result":
            out.append({"role": "tool", "parts": [
                {"type": "tool_call_response", "id": "call_1", "response": value}]})
        else:
            out.append({"role": role, "parts": [{"type": "text", "content": value}]})
    return json.dumps(out)


def _chat(parent: str | None, start: int, *, inp: str | None = None, out: str | None = None,
          usage: bool = True, **extra: Any) -> Span:
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    if inp is not None:
        attrs["gen_ai.input.messages"] = inp
    if out is not None:
        attrs["gen_ai.output.messages"] = out
    if usage:
        attrs.update(USAGE)
    attrs.update(extra)
    return span("chat gpt-4o", attrs, parent=parent, start=start, end=start + 90, kind="CLIENT")


def _tool(parent: str, start: int, convention: str = "genai") -> Span:
    if convention == "openinference":
        return span("get_weather", {"openinference.span.kind": "TOOL", "tool.name": "get_weather",
                                    "tool.id": "call_1", "input.value": '{"city": "Paris"}',
                                    "output.value": '{"temp_c": 14}'},
                    parent=parent, start=start, end=start + 50)
    return span("execute_tool get_weather", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": '{"city": "Paris"}',
        "gen_ai.tool.call.result": '{"temp_c": 14}'}, parent=parent, start=start, end=start + 50)


def _agent(name: str | None, start: int = 1_000, end: int = 10_000, parent: str | None = None,
           **extra: Any) -> Span:
    attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", **extra}
    if name is not None:
        attrs["gen_ai.agent.name"] = name
    return span(f"invoke_agent {name or ''}".strip(), attrs, span_id=new_span_id(),
                parent=parent, start=start, end=end)


def _oi(name: str, kind: str, parent: str | None, start: int, end: int, **attrs: Any) -> Span:
    """An OpenInference span of `kind` (AGENT, CHAIN, LLM), without `agent.name` unless given."""
    return span(name, {"openinference.span.kind": kind, **attrs}, parent=parent, start=start,
                end=end)


def _oi_llm(parent: str, start: int, messages: list[tuple[str, str]],
            output: tuple[str, str] | None, tool_call: bool = False) -> Span:
    attrs: dict[str, Any] = {"llm.model_name": "gpt-4o", "llm.token_count.prompt": 20}
    for i, (role, text) in enumerate(messages):
        attrs[f"llm.input_messages.{i}.message.role"] = role
        attrs[f"llm.input_messages.{i}.message.content"] = text
    if output is not None:
        attrs["llm.output_messages.0.message.role"] = output[0]
        attrs["llm.output_messages.0.message.content"] = output[1]
    if tool_call:
        attrs["llm.output_messages.0.message.tool_calls.0.tool_call.id"] = "call_1"
        attrs["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] = \
            "get_weather"
        attrs["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"] = \
            '{"city": "Paris"}'
        attrs["llm.finish_reason"] = "tool_calls"
    return _oi("ChatOpenAI", "LLM", parent, start, start + 90, **attrs)


# --------------------------------------------------------------------------- one run per agent


def _graph(root: Span, node_kind: str) -> list[Span]:
    """A graph agent's turn under OpenInference: nodes `agent` (marked `node_kind`, with no
    name of their own), `tools`, `agent` again, each model call inside its node."""
    rid = root.span_id
    first = _oi("agent", node_kind, rid, 1_100, 2_000)
    tools = _oi("tools", "CHAIN", rid, 2_100, 3_000)
    second = _oi("agent", node_kind, rid, 3_100, 4_000)
    return [
        root, first,
        _oi_llm(first.span_id, 1_200, [("system", SYSTEM), ("user", QUESTION)], ("assistant",
                                                                                  LOOKUP),
                tool_call=True),
        tools, _tool(tools.span_id, 2_200, "openinference"), second,
        _oi_llm(second.span_id, 3_200, [("system", SYSTEM), ("user", QUESTION)],
                ("assistant", ANSWER)),
    ]


def test_graph_nodes_a_framework_marks_as_agents_are_steps_of_one_run() -> None:
    root = _oi("weather-agent", "AGENT", None, 1_000, 5_000,
               **{"input.value": QUESTION, "output.value": ANSWER})
    runs = _build(_graph(root, "AGENT"))
    assert len(runs) == 1
    got = _summary(runs[0])
    assert got["entity"] == "weather-agent"
    assert got["input"] == [QUESTION]
    assert got["system"] == [SYSTEM]
    assert got["answer"] == ANSWER
    assert got["tools"] == [("get_weather", {"city": "Paris"}, {"temp_c": 14}, "result")]


def test_a_graph_without_agent_spans_is_one_run_named_after_the_graph() -> None:
    # No span is an agent: the framework's own root span around the model calls and the
    # tool is the unit of work, not each model call.
    root = _oi("LangGraph", "CHAIN", None, 1_000, 5_000)
    runs = _build(_graph(root, "CHAIN"))
    assert [_summary(r)["entity"] for r in runs] == ["LangGraph"]
    got = _summary(runs[0])
    assert got["input"] == [QUESTION]
    assert got["answer"] == ANSWER
    assert got["tools"] == [("get_weather", {"city": "Paris"}, {"temp_c": 14}, "result")]


def test_a_chain_that_asks_no_model_is_no_run() -> None:
    # A retrieval pipeline (CHAIN root > CHAIN step, no LLM span) is no agent invocation:
    # nothing to score, counted `no_run`, not an empty run.
    root = _oi("LangGraph", "CHAIN", None, 1_000, 5_000,
               **{"input.value": json.dumps({"messages": [{"type": "human", "content": QUESTION}]}),
                  "input.mime_type": "application/json"})
    step = _oi("retrieve", "CHAIN", root.span_id, 1_100, 1_900, **{"input.value": QUESTION})
    built = build_runs(Trace(TRACE, [root, step], []))
    assert built.runs == []
    assert built.reasons["no_run"] == 1
    assert run_roots(Trace(TRACE, [root, step], [])) == []


def test_model_calls_under_a_span_no_convention_reads_stay_one_run_each() -> None:
    http = span("POST /chat", {"http.request.method": "POST"}, start=1_000, end=9_000)
    first = _chat(http.span_id, 1_100, inp=_msgs(("user", QUESTION)), out=_msgs(("assistant",
                                                                                 LOOKUP)))
    second = _chat(http.span_id, 2_100, inp=_msgs(("user", "And Berlin?")),
                   out=_msgs(("assistant", "Cloudy.")))
    runs = _build([http, first, second])
    assert [_summary(r)["input"] for r in runs] == [[QUESTION], ["And Berlin?"]]


def test_an_agent_span_without_a_name_of_its_own_inside_an_agent_is_a_step() -> None:
    root = _agent("weather-agent")
    step = _agent(None, start=1_100, end=4_000, parent=root.span_id)
    spans = [root, step,
             _chat(step.span_id, 1_200, inp=_msgs(("system", SYSTEM), ("user", QUESTION)),
                   out=_msgs(("assistant", ANSWER)))]
    runs = _build(spans)
    assert [_summary(r)["entity"] for r in runs] == ["weather-agent"]
    assert _summary(runs[0])["answer"] == ANSWER


def test_a_sub_agent_with_its_own_name_is_a_run_of_its_own() -> None:
    root = _agent("coordinator")
    sub = _agent("weather-agent", start=2_000, end=4_000, parent=root.span_id)
    spans = [
        root,
        _chat(root.span_id, 1_100, inp=_msgs(("system", "Route the user."), ("user", QUESTION)),
              out=_msgs(("assistant", "Handing over to the weather agent."))),
        sub,
        _chat(sub.span_id, 2_100, inp=_msgs(("system", SYSTEM), ("user", QUESTION)),
              out=_msgs(("assistant", ANSWER))),
    ]
    runs = _build(spans)
    assert [(_summary(r)["entity"], _summary(r)["answer"]) for r in runs] == [
        ("coordinator", "Handing over to the weather agent."), ("weather-agent", ANSWER)]


# --------------------------------------------------------------------------- content read once


def _event_pairs(span_id: str) -> tuple[list[SpanEvent], list[LogEvent]]:
    """The ≤v1.36 GenAI events of one call, as span events and as the same log records."""
    bodies = [("gen_ai.system.message", {"content": SYSTEM}),
              ("gen_ai.user.message", {"content": QUESTION}),
              ("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": ANSWER}})]
    events = [SpanEvent(name, 1_500 + i, {"gen_ai.event.content": json.dumps(b)})
              for i, (name, b) in enumerate(bodies)]
    logs = [LogEvent(event_name=name, trace_id=TRACE, span_id=span_id, time_unix_nano=1_600 + i,
                     body=b) for i, (name, b) in enumerate(bodies)]
    return events, logs


def test_span_events_repeated_as_log_records_count_once() -> None:
    root = _agent("weather-agent")
    chat = _chat(root.span_id, 1_100)
    events, logs = _event_pairs(chat.span_id)
    chat.events = events
    trace = Trace(TRACE, [root, chat], logs)
    built = build_runs(trace)
    assert built.reasons["duplicate"] == 3
    got = _summary(built.runs[0])
    assert got["input"] == [QUESTION]
    assert got["remembered"] == []  # the question is not read twice (once as history)
    assert got["system"] == [SYSTEM]
    assert got["texts"] == [ANSWER]


def test_events_on_a_step_span_and_the_model_span_inside_it_are_one_call() -> None:
    # A framework writes the call's messages as events on its step span; the model span
    # below has only the output (and usage): one call, read once, nothing lost.
    root = _agent("weather-agent")
    step = span("step", {"gen_ai.operation.name": "execute_task"}, parent=root.span_id,
                start=1_050, end=3_000)
    chat = _chat(step.span_id, 1_100, out=_msgs(("assistant", ANSWER)))
    events, _ = _event_pairs(step.span_id)
    step.events = events
    runs = _build([root, step, chat])
    got = _summary(runs[0])
    assert got["input"] == [QUESTION]
    assert got["system"] == [SYSTEM]
    assert got["texts"] == [ANSWER]


def test_agent_span_events_repeating_its_calls_add_nothing() -> None:
    # The agent span's own events (its input and its answer) repeat what the model calls
    # under it recorded in full: the history and instructions still come from the calls.
    root = _agent("weather-agent")
    history = [("user", "Hi, I'm Ana."), ("assistant", "Hi Ana!")]
    spans = [
        root,
        _chat(root.span_id, 1_100, inp=_msgs(("system", SYSTEM), *history, ("user", QUESTION)),
              out=_msgs(("call", {"city": "Paris"}))),
        _tool(root.span_id, 1_300),
        _chat(root.span_id, 1_500, inp=_msgs(("system", SYSTEM), *history, ("user", QUESTION),
                                            ("call", {"city": "Paris"}), ("result", {"temp_c": 14})),
              out=_msgs(("assistant", ANSWER))),
    ]
    root.events = [
        SpanEvent("gen_ai.user.message", 1_001, {"content": QUESTION}),
        SpanEvent("gen_ai.choice", 9_999, {"gen_ai.event.content": json.dumps(
            {"index": 0, "finish_reason": "stop",
             "message": {"role": "assistant", "content": ANSWER}})}),
    ]
    got = _summary(_build(spans)[0])
    assert got["remembered"] == history
    assert got["system"] == [SYSTEM]
    assert got["texts"] == [LOOKUP, ANSWER]
    assert got["tools"] == [("get_weather", {"city": "Paris"}, {"temp_c": 14}, "result")]


def test_a_tool_result_recorded_without_a_call_id_joins_the_call_before_it() -> None:
    root = _agent("weather-agent")
    result = {"role": "tool", "parts": [{"type": "tool_call_response",
                                        "response": {"temp_c": 14}}]}
    second_input = json.loads(_msgs(("user", QUESTION), ("call", {"city": "Paris"}))) + [result]
    spans = [
        root,
        _chat(root.span_id, 1_100, inp=_msgs(("user", QUESTION)),
              out=_msgs(("call", {"city": "Paris"}))),
        _chat(root.span_id, 1_500, inp=json.dumps(second_input),
              out=_msgs(("assistant", ANSWER))),
    ]
    got = _summary(_build(spans)[0])
    assert got["tools"] == [("get_weather", {"city": "Paris"}, {"temp_c": 14}, "result")]


# --------------------------------------------------------------------------- no call, no run


def test_a_model_span_that_made_no_call_is_never_a_run() -> None:
    # A framework's preparation span, marked as a model call, with no content and no usage.
    prep = _chat(None, 1_000, usage=False)
    real = _chat(None, 2_000, inp=_msgs(("user", QUESTION)), out=_msgs(("assistant", ANSWER)))
    runs = _build([prep, real])
    assert [(_summary(r)["input"], _summary(r)["answer"]) for r in runs] == [
        ([QUESTION], ANSWER)]


def test_a_preparation_span_is_not_the_first_or_last_model_call() -> None:
    root = _agent("weather-agent")
    spans = [
        root,
        _chat(root.span_id, 1_050, usage=False),  # before the real call: no history of its own
        _chat(root.span_id, 1_100, inp=_msgs(("system", SYSTEM), ("user", "Hi"),
                                            ("assistant", "Hello!"), ("user", QUESTION)),
              out=_msgs(("assistant", ANSWER))),
        _chat(root.span_id, 1_300, usage=False),  # after it: no answer of its own
    ]
    got = _summary(_build(spans)[0])
    assert got["system"] == [SYSTEM]
    assert got["remembered"] == [("user", "Hi"), ("assistant", "Hello!")]
    assert got["input"] == [QUESTION]
    assert got["answer"] == ANSWER


# --------------------------------------------------------------------------- the agent's own


def test_the_agent_span_is_the_source_when_no_model_call_carries_content() -> None:
    root = _oi("weather-agent", "AGENT", None, 1_000, 5_000,
               **{"agent.name": "weather-agent", "input.value": QUESTION,
                  "output.value": ANSWER})
    llm = _oi("ChatOpenAI", "LLM", root.span_id, 1_100, 1_900,
              **{"llm.model_name": "gpt-4o", "llm.token_count.prompt": 20})
    got = _summary(_build([root, llm])[0])
    assert got["input"] == [QUESTION]
    assert got["answer"] == ANSWER


def test_placeholders_in_the_model_calls_fall_back_to_the_agent_span() -> None:
    root = _agent("weather-agent", **{
        "gen_ai.input.messages": _msgs(("user", QUESTION)),
        "gen_ai.output.messages": _msgs(("assistant", ANSWER))})
    spans = [root, _chat(root.span_id, 1_100, inp=_msgs(("user", "<elided>")),
                         out=_msgs(("assistant", "<elided>")))]
    got = _summary(_build(spans)[0])
    assert got["input"] == [QUESTION]
    assert got["remembered"] == []
    assert got["answer"] == ANSWER


def test_a_placeholder_on_the_agent_span_falls_back_to_the_model_call() -> None:
    root = _agent("weather-agent", **{
        "gen_ai.input.messages": _msgs(("user", "[REDACTED]")),
        "gen_ai.output.messages": _msgs(("assistant", "[REDACTED]"))})
    spans = [root, _chat(root.span_id, 1_100, inp=_msgs(("system", SYSTEM), ("user", QUESTION)),
                         out=_msgs(("assistant", ANSWER)))]
    [run] = _build(spans)
    got = _summary(run)
    assert got["input"] == [QUESTION]
    assert got["system"] == [SYSTEM]
    assert got["answer"] == ANSWER
    assert run.target is not None and run.target.content_captured  # the real content is there


def test_placeholders_in_a_second_record_of_a_call_are_no_redaction() -> None:
    # One model call recorded twice (a framework's span around the SDK's): the inner record
    # has only placeholders (its events say `<elided>`), the outer one the content.
    root = _agent("weather-agent")
    outer = _chat(root.span_id, 1_100, inp=_msgs(("system", SYSTEM), ("user", QUESTION)),
                  out=_msgs(("assistant", ANSWER)))
    inner = _chat(outer.span_id, 1_110, usage=False)
    inner.events = [_ev("gen_ai.user.message", 1_111, {"content": "<elided>"}),
                    _ev("gen_ai.choice", 1_150, {"index": 0, "message": {"content": "<elided>"}})]
    [run] = _build([root, outer, inner])
    assert _summary(run)["input"] == [QUESTION]
    assert _summary(run)["answer"] == ANSWER
    assert run.target is not None and run.target.content_captured


def test_placeholders_where_no_record_has_the_content_are_redaction() -> None:
    root = _agent("weather-agent")
    spans = [root, _chat(root.span_id, 1_100, inp=_msgs(("user", "[REDACTED]")),
                         out=_msgs(("assistant", "[REDACTED]")))]
    [run] = _build(spans)
    assert run.target is not None and not run.target.content_captured
    assert "[REDACTED]" not in run.model_dump_json()


# --------------------------------------------------------------------------- not a conversation


def test_an_argument_dump_on_the_agent_span_is_not_the_input() -> None:
    for dump in ('{"args": [], "kwargs": {"messages": "hi"}}',
                 "{'messages': [HumanMessage(content='What is the weather in Paris?')]}"):
        root = _agent("weather-agent", **{"gen_ai.input.messages": _msgs(("user", dump))})
        spans = [root, _chat(root.span_id, 1_100, inp=_msgs(("user", QUESTION)),
                             out=_msgs(("assistant", ANSWER)))]
        got = _summary(_build(spans)[0])
        assert got["input"] == [QUESTION], dump


def test_a_failed_tool_span_without_a_call_id_joins_the_call_with_its_arguments() -> None:
    # Two calls in one round; the failing tool's span has no call id (nothing wrapped its
    # output) and ran first: it is Berlin's call that failed, not the first one.
    root = _agent("weather-agent")
    calls = {"role": "assistant", "parts": [
        {"type": "tool_call", "id": "call_paris", "name": "get_weather",
         "arguments": {"city": "Paris"}},
        {"type": "tool_call", "id": "call_berlin", "name": "get_weather",
         "arguments": {"city": "Berlin"}}], "finish_reason": "tool_call"}
    failed = span("execute_tool get_weather", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.arguments": '{"city": "Berlin"}'}, parent=root.span_id, start=1_200,
        status="ERROR")
    failed.status_message = "unknown city"
    paris = span("execute_tool get_weather", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "call_paris", "gen_ai.tool.call.arguments": '{"city": "Paris"}',
        "gen_ai.tool.call.result": '{"temp_c": 14}'}, parent=root.span_id, start=1_250)
    spans = [root, _chat(root.span_id, 1_100, inp=_msgs(("user", QUESTION)),
                         out=json.dumps([calls])), failed, paris]
    got = _summary(_build(spans)[0])
    assert got["tools"] == [("get_weather", {"city": "Paris"}, {"temp_c": 14}, "result"),
                            ("get_weather", {"city": "Berlin"}, None, "output-error")]


def _ev(name: str, t: int, body: dict[str, Any]) -> SpanEvent:
    return SpanEvent(name, t, {"gen_ai.event.content": json.dumps(body)})


def test_an_agent_loop_recording_events_on_every_level_reads_each_call_once() -> None:
    # An agent loop that writes its messages as events on the agent span, on each cycle span
    # and on each model-call span (whose attributes hold no content): one run, every text
    # and tool call once.
    call = {"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    agent = _agent("loop-agent")
    cycle1 = span("cycle", {"event_loop.cycle_id": "1"}, parent=agent.span_id, start=1_100,
                  end=2_900)
    chat1 = _chat(cycle1.span_id, 1_200)
    tool = _tool(cycle1.span_id, 2_000)
    cycle2 = span("cycle", {"event_loop.cycle_id": "2"}, parent=agent.span_id, start=3_000,
                  end=4_900)
    chat2 = _chat(cycle2.span_id, 3_100)
    agent.events = [_ev("gen_ai.user.message", 1_001, {"content": QUESTION}),
                    _ev("gen_ai.choice", 9_000, {"index": 0, "finish_reason": "end_turn",
                                                 "message": {"content": ANSWER}})]
    cycle1.events = [_ev("gen_ai.user.message", 1_101, {"content": QUESTION}),
                     _ev("gen_ai.choice", 2_800, {"index": 0, "message": {
                         "content": LOOKUP, "tool_calls": [call]}})]
    chat1.events = [_ev("gen_ai.system.message", 1_201, {"content": SYSTEM}),
                    _ev("gen_ai.user.message", 1_202, {"content": QUESTION}),
                    _ev("gen_ai.choice", 1_280, {"index": 0, "finish_reason": "tool_use",
                                                 "message": {"content": LOOKUP},
                                                 "tool_calls": [call]})]
    history = [_ev("gen_ai.user.message", 3_101, {"content": QUESTION}),
               _ev("gen_ai.assistant.message", 3_102, {"content": LOOKUP,
                                                       "tool_calls": [call]}),
               _ev("gen_ai.tool.message", 3_103, {"id": "call_1", "content": '{"temp_c": 14}'})]
    cycle2.events = [*history, _ev("gen_ai.choice", 4_800, {"index": 0, "message": {
        "content": ANSWER}})]
    chat2.events = [_ev("gen_ai.system.message", 3_150, {"content": SYSTEM}), *[
        SpanEvent(e.name, e.time_unix_nano + 50, e.attributes) for e in history],
                    _ev("gen_ai.choice", 3_180, {"index": 0, "finish_reason": "end_turn",
                                                 "message": {"content": ANSWER}})]
    runs = _build([agent, cycle1, chat1, tool, cycle2, chat2])
    assert len(runs) == 1
    got = _summary(runs[0])
    assert got["entity"] == "loop-agent"
    assert got["input"] == [QUESTION]
    assert got["remembered"] == []
    assert got["system"] == [SYSTEM]
    assert got["texts"] == [LOOKUP, ANSWER]
    assert got["tools"] == [("get_weather", {"city": "Paris"}, {"temp_c": 14}, "result")]


def test_streamed_chunks_listed_before_the_whole_message_are_not_messages() -> None:
    # A framework lists every streamed chunk of the answer as an output message, then the
    # whole message: the answer is the whole message, the chunks add no text or call.
    root = _agent("weather-agent")
    chunks = [{"role": "assistant", "parts": [{"type": "text", "content": t}]}
              for t in ("Let me l", "ook that", " up.")]
    partial_call = {"role": "assistant", "parts": [
        {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": None}]}
    whole = json.loads(_msgs(("call", {"city": "Paris"})))
    spans = [root,
             _chat(root.span_id, 1_100, inp=_msgs(("user", QUESTION)),
                   out=json.dumps([*chunks, partial_call, *whole])),
             _tool(root.span_id, 1_300),
             _chat(root.span_id, 1_500, inp=_msgs(("user", QUESTION), ("call", {"city": "Paris"}),
                                                  ("result", {"temp_c": 14})),
                   out=_msgs(("assistant", ANSWER)))]
    got = _summary(_build(spans)[0])
    assert got["texts"] == [LOOKUP, ANSWER]
    assert got["tools"] == [("get_weather", {"city": "Paris"}, {"temp_c": 14}, "result")]


def test_events_on_a_tool_span_are_no_model_call() -> None:
    # A framework writes the tool's input and result as message events on its tool span.
    root = _agent("weather-agent")
    tool = _tool(root.span_id, 1_300)
    tool.events = [_ev("gen_ai.tool.message", 1_301, {"id": "call_1", "content": "Paris"}),
                   _ev("gen_ai.choice", 1_340, {"index": 0, "message": {"content": "14"}})]
    spans = [root,
             _chat(root.span_id, 1_100, inp=_msgs(("user", QUESTION)),
                   out=_msgs(("call", {"city": "Paris"}))),
             tool,
             _chat(root.span_id, 1_500, inp=_msgs(("user", QUESTION), ("call", {"city": "Paris"}),
                                                  ("result", {"temp_c": 14})),
                   out=_msgs(("assistant", ANSWER)))]
    got = _summary(_build(spans)[0])
    assert got["texts"] == [LOOKUP, ANSWER]
    assert got["tools"] == [("get_weather", {"city": "Paris"}, {"temp_c": 14}, "result")]
