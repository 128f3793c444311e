"""Capture driver: Vercel AI SDK ``ai`` 7 with ``@ai-sdk/anthropic`` and ``@ai-sdk/otel``'s ``OpenTelemetry``.

This Python side starts the fake Anthropic server (tests/fakes/fake_anthropic.py) and the OTLP
capture server (tests/fakes/otlp_capture.py) on 127.0.0.1, scripts the provider's replies, and
runs the Node driver ``driver/generate.mjs <scenario>`` with their URLs in the environment. The
Node driver exports @ai-sdk/otel's GenAI spans (``invoke_agent``, ``step``, ``chat``, ``execute_tool``) with the real OTel JS SDK (OTLP/HTTP protobuf)
and prints what the app sent and received; the expectations are written from that and checked
against the requests the fake server received. Does not import scorecar code.

Regenerate (from the repository root; Node 20, and a Python with ``protobuf`` and
``opentelemetry-proto``, e.g. the repository's own environment)::

    (cd tests/testdata/captures/vercel-ai-v7/driver && npm ci)
    python3 tests/testdata/captures/vercel-ai-v7/generate.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _common import (
    CONVERSATION_ID,
    LOOKUP_TEXT,
    SYSTEM_PROMPT,
    TOOL_NAME,
    TURN1_ANSWER,
    TURN2_ANSWER,
    ToolCallRecord,
    Turn,
    agent_run_expectation,
    summarize_capture,
    write_expected,
)

LIBRARY = "vercel-ai-v7"
FUNCTION_ID = "weather-agent"
TOOL_USE_ID = "toolu_paris_1"

SCENARIOS: dict[str, dict[str, Any]] = {
    "generate_two_turns_tool": {"mode": "generate", "record": True},
    "stream_two_turns_tool": {"mode": "stream", "record": True},
    "generate_two_turns_tool_no_content": {"mode": "generate", "record": False},
}


def scripted_replies(fake: Any, mode: str) -> list[Any]:
    """The provider's side of the script."""
    return [
        fake.tool_use(TOOL_NAME, {"city": "Paris"}, text=LOOKUP_TEXT, tool_use_id=TOOL_USE_ID),
        fake.text(TURN1_ANSWER),
        fake.text(TURN2_ANSWER),
    ]


def run_node(driver: Path, scenario: str, env: dict[str, str]) -> dict[str, Any]:
    """Run the Node driver for one scenario; return its RESULT document."""
    proc = subprocess.run(
        ["node", str(driver / "generate.mjs"), scenario],
        cwd=driver, env={**os.environ, **env}, capture_output=True, text=True, timeout=300, check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"node driver failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])  # type: ignore[no-any-return]
    raise RuntimeError(f"node driver printed no RESULT:\n{proc.stdout}\n{proc.stderr}")


def turns_from_node(records: list[dict[str, Any]]) -> list[Turn]:
    """Turn records from the steps the app received (tool results joined on the call id)."""
    turns: list[Turn] = []
    for rec in records:
        turn = Turn(user_text=rec["user"], history=[m for t in turns for m in t.remembered_after()])
        for step in rec["steps"]:
            results = {r["toolCallId"]: r["output"] for r in step["toolResults"]}
            if step["toolCalls"]:
                turn.intermediate_text = step["text"]
                for c in step["toolCalls"]:
                    has = c["toolCallId"] in results
                    turn.tool_calls.append(ToolCallRecord(c["toolCallId"], c["toolName"], c["input"],
                                                          results.get(c["toolCallId"]), has))
            else:
                turn.final_text = step["text"]
        turns.append(turn)
    return turns


def check_requests(mode: str, sent: list[dict[str, Any]]) -> None:
    """What the provider received matches the script (history resent, system prompt every call)."""
    assert all(r.get("system") in (SYSTEM_PROMPT, [{"type": "text", "text": SYSTEM_PROMPT}]) for r in sent), sent
    assert [len(r["messages"]) for r in sent] == [1, 3, 5], [r["messages"] for r in sent]


def run_scenario(name: str, driver: Path) -> None:
    """Run one scenario and write its two files."""
    spec = SCENARIOS[name]
    import fake_anthropic
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    with OtlpCaptureServer(capture_path) as capture, fake_anthropic.FakeAnthropic() as provider:
        provider.enqueue(*scripted_replies(fake_anthropic, spec["mode"]))
        result = run_node(driver, name, {**provider.env(), "OTLP_ENDPOINT": capture.endpoint})
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.message_requests]
    check_requests(spec["mode"], sent)
    version = (f"ai {result['aiVersion']}, @ai-sdk/anthropic {result['providerVersion']}, "
               f"@ai-sdk/otel {result['otelVersion']}")
    runs, notes = expectations(name, spec, result["turns"])
    write_expected(HERE, name, library=LIBRARY, library_version=version, convention="genai",
                   notes=notes, runs=runs)
    print(summarize_capture(capture_path))


def expectations(name: str, spec: dict[str, Any], records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Expected runs and notes from what the Node driver sent and received."""
    turns = turns_from_node(records)
    extra = {"conversationId": CONVERSATION_ID}
    runs = [agent_run_expectation(t, convention="genai", entity_name=FUNCTION_ID, extra=extra) for t in turns]
    stream = spec["mode"] == "stream"
    op = "streamText" if stream else "generateText"
    notes = (
        f"Two {op} calls (system option, history in `messages`, the app appends result.responseMessages "
        "after each turn), tool get_weather with execute, stopWhen: stepCountIs(5), "
        "telemetry {functionId: weather-agent, includeRuntimeContext: {sessionId: true}} with "
        "runtimeContext {sessionId: conv-42}, and registerTelemetry(new OpenTelemetry({runtimeContext: "
        "true})) from @ai-sdk/otel (default agentSpanName: the model id). No `ai.*` spans: GenAI spans "
        "only. Each call is one trace: root `invoke_agent claude-haiku-5-5` (gen_ai.operation.name="
        "invoke_agent, gen_ai.agent.name = the functionId, gen_ai.system_instructions, "
        "gen_ai.input.messages = the app-passed messages, gen_ai.output.messages at the end), a "
        "`step N` span per step, under it a `chat claude-haiku-5-5` span (the full per-call messages, "
        "gen_ai.tool.definitions) and an `execute_tool get_weather` span (gen_ai.tool.call.arguments/"
        "result). Turn 1 has 2 steps (tool call with the text 'Let me look that up.', then the answer), "
        "turn 2 one step. entityName = gen_ai.agent.name (the functionId). Scope name `gen_ai` and "
        "nothing `ai.*` but `ai.settings.context.sessionId` (the opted-in runtime context, on the root "
        "and step spans): the spans read as plain OTel GenAI (convention genai); conversationId (extra "
        "key) comes from ai.settings.context.sessionId. Quirks: assistant messages in the next call's "
        "gen_ai.input.messages start with an opaque {type: custom} part (provider metadata) before the "
        "text; the root's gen_ai.output.messages is ONE assistant message with the final text FIRST, "
        "then every tool_call and tool_call_response part of the run (the intermediate 'Let me look "
        "that up.' is not in it, only in the first chat span's output); gen_ai.response.finish_reasons "
        "keep the AI SDK names (tool-calls, stop) on chat and root spans, while the finish_reason "
        "inside gen_ai.output.messages is mapped (tool_call, stop)."
    )
    if stream:
        notes += " Every model call streamed (chat spans have gen_ai.client.operation.time_to_first_chunk)."
    if not spec["record"]:
        for run in runs:
            for key in ("systemMessages", "taggedSystemMessages", "inputMessages", "rememberedMessages", "output"):
                run.pop(key, None)
            run["contentCaptured"] = False
        notes += (
            " recordInputs: false and recordOutputs: false: no message, instruction or tool "
            "argument/result attributes. The runs exist (2 roots) but carry no content: "
            "contentCaptured=false."
        )
    return runs, notes


def main() -> int:
    """Run every scenario (or those named in argv)."""
    driver = HERE / "driver"
    for name in sys.argv[1:] or list(SCENARIOS):
        run_scenario(name, driver)
    return 0


if __name__ == "__main__":
    sys.exit(main())
