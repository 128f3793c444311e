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
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _common import (
    CONVERSATION_ID,
    FAILING_CITY,
    LOOKUP_TEXT,
    MULTI_TURN1_USER,
    MULTI_TURN2_USER,
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
    WeatherServiceError,
    agent_run_expectation,
    get_weather,
    get_weather_or_fail,
    otel_providers,
    run_scenarios,
    summarize_capture,
    write_expected,
    write_requests,
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
    # Two parallel tool_use blocks in one reply, Berlin's tool raises (the runner sends
    # is_error: true); then get_weather(Rome) twice in sequence. See _common.py.
    "tool_runner_two_tools_and_a_failure": {"kind": "runner_multi", "stream": False, "content": True},
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


def run_runner_multi(client: Any, anthropic_mod: Any, provider: Any) -> list[Turn]:
    """`two_tools_and_a_failure` with one tool runner per turn (the app passes the history).

    The tool raises for Berlin; the runner catches it and sends a ``tool_result`` with
    ``is_error: true`` whose content it renders itself: the error text is read from the request
    the fake received (the wire), not guessed.
    """
    ran: list[ToolCallRecord] = []

    @anthropic_mod.beta_tool
    def get_weather_tool(city: str) -> str:
        """Current weather for a city.

        Args:
            city: The city.
        """
        try:
            result = get_weather_or_fail(city)
        except WeatherServiceError as exc:
            ran.append(ToolCallRecord("", TOOL_NAME, {"city": city}, error=str(exc)))
            raise
        ran.append(ToolCallRecord("", TOOL_NAME, {"city": city}, result, True))
        return json.dumps(result)

    get_weather_tool.name = TOOL_NAME
    wire: list[dict[str, Any]] = []
    turns: list[Turn] = []
    for user_text in (MULTI_TURN1_USER, MULTI_TURN2_USER):
        turn = Turn(user_text=user_text, history=[m for t in turns for m in t.remembered_after()])
        wire.append({"role": "user", "content": user_text})
        first = len(provider.message_requests)
        runner = client.beta.messages.tool_runner(
            model=MODEL, max_tokens=MAX_TOKENS, system=SYSTEM_PROMPT, tools=[get_weather_tool],
            messages=list(wire),
        )
        replies = _consume_runner(runner, False)
        sent = [r.body for r in provider.message_requests[first:]]
        # The runner continues its own thread: each later request sends only the tool_result
        # message answering the previous reply.
        tool_messages = [b["messages"][-1] for b in sent[1:]]
        assert len(tool_messages) == len(replies) - 1, sent
        for reply, tool_message in zip(replies, tool_messages + [None]):
            text, calls = _blocks(reply)
            wire.append(_assistant_param(reply))
            if not calls:
                turn.final_text = text or ""
                continue
            assert tool_message is not None and tool_message["role"] == "user", tool_message
            blocks = {b["tool_use_id"]: b for b in tool_message["content"]}
            step = []
            for cid, name, args in calls:
                done = ran.pop(0)
                assert done.args == args, (done, args)
                block = blocks[cid]
                record = ToolCallRecord(cid, name, args)
                if block.get("is_error"):
                    assert done.error is not None and args["city"] == FAILING_CITY, (done, block)
                    record.error = block["content"] if isinstance(block["content"], str) else "".join(
                        c["text"] for c in block["content"] if c.get("type") == "text")
                    assert done.error in record.error, (done.error, record.error)
                    # The SDK's gen_ai.input.messages has no error mark on a tool_call_response
                    # (is_error is dropped): resent as history, the failure is not recorded.
                    record.error_in_history = "unasserted"
                else:
                    assert json.loads(block["content"] if isinstance(block["content"], str)
                                      else block["content"][0]["text"]) == done.result, block
                    record.result, record.has_result = done.result, True
                step.append(record)
            turn.add_tool_step(text, step)
            wire.append(tool_message)
        turns.append(turn)
    assert not ran, ran
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
        if spec["kind"] == "runner_multi":
            from _anthropic_conversation import scripted_replies_two_tools_and_a_failure

            provider.enqueue(*scripted_replies_two_tools_and_a_failure(fake_anthropic, model=MODEL))
        else:
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
        elif spec["kind"] == "runner_multi":
            turns = run_runner_multi(client, anthropic, provider)
        else:
            turns = run_thread_runner(client, anthropic, tracer_provider.get_tracer("weather-app"))
        if spec.get("openinference"):
            AnthropicInstrumentor().uninstrument()
        tracer_provider.shutdown()
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.message_requests]
    check_requests(spec, sent)
    if spec["kind"] == "runner_multi":
        write_requests(HERE, name, sent)

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
    elif spec["kind"] == "runner_multi":
        assert threads == ["create", "continue", "create", "continue", "continue"], threads
        assert [len(b["messages"]) for b in sent] == [1, 1, 5, 1, 1], [b["messages"] for b in sent]
        assert [len(b["messages"][0]["content"]) for b in sent[1:2]] == [2], sent[1]
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
    if kind == "runner_multi":
        berlin = turns[0].tool_calls[1]
        notes = (
            "Parallel tool calls, one client.beta.messages.tool_runner(system=…, tools=[@beta_tool "
            "get_weather], messages=…) per turn, the app passing the whole history. Turn 1 'What is the "
            "weather in Paris and in Berlin?': ONE reply with the text 'Let me look that up.' and two "
            "tool_use blocks (toolu_paris_1 Paris, toolu_berlin_1 Berlin); the runner runs both (one "
            "INTERNAL `anthropic.custom_tool_use get_weather` span each, in reply order); Berlin's tool "
            "raises WeatherServiceError and the runner answers with ONE user message of two tool_result "
            "blocks, Berlin's with is_error: true and the content the runner renders itself "
            f"({berlin.error!r}, read from the request the fake received). Berlin's tool span has "
            "status ERROR, error.type=tool_error and that text as anthropic.tool_result.content; the "
            "second chat span's gen_ai.input.messages has the tool_call_response parts (with the "
            "thread continuing, it is the only input message). Turn 2 'And in Rome? Please check it "
            "twice.': sequential, toolu_rome_1 then, after its result, toolu_rome_2 (same tool name, "
            "text 'Let me check again.'), then the answer: 3 chat spans, 2 tool spans under one "
            "tool_runner span. Requests: thread create/continue per runner, so the 2nd and 3rd calls "
            "of turn 2 carry only the newest tool_result message. Turn 2's remembered messages (its "
            "first request, the whole history the app passed) carry is_error: true on Berlin's result, but the "
            "SDK's gen_ai.input.messages drops it (a tool_call_response part has no error field), so "
            "that remembered call's state/result are not asserted (name, id, arguments are)."
        )
        return runs, notes
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


if __name__ == "__main__":
    sys.exit(run_scenarios(__file__, SCENARIOS, run_scenario))
