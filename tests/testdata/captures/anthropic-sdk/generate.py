"""Capture driver: the anthropic Python SDK's own OpenTelemetry tracing (anthropic 2.x).

The SDK traces by itself once a tracer provider is given (``open_telemetry={"tracer_provider":
…}``, or the global one): one CLIENT span ``anthropic.messages.create`` per API call, an INTERNAL
``anthropic.messages.tool_runner`` span (``gen_ai.operation.name=invoke_agent``) per tool-runner
loop and one span per tool the runner runs. Content (``gen_ai.system_instructions``,
``gen_ai.input.messages``, ``gen_ai.output.messages``) is recorded only in content mode:
``open_telemetry={"traces": {"content_mode": "content"}}`` or the environment variable
``ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content``; the default is ``metadata_only``.

Drives the real client against the fake Anthropic server (tests/fakes/fake_anthropic.py) on
127.0.0.1 and exports with the real OTel SDK (OTLP/HTTP protobuf, batch processor) to the
loopback capture server (tests/fakes/otlp_capture.py). Writes ``<scenario>.otlp.jsonl`` and
``<scenario>.expected.json`` beside this file. Does not import scorecar code.

Regenerate (from the repository root; ``requirements.txt`` is the frozen install list of the
venv that made the committed captures)::

    python3 -m venv /tmp/capvenvs/anthropic-sdk
    /tmp/capvenvs/anthropic-sdk/bin/pip install --no-deps -r tests/testdata/captures/anthropic-sdk/requirements.txt
    /tmp/capvenvs/anthropic-sdk/bin/python tests/testdata/captures/anthropic-sdk/generate.py

Each scenario runs in a fresh subprocess (instrumentors are process-global).
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _common import (
    CONVERSATION_ID,
    LOOKUP_TEXT,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    TOOL_PARAMETERS,
    TURN1_ANSWER,
    TURN1_USER,
    TURN2_ANSWER,
    TURN2_USER,
    ToolCallRecord,
    Turn,
    agent_run_expectation,
    get_weather,
    otel_providers,
    summarize_capture,
    write_expected,
)

LIBRARY = "anthropic-sdk"
MODEL = "claude-haiku-5-5"
MAX_TOKENS = 256
TOOL_USE_ID = "toolu_paris_1"

# kind: "messages" (app-managed history, plain messages.create), "runner" (one tool runner per
# turn, full history passed by the app), "thread_runner" (one message thread, a tool runner per
# turn: turn 2 sends only the new user message).
SCENARIOS: dict[str, dict[str, Any]] = {
    "messages_two_turns_tool": {"kind": "messages", "stream": False, "content": True},
    "messages_two_turns_tool_stream": {"kind": "messages", "stream": True, "content": True},
    "messages_two_turns_tool_no_content": {"kind": "messages", "stream": False, "content": False},
    "tool_runner_two_turns": {"kind": "runner", "stream": False, "content": True},
    "tool_runner_two_turns_stream": {"kind": "runner", "stream": True, "content": True},
    "thread_tool_runner_two_turns": {"kind": "thread_runner", "stream": False, "content": True},
    "tool_runner_two_turns_with_openinference": {
        "kind": "runner",
        "stream": False,
        "content": True,
        "openinference": True,
    },
}

TOOL_PARAM = {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": TOOL_PARAMETERS}


def scripted_replies(fake: Any) -> list[Any]:
    """The provider's side: tool call (with a lead-in text), turn 1 answer, turn 2 answer."""
    return [
        fake.tool_use(TOOL_NAME, {"city": "Paris"}, text=LOOKUP_TEXT, tool_use_id=TOOL_USE_ID),
        fake.text(TURN1_ANSWER),
        fake.text(TURN2_ANSWER),
    ]


def _blocks(message: Any) -> tuple[str | None, list[tuple[str, str, Any]]]:
    """(text, [(id, name, input)]) of a received Message."""
    texts = [b.text for b in message.content if b.type == "text"]
    calls = [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]
    return ("".join(texts) if texts else None), calls


def _assistant_param(message: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}


def run_messages(client: Any, stream: bool) -> list[Turn]:
    """Two turns of plain ``messages.create`` / ``messages.stream``; the app keeps the history."""

    def call(messages: list[dict[str, Any]]) -> Any:
        kwargs = {"model": MODEL, "max_tokens": MAX_TOKENS, "system": SYSTEM_PROMPT,
                  "tools": [TOOL_PARAM], "messages": messages}
        if not stream:
            return client.messages.create(**kwargs)
        with client.messages.stream(**kwargs) as s:
            for _ in s.text_stream:
                pass
            return s.get_final_message()

    wire: list[dict[str, Any]] = []
    turns: list[Turn] = []
    for user_text in (TURN1_USER, TURN2_USER):
        turn = Turn(user_text=user_text, history=[m for t in turns for m in t.remembered_after()])
        wire.append({"role": "user", "content": user_text})
        reply = call(wire)
        text, calls = _blocks(reply)
        while calls:
            turn.intermediate_text = text
            wire.append(_assistant_param(reply))
            results = []
            for cid, name, args in calls:
                record = ToolCallRecord(cid, name, args)
                record.result, record.has_result = get_weather(**args), True
                turn.tool_calls.append(record)
                results.append({"type": "tool_result", "tool_use_id": cid,
                                "content": json.dumps(record.result)})
            wire.append({"role": "user", "content": results})
            reply = call(wire)
            text, calls = _blocks(reply)
        turn.final_text = text or ""
        wire.append(_assistant_param(reply))
        turns.append(turn)
    return turns


def make_tool(anthropic_mod: Any, log: list[ToolCallRecord]) -> Any:
    """The runnable ``get_weather`` tool (``@beta_tool``); records each call it really ran."""

    @anthropic_mod.beta_tool
    def get_weather_tool(city: str) -> str:
        """Current weather for a city.

        Args:
            city: The city.
        """
        result = get_weather(city)
        log.append(ToolCallRecord("", TOOL_NAME, {"city": city}, result, True))
        return json.dumps(result)

    get_weather_tool.name = TOOL_NAME  # the wire name the fake model calls
    return get_weather_tool


def _consume_runner(runner: Any, stream: bool) -> list[Any]:
    """Every assistant message the runner received, in order."""
    received = []
    for item in runner:
        if stream:
            for _ in item:
                pass
            received.append(item.get_final_message())
        else:
            received.append(item)
    return received


def _turn_from_replies(turn: Turn, replies: list[Any], ran: list[ToolCallRecord]) -> None:
    for reply in replies:
        text, calls = _blocks(reply)
        if calls:
            turn.intermediate_text = text
            for cid, name, args in calls:
                done = ran.pop(0)
                assert done.args == args, (done, args)
                turn.tool_calls.append(ToolCallRecord(cid, name, args, done.result, True))
        else:
            turn.final_text = text or ""


def run_runner(client: Any, anthropic_mod: Any, stream: bool) -> list[Turn]:
    """One ``client.beta.messages.tool_runner`` per turn; turn 2 passes the whole history."""
    ran: list[ToolCallRecord] = []
    tool = make_tool(anthropic_mod, ran)
    wire: list[dict[str, Any]] = []
    turns: list[Turn] = []
    for user_text in (TURN1_USER, TURN2_USER):
        turn = Turn(user_text=user_text, history=[m for t in turns for m in t.remembered_after()])
        wire.append({"role": "user", "content": user_text})
        runner = client.beta.messages.tool_runner(
            model=MODEL, max_tokens=MAX_TOKENS, system=SYSTEM_PROMPT, tools=[tool],
            messages=list(wire), stream=stream,
        )
        replies = _consume_runner(runner, stream)
        _turn_from_replies(turn, replies, ran)
        for reply in replies:  # the app keeps the conversation for the next turn
            wire.append(_assistant_param(reply))
            _, calls = _blocks(reply)
            if calls:
                wire.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": c.tool_call_id, "content": json.dumps(c.result)}
                    for c in turn.tool_calls]})
        turns.append(turn)
    return turns


def run_thread_runner(client: Any, anthropic_mod: Any, tracer: Any) -> list[Turn]:
    """One server-held message thread; each turn appends the user message and runs a tool runner."""
    ran: list[ToolCallRecord] = []
    tool = make_tool(anthropic_mod, ran)
    thread = client.beta.messages.thread(model=MODEL, max_tokens=MAX_TOKENS, system=SYSTEM_PROMPT,
                                         tools=[tool])
    turns: list[Turn] = []
    # Both turns in one trace: the app's own request span (no GenAI attributes) around them.
    with tracer.start_as_current_span("chat-session"):
        for user_text in (TURN1_USER, TURN2_USER):
            turn = Turn(user_text=user_text, history=[m for t in turns for m in t.remembered_after()])
            thread.append({"role": "user", "content": user_text})
            replies = _consume_runner(thread.tool_runner(), False)
            _turn_from_replies(turn, replies, ran)
            turns.append(turn)
    return turns


def run_scenario(name: str) -> None:
    """Run one scenario in this process and write its two files."""
    spec = SCENARIOS[name]
    import anthropic
    import fake_anthropic
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    with OtlpCaptureServer(capture_path) as capture, fake_anthropic.FakeAnthropic() as provider:
        provider.enqueue(*scripted_replies(fake_anthropic))
        tracer_provider, _ = otel_providers(capture.endpoint, "weather-app")
        if spec.get("openinference"):
            from openinference.instrumentation.anthropic import AnthropicInstrumentor

            AnthropicInstrumentor().instrument(tracer_provider=tracer_provider)
        otel: dict[str, Any] = {
            "tracer_provider": tracer_provider,
            "traces": {"content_mode": "content" if spec["content"] else "metadata_only"},
        }
        if spec["kind"] == "thread_runner":
            otel["conversation_id"] = CONVERSATION_ID
        client = anthropic.Anthropic(base_url=provider.base_url, api_key=provider.api_key,
                                     max_retries=0, open_telemetry=otel)
        if spec["kind"] == "messages":
            turns = run_messages(client, spec["stream"])
        elif spec["kind"] == "runner":
            turns = run_runner(client, anthropic, spec["stream"])
        else:
            turns = run_thread_runner(client, anthropic, tracer_provider.get_tracer("weather-app"))
        if spec.get("openinference"):
            AnthropicInstrumentor().uninstrument()
        tracer_provider.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.message_requests]
    check_requests(spec, sent)

    lib_version = version("anthropic")
    runs, notes = expectations(name, spec, turns, sent)
    write_expected(HERE, name, library=LIBRARY, library_version=lib_version, convention="anthropic",
                   notes=notes, runs=runs)
    print(summarize_capture(capture_path))


def _bare_runs(turns: list[Turn], content: bool) -> list[dict[str, Any]]:
    t1, t2 = turns
    call = t1.tool_calls[0]
    runs: list[dict[str, Any]] = [
        {
            "convention": "anthropic",
            "entityName": MODEL,
            "systemMessages": [SYSTEM_PROMPT],
            "taggedSystemMessages": {},
            "inputMessages": [{"role": "user", "text": t1.user_text}],
            "rememberedMessages": [],
            "output": {"toolCalls": [{"toolName": call.tool_name, "toolCallId": call.tool_call_id,
                                       "args": call.args, "state": "call"}]},
            "contentCaptured": True,
        },
        {
            "convention": "anthropic",
            "entityName": MODEL,
            "systemMessages": [SYSTEM_PROMPT],
            "output": {"text": t1.final_text},
            "contentCaptured": True,
        },
        {
            "convention": "anthropic",
            "entityName": MODEL,
            "systemMessages": [SYSTEM_PROMPT],
            "taggedSystemMessages": {},
            "inputMessages": [{"role": "user", "text": t2.user_text}],
            "rememberedMessages": list(t2.history),
            "output": {"text": t2.final_text, "toolCalls": []},
            "contentCaptured": True,
        },
    ]
    if not content:
        runs = [{"convention": "anthropic", "entityName": MODEL, "contentCaptured": False}
                for _ in runs]
    return runs


def check_requests(spec: dict[str, Any], sent: list[dict[str, Any]]) -> None:
    """Check the notes' claims about threading against the request bodies the fake received."""
    threads = [(b.get("thread") or {}).get("type") for b in sent]
    if spec["kind"] == "messages":
        assert threads == [None, None, None], threads
        assert [len(b["messages"]) for b in sent] == [1, 3, 5]
    elif spec["kind"] == "runner":
        assert threads == ["create", "continue", "create"], threads
        assert [len(b["messages"]) for b in sent] == [1, 1, 5], [b["messages"] for b in sent]
    else:
        assert threads == ["create", "continue", "continue"], threads
        assert [len(b["messages"]) for b in sent] == [1, 1, 1], [b["messages"] for b in sent]
        assert sent[2]["messages"][0]["content"] in (TURN2_USER, [{"type": "text", "text": TURN2_USER}])


def expectations(name: str, spec: dict[str, Any], turns: list[Turn],
                 sent: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Expected runs and notes, from the Turn records and the request bodies the fake received."""
    kind = spec["kind"]
    n_calls = len(sent)
    if kind == "messages":
        runs = _bare_runs(turns, spec["content"])
        notes = (
            f"Plain client.messages.{'stream' if spec['stream'] else 'create'} calls, the app keeps the "
            f"history (every request resends it): {n_calls} root CLIENT spans `anthropic.messages.create` "
            "(gen_ai.operation.name=chat, gen_ai.provider.name=anthropic), no agent span and no tool span, "
            "so one bare run per call (entityName = the requested model). Run 1 ends in the tool call "
            "(stop_reason tool_use, with the text 'Let me look that up.' before it); run 2's input ends "
            "with the tool_result user message (its input/remembered are deliberately not asserted); "
            "run 3 is turn 2 with the whole turn 1 as history. The tool result travels as a JSON string "
            "in a tool_result block of a user-role message (the Anthropic wire form)."
        )
        if spec["stream"]:
            notes += " Every call streamed (SSE); the span has gen_ai.request.stream=true."
        if not spec["content"]:
            notes += (
                " Content mode metadata_only (the SDK's default): no gen_ai.system_instructions, "
                "gen_ai.input.messages nor gen_ai.output.messages on any span; only model, usage, "
                "ids and stop reason. The runs exist but carry no content (contentCaptured=false)."
            )
        return runs, notes

    runs = [
        agent_run_expectation(t, convention="anthropic", entity_name=MODEL) for t in turns
    ]
    if kind == "thread_runner":
        for run in runs:
            run["conversationId"] = CONVERSATION_ID
        notes = (
            "One server-held message thread (client.beta.messages.thread(system=…, tools=[get_weather])); "
            "each turn appends the user message and runs thread.tool_runner(). Both turns sit under the "
            "app's own plain span `chat-session` (no GenAI attributes), so they share one trace. Each "
            "turn has an INTERNAL span `anthropic.messages.tool_runner` (gen_ai.operation.name="
            "invoke_agent, gen_ai.conversation.id=conv-42 from the client's open_telemetry "
            "conversation_id), with its `anthropic.messages.create` CLIENT spans and the tool span under "
            "it: one run per tool runner, entityName = the requested model (the runner has no agent "
            "name). The requests carry `thread`: the first {type: create} with the system prompt and "
            "the first user message; every later request is {type: continue, previous_message_id} and "
            "sends ONLY the new messages (the tool_result message, then in turn 2 only 'Should I take "
            "an umbrella?'). So turn 2's remembered messages are not on any of its spans: they must be "
            "stitched from the earlier calls of the same thread (previous_message_id = the id of the "
            "response of turn 1's last call)."
        )
        return runs, notes
    notes = (
        f"client.beta.messages.tool_runner(system=…, tools=[@beta_tool get_weather], messages=…"
        f"{', stream=True' if spec['stream'] else ''}) once per turn; the app passes the whole "
        "history to turn 2's runner. Each runner makes one trace: an INTERNAL root "
        "`anthropic.messages.tool_runner` (gen_ai.operation.name=invoke_agent, gen_ai.request.model; no "
        "agent name: entityName = the requested model), under it one CLIENT span "
        "`anthropic.messages.create` per model call and one INTERNAL span per tool the runner ran. The "
        "runner uses a server-held message thread by itself: after the first request (thread "
        "{type: create}, whole history) each request is {type: continue} and sends only the new "
        "tool_result message, so the second call's gen_ai.input.messages holds only the tool result."
    )
    if spec.get("openinference"):
        notes += (
            " openinference-instrumentation-anthropic instruments the same client too: every model "
            "call also has an OpenInference LLM span `beta.messages.create` (openinference.span.kind="
            "LLM, input.value = the raw request, llm.input_messages.*, output.value = the raw response) "
            "in the same trace, as the PARENT of the SDK's own `anthropic.messages.create` span and a "
            "child of the tool_runner span. Each model call and each tool call must count once: the "
            "runs are exactly those without OpenInference (2 runs, 1 tool call)."
        )
    return runs, notes


def main() -> int:
    """Run every scenario (or the one named in argv) in its own subprocess."""
    if len(sys.argv) > 1:
        run_scenario(sys.argv[1])
        return 0
    for name in SCENARIOS:
        subprocess.run([sys.executable, __file__, name], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
