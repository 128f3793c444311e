"""Capture driver: OpenLLMetry (traceloop-sdk 0.62) with ``@workflow``/``@agent``/``@tool``.

Drives the real ``openai`` and ``anthropic`` clients, instrumented by traceloop-sdk's bundled
opentelemetry-instrumentation-openai / -anthropic, against the loopback fakes
(tests/fakes/fake_openai.py, fake_anthropic.py). ``Traceloop.init`` exports OTLP/HTTP to the
loopback capture server (``api_endpoint``; never Traceloop's cloud, telemetry off). The
events scenario (``use_attributes=False``) also exports the log events, which the app must route
through a global ``LoggerProvider`` of its own. No scorecar code is imported.

Regenerate (from the repository root). traceloop-sdk 0.62.4's unpinned dependency set does not
resolve on its own, so the venv is installed from the frozen list beside this file::

    python3 -m venv /tmp/capvenvs/openllmetry
    /tmp/capvenvs/openllmetry/bin/pip install --no-deps -r tests/testdata/captures/openllmetry/requirements.txt
    /tmp/capvenvs/openllmetry/bin/python tests/testdata/captures/openllmetry/generate.py

The ``legacy_*`` scenarios (indexed ``gen_ai.prompt.{i}.*`` attributes) come from traceloop-sdk
0.47.5 in a second venv; the script picks its scenario set from the installed version::

    python3 -m venv /tmp/capvenvs/openllmetry-legacy
    /tmp/capvenvs/openllmetry-legacy/bin/pip install --no-deps -r tests/testdata/captures/openllmetry/requirements-legacy.txt
    /tmp/capvenvs/openllmetry-legacy/bin/python tests/testdata/captures/openllmetry/generate.py

Each scenario runs in a fresh subprocess (``Traceloop.init`` is once per process).
"""

from __future__ import annotations

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
    TURN1_USER,
    TURN2_USER,
    Turn,
    agent_run_expectation,
    get_weather,
    get_weather_or_fail,
    run_scenarios,
    summarize_capture,
    write_expected,
    write_requests,
)

LIBRARY = "openllmetry"
OPENAI_MODEL = "gpt-4o-mini"

MODERN_SCENARIOS: dict[str, dict[str, Any]] = {
    # provider, streaming, attributes (True) or log events (False), an outer @workflow
    "agent_two_turns_tool": {"provider": "openai", "stream": False, "attributes": True, "workflow": True},
    "agent_two_turns_tool_stream": {"provider": "openai", "stream": True, "attributes": True, "workflow": False},
    "agent_two_turns_tool_events": {"provider": "openai", "stream": False, "attributes": False, "workflow": False},
    "anthropic_agent_two_turns_tool": {"provider": "anthropic", "stream": False, "attributes": True, "workflow": False},
    "anthropic_agent_two_turns_tool_stream": {"provider": "anthropic", "stream": True, "attributes": True, "workflow": False},
    "agent_two_turns_tool_no_content": {"provider": "openai", "stream": False, "attributes": True, "workflow": False, "content": False},
    # Two parallel tool calls in one reply, Berlin's tool raises; then get_weather(Rome) twice
    # in sequence (see _common.py). Log events (no call ids on tool messages nor tool spans).
    "agent_two_tools_and_a_failure_events": {"provider": "openai", "stream": False, "attributes": False, "workflow": False, "multi": True},
    "anthropic_agent_two_tools_and_a_failure": {"provider": "anthropic", "stream": False, "attributes": True, "workflow": False, "multi": True},
}
# traceloop-sdk < 0.50 (e.g. 0.47.5): the legacy indexed gen_ai.prompt.{i}.* / gen_ai.completion.{i}.*
# attributes (the only span-attribute mode those versions have).
LEGACY_SCENARIOS: dict[str, dict[str, Any]] = {
    "legacy_agent_two_turns_tool": {"provider": "openai", "stream": False, "attributes": True, "workflow": True},
    "legacy_agent_two_turns_tool_stream": {"provider": "openai", "stream": True, "attributes": True, "workflow": False},
    "legacy_anthropic_agent_two_turns_tool": {"provider": "anthropic", "stream": False, "attributes": True, "workflow": False},
}


def _is_legacy() -> bool:
    major_minor = tuple(int(x) for x in version("traceloop-sdk").split(".")[:2])
    return major_minor < (0, 50)


SCENARIOS = LEGACY_SCENARIOS if _is_legacy() else MODERN_SCENARIOS


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its two files."""
    spec = SCENARIOS[name]
    os.environ["TRACELOOP_TELEMETRY"] = "false"  # no anonymous usage telemetry
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true" if spec.get("content", True) else "false"
    os.environ["TRACELOOP_METRICS_ENABLED"] = "false"
    os.environ["TRACELOOP_LOGGING_ENABLED"] = "false"  # Python logging export: not what we capture

    from opentelemetry import trace
    from otlp_capture import OtlpCaptureServer
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import agent, tool, workflow
    from traceloop.sdk.instruments import Instruments

    capture_path = HERE / f"{name}.otlp.jsonl"
    with OtlpCaptureServer(capture_path) as capture:
        logger_provider = None
        if not spec["attributes"]:
            # The events path needs a logger provider the app configures: the instrumentations
            # call get_logger() on the global one (traceloop's docstring still says
            # EventLoggerProvider, which opentelemetry-api 1.45 no longer has).
            from opentelemetry._logs import set_logger_provider
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
            from opentelemetry.sdk._logs import LoggerProvider
            from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
            from opentelemetry.sdk.resources import Resource

            logger_provider = LoggerProvider(resource=Resource.create({"service.name": "weather-app"}))
            logger_provider.add_log_record_processor(
                BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{capture.endpoint}/v1/logs"))
            )
            set_logger_provider(logger_provider)

        Traceloop.init(
            app_name="weather-app",
            api_endpoint=capture.endpoint,
            api_key="not-used",
            telemetry_enabled=False,
            disable_batch=False,
            instruments={Instruments.OPENAI, Instruments.ANTHROPIC},
            resource_attributes={"deployment.environment": "capture"},
            **({} if _is_legacy() else {"use_attributes": spec["attributes"]}),  # < 0.50: always legacy
        )

        multi = bool(spec.get("multi"))
        tool_impl = get_weather_or_fail if multi else get_weather

        @tool(name="get_weather")
        def get_weather_tool(city: str) -> dict[str, Any]:
            return tool_impl(city)

        turns: list[Turn] = []
        if spec["provider"] == "openai":
            import fake_openai
            import openai
            from _openai_conversation import (
                run_turn,
                scripted_replies,
                scripted_replies_two_tools_and_a_failure,
            )

            script = (scripted_replies_two_tools_and_a_failure if multi else scripted_replies)(fake_openai)
            provider: Any = fake_openai.FakeOpenAI(script).start()
            client: Any = openai.OpenAI(base_url=provider.base_url, api_key="sk-test", max_retries=0)
            state: dict[str, Any] = {"wire": []}

            @agent(name=AGENT_NAME)
            def weather_agent(question: str) -> str:
                turn, state["wire"] = run_turn(
                    client,
                    model=OPENAI_MODEL,
                    stream=spec["stream"],
                    wire_history=state["wire"],
                    prior_turns=turns,
                    user_text=question,
                    run_tool=lambda record, _run: get_weather_tool(**record.args),
                    tool_fn=tool_impl,
                )
                turns.append(turn)
                return turn.final_text

            model = OPENAI_MODEL
        else:
            import anthropic
            import fake_anthropic
            from _anthropic_conversation import MODEL
            from _anthropic_conversation import run_turn as run_anthropic_turn
            from _anthropic_conversation import scripted_replies as anthropic_replies
            from _anthropic_conversation import (
                scripted_replies_two_tools_and_a_failure as anthropic_multi,
            )

            provider = fake_anthropic.FakeAnthropic().start()
            provider.enqueue(*(anthropic_multi if multi else anthropic_replies)(fake_anthropic))
            # open_telemetry=False: the anthropic SDK (>= 2.x) would otherwise add its own spans
            # as soon as a global tracer provider exists (Traceloop.init registers one).
            client = anthropic.Anthropic(
                base_url=provider.base_url, api_key=provider.api_key, max_retries=0, open_telemetry=False
            )
            astate: dict[str, Any] = {"history": []}

            @agent(name=AGENT_NAME)
            def weather_agent(question: str) -> str:
                turn, astate["history"] = run_anthropic_turn(
                    client,
                    stream=spec["stream"],
                    history=astate["history"],
                    prior_turns=turns,
                    user_text=question,
                    tool_fn=get_weather_tool,
                )
                turns.append(turn)
                return turn.final_text

            model = MODEL

        @workflow(name="weather-chat")
        def chat(questions: list[str]) -> list[str]:
            return [weather_agent(q) for q in questions]

        Traceloop.set_association_properties({"session_id": CONVERSATION_ID})
        questions = [MULTI_TURN1_USER, MULTI_TURN2_USER] if multi else [TURN1_USER, TURN2_USER]
        if spec["workflow"]:
            chat(questions)
        else:
            for question in questions:
                weather_agent(question)

        trace.get_tracer_provider().shutdown()  # type: ignore[attr-defined]  # flushes the batch
        if logger_provider is not None:
            logger_provider.shutdown()
        pending = provider.pending
        sent = [r.body for r in (provider.requests if spec["provider"] == "openai" else provider.message_requests)]
        provider.stop()
        assert pending == 0, "not every scripted reply was used"

    if multi and spec["provider"] == "anthropic":
        # The app sent is_error: true, but the instrumentation's gen_ai.input.messages drops it
        # (a tool_call_response part has no error field): resent as history, the failure is
        # not recorded, so that call's state is not asserted there.
        for t in turns:
            for c in t.tool_calls:
                if c.error is not None:
                    c.error_in_history = "unasserted"
        for i, t in enumerate(turns):
            t.history = [m for prior in turns[:i] for m in prior.remembered_after()]
    lib_version = version("traceloop-sdk")
    runs = [
        agent_run_expectation(t, convention="openllmetry", entity_name=AGENT_NAME, extra={"conversationId": CONVERSATION_ID})
        for t in turns
    ]
    if not spec.get("content", True):
        runs = [{"convention": "openllmetry", "entityName": AGENT_NAME, "contentCaptured": False} for _ in turns]
    instr = "opentelemetry-instrumentation-" + spec["provider"]
    notes = (
        f"traceloop-sdk {lib_version} ({instr} {version(instr)}), model {model}. "
        "Each turn is an @agent(name='weather-agent') function call (span `weather-agent.agent`, "
        "traceloop.span.kind=agent, traceloop.entity.input = JSON {args:[question],kwargs:{}}, "
        "traceloop.entity.output = JSON string of the answer); the tool runs in an "
        "@tool(name='get_weather') span (`get_weather.tool`, entity input/output = JSON of the "
        "call's kwargs/result; no call id). session_id=conv-42 is an association property. "
    )
    if spec["workflow"]:
        notes += (
            "Both turns run inside one @workflow(name='weather-chat') span: ONE trace; the runs are "
            "the two agent spans (outermost agent, not the workflow). "
        )
    if _is_legacy():
        notes += (
            "Legacy indexed attributes (traceloop-sdk < 0.50, its only mode for content on spans): the LLM "
            "spans carry gen_ai.prompt.{i}.{role,content,tool_calls.{k}.*,tool_call_id} and "
            "gen_ai.completion.{i}.* instead of gen_ai.input/output.messages. "
        )
    elif spec["attributes"]:
        notes += (
            "Content mode: span attributes (the default use_attributes=True): the 2026 structured "
            "gen_ai.input.messages / gen_ai.output.messages / gen_ai.system_instructions (parts format). "
        )
    else:
        notes += (
            "Content mode: log events (use_attributes=False): the LLM spans carry no prompt/"
            "completion attributes; content is in OTLP log records (same file), joined to the LLM "
            "spans by trace/span id. "
        )
    if not spec.get("content", True):
        notes += (
            "TRACELOOP_TRACE_CONTENT=false: no prompts/completions on the LLM spans and no "
            "traceloop.entity.input/output on the decorator spans, so every run must say "
            "contentCaptured=false; nothing else is asserted. "
        )
    if spec["stream"]:
        notes += "Every model call streamed. "
    if multi:
        notes += multi_notes(spec, turns, sent)
        write_requests(HERE, name, sent)
    if spec["provider"] == "anthropic":
        notes += (
            "Anthropic wire form: the tool result travels in a user message of tool_result blocks "
            "(never new input). The anthropic SDK's own tracing is switched off (open_telemetry=False)."
        )
    write_expected(HERE, name, library=LIBRARY, library_version=lib_version, convention="openllmetry", notes=notes, runs=runs)
    print(summarize_capture(capture_path))


def multi_notes(spec: dict[str, Any], turns: list[Turn], sent: list[Any]) -> str:
    """The `two_tools_and_a_failure` part of the notes, after checking the wire."""
    berlin = turns[0].tool_calls[1]
    assert berlin.error is not None and len(sent) == 5, (berlin, len(sent))
    if spec["provider"] == "openai":
        tool_msgs = [m for m in sent[1]["messages"] if m["role"] == "tool"]
        assert [m["content"] for m in tool_msgs][1] == berlin.error, tool_msgs
        how = ("the app sends the error text as the `tool` message content (chat completions has no "
               "error flag), so resent as turn 2's history that call has the error text as its result")
    else:
        results = sent[1]["messages"][-1]["content"]
        assert results[1] == {"type": "tool_result", "tool_use_id": berlin.tool_call_id,
                              "content": berlin.error, "is_error": True}, results
        how = ("the app sends a tool_result block with is_error: true and the error text as content; "
               "the LLM spans' gen_ai.input.messages drop is_error (the tool_call_response part has "
               "no error field), so in turn 2's remembered history Berlin's call has only name, id and "
               "arguments asserted")
    return (
        "Scenario two_tools_and_a_failure, parallel tool calls: turn 1 'What is the weather in Paris "
        "and in Berlin?' gets ONE reply with two get_weather calls (Paris, Berlin) and the text 'Let me "
        "look that up.'; the app runs both through the @tool span `get_weather.tool` (no call id on it); "
        "Berlin's raises WeatherServiceError('weather service unavailable for Berlin') — the tool span "
        f"has status ERROR and an exception event, no entity output — and {how}. Turn 2 'And in Rome? "
        "Please check it twice.': sequential, get_weather(Rome) then, after its result, get_weather(Rome) "
        "again (same name, a new call id, text 'Let me check again.'), then the answer. "
    )


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
