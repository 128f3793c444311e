"""Capture driver: Strands Agents' own OpenTelemetry tracing, in each of its semconv modes.

One Strands ``Agent`` (name ``weather-agent``, ``system_prompt`` = the script's system prompt,
the ``@tool`` ``get_weather``) with the ``OpenAIModel`` provider whose ``client_args`` point at
the fake OpenAI chat-completions server (tests/fakes/fake_openai.py) on 127.0.0.1. The SAME
Agent object is called twice: it keeps the conversation itself (``agent.messages``), so turn 2
passes only the new user message. ``trace_attributes={"session.id": "conv-42"}`` is how a
Strands user names the conversation (Strands copies it onto every span it makes).

Strands reads the global tracer provider when its tracer is first built, so the driver registers
its own SDK ``TracerProvider`` (OTLP/HTTP protobuf, batch processor) to the loopback capture
server (tests/fakes/otlp_capture.py) before building the Agent. The semconv mode is read from
``OTEL_SEMCONV_STABILITY_OPT_IN`` at that moment too (``strands/telemetry/tracer.py``), so each
scenario runs in a fresh subprocess. Writes ``<scenario>.otlp.jsonl``, ``<scenario>.expected.json``
and ``<scenario>.requests.json`` (the chat-completions bodies the fake received) beside this
file. Expectations come from the Agent's own conversation (``agent.messages``, Converse content
blocks) and the AgentResult, checked against the requests. Does not import scorecar code.

Regenerate (from the repository root; ``requirements.txt`` is the frozen install list of the
venv that made the committed captures)::

    python3.11 -m venv /tmp/capvenvs/strands
    /tmp/capvenvs/strands/bin/pip install --no-deps -r tests/testdata/captures/strands/requirements.txt
    /tmp/capvenvs/strands/bin/python tests/testdata/captures/strands/generate.py

(made with ``pip install "strands-agents[openai,otel]==1.62.0" "openai>=2,<3"``; ``python
generate.py <scenario>`` runs one scenario.)
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
    LOOKUP_TEXT,
    MULTI_CALL_IDS,
    MULTI_TURN1_USER,
    MULTI_TURN2_USER,
    SYSTEM_PROMPT,
    TOOL_ERROR,
    TURN1_USER,
    TURN2_USER,
    ToolCallRecord,
    Turn,
    agent_run_expectation,
    get_weather,
    get_weather_or_fail,
    run_scenarios,
    summarize_capture,
    write_expected,
    write_requests,
)

LIBRARY = "strands"
MODEL = "gpt-4o-mini"

LATEST = "gen_ai_latest_experimental"
SCENARIOS: dict[str, dict[str, Any]] = {
    # Default mode: the ≤v1.36 per-message span events with Converse content blocks as JSON.
    "two_turns_tool_stream": {"stream": True, "opt_in": ""},
    "two_turns_tool": {"stream": False, "opt_in": ""},
    # Latest experimental: gen_ai.client.inference.operation.details span events.
    "two_turns_tool_stream_latest": {"stream": True, "opt_in": LATEST},
    # Latest + the content as span attributes instead of events, with tool definitions.
    "two_turns_tool_stream_latest_attributes": {
        "stream": True,
        "opt_in": f"{LATEST},gen_ai_span_attributes_only,gen_ai_tool_definitions",
    },
    # Latest with redaction on and nothing allow-listed: every content value is "[REDACTED]".
    "two_turns_tool_stream_latest_redacted": {
        "stream": True,
        "opt_in": f"{LATEST},gen_ai_unredacted_attributes=",
        "redacted": True,
    },
    # Two parallel tool calls with a failure, then the same tool twice (see _common.py).
    "two_tools_and_a_failure_stream": {"stream": True, "opt_in": "", "multi": True},
    "two_tools_and_a_failure_stream_latest": {"stream": True, "opt_in": LATEST, "multi": True},
}


def _tool_blocks(message: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [b[key] for b in message.get("content", []) if key in b]


def _text(message: dict[str, Any]) -> str:
    return "".join(b["text"] for b in message.get("content", []) if "text" in b)


def _result_value(tool_result: dict[str, Any]) -> Any:
    """The value the tool returned: Strands wraps it as one text block holding its JSON."""
    texts = [b["text"] for b in tool_result["content"] if "text" in b]
    assert len(texts) == 1, tool_result
    try:
        return json.loads(texts[0])
    except json.JSONDecodeError:
        return texts[0]


def turn_from_messages(user_text: str, new: list[dict[str, Any]], prior: list[Turn],
                       error_in_history: str = "output-error") -> Turn:
    """One Turn from the messages the Agent appended to its conversation during the turn."""
    turn = Turn(user_text=user_text, history=[m for t in prior for m in t.remembered_after()])
    assert new[0]["role"] == "user" and new[0]["content"] == [{"text": user_text}], new[0]
    by_id: dict[str, ToolCallRecord] = {}
    for msg in new[1:]:
        uses = _tool_blocks(msg, "toolUse")
        if msg["role"] == "assistant" and uses:
            calls = [ToolCallRecord(u["toolUseId"], u["name"], u["input"]) for u in uses]
            by_id.update({c.tool_call_id: c for c in calls})
            turn.add_tool_step(_text(msg) or None, calls)
        elif msg["role"] == "assistant":
            turn.final_text = _text(msg)
        for res in _tool_blocks(msg, "toolResult"):
            record = by_id[res["toolUseId"]]
            if res.get("status") == "error":
                record.error = _error_text(res)
                # As history: the Agent's own messages keep the Converse `status: error`, which
                # the default mode's events carry; the latest mode's tool_call_response parts
                # have no error field (nor has the chat-completions wire): the text is the result.
                record.error_in_history = error_in_history
            else:
                record.result, record.has_result = _result_value(res), True
    return turn


def _error_text(tool_result: dict[str, Any]) -> str:
    texts = [b["text"] for b in tool_result["content"] if "text" in b]
    return "\n".join(texts)


def scripted_replies(fake: Any, multi: bool) -> list[Any]:
    """The fake model's side of the script."""
    if multi:
        from _openai_conversation import scripted_replies_two_tools_and_a_failure

        return scripted_replies_two_tools_and_a_failure(fake)
    from _openai_conversation import scripted_replies as two_turns

    return two_turns(fake)


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its files."""
    spec = SCENARIOS[name]
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = spec["opt_in"]

    import fake_openai
    from _common import otel_providers
    from opentelemetry import trace
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    multi = bool(spec.get("multi"))
    with OtlpCaptureServer(capture_path) as capture, fake_openai.FakeOpenAI(
        scripted_replies(fake_openai, multi)
    ) as provider:
        tracer_provider, _ = otel_providers(capture.endpoint, "weather-app")
        trace.set_tracer_provider(tracer_provider)  # Strands' tracer reads the global provider

        from strands import Agent, tool
        from strands.models.openai import OpenAIModel

        weather = get_weather_or_fail if multi else get_weather

        @tool(name="get_weather")
        def get_weather_tool(city: str) -> dict[str, Any]:
            """Current weather for a city.

            Args:
                city: The city.
            """
            return weather(city)

        model = OpenAIModel(
            client_args={"base_url": provider.base_url, "api_key": "sk-test", "max_retries": 0},
            model_id=MODEL,
            stream=spec["stream"],
        )
        agent = Agent(
            name=AGENT_NAME,
            system_prompt=SYSTEM_PROMPT,
            tools=[get_weather_tool],
            model=model,
            callback_handler=None,
            trace_attributes={"session.id": CONVERSATION_ID},
        )
        turns: list[Turn] = []
        for user_text in (MULTI_TURN1_USER, MULTI_TURN2_USER) if multi else (TURN1_USER, TURN2_USER):
            before = len(agent.messages)
            result = agent(user_text)
            turn = turn_from_messages(user_text, agent.messages[before:], turns,
                                      "result" if LATEST in spec["opt_in"] else "output-error")
            assert str(result).strip() == turn.final_text, (str(result), turn.final_text)
            turns.append(turn)
        tracer_provider.shutdown()  # flushes the batch processor into the capture
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.requests]

    check_wire(sent, spec, multi)
    if multi:
        assert [c.tool_call_id for t in turns for c in t.tool_calls] == list(MULTI_CALL_IDS)
        berlin = turns[0].tool_calls[1]
        assert berlin.error is not None and TOOL_ERROR in berlin.error, berlin
        tool_msgs = [m for m in sent[1]["messages"] if m["role"] == "tool"]
        assert tool_msgs[1] == {"role": "tool", "tool_call_id": berlin.tool_call_id,
                                "content": berlin.error}, tool_msgs
    else:
        assert turns[0].intermediate_text == LOOKUP_TEXT, turns[0]
    write_requests(HERE, name, sent)
    redacted = bool(spec.get("redacted"))
    runs = [
        agent_run_expectation(
            t, convention="genai", entity_name=AGENT_NAME, content_captured=not redacted,
            extra={"conversationId": CONVERSATION_ID},
        )
        for t in turns
    ]
    lib_version = f"strands-agents {version('strands-agents')}, openai {version('openai')}"
    write_expected(HERE, name, library=LIBRARY, library_version=lib_version, convention="genai",
                   notes=notes_for(spec, multi), runs=runs)
    print(summarize_capture(capture_path))


def check_wire(sent: list[dict[str, Any]], spec: dict[str, Any], multi: bool) -> None:
    """The requests the fake received: the system prompt first, the whole conversation resent by
    the Agent's own memory, streaming as configured."""
    assert all(b["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT} for b in sent), sent[0]
    assert all(bool(b.get("stream")) == spec["stream"] for b in sent), [b.get("stream") for b in sent]
    sizes = [len(b["messages"]) for b in sent]
    expected_sizes = [2, 5, 7, 9, 11] if multi else [2, 4, 6]
    assert sizes == expected_sizes, sizes


def notes_for(spec: dict[str, Any], multi: bool) -> str:
    """What the capture shows and how the expectation was made."""
    opt_in = spec["opt_in"] or "(unset: default mode)"
    notes = (
        "Strands Agent weather-agent (OpenAIModel -> fake chat completions, "
        f"{'streaming' if spec['stream'] else 'non-streaming (OpenAIModel stream=False)'}), called twice "
        "as the SAME Agent object: Strands keeps the conversation (agent.messages) and resends it, "
        "turn 2 passes only the new user message. trace_attributes session.id=conv-42 is copied onto "
        f"every span. OTEL_SEMCONV_STABILITY_OPT_IN={opt_in}. Spans per turn: INTERNAL "
        "`invoke_agent weather-agent` (gen_ai.agent.name, gen_ai.request.model, gen_ai.agent.tools; "
        "its input is ONLY the new user message, its output the final text) > one "
        "`execute_event_loop_cycle` per model round (a loop step, not a run; it repeats the cycle's "
        "input messages and, after a tool round, the tool result) > `chat` (INTERNAL, the model call: "
        "system prompt, the whole conversation as input, the reply) and `execute_tool get_weather` "
        "(gen_ai.tool.call.id, the arguments and the result). Expectations come from the Agent's "
        "own messages (Converse blocks) and AgentResult, checked against the chat-completions "
        "requests the fake received (.requests.json)."
    )
    if not spec["opt_in"]:
        notes += (
            " Default mode: NO content attribute; every message is a span EVENT "
            "(gen_ai.system.message / gen_ai.user.message / gen_ai.assistant.message / "
            "gen_ai.tool.message / gen_ai.choice) whose `content` / `message` attribute is a JSON "
            "string of Converse content blocks ([{\"text\"}], [{\"toolUse\"}], [{\"toolResult\"}]); "
            "the tool result is a toolResult whose content is [{\"text\": <the JSON the tool "
            "returned>}]. The execute_tool span's gen_ai.tool.message event holds the arguments and "
            "its gen_ai.choice event the result blocks (with `id`)."
        )
    elif "gen_ai_span_attributes_only" in spec["opt_in"]:
        notes += (
            " Latest + gen_ai_span_attributes_only: the same content as span ATTRIBUTES "
            "(gen_ai.input.messages, gen_ai.output.messages, gen_ai.system_instructions in the OTel "
            "parts format) instead of events; gen_ai_tool_definitions adds gen_ai.tool.definitions "
            "to the invoke_agent span."
        )
    else:
        notes += (
            " Latest mode: the content is in `gen_ai.client.inference.operation.details` SPAN "
            "EVENTS (several per span, each holding one of gen_ai.input.messages / "
            "gen_ai.output.messages / gen_ai.system_instructions as a JSON string in the OTel "
            "parts format; tool_call_response parts keep the Converse result blocks as `response`); "
            "gen_ai.system_instructions is also a span attribute of invoke_agent; execute_tool "
            "also has gen_ai.tool.call.arguments / .result attributes."
        )
    if spec.get("redacted"):
        notes += (
            " Redaction on (gen_ai_unredacted_attributes= with an empty allow-list): every content "
            "value (messages, system instructions, tool arguments and results) is the string "
            "\"[REDACTED]\" -> contentCaptured=false."
        )
    if multi:
        notes += (
            " Parallel tool calls: turn 1's first reply asks for get_weather(Paris) and "
            "get_weather(Berlin) at once (with 'Let me look that up.'); Berlin's tool raises "
            "WeatherServiceError: Strands catches it, its execute_tool span ends with status ERROR, "
            "and the toolResult has status error and the text 'Error: WeatherServiceError - <message>', which is what the "
            "model is sent (as the tool message content: chat completions has no error flag). In "
            "turn 2's history the failed call is output-error in the default mode (the events "
            "carry the Agent's own Converse toolResult with status error) and a plain result "
            "holding the error text in the latest mode (tool_call_response parts have no error "
            "field). Turn 2 calls get_weather(Rome) twice in "
            "sequence (call_rome_1, then call_rome_2 with 'Let me check again.')."
        )
    return notes


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
