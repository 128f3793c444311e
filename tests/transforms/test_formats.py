"""The toolkit's format rules (transforms/_formats.py, _json.py, _normalize.py, _attrs.py):
placeholders for hidden content, LangChain serialisations, Converse and Google GenAI content
blocks, tool outputs wrapped in message objects, text that only repeats a tool call, Python reprs
and argument dumps.

Each rule is checked on hand-built values, then on a hand-built span set through `build_runs`
(GenAI spans unless the rule is about another convention's attribute), showing the run a user
sees: a framework without an extractor of its own gets every rule through the shared toolkit.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from scorers.types import ScorerRun
from tests.transforms._runs import build_one_trace
from tests.transforms._spans import TRACE, new_span_id, span
from transforms._attrs import is_args_dump, tool_args, tool_fact
from transforms._facts import NMessage, SpanFacts
from transforms._formats import is_python_repr
from transforms._json import flag_redacted, is_redacted, json_attr, parse_json_attr
from transforms._normalize import Placeholder, message_from_any, messages_from_any, tool_output
from transforms.types import LogEvent, Span

SYSTEM = "You are a weather bot."
ASK = "What is the weather in Paris?"
ANSWER = "It is 14°C and raining in Paris."
RESULT = {"temp_c": 14, "conditions": "rain"}


# --------------------------------------------------------------------------- span helpers


def _agent(root: str, **attrs: Any) -> Span:
    return span("invoke_agent weather-agent", {"gen_ai.operation.name": "invoke_agent",
                                                "gen_ai.agent.name": "weather-agent", **attrs},
                span_id=root, start=0, end=10_000)


def _chat(root: str, start: int, inp: Any, out: Any, **attrs: Any) -> Span:
    a = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", **attrs}
    if inp is not None:
        a["gen_ai.input.messages"] = json.dumps(inp)
    if out is not None:
        a["gen_ai.output.messages"] = json.dumps(out)
    return span("chat gpt-4o", a, parent=root, start=start, end=start + 50, kind="CLIENT")


def _tool(root: str, start: int, result: Any, *, call: str = "call_1",
          args: Any = '{"city": "Paris"}') -> Span:
    return span("execute_tool get_weather", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": call, "gen_ai.tool.call.arguments": args,
        "gen_ai.tool.call.result": result if isinstance(result, str) else json.dumps(result)},
        parent=root, start=start, end=start + 10)


def _one_run(spans: list[Span], logs: list[LogEvent] | None = None) -> tuple[ScorerRun, Any]:
    result = build_one_trace(spans, logs)
    assert len(result.runs) == 1
    return result.runs[0], result.reasons


def _texts(run: ScorerRun) -> list[tuple[str, str | None]]:
    msgs = run.input.remembered_messages + run.input.input_messages + run.output
    return [(m.role, m.content.content) for m in msgs]


def _tools(run: ScorerRun) -> list[tuple[str, str, Any, Any, str | None]]:
    assert len(run.output) == 1
    return [(t.tool_call_id, t.tool_name, t.args, t.result, t.error_text)
            for t in run.output[0].tool_invocations]


def _kinds(m: NMessage | None) -> list[str]:
    assert m is not None
    return [p.kind for p in m.parts]


# --------------------------------------------------------------------------- 1. placeholders


@pytest.mark.parametrize("text", [
    "__REDACTED__", "[Scrubbed due to 'password']", "<redacted>", "[REDACTED]",
    "[REDACTED] by policy", "<elided>", "<ELIDED>", "[elided]", "REDACTED", "[redacted]",
    "(Redacted)", "__redacted__", "***", "*****", "  <elided>  "])
def test_placeholders_are_redaction(text: str) -> None:
    assert is_redacted(text)
    facts = SpanFacts("genai")
    assert flag_redacted(facts, text) and facts.redacted
    assert json_attr(SpanFacts("genai"), text) == (None, False)


@pytest.mark.parametrize("text", [
    "", "Redacted documents are on page 2.", "redacted", "**bold**", "*", "It's <elided> now",
    "REDACTED files", "elided", None, 3])
def test_text_that_only_mentions_redaction_is_content(text: Any) -> None:
    assert not is_redacted(text)


def test_a_placeholder_message_part_is_no_text_but_is_seen() -> None:
    for value in ("<elided>", [{"role": "user", "content": "<elided>"}],
                  [{"role": "user", "parts": [{"type": "text", "content": "<elided>"}]}],
                  [{"role": "user", "content": [{"type": "text", "text": "***"}]}]):
        msgs = messages_from_any(value)
        assert msgs is not None and len(msgs) == 1
        part = msgs[0].parts[0]
        assert isinstance(part.text, Placeholder) and is_redacted(part.text)
        assert not part.text and msgs[0].text == ""  # falsy: never read as text
    assert type(messages_from_any("Hi")[0].parts[0].text) is str  # type: ignore[index]


def test_placeholder_content_makes_the_run_not_captured() -> None:
    root = new_span_id()
    elided = [{"role": "user", "parts": [{"type": "text", "content": "<elided>"}]}]
    out = [{"role": "assistant", "parts": [{"type": "text", "content": "<elided>"}],
            "finish_reason": "stop"}]
    run, reasons = _one_run([_agent(root), _chat(root, 100, elided, out)])
    assert run.target.content_captured is False
    assert reasons["redacted"] == 1
    assert "elided" not in run.model_dump_json()  # the placeholder is never a message text


def test_placeholder_tool_arguments_and_results_are_no_values() -> None:
    fact = tool_fact(span("t", {}), call="c", name="get_weather", args="[REDACTED]",
                     result="<elided>", has_result=True)
    assert (fact.args, fact.result, fact.has_result, fact.redacted) == (None, None, True, True)
    plain = tool_fact(span("t", {}), call="c", name="n", args="{}", result="ok", has_result=True)
    assert plain.redacted is False
    # A placeholder that opens like JSON is not JSON cut by a length limit.
    assert not parse_json_attr("[REDACTED]").truncated
    assert parse_json_attr('[{"role": "us').truncated


def test_redacted_tool_span_and_messages_through_build_runs() -> None:
    """Strands with gen_ai_unredacted_attributes: every content attribute is "[REDACTED]"."""
    root = new_span_id()
    spans = [_agent(root, **{"gen_ai.system_instructions": "[REDACTED]"}),
             span("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                                  "gen_ai.input.messages": "[REDACTED]",
                                  "gen_ai.output.messages": "[REDACTED]"},
                  parent=root, start=100, end=150),
             _tool(root, 200, "[REDACTED]", args="[REDACTED]"),
             span("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                                  "gen_ai.input.messages": "[REDACTED]",
                                  "gen_ai.output.messages": "[REDACTED]"},
                  parent=root, start=300, end=350)]
    run, reasons = _one_run(spans)
    assert run.target.content_captured is False and reasons["redacted"] == 1
    assert run.target.truncated is False
    assert [(t.tool_call_id, t.args, t.result) for t in run.output[0].tool_invocations] == [
        ("call_1", None, None)]
    assert run.output[0].text is None or "REDACTED" not in run.output[0].text
    assert "REDACTED" not in run.output[0].model_dump_json()


def test_placeholder_and_empty_body_events_make_the_run_not_captured() -> None:
    root, chat = new_span_id(), new_span_id()
    spans = [_agent(root), span("chat gpt-4o", {"gen_ai.operation.name": "chat",
                                                "gen_ai.request.model": "gpt-4o"},
                                span_id=chat, parent=root, start=100, end=200)]

    def log(name: str, body: Any, t: int) -> LogEvent:
        return LogEvent(event_name=name, trace_id=TRACE, span_id=chat, time_unix_nano=t,
                        body=body)

    # Google ADK without content capture: "<elided>" bodies; other libraries send none.
    logs = [log("gen_ai.system.message", {"content": "<elided>"}, 110),
            log("gen_ai.user.message", {}, 120),
            log("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": "<elided>"}},
                190)]
    run, reasons = _one_run(spans, logs)
    assert run.target.content_captured is False
    assert reasons["redacted"] == 1
    assert "elided" not in run.model_dump_json()


# --------------------------------------------------------------------------- 2. LangChain


def _lc(cls: str, **kwargs: Any) -> dict[str, Any]:
    """What `langchain_core.load.dumpd` writes (printed from langchain-core 1.8.3)."""
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", cls],
            "kwargs": kwargs}


LC_CALL = {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"}
OPENAI_CALL = {"id": "call_1", "type": "function",
               "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}


def _summary(msgs: list[NMessage] | None) -> list[tuple[Any, ...]]:
    assert msgs is not None
    out: list[tuple[Any, ...]] = []
    for m in msgs:
        for p in m.parts:
            if p.kind == "text":
                out.append((m.role, "text", p.text))
            elif p.kind == "tool_call":
                out.append((m.role, "call", p.tool_call_id, p.tool_name, p.args))
            elif p.kind == "tool_result":
                out.append((m.role, "result", p.tool_call_id, p.result, p.is_error))
            else:
                out.append((m.role, p.kind))
    return out


EXPECTED_TURN = [
    ("system", "text", SYSTEM),
    ("user", "text", ASK),
    ("assistant", "text", "Let me look that up."),
    ("assistant", "call", "call_1", "get_weather", {"city": "Paris"}),
    ("tool", "result", "call_1", RESULT, False),
]


def test_langchain_lc_objects() -> None:
    value = [_lc("SystemMessage", content=SYSTEM, type="system"),
             _lc("HumanMessage", content=ASK, type="human", id="4c96"),
             _lc("AIMessage", content="Let me look that up.", type="ai", tool_calls=[LC_CALL],
                 additional_kwargs={"tool_calls": [OPENAI_CALL]}, invalid_tool_calls=[]),
             _lc("ToolMessage", content=json.dumps(RESULT), type="tool", name="get_weather",
                 tool_call_id="call_1", status="success")]
    assert _summary(messages_from_any(value)) == EXPECTED_TURN
    # A chat model's inputs: a batch of one conversation, under "messages".
    assert _summary(messages_from_any({"messages": [value]})) == EXPECTED_TURN
    # Several conversations in one batch are not one conversation.
    assert messages_from_any([value, value]) is None


def test_langchain_message_dicts() -> None:
    """`message_to_dict` ({type, data}) and `model_dump()` (type next to the fields)."""
    data = [{"type": "system", "data": {"content": SYSTEM, "type": "system", "name": None}},
            {"type": "human", "data": {"content": ASK, "additional_kwargs": {},
                                       "type": "human", "id": None}},
            {"type": "ai", "data": {"content": "Let me look that up.", "type": "ai",
                                    "additional_kwargs": {"tool_calls": [OPENAI_CALL]},
                                    "tool_calls": [], "invalid_tool_calls": []}},
            {"type": "tool", "data": {"content": json.dumps(RESULT), "type": "tool",
                                      "tool_call_id": "call_1", "status": "success",
                                      "artifact": None}}]
    assert _summary(messages_from_any({"messages": data})) == EXPECTED_TURN
    dumps = [d["data"] for d in data]
    assert _summary(messages_from_any(dumps)) == EXPECTED_TURN


def test_langchain_content_blocks_tool_errors_and_other_classes() -> None:
    ai = _lc("AIMessage", type="ai", tool_calls=[LC_CALL], content=[
        {"type": "text", "text": "Let me look that up."},
        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}])
    # The tool_use block and tool_calls say the same call: it is one call.
    assert _summary([message_from_any(ai)]) == EXPECTED_TURN[2:4]  # type: ignore[list-item]
    failed = message_from_any(_lc("ToolMessage", content="Error: city not found", type="tool",
                                  tool_call_id="call_2", status="error"))
    assert _summary([failed]) == [  # type: ignore[list-item]
        ("tool", "result", "call_2", "Error: city not found", True)]
    chunk = message_from_any(_lc("AIMessageChunk", content="Hi", type="AIMessageChunk"))
    assert chunk is not None and (chunk.role, chunk.text) == ("assistant", "Hi")
    chat = message_from_any({"type": "chat", "role": "critic", "content": "Fine."})
    assert chat is not None and chat.role == "critic"
    # An lc object of another class is not a message.
    assert message_from_any({"lc": 1, "type": "constructor", "id": ["langchain", "prompts",
                                                                    "PromptTemplate"],
                             "kwargs": {"template": "{x}"}}) is None
    assert message_from_any({"lc": 1, "type": "not_implemented", "id": ["x"],
                             "repr": "X()"}) is None


def test_langchain_llm_result() -> None:
    value = {"generations": [[{
        "text": "Let me look that up.", "type": "ChatGeneration",
        "generation_info": {"finish_reason": "tool_calls"},
        "message": _lc("AIMessage", content="Let me look that up.", type="ai",
                       tool_calls=[LC_CALL])}]], "llm_output": None, "type": "LLMResult"}
    msgs = messages_from_any(value)
    assert _summary(msgs) == EXPECTED_TURN[2:4]
    assert msgs is not None and msgs[0].finish_reason == "tool_calls"
    text_only = messages_from_any({"generations": [[{"text": ANSWER, "type": "Generation"}]]})
    assert _summary(text_only) == [("assistant", "text", ANSWER)]


def test_langchain_messages_through_build_runs() -> None:
    """A framework that writes LangChain's own serialisation into the GenAI attributes."""
    root = new_span_id()
    system = _lc("SystemMessage", content=SYSTEM, type="system")
    human = _lc("HumanMessage", content=ASK, type="human")
    ai = _lc("AIMessage", content="Let me look that up.", type="ai", tool_calls=[LC_CALL])
    tool = _lc("ToolMessage", content=json.dumps(RESULT), type="tool", tool_call_id="call_1",
               name="get_weather", status="success")
    final = {"generations": [[{"text": ANSWER, "generation_info": {"finish_reason": "stop"},
                               "message": _lc("AIMessage", content=ANSWER, type="ai")}]]}
    spans = [_agent(root),
             _chat(root, 100, {"messages": [[system, human]]},
                   {"generations": [[{"message": ai,
                                      "generation_info": {"finish_reason": "tool_calls"}}]]}),
             _tool(root, 200, tool),
             _chat(root, 300, {"messages": [[system, human, ai, tool]]}, final)]
    run, _ = _one_run(spans)
    assert [m.content for m in run.input.system_messages] == [SYSTEM]
    assert _texts(run) == [("user", ASK), ("assistant", ANSWER)]
    assert _tools(run) == [("call_1", "get_weather", {"city": "Paris"}, RESULT, None)]
    assert run.target.content_captured is True


# --------------------------------------------------------------------------- 3. Converse blocks


CONVERSE_CALL = {"role": "assistant", "content": [
    {"text": "Let me look that up."},
    {"toolUse": {"toolUseId": "call_1", "name": "get_weather", "input": {"city": "Paris"}}}]}
CONVERSE_RESULT = {"role": "user", "content": [
    {"toolResult": {"toolUseId": "call_1", "status": "success",
                    "content": [{"json": RESULT}]}}]}


def test_converse_blocks() -> None:
    msgs = messages_from_any([{"role": "user", "content": [{"text": ASK}]}, CONVERSE_CALL,
                              CONVERSE_RESULT])
    assert _summary(msgs) == [("user", "text", ASK), *EXPECTED_TURN[2:4],
                              ("user", "result", "call_1", RESULT, False)]
    assert msgs is not None and msgs[2].only_tool_results
    failed = message_from_any({"role": "user", "content": [{"toolResult": {
        "toolUseId": "call_2", "status": "error", "content": [{"text": "city not found"}]}}]})
    assert _summary([failed]) == [  # type: ignore[list-item]
        ("user", "result", "call_2", "city not found", True)]
    # Text results are their text, JSON text is decoded; other blocks are no text.
    text_result = message_from_any({"role": "user", "content": [{"toolResult": {
        "toolUseId": "c", "content": [{"text": '{"a": 1}'}]}}]})
    assert text_result is not None and text_result.parts[0].result == {"a": 1}
    other = message_from_any({"role": "user", "content": [
        {"image": {"format": "png", "source": {"bytes": "..."}}}, {"cachePoint": {}},
        {"reasoningContent": {"reasoningText": {"text": "Think."}}}]})
    assert _kinds(other) == ["other", "other", "reasoning"]
    assert other is not None and not any(p.absent for p in other.parts)


def test_google_genai_parts() -> None:
    msgs = messages_from_any([
        {"role": "user", "parts": [{"text": ASK}]},
        {"role": "model", "parts": [
            {"text": "Hmm.", "thought": True}, {"text": "Let me look that up."},
            {"function_call": {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}}}]},
        {"role": "user", "parts": [{"function_response": {
            "id": "call_1", "name": "get_weather", "response": RESULT}}]}])
    assert _summary(msgs) == [("user", "text", ASK), ("model", "reasoning"),
                              ("model", "text", "Let me look that up."),
                              ("model", "call", "call_1", "get_weather", {"city": "Paris"}),
                              ("user", "result", "call_1", RESULT, False)]


def _dumped_part(**fields: Any) -> dict[str, Any]:
    """A Google GenAI `Part.model_dump()`: every field, unset ones null (ADK's log events)."""
    part: dict[str, Any] = dict.fromkeys(
        ("code_execution_result", "executable_code", "file_data", "function_call",
         "function_response", "inline_data", "text", "thought", "thought_signature",
         "video_metadata"))
    return {**part, **fields}


def test_google_genai_dumped_parts_and_content_objects() -> None:
    """ADK's events: the message content is a whole `Content` (`{parts, role}`) whose parts
    carry every field; only the set ones count."""
    msgs = messages_from_any([
        {"role": "user", "content": {"role": "user", "parts": [_dumped_part(text=ASK)]}},
        # ADK sends history as gen_ai.user.message events: the Content's role is the real one.
        {"role": "user", "content": {"role": "model", "parts": [
            _dumped_part(text="Let me look that up."),
            _dumped_part(function_call={"id": "call_1", "name": "get_weather",
                                        "args": {"city": "Paris"}})]}},
        {"role": "user", "content": {"role": "user", "parts": [_dumped_part(function_response={
            "will_continue": None, "id": "call_1", "name": "get_weather",
            "response": RESULT})]}}])
    assert _summary(msgs) == [("user", "text", ASK),
                              ("model", "text", "Let me look that up."),
                              ("model", "call", "call_1", "get_weather", {"city": "Paris"}),
                              ("user", "result", "call_1", RESULT, False)]
    image = message_from_any({"role": "user", "parts": [
        _dumped_part(inline_data={"mime_type": "image/png", "data": "..."})]})
    assert _kinds(image) == ["other"]


def test_converse_messages_through_build_runs() -> None:
    """Strands' default mode writes Converse messages; the history comes back the same way."""
    root = new_span_id()
    system = {"role": "system", "content": [{"text": SYSTEM}]}
    earlier = [{"role": "user", "content": [{"text": "Hi, I'm Ana."}]},
               {"role": "assistant", "content": [{"text": "Hi Ana!"}]}]
    ask = {"role": "user", "content": [{"text": ASK}]}
    final = [{"role": "assistant", "content": [{"text": ANSWER}]}]
    spans = [_agent(root),
             _chat(root, 100, [system, *earlier, ask], [CONVERSE_CALL]),
             _chat(root, 300, [system, *earlier, ask, CONVERSE_CALL, CONVERSE_RESULT], final)]
    run, _ = _one_run(spans)
    assert _texts(run) == [("user", "Hi, I'm Ana."), ("assistant", "Hi Ana!"), ("user", ASK),
                           ("assistant", ANSWER)]
    assert _tools(run) == [("call_1", "get_weather", {"city": "Paris"}, RESULT, None)]
    assert run.output[0].content.parts[0].text == "Let me look that up."  # type: ignore[union-attr]
    assert run.target.content_captured is True


# --------------------------------------------------------------------------- 4. tool outputs


@pytest.mark.parametrize(("value", "expected"), [
    (_lc("ToolMessage", content=json.dumps(RESULT), type="tool", tool_call_id="call_1",
         status="success"), (RESULT, False)),
    ({"type": "tool", "data": {"content": "boom", "type": "tool", "tool_call_id": "call_1",
                               "status": "error"}}, ("boom", True)),
    ({"type": "tool", "content": [{"type": "text", "text": "14"}, {"type": "text", "text": "C"}],
      "tool_call_id": "c"}, ("14\nC", False)),
    ({"toolUseId": "call_1", "status": "success", "content": [{"json": RESULT}]}, (RESULT, False)),
    ({"toolUseId": "call_1", "status": "error", "content": [{"text": "no such city"}]},
     ("no such city", True)),
    ({"content": [{"type": "text", "text": json.dumps(RESULT)}], "isError": False},
     (RESULT, False)),
    ({"meta": None, "content": [{"type": "text", "text": "denied"}], "structuredContent": None,
      "isError": True}, ("denied", True)),
    # OpenLLMetry's LangChain callback dump around the ToolMessage.
    ({"output": _lc("ToolMessage", content="14", type="tool", tool_call_id="c"),
      "kwargs": {"tags": [], "name": "get_weather"}}, (14, False)),
    # A bare list of text blocks (Strands' gen_ai.tool.call.result, MCP content) is its text.
    ([{"text": json.dumps(RESULT)}], (RESULT, False)),
    ([{"type": "text", "text": "14"}, {"type": "text", "text": "C", "annotations": None}],
     ("14\nC", False)),
    ([{"json": RESULT}], (RESULT, False)),
    # Not wrappers: kept whole.
    ([{"text": "a", "score": 1}], ([{"text": "a", "score": 1}], False)),
    ([{"type": "image", "data": "..."}], ([{"type": "image", "data": "..."}], False)),
    ({"type": "json", "value": RESULT}, ({"type": "json", "value": RESULT}, False)),
    ({"content": "plain", "isError": False, "extra": 1},
     ({"content": "plain", "isError": False, "extra": 1}, False)),
    (json.dumps(RESULT), (RESULT, False)),
    ("just text", ("just text", False)),
])
def test_tool_output_unwraps_message_objects(value: Any, expected: tuple[Any, bool]) -> None:
    assert tool_output(value) == expected
    assert tool_output(json.dumps(value)) == expected  # the same, recorded as JSON text


def test_framework_argument_dumps_as_tool_arguments() -> None:
    callback = {"input_str": "{'city': 'Paris'}", "tags": ["seq:step:1"], "metadata": {},
                "inputs": {"city": "Paris"}, "kwargs": {"tool_call_id": "call_1"}}
    assert tool_args(callback) == {"city": "Paris"}
    smol = {"args": [], "sanitize_inputs_outputs": True, "kwargs": {"city": "Paris"}}
    assert tool_args(smol) == {"city": "Paris"}
    assert tool_args({"args": ["Paris"], "kwargs": {}}) == "Paris"
    assert tool_args({"city": "Paris"}) == {"city": "Paris"}


def test_wrapped_tool_outputs_through_build_runs() -> None:
    root = new_span_id()
    calls = {"role": "assistant", "finish_reason": "tool_call", "parts": [
        {"type": "tool_call", "id": cid, "name": "get_weather", "arguments": {"city": city}}
        for cid, city in (("call_1", "Paris"), ("call_2", "Atlantis"), ("call_3", "Rome"))]}
    ask = [{"role": "user", "parts": [{"type": "text", "content": ASK}]}]
    final = [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}],
              "finish_reason": "stop"}]
    spans = [
        _agent(root), _chat(root, 100, ask, [calls]),
        _tool(root, 200, _lc("ToolMessage", content=json.dumps(RESULT), type="tool",
                             tool_call_id="call_1", status="success")),
        _tool(root, 210, {"toolUseId": "call_2", "status": "error",
                          "content": [{"text": "unknown city: Atlantis"}]},
              call="call_2", args='{"city": "Atlantis"}'),
        _tool(root, 220, {"content": [{"type": "text", "text": '{"temp_c": 20}'}],
                          "isError": False}, call="call_3", args='{"city": "Rome"}'),
        _chat(root, 300, ask, final)]
    run, _ = _one_run(spans)
    assert _tools(run) == [
        ("call_1", "get_weather", {"city": "Paris"}, RESULT, None),
        ("call_2", "get_weather", {"city": "Atlantis"}, None, "unknown city: Atlantis"),
        ("call_3", "get_weather", {"city": "Rome"}, {"temp_c": 20}, None)]
    assert [t.state for t in run.output[0].tool_invocations] == ["result", "output-error", "result"]


# --------------------------------------------------------------------------- 5. echoed calls


@pytest.mark.parametrize("echo", [
    '{"city": "Paris"}',
    '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    '[{"id": "call_1", "type": "function", "function": {"name": "get_weather", '
    '"arguments": "{\\"city\\": \\"Paris\\"}"}}]',
    "call_1"])
def test_text_that_repeats_a_tool_call_is_dropped(echo: str) -> None:
    m = message_from_any({"role": "assistant", "content": echo, "tool_calls": [OPENAI_CALL]})
    assert _summary([m]) == [EXPECTED_TURN[3]]  # type: ignore[list-item]


def test_text_next_to_a_tool_call_that_says_more_is_kept() -> None:
    for text in ("Let me look that up.", '{"city": "Berlin"}', '{"city": "Paris", "x": 1}'):
        m = message_from_any({"role": "assistant", "content": text, "tool_calls": [OPENAI_CALL]})
        assert _kinds(m) == ["text", "tool_call"]
    # Without a tool call, JSON text is text.
    assert _kinds(message_from_any({"role": "assistant", "content": '{"city": "Paris"}'})) == [
        "text"]


def test_echoed_tool_call_text_through_build_runs() -> None:
    root = new_span_id()
    ask = [{"role": "user", "parts": [{"type": "text", "content": ASK}]}]
    echo = {"role": "assistant", "finish_reason": "tool_call", "parts": [
        {"type": "text", "content": '{"city": "Paris"}'},
        {"type": "tool_call", "id": "call_1", "name": "get_weather",
         "arguments": {"city": "Paris"}}]}
    final = [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}],
              "finish_reason": "stop"}]
    run, _ = _one_run([_agent(root), _chat(root, 100, ask, [echo]),
                       _tool(root, 200, RESULT), _chat(root, 300, ask, final)])
    parts = run.output[0].content.parts
    assert [p.type for p in parts] == ["tool-invocation", "text"]
    assert run.output[0].text == ANSWER


# --------------------------------------------------------------------------- 6. reprs and dumps


@pytest.mark.parametrize("text", [
    "{'messages': [HumanMessage(content='hi', additional_kwargs={}, response_metadata={})]}",
    "[HumanMessage(content='hi', additional_kwargs={}, response_metadata={})]",
    "Task(description='Find the weather', expected_output='A sentence')",
    "[{'role': 'user', 'content': 'hi'}]",
    "ChatMessage(role=<MessageRole.USER: 'user'>, content=[{'type': 'text', 'text': 'hi'}])",
    "RunInput()"])
def test_python_reprs_are_not_conversations(text: str) -> None:
    assert is_python_repr(text) and is_args_dump(text)
    assert messages_from_any(text) is None
    assert messages_from_any([text]) is None
    assert messages_from_any({"messages": [text, text]}) is None
    parsed = parse_json_attr(text)
    assert not parsed.ok and not parsed.truncated  # not JSON cut by a length limit


@pytest.mark.parametrize("text", [
    "What is the weather in Paris?", "Call get_weather(city='Paris') please",
    "Hello(world)", "[1, 2]", '{"a": 1}', "Use f(x) = 2", "(hi)", "{'a'"])
def test_text_is_not_a_python_repr(text: str) -> None:
    assert not is_python_repr(text)


def test_argument_dumps_are_not_conversations() -> None:
    assert is_args_dump({"args": ["hi"], "kwargs": {}})
    assert is_args_dump({"inputs": {"messages": []}, "tags": [], "metadata": {}, "kwargs": {}})
    assert not is_args_dump({"messages": []}) and not is_args_dump("hi")
    assert messages_from_any({"args": [], "kwargs": {"city": "Paris"}}) is None
    assert messages_from_any({"inputs": {"messages": [{"role": "user", "content": "hi"}]},
                              "tags": [], "kwargs": {}}) is None


def test_python_repr_input_through_build_runs() -> None:
    """An OpenInference agent whose input is a repr: the run's input comes from its model
    call, and the repr is neither a message nor cut JSON."""
    root = new_span_id()
    agent = span("Agent", {"openinference.span.kind": "AGENT", "agent.name": "weather-agent",
                           "input.value": "{'messages': [HumanMessage(content='What is the "
                                          "weather in Paris?', additional_kwargs={})]}",
                           "output.value": ANSWER}, span_id=root, start=0, end=10_000)
    llm = span("LLM", {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
                       "llm.input_messages.0.message.role": "system",
                       "llm.input_messages.0.message.content": SYSTEM,
                       "llm.input_messages.1.message.role": "user",
                       "llm.input_messages.1.message.content": ASK,
                       "llm.output_messages.0.message.role": "assistant",
                       "llm.output_messages.0.message.content": ANSWER},
               parent=root, start=100, end=200)
    run, reasons = _one_run([agent, llm])
    assert _texts(run) == [("user", ASK), ("assistant", ANSWER)]
    assert run.target.truncated is False and reasons["truncated_json"] == 0
