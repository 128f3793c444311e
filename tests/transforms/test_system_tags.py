"""Mastra's system-message tags, read back from the fixed headers its memory and processors write
(transforms/_system_tags.py): working memory and semantic recall under `memory`, retry feedback
under `processor-retry-feedback`; a system message without a known header stays `runtime`."""

from __future__ import annotations

import json
from typing import Any

from scorers.types import ScorerRun
from tests.transforms._runs import one_run, tags_of
from tests.transforms._spans import TRACE, span
from transforms import Trace, build_runs
from transforms._system_tags import tag_for

INSTRUCTIONS = "You are a weather bot. Answer in one short sentence."
QUESTION = "What is the weather in Paris?"
ANSWER = "It is 14°C and raining in Paris."
# The headers as @mastra/core 1.71 writes them (bodies shortened).
WORKING_MEMORY = ("WORKING_MEMORY_SYSTEM_INSTRUCTION:\nStore and update any conversation-relevant "
                  "information by calling the updateWorkingMemory tool.\n\n<working_memory_data>"
                  "\n# User\n- Name: Ana\n</working_memory_data>")
READ_ONLY_MEMORY = ("WORKING_MEMORY_SYSTEM_INSTRUCTION (READ-ONLY):\nThe following is your "
                    "working memory - persistent information about the user")
RECALL = ("The following messages were remembered from a different conversation:\n"
          "<remembered_from_other_conversation>\nMessage from previous conversation at 9:12 AM: "
          "User: I live in Paris.\n<end_remembered_from_other_conversation>")
RETRY = ("[Processor Feedback] Your previous response was not accepted: answer in Celsius. "
         "Please try again with the feedback in mind.")
PER_CALL = "Always use degrees Celsius."
ROOT = "00f067aa0ba902b7"


def _mastra_run(system: list[str], *, legacy: bool = False) -> ScorerRun:
    """One Mastra agent run whose model call got these system messages, then the question."""
    agent = span("invoke_agent Weather Agent", {
        "gen_ai.operation.name": "invoke_agent", "mastra.span.type": "agent_run",
        "gen_ai.agent.id": "weather-agent", "gen_ai.agent.name": "Weather Agent",
        "gen_ai.system_instructions": INSTRUCTIONS, "mastra.agent_run.input": QUESTION,
        "mastra.agent_run.output": json.dumps({"text": ANSWER, "files": []})},
        span_id=ROOT, start=1000, end=9000)
    if legacy:  # MODEL_GENERATION is the chat span, with converted gen_ai.input.messages
        msgs = [{"role": "system", "parts": [{"type": "text", "content": s}]} for s in system]
        msgs.append({"role": "user", "parts": [{"type": "text", "content": QUESTION}]})
        gen = span("chat mock-model", {
            "gen_ai.operation.name": "chat", "mastra.span.type": "model_generation",
            "gen_ai.request.model": "mock-model", "gen_ai.input.messages": json.dumps(msgs),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                {"type": "text", "content": ANSWER}]}]),
            "gen_ai.response.finish_reasons": '["stop"]'}, parent=ROOT, start=2000, end=8000)
    else:
        prompt: list[dict[str, Any]] = [{"role": "system", "content": s} for s in system]
        prompt.append({"role": "user", "content": [{"type": "text", "text": QUESTION}]})
        gen = span("model_generation mock-model", {
            "gen_ai.operation.name": "model_generation", "mastra.span.type": "model_generation",
            "mastra.model_generation.input": json.dumps({"messages": prompt}),
            "mastra.model_generation.output": json.dumps({"text": ANSWER, "toolCalls": []})},
            parent=ROOT, start=2000, end=8000)
    return one_run([agent, gen])


def test_working_memory_and_semantic_recall_are_memory_in_prompt_order() -> None:
    run = _mastra_run([INSTRUCTIONS, RECALL, WORKING_MEMORY])
    assert [m.content for m in run.input.system_messages] == [INSTRUCTIONS]
    assert tags_of(run) == {"memory": [RECALL, WORKING_MEMORY]}


def test_retry_feedback_has_its_own_tag() -> None:
    run = _mastra_run([INSTRUCTIONS, WORKING_MEMORY, RETRY])
    assert tags_of(run) == {"memory": [WORKING_MEMORY], "processor-retry-feedback": [RETRY]}


def test_a_system_message_without_a_known_header_stays_runtime() -> None:
    # The per-call `system` option: Mastra tags it `user-provided`, but its export drops the tag
    # and the text is the app's own, so nothing says what it is.
    run = _mastra_run([INSTRUCTIONS, PER_CALL, WORKING_MEMORY, "<working_memory>Ana</...>"])
    assert tags_of(run) == {"runtime": [PER_CALL, "<working_memory>Ana</...>"],
                            "memory": [WORKING_MEMORY]}


def test_the_legacy_layout_is_tagged_the_same_way() -> None:
    run = _mastra_run([INSTRUCTIONS, PER_CALL, READ_ONLY_MEMORY], legacy=True)
    assert [m.content for m in run.input.system_messages] == [INSTRUCTIONS]
    assert tags_of(run) == {"runtime": [PER_CALL], "memory": [READ_ONLY_MEMORY]}


def test_tag_for_reads_only_a_header_at_the_start() -> None:
    assert tag_for(WORKING_MEMORY) == "memory"
    assert tag_for(READ_ONLY_MEMORY) == "memory"
    assert tag_for(RECALL) == "memory"
    assert tag_for(RETRY) == "processor-retry-feedback"
    assert tag_for(INSTRUCTIONS) is None
    assert tag_for("") is None
    # A header quoted inside another message does not make it that message.
    assert tag_for("Never print WORKING_MEMORY_SYSTEM_INSTRUCTION: to the user.") is None
    assert tag_for("The following messages were remembered") is None  # cut before the colon


def test_a_mastra_header_is_tagged_whoever_exported_the_span() -> None:
    # Mastra exported through plain OTel GenAI (no mastra.* attributes): the header still says
    # what the message is, so the tag is the one Mastra's live scorer gets, not `runtime`.
    msgs = [{"role": "system", "parts": [{"type": "text", "content": s}]}
            for s in (INSTRUCTIONS, WORKING_MEMORY, PER_CALL)]
    msgs.append({"role": "user", "parts": [{"type": "text", "content": QUESTION}]})
    chat = span("chat mock-model", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "mock-model",
        "gen_ai.input.messages": json.dumps(msgs),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": ANSWER}]}])})
    (run,) = build_runs(Trace(TRACE, [chat], [])).runs
    tagged = {k: [m.content for m in v] for k, v in run.input.tagged_system_messages.items()}
    assert tagged == {"memory": [WORKING_MEMORY], "runtime": [PER_CALL]}
    assert [m.content for m in run.input.system_messages] == [INSTRUCTIONS]
