"""Capture driver: the Langfuse Python SDK (v3+ is OpenTelemetry-based) exporting to the capture server.

Langfuse's own OTLP/HTTP exporter is pointed at the loopback capture server
(tests/fakes/otlp_capture.py): ``host`` = the capture endpoint and
``LANGFUSE_OTEL_TRACES_EXPORT_PATH=v1/traces`` (its default path is ``/api/public/otel/v1/traces``).
The model calls go through the real ``openai`` client to the fake OpenAI server
(tests/fakes/fake_openai.py) on 127.0.0.1. Writes ``<scenario>.otlp.jsonl`` and
``<scenario>.expected.json`` beside this file. Does not import scorecar code.

Regenerate (from the repository root; ``requirements.txt`` is the frozen install list of the
venv that made the committed captures)::

    python3 -m venv /tmp/capvenvs/langfuse
    /tmp/capvenvs/langfuse/bin/pip install --no-deps -r tests/testdata/captures/langfuse/requirements.txt
    /tmp/capvenvs/langfuse/bin/python tests/testdata/captures/langfuse/generate.py

Each scenario runs in a fresh subprocess (the Langfuse client is a process-wide singleton).
"""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _common import (
    AGENT_NAME,
    CONVERSATION_ID,
    MULTI_TURN1_USER,
    MULTI_TURN2_USER,
    SYSTEM_PROMPT,
    TURN1_USER,
    TURN2_USER,
    ToolCallRecord,
    Turn,
    WeatherServiceError,
    agent_run_expectation,
    get_weather,
    get_weather_or_fail,
    run_scenarios,
    summarize_capture,
    write_expected,
    write_requests,
)

LIBRARY = "langfuse"
MODEL = "gpt-4o-mini"

# observe: @observe(as_type="agent") around each turn, the langfuse.openai drop-in client makes the
# generations, @observe(as_type="tool") for the tool. manual: start_as_current_observation for the
# agent, each generation (streamed calls through a plain openai client) and the tool.
SCENARIOS: dict[str, dict[str, Any]] = {
    "observe_two_turns_tool": {"style": "observe", "stream": False},
    "manual_two_turns_tool_stream": {"style": "manual", "stream": True},
    # Manual generations AND the langfuse.openai integration imported: importing it patches the
    # openai module, so every call is also recorded by a nested `OpenAI-generation` observation.
    "manual_two_turns_tool_stream_with_openai_integration": {
        "style": "manual", "stream": True, "integration": True,
    },
    # Two parallel tool calls in one reply, Berlin's tool raises; then get_weather(Rome) twice
    # in sequence (see _common.py).
    "observe_two_tools_and_a_failure": {"style": "observe", "stream": False, "multi": True},
}


def run_turns(spec: dict[str, Any], provider_url: str) -> list[Turn]:
    """Two turns; the app keeps the history (OpenAI wire form) and sends tool results back."""
    import openai
    from _openai_conversation import _chat
    from langfuse import get_client, observe, propagate_attributes

    langfuse = get_client()
    stream = spec["stream"]
    if spec["style"] == "observe" or spec.get("integration"):
        from langfuse.openai import OpenAI as LangfuseOpenAI  # importing it patches openai too

        client: Any = LangfuseOpenAI(base_url=provider_url, api_key="sk-test", max_retries=0)
    else:
        client = openai.OpenAI(base_url=provider_url, api_key="sk-test", max_retries=0)
    wire: list[dict[str, Any]] = []
    turns: list[Turn] = []
    tool_impl = get_weather_or_fail if spec.get("multi") else get_weather

    @observe(as_type="tool", name="get_weather")
    def observed_tool(city: str) -> dict[str, Any]:
        return tool_impl(city)

    def manual_tool(city: str) -> dict[str, Any]:
        with langfuse.start_as_current_observation(as_type="tool", name="get_weather",
                                                   input={"city": city}) as tool:
            result = tool_impl(city)
            tool.update(output=result)
            return result

    def model_call(messages: list[dict[str, Any]]) -> tuple[str | None, list[tuple[str, str, str]]]:
        if spec["style"] == "observe":
            return _chat(client, MODEL, messages, stream)  # the drop-in client records the generation
        with langfuse.start_as_current_observation(as_type="generation", name="chat", model=MODEL,
                                                   input=messages) as generation:
            text, calls = _chat(client, MODEL, messages, stream)
            output: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                output["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                                        for i, n, a in calls]
            generation.update(output=output, usage_details={"input": 20, "output": 10})
            return text, calls

    def one_turn(user_text: str, turn: Turn) -> str:
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, *wire, {"role": "user", "content": user_text}]
        text, calls = model_call(messages)
        while calls:
            messages.append({"role": "assistant", "content": text, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]})
            step = []
            for cid, name, args in calls:
                decoded = json.loads(args)
                run = observed_tool if spec["style"] == "observe" else manual_tool
                record = ToolCallRecord(cid, name, decoded)
                try:
                    record.result, record.has_result = run(**decoded), True
                    content = json.dumps(record.result)
                except WeatherServiceError as exc:  # chat completions has no error flag
                    record.error, record.error_in_history = str(exc), "result"
                    content = record.error
                step.append(record)
                messages.append({"role": "tool", "tool_call_id": cid, "content": content})
            turn.add_tool_step(text, step)
            text, calls = model_call(messages)
        turn.final_text = text or ""
        messages.append({"role": "assistant", "content": turn.final_text})
        wire[:] = messages[1:]
        return turn.final_text

    current: list[Turn] = []  # the driver's record of the running turn (kept out of the traced arguments)

    @observe(as_type="agent", name=AGENT_NAME)
    def weather_agent(user_text: str) -> str:
        return one_turn(user_text, current[-1])

    with propagate_attributes(session_id=CONVERSATION_ID, user_id="user-ana"):
        for user_text in (MULTI_TURN1_USER, MULTI_TURN2_USER) if spec.get("multi") else (TURN1_USER, TURN2_USER):
            turn = Turn(user_text=user_text, history=[m for t in turns for m in t.remembered_after()])
            if spec["style"] == "observe":
                current.append(turn)
                weather_agent(user_text)
            else:
                with langfuse.start_as_current_observation(
                    as_type="agent", name=AGENT_NAME, input=[{"role": "user", "content": user_text}]
                ) as agent:
                    agent.update(output=one_turn(user_text, turn))
            turns.append(turn)
    return turns


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its two files."""
    spec = SCENARIOS[name]
    import fake_openai
    from _openai_conversation import scripted_replies, scripted_replies_two_tools_and_a_failure
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    script = (scripted_replies_two_tools_and_a_failure if spec.get("multi") else scripted_replies)(fake_openai)
    with OtlpCaptureServer(capture_path) as capture, fake_openai.FakeOpenAI(script) as provider:
        os.environ.update({
            "LANGFUSE_PUBLIC_KEY": "pk-lf-test",
            "LANGFUSE_SECRET_KEY": "sk-lf-test",
            "LANGFUSE_BASE_URL": capture.endpoint,
            "LANGFUSE_HOST": capture.endpoint,
            "LANGFUSE_OTEL_TRACES_EXPORT_PATH": "v1/traces",  # the capture server's OTLP path
            "LANGFUSE_TRACING_ENVIRONMENT": "capture",
        })
        from langfuse import get_client

        turns = run_turns(spec, provider.base_url)
        langfuse = get_client()
        langfuse.flush()
        langfuse.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.requests]
    counts = [2, 5, 7, 9, 11] if spec.get("multi") else [2, 4, 6]
    assert [len(r["messages"]) for r in sent] == counts, [r["messages"] for r in sent]
    assert all(bool(r.get("stream")) == spec["stream"] for r in sent)

    runs = [agent_run_expectation(t, convention="langfuse", entity_name=AGENT_NAME,
                                  extra={"conversationId": CONVERSATION_ID}) for t in turns]
    if spec["style"] == "observe":
        notes = (
            "Each turn is a function decorated @observe(as_type='agent', name='weather-agent'); the model "
            "calls go through the langfuse.openai drop-in OpenAI client (one `generation` observation "
            "per call, with model, usage and the request messages / response message as "
            "langfuse.observation.input/output); the tool is @observe(as_type='tool'). The whole "
            "conversation runs inside propagate_attributes(session_id=conv-42, user_id=user-ana). One "
            "trace per turn: the agent observation is the root. Its langfuse.observation.input is the "
            "decorated function's arguments as JSON ({args: [...], kwargs: {}}), not a conversation, "
            "and its output is the returned final text: the new input and the history come from the "
            "first generation's input. The app resends the whole history to every call."
        )
    else:
        notes = (
            "Manual observations: start_as_current_observation(as_type='agent', name='weather-agent', "
            "input=[the new user message]) per turn with output = the final text; inside it one "
            "as_type='generation' observation per model call (model, input = the OpenAI messages sent, "
            "output = the assistant message incl. tool_calls, usage_details) around a plain openai "
            "client call with stream=True, and an as_type='tool' observation for get_weather (input = "
            "the arguments, output = the result). The whole conversation runs inside "
            "propagate_attributes(session_id=conv-42, user_id=user-ana). One trace per turn, agent "
            "observation at the root. Langfuse does not instrument the plain client: the generations "
            "are exactly what the app recorded."
        )
    if spec.get("multi"):
        berlin = turns[0].tool_calls[1]
        tool_msgs = [m for m in sent[1]["messages"] if m["role"] == "tool"]
        assert tool_msgs[1] == {"role": "tool", "tool_call_id": berlin.tool_call_id, "content": berlin.error}
        write_requests(HERE, name, sent)
        notes += (
            " Scenario two_tools_and_a_failure, parallel tool calls: turn 1 'What is the weather in Paris "
            "and in Berlin?' gets ONE completion with two tool_calls (call_paris_1, call_berlin_1) and "
            "the text 'Let me look that up.'; each runs in an @observe(as_type='tool') observation; "
            "Berlin's raises WeatherServiceError('weather service unavailable for Berlin'): the "
            "decorator re-raises and marks that tool observation langfuse.observation.level=ERROR with "
            "the exception text as langfuse.observation.status_message and span status ERROR (same "
            "text), no output. No tool observation carries a call id (input = the kwargs dump), so "
            "the two get_weather observations are placed by order. The app sends the "
            "error text as the `tool` message content (chat completions has no error flag), so in the "
            "next generation's input and in turn 2's history it is that call's plain result. Turn 2 "
            "'And in Rome? Please check it twice.': sequential, call_rome_1 then, after its result, "
            "call_rome_2 (same name, text 'Let me check again.'), then the answer (3 generations)."
        )
    if spec.get("integration"):
        notes += (
            " Here the app ALSO imported langfuse.openai (which patches the openai module): every "
            "model call is recorded twice, as the app's `chat` generation and as a nested "
            "`OpenAI-generation` generation under it (streamed: its output is the plain text, or the "
            "assistant message with tool_calls). Each model call must count once."
        )
    notes += (
        " All spans are Langfuse's own (scope langfuse-sdk): langfuse.observation.type, "
        "langfuse.observation.input/output (JSON strings), session.id and user.id on every span, "
        "langfuse.environment=capture. conversationId (extra key) is the session id."
    )
    write_expected(HERE, name, library=LIBRARY, library_version=version("langfuse"), convention="langfuse",
                   notes=notes, runs=runs)
    print(summarize_capture(capture_path))


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
