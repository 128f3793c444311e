"""Capture driver: smolagents ToolCallingAgent traced by openinference-instrumentation-smolagents.

A real ``smolagents.ToolCallingAgent`` (named ``weather_agent``, ``instructions`` = the system
prompt, one ``@tool`` ``get_weather``) with ``OpenAIServerModel(model_id="gpt-4o-mini")`` talks
to the fake OpenAI chat-completions server (tests/fakes/fake_openai.py) on 127.0.0.1. The agent
keeps the conversation in its own memory: turn 2 is ``agent.run(TURN2_USER, reset=False)``. The
agent answers through smolagents' ``final_answer`` tool, so the fake model's script is:
get_weather(Paris) with the lead-in text, then final_answer(answer=TURN1_ANSWER); turn 2
final_answer(answer=TURN2_ANSWER). ``SmolagentsInstrumentor`` gets the tracer provider
explicitly; spans go through the real OTel SDK (OTLP/HTTP protobuf, batch processor) to the
loopback capture server (tests/fakes/otlp_capture.py). Writes ``<scenario>.otlp.jsonl``,
``<scenario>.expected.json`` and ``<scenario>.requests.json`` beside this file. Does not import
scorecar code.

What a run's output is (decided here, documented in the captures README): the answer the
agent returned (``agent.run``'s return value, which is the ``final_answer`` call's argument)
is the run's output text; ``get_weather`` is a tool invocation whose result is the observation
the tool returned; the ``final_answer`` call is how smolagents hands the answer back, not a
tool the agent used, so it is not a tool invocation of the run.

Regenerate (from the repository root; ``requirements.txt`` is the frozen install list of the
venv that made the committed captures)::

    python3.11 -m venv /tmp/capvenvs/smolagents
    /tmp/capvenvs/smolagents/bin/pip install --no-deps -r tests/testdata/captures/smolagents/requirements.txt
    /tmp/capvenvs/smolagents/bin/python tests/testdata/captures/smolagents/generate.py
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _common import (
    CONVERSATION_ID,
    LOOKUP_TEXT,
    MULTI_CALL_IDS,
    MULTI_TURN1_ANSWER,
    MULTI_TURN1_USER,
    MULTI_TURN2_ANSWER,
    MULTI_TURN2_USER,
    RECHECK_TEXT,
    SYSTEM_PROMPT,
    TOOL_NAME,
    TURN1_ANSWER,
    TURN1_USER,
    TURN2_ANSWER,
    TURN2_USER,
    ToolCallRecord,
    Turn,
    agent_run_expectation,
    get_weather,
    get_weather_or_fail,
    otel_providers,
    run_scenarios,
    summarize_capture,
    write_expected,
    write_requests,
)

LIBRARY = "smolagents"
MODEL = "gpt-4o-mini"
AGENT = "weather_agent"  # smolagents agent names must be Python identifiers
FINAL_ANSWER = "final_answer"
CALL_ID = "call_paris_1"
FINAL_IDS = ("call_final_1", "call_final_2")

SCENARIOS: dict[str, dict[str, Any]] = {
    "two_turns_tool": {"stream": False},
    "two_turns_tool_stream": {"stream": True},
    "two_turns_tool_hidden": {"stream": False, "hide": True},
    "two_tools_and_a_failure": {"stream": False, "multi": True},
}


def _final(fake: Any, call_id: str, answer: str) -> Any:
    return fake.ToolCallReply((fake.ToolCall(call_id, FINAL_ANSWER, json.dumps({"answer": answer})),))


def scripted_replies(fake: Any) -> list[Any]:
    """The provider's side: get_weather with the lead-in, then final_answer per turn."""
    return [
        fake.ToolCallReply((fake.ToolCall(CALL_ID, TOOL_NAME, json.dumps({"city": "Paris"})),), text=LOOKUP_TEXT),
        _final(fake, FINAL_IDS[0], TURN1_ANSWER),
        _final(fake, FINAL_IDS[1], TURN2_ANSWER),
    ]


def scripted_replies_multi(fake: Any) -> list[Any]:
    """`two_tools_and_a_failure` (_common.py), each answer through final_answer."""
    paris, berlin, rome1, rome2 = MULTI_CALL_IDS

    def call(cid: str, city: str) -> Any:
        return fake.ToolCall(cid, TOOL_NAME, json.dumps({"city": city}))

    return [
        fake.ToolCallReply((call(paris, "Paris"), call(berlin, "Berlin")), text=LOOKUP_TEXT),
        _final(fake, FINAL_IDS[0], MULTI_TURN1_ANSWER),
        fake.ToolCallReply((call(rome1, "Rome"),)),
        fake.ToolCallReply((call(rome2, "Rome"),), text=RECHECK_TEXT),
        _final(fake, FINAL_IDS[1], MULTI_TURN2_ANSWER),
    ]


class ToolLog:
    """What the app's tool returned or raised, per city, in call order (the driver's record)."""

    def __init__(self) -> None:
        self.outcomes: dict[str, list[tuple[Any, str | None]]] = {}

    def run(self, city: str, fn: Any) -> str:
        try:
            text = json.dumps(fn(city))
        except Exception as exc:
            self.outcomes.setdefault(city, []).append((None, str(exc)))
            raise
        self.outcomes.setdefault(city, []).append((json.loads(text), None))
        return text

    def take(self, city: str) -> tuple[Any, str | None]:
        return self.outcomes[city].pop(0)


def make_tool(log: ToolLog, fn: Any) -> Any:
    """``get_weather`` as a smolagents tool returning the JSON text of the weather."""
    from smolagents import tool

    @tool
    def weather_tool(city: str) -> str:
        """Current weather for a city.

        Args:
            city: The city.
        """
        return log.run(city, fn)

    weather_tool.name = TOOL_NAME
    return weather_tool


def _arguments(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def record_steps(turn: Turn, steps: list[Any], log: ToolLog, records: dict[str, ToolCallRecord]) -> None:
    """The tool steps of one run, from the model replies the agent recorded and what the tool
    returned or raised (smolagents drops a failed step's calls from its memory, so the calls come
    from the step's model output message, not from ``step.tool_calls``)."""
    from smolagents.memory import ActionStep

    for step in steps:
        message = step.model_output_message if isinstance(step, ActionStep) else None
        calls = [c for c in (message.tool_calls or []) if c.function.name != FINAL_ANSWER] if message else []
        if not calls:
            continue
        out = []
        for c in calls:
            args = _arguments(c.function.arguments)
            record = ToolCallRecord(c.id, c.function.name, args)
            result, error = log.take(args["city"])
            if error is None:
                record.result, record.has_result = result, True
            else:
                record.error = error
            records[c.id] = record
            out.append(record)
        turn.add_tool_step(step.model_output or None, out)


def history_from_memory(steps: list[Any], records: dict[str, ToolCallRecord]) -> list[dict[str, Any]]:
    """The conversation the agent's memory holds, in expectation shape: the tasks, the model's
    texts with the tool calls it kept (and their results), final_answer calls as the answer text,
    and the error message smolagents renders for a failed step (a user-role message on the wire)."""
    from smolagents.memory import ActionStep, TaskStep

    out: list[dict[str, Any]] = []
    for step in steps:
        if isinstance(step, TaskStep):
            out.append({"role": "user", "text": step.task})
            continue
        if not isinstance(step, ActionStep):
            continue
        text = step.model_output.strip() if isinstance(step.model_output, str) else ""
        calls = [c for c in step.tool_calls or [] if c.name != FINAL_ANSWER]
        if text or calls:
            message: dict[str, Any] = {"role": "assistant", "text": text}
            if calls:
                message["toolCalls"] = [records[c.id].expected(in_history=True) for c in calls]
            out.append(message)
        for c in step.tool_calls or []:
            if c.name == FINAL_ANSWER:
                out.append({"role": "assistant", "text": str(_arguments(c.arguments)["answer"])})
        if step.error is not None:
            rendered = [m for m in step.to_messages() if m.role.value == "tool-response"]
            out += [{"role": "user", "text": "".join(p["text"] for p in m.content)} for m in rendered]
    return out


def run_turn(agent: Any, user_text: str, *, stream: bool, first: bool, log: ToolLog,
             records: dict[str, ToolCallRecord]) -> Turn:
    """One ``agent.run``; the Turn is read from the steps the agent recorded in its memory."""
    from openinference.instrumentation import using_session
    from smolagents.memory import FinalAnswerStep

    before = len(agent.memory.steps)
    turn = Turn(user_text=user_text, history=history_from_memory(agent.memory.steps, records))
    with using_session(CONVERSATION_ID):  # OpenInference's session.id on every span of the run
        if stream:
            answer = None
            for event in agent.run(user_text, reset=first, stream=True):
                if isinstance(event, FinalAnswerStep):
                    answer = event.output
        else:
            answer = agent.run(user_text, reset=first)
    record_steps(turn, agent.memory.steps[before:], log, records)
    turn.final_text = str(answer)
    return turn


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its files."""
    spec = SCENARIOS[name]
    import fake_openai as fake
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from otlp_capture import OtlpCaptureServer
    from smolagents import OpenAIServerModel, ToolCallingAgent

    capture_path = HERE / f"{name}.otlp.jsonl"
    multi = bool(spec.get("multi"))
    replies = scripted_replies_multi(fake) if multi else scripted_replies(fake)
    log, records = ToolLog(), {}
    with OtlpCaptureServer(capture_path) as capture, fake.FakeOpenAI(replies) as provider:
        tracer_provider, _ = otel_providers(capture.endpoint, "weather-app")
        # OpenInference's redaction (also OPENINFERENCE_HIDE_INPUTS/OUTPUTS=true) in the hidden mode.
        hide = bool(spec.get("hide"))
        SmolagentsInstrumentor().instrument(tracer_provider=tracer_provider,
                           config=TraceConfig(hide_inputs=hide, hide_outputs=hide))
        model = OpenAIServerModel(model_id=MODEL, api_base=provider.base_url, api_key="x")
        tool = make_tool(log, get_weather_or_fail if multi else get_weather)
        agent = ToolCallingAgent(tools=[tool], model=model, name=AGENT, instructions=SYSTEM_PROMPT,
                                 stream_outputs=spec["stream"], verbosity_level=0)
        turns: list[Turn] = []
        users = (MULTI_TURN1_USER, MULTI_TURN2_USER) if multi else (TURN1_USER, TURN2_USER)
        for i, user_text in enumerate(users):
            turns.append(run_turn(agent, user_text, stream=spec["stream"], first=i == 0, log=log,
                                  records=records))
        SmolagentsInstrumentor().uninstrument()
        tracer_provider.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.requests]
    answers = [MULTI_TURN1_ANSWER, MULTI_TURN2_ANSWER] if multi else [TURN1_ANSWER, TURN2_ANSWER]
    assert [t.final_text for t in turns] == answers, [t.final_text for t in turns]
    if not multi:  # the memory holds exactly what the driver saw happen
        assert turns[1].history == turns[0].remembered_after(), turns[1].history
    assert all(bool(r.get("stream")) == spec["stream"] for r in sent), [r.get("stream") for r in sent]
    system = [m for m in sent[0]["messages"] if m["role"] == "system"]
    assert len(system) == 1 and SYSTEM_PROMPT in json.dumps(system[0], ensure_ascii=False), system
    system_text = "\n".join(p["text"] for p in system[0]["content"]) if isinstance(
        system[0]["content"], list) else system[0]["content"]
    assert all(r["messages"][0] == system[0] for r in sent), "the system message changed between calls"
    write_requests(HERE, name, sent)

    runs = [agent_run_expectation(t, convention="openinference", entity_name=AGENT,
                                  system_messages=[system_text],
                                  extra={"conversationId": CONVERSATION_ID}) for t in turns]
    for run, turn in zip(runs, turns, strict=True):
        if turn.tool_calls:  # the text of the reply that asked for the tools (not always remembered)
            run["output"]["intermediateText"] = turn.intermediate_text or ""
    if spec.get("hide"):  # no content may be asserted (golden.json: notCompared)
        runs = [{"convention": "openinference", "entityName": run["entityName"], "contentCaptured": False,
                 "conversationId": CONVERSATION_ID} for run in runs]
    notes = (
        "Two agent.run calls on one ToolCallingAgent `weather_agent` (instructions = the system "
        "prompt, @tool get_weather returning JSON text, OpenAIServerModel gpt-4o-mini against the "
        "fake chat-completions server); turn 2 is run(..., reset=False), so the history is the "
        "agent's own memory. The fake model calls get_weather(Paris) with the lead-in text, then "
        "final_answer(answer=...) (smolagents' way of answering); turn 2 answers with final_answer "
        "directly. Expected output: the answer agent.run returned (the final_answer argument) is "
        "the output text; get_weather is the one tool invocation (result = the observation, the "
        "JSON text the tool returned); the final_answer call is not a tool invocation of the run. "
        "systemMessages is the system message the fake received (smolagents' tool-calling "
        "template with the instructions inside it), identical on every call. "
        "rememberedMessages is turn 1 as the driver saw it (user question, the lead-in with the "
        "get_weather call and its result, the answer); on the wire smolagents renders that memory "
        "as text: 'New task:\\n<question>', the lead-in, a 'Calling tools:\\n[<Python repr of the "
        "calls>]' assistant message and an 'Observation:\\n<result>' user message (see "
        "two_turns_tool*.requests.json)."
    )
    if multi:
        notes = (
            "two_tools_and_a_failure (_common.py) on the same ToolCallingAgent, each answer through "
            "final_answer: turn 1's first reply has the lead-in and get_weather for Paris and Berlin "
            "(parallel tool calls); smolagents runs both in threads, Berlin's tool raises "
            "WeatherServiceError (its TOOL span ends with status ERROR and an exception event), and "
            "smolagents records the whole step as failed: its memory keeps the lead-in and an 'Error:' "
            "message (a tool-response, sent as a user message) but NOT the step's tool calls nor "
            "Paris's result, so the model (and turn 2's history) never sees them. The expectation: "
            "turn 1's output has both calls (Paris with its result, Berlin output-error with the "
            "exception's text, what the tool raised), turn 2's history is the memory as smolagents "
            "keeps it (user question, the lead-in without calls, the rendered error message as a "
            "user-role message, the answer). Turn 2 calls get_weather(Rome), then 'Let me check "
            "again.' with get_weather(Rome) again, then final_answer.")
    if spec["stream"]:
        notes += (" Streaming: stream_outputs=True (every model call is a streamed chat completion) "
                  "and agent.run(..., stream=True), its events read to the end.")
    if spec.get("hide"):
        notes += (" TraceConfig(hide_inputs=True, hide_outputs=True) (OpenInference's redaction, also "
                  "OPENINFERENCE_HIDE_INPUTS/OUTPUTS=true): no content may be asserted; every run has "
                  "contentCaptured=false.")
    lib_version = (f"smolagents {version('smolagents')}, openinference-instrumentation-smolagents "
                   f"{version('openinference-instrumentation-smolagents')}")
    write_expected(HERE, name, library=LIBRARY, library_version=lib_version, convention="openinference",
                   notes=notes, runs=runs)
    print(summarize_capture(capture_path))


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
