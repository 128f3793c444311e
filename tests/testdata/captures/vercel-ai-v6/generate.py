"""Capture driver: Vercel AI SDK ``ai`` 6 with ``@ai-sdk/anthropic`` and ``experimental_telemetry``.

This Python side starts the fake Anthropic server (tests/fakes/fake_anthropic.py) and the OTLP
capture server (tests/fakes/otlp_capture.py) on 127.0.0.1, scripts the provider's replies, and
runs the Node driver ``driver/generate.mjs <scenario>`` with their URLs in the environment. The
Node driver exports the AI SDK's ``ai.*`` spans with the real OTel JS SDK (OTLP/HTTP protobuf)
and prints what the app sent and received; the expectations are written from that and checked
against the requests the fake server received. Does not import scorecar code.

Regenerate (from the repository root; Node 20, and a Python with ``protobuf`` and
``opentelemetry-proto``, e.g. the repository's own environment)::

    (cd tests/testdata/captures/vercel-ai-v6/driver && npm ci)
    python3 tests/testdata/captures/vercel-ai-v6/generate.py
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
    write_requests,
)

LIBRARY = "vercel-ai-v6"
FUNCTION_ID = "weather-agent"
TOOL_USE_ID = "toolu_paris_1"
OBJECT = {"city": "Paris", "temp_c": 14, "conditions": "rain"}

SCENARIOS: dict[str, dict[str, Any]] = {
    "generate_two_turns_tool": {"mode": "generate", "record": True},
    "stream_two_turns_tool": {"mode": "stream", "record": True},
    "generate_two_turns_tool_no_content": {"mode": "generate", "record": False},
    "generate_object": {"mode": "object", "record": True},
    "generate_two_turns_tool_string_result": {"mode": "generate", "record": True, "string_result": True},
    # Two parallel tool calls in one reply, Berlin's tool throws; then get_weather(Rome) twice in
    # sequence (see _common.py).
    "generate_two_tools_and_a_failure": {"mode": "generate", "record": True, "multi": True},
}


def scripted_replies(fake: Any, mode: str, multi: bool = False) -> list[Any]:
    """The provider's side of the script."""
    if multi:
        from _anthropic_conversation import scripted_replies_two_tools_and_a_failure

        return scripted_replies_two_tools_and_a_failure(fake)
    if mode == "object":
        return [fake.structured(OBJECT)]
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


def turns_from_node(records: list[dict[str, Any]], *, string_result: bool = False) -> list[Turn]:
    """Turn records from the steps the app received (tool results joined on the call id)."""
    turns: list[Turn] = []
    for rec in records:
        turn = Turn(user_text=rec["user"], history=[m for t in turns for m in t.remembered_after()])
        for step in rec["steps"]:
            results = {r["toolCallId"]: r["output"] for r in step["toolResults"]}
            errors = {e["toolCallId"]: e["error"] for e in step.get("toolErrors", [])}
            if string_result:  # the app's tool returned JSON text: the result it sent back is that JSON
                results = {k: json.loads(v) for k, v in results.items()}
            if step["toolCalls"]:
                calls = []
                for c in step["toolCalls"]:
                    has = c["toolCallId"] in results
                    calls.append(ToolCallRecord(c["toolCallId"], c["toolName"], c["input"],
                                                results.get(c["toolCallId"]), has,
                                                error=errors.get(c["toolCallId"])))
                turn.add_tool_step(step["text"] or None, calls)
            else:
                turn.final_text = step["text"]
        turns.append(turn)
    return turns


def check_requests(mode: str, sent: list[dict[str, Any]], multi: bool = False) -> None:
    """What the provider received matches the script (history resent, system prompt every call)."""
    assert all(r.get("system") in (SYSTEM_PROMPT, [{"type": "text", "text": SYSTEM_PROMPT}]) for r in sent), sent
    if mode == "object":
        assert len(sent) == 1
        return
    if multi:
        assert [len(r["messages"]) for r in sent] == [1, 3, 5, 7, 9], [r["messages"] for r in sent]
        return
    assert [len(r["messages"]) for r in sent] == [1, 3, 5], [r["messages"] for r in sent]


def run_scenario(name: str, driver: Path) -> None:
    """Run one scenario and write its two files."""
    spec = SCENARIOS[name]
    import fake_anthropic
    from otlp_capture import OtlpCaptureServer

    capture_path = HERE / f"{name}.otlp.jsonl"
    with OtlpCaptureServer(capture_path) as capture, fake_anthropic.FakeAnthropic() as provider:
        provider.enqueue(*scripted_replies(fake_anthropic, spec["mode"], bool(spec.get("multi"))))
        result = run_node(driver, name, {**provider.env(), "OTLP_ENDPOINT": capture.endpoint})
        assert provider.pending == 0, "not every scripted reply was used"
        sent = [r.body for r in provider.message_requests]
    check_requests(spec["mode"], sent, bool(spec.get("multi")))
    version = f"ai {result['aiVersion']}, @ai-sdk/anthropic {result['providerVersion']}"
    runs, notes = expectations(name, spec, result["turns"])
    if spec.get("multi"):
        notes = multi_notes(result["turns"], sent)
        write_requests(HERE, name, sent)
    write_expected(HERE, name, library=LIBRARY, library_version=version, convention="vercel",
                   notes=notes, runs=runs)
    print(summarize_capture(capture_path))


def expectations(name: str, spec: dict[str, Any], records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Expected runs and notes from what the Node driver sent and received."""
    extra = {"conversationId": CONVERSATION_ID}
    if spec["mode"] == "object":
        rec = records[0]
        assert rec["object"] == OBJECT, rec
        run = {
            "convention": "vercel",
            "entityName": FUNCTION_ID,
            "systemMessages": [SYSTEM_PROMPT],
            "taggedSystemMessages": {},
            "inputMessages": [{"role": "user", "text": rec["user"]}],
            "rememberedMessages": [],
            "output": {"text": json.dumps(rec["object"], separators=(",", ":")), "toolCalls": []},
            "contentCaptured": True,
            **extra,
        }
        notes = (
            "One generateObject call (system + prompt string, a zod object schema), functionId "
            "weather-agent, metadata.sessionId conv-42. Root `ai.generateObject` with one child "
            "`ai.generateObject.doGenerate` (its ai.response.object is the provider's text as sent, "
            "with spaces). The root has ai.prompt = {system, prompt} (prompt is a "
            "string: it is the new input) and ai.response.object (the JSON object as a string). "
            "output.text is that object as compact JSON: compare it as JSON, not as text."
        )
        return [run], notes
    turns = turns_from_node(records, string_result=bool(spec.get("string_result")))
    runs = [agent_run_expectation(t, convention="vercel", entity_name=FUNCTION_ID, extra=extra) for t in turns]
    stream = spec["mode"] == "stream"
    op = "streamText" if stream else "generateText"
    step = "doStream" if stream else "doGenerate"
    notes = (
        f"Two {op} calls (system option, history in `messages`, the app appends response.messages "
        "after each turn), tool get_weather with execute, stopWhen: stepCountIs(5); "
        "experimental_telemetry {isEnabled, functionId: weather-agent, metadata: {sessionId: conv-42}}. "
        f"Each call is one trace: root `ai.{op}` (ai.prompt = JSON {{system, messages}} as the app "
        f"passed them: history + new user message), one `ai.{op}.{step}` span per step "
        "(ai.prompt.messages = the provider prompt incl. the system message and tool results as "
        "role:tool messages; ai.response.toolCalls) and an `ai.toolCall` span (ai.toolCall.args / ai.toolCall.result JSON). Turn 1 has 2 steps (tool "
        "call with the text 'Let me look that up.', then the answer), turn 2 one step. The root's "
        "ai.response.text is the LAST step's text only. conversationId comes from "
        "ai.telemetry.metadata.sessionId (extra key, a target field)."
    )
    if stream:
        notes += (
            " Streaming: the doStream spans carry ai.stream.firstChunk and ai.stream.finish events "
            "(and ai.response.msToFirstChunk), the ai.toolCall span is a CHILD of the doStream step span "
            "that produced the call (not of the root), and the doStream span's ai.response.toolCalls "
            "items are {type: tool-call, toolCallId, toolName, input} with `input` an OBJECT (a JSON "
            "string in doGenerate)."
        )
    if spec.get("string_result"):
        notes += (
            " The tool's execute returns JSON.stringify(weather) (a string), so ai.toolCall.result "
            "is DOUBLE-encoded (a JSON string whose value is the JSON text) and the next step's "
            "ai.prompt.messages has the tool output as {type: text, value: '<json>'}. The expected "
            "result is the decoded object."
        )
    if not spec["record"]:
        for run in runs:
            for key in ("systemMessages", "taggedSystemMessages", "inputMessages", "rememberedMessages", "output"):
                run.pop(key, None)
            run["contentCaptured"] = False
        notes += (
            " recordInputs: false and recordOutputs: false: no ai.prompt, ai.prompt.messages, "
            "ai.response.text/toolCalls, ai.toolCall.args/result anywhere. The runs exist (2 "
            "roots) but carry no content: contentCaptured=false."
        )
    return runs, notes


def multi_notes(records: list[dict[str, Any]], sent: list[dict[str, Any]]) -> str:
    """Notes of `generate_two_tools_and_a_failure`, after checking what the provider received."""
    errors = [e for rec in records for step in rec["steps"] for e in step.get("toolErrors", [])]
    assert len(errors) == 1, errors
    berlin = errors[0]
    results = sent[1]["messages"][-1]["content"]
    block = next(b for b in results if b.get("tool_use_id") == berlin["toolCallId"])
    assert block.get("is_error") is True, results
    assert berlin["error"] in json.dumps(block["content"]), (berlin, block)
    return (
        "Parallel tool calls, generateText (system option, history in `messages`, the app appends "
        "response.messages after each turn), stopWhen: stepCountIs(5), functionId weather-agent, "
        "metadata.sessionId conv-42. Turn 1 'What is the weather in Paris and in Berlin?': step 1 is "
        "ONE reply with the text 'Let me look that up.' and two tool_use blocks (toolu_paris_1 "
        "Paris, toolu_berlin_1 Berlin): two `ai.toolCall` spans under the root; Berlin's execute "
        "throws Error('weather service unavailable for Berlin'): its ai.toolCall span has status "
        "ERROR with that message and an exception event, no ai.toolCall.result; the SDK keeps a "
        "`tool-error` part and sends the model a tool_result with is_error: true (in the next "
        "doGenerate's ai.prompt.messages the tool message's output is {type: error-text, value}). "
        "Step 2 answers about both. Turn 2 'And in Rome? Please check it twice.': sequential, 3 "
        "steps: toolu_rome_1, then after its result toolu_rome_2 (same tool name, text 'Let me "
        "check again.'), then the answer. Turn 2's ai.prompt (the app-passed messages) holds turn 1 "
        "with the tool-error output, so its remembered Berlin call is output-error too. Root "
        "ai.response.text is the last step's text only; conversationId from "
        "ai.telemetry.metadata.sessionId."
    )


def main() -> int:
    """Run every scenario (or those named in argv)."""
    driver = HERE / "driver"
    for name in sys.argv[1:] or list(SCENARIOS):
        run_scenario(name, driver)
    return 0


if __name__ == "__main__":
    sys.exit(main())
