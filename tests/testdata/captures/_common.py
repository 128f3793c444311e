"""Shared helpers for the capture drivers (not a test module; never imports scorecar code).

Each driver runs in its own virtual environment, so this file uses only the
standard library plus what every capture venv has (``opentelemetry-sdk`` and the
OTLP/HTTP exporter, imported lazily). It loads the loopback fakes from
``tests/fakes/`` by path.

The scripted conversation is the same for every library: a system prompt, turn 1
asks for the weather (the model calls ``get_weather`` and then answers), turn 2
asks a follow-up with the whole history. Expectations are written from what the
driver itself sent and received (the ``Turn`` records), never from scorecar.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CAPTURES = Path(__file__).resolve().parent
REPO = CAPTURES.parents[2]
FAKES = REPO / "tests" / "fakes"
if str(FAKES) not in sys.path:
    sys.path.insert(0, str(FAKES))

SYSTEM_PROMPT = "You are a weather bot. Answer in one short sentence."
TURN1_USER = "What is the weather in Paris?"
TURN2_USER = "Should I take an umbrella?"
TOOL_NAME = "get_weather"
TOOL_DESCRIPTION = "Current weather for a city."
TOOL_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
WEATHER = {"Paris": {"temp_c": 14, "conditions": "rain"}, "Rome": {"temp_c": 21, "conditions": "sunny"}}
LOOKUP_TEXT = "Let me look that up."
TURN1_ANSWER = "It is 14°C and raining in Paris."
TURN2_ANSWER = "Yes, take an umbrella: it is raining in Paris."
AGENT_NAME = "weather-agent"
CONVERSATION_ID = "conv-42"

# The `two_tools_and_a_failure` scenario: turn 1 asks for two cities; the model calls
# get_weather for both in ONE reply (parallel tool calls), Paris answers and Berlin's tool
# raises; the app reports the error back the way its library does and the model answers
# about both. Turn 2 asks for Rome and the model calls get_weather(Rome) twice in sequence
# (same tool name, two call ids, the second after the first's result).
MULTI_TURN1_USER = "What is the weather in Paris and in Berlin?"
MULTI_TURN2_USER = "And in Rome? Please check it twice."
FAILING_CITY = "Berlin"
TOOL_ERROR = "weather service unavailable for Berlin"
RECHECK_TEXT = "Let me check again."
MULTI_TURN1_ANSWER = "It is 14°C and raining in Paris; the weather for Berlin is unavailable."
MULTI_TURN2_ANSWER = "It is 21°C and sunny in Rome."
MULTI_CALL_IDS = ("call_paris_1", "call_berlin_1", "call_rome_1", "call_rome_2")


class WeatherServiceError(RuntimeError):
    """What the failing tool raises (its message is `TOOL_ERROR`)."""


def get_weather(city: str) -> dict[str, Any]:
    """The scripted tool: the app really runs it and sends its JSON result back."""
    return dict(WEATHER.get(city, {"temp_c": None, "conditions": "unknown"}))


def get_weather_or_fail(city: str) -> dict[str, Any]:
    """The tool of `two_tools_and_a_failure`: raises `WeatherServiceError` for Berlin."""
    if city == FAILING_CITY:
        raise WeatherServiceError(TOOL_ERROR)
    return get_weather(city)


@dataclass
class ToolCallRecord:
    """One tool call as the driver received it and answered it."""

    tool_call_id: str
    tool_name: str
    args: Any
    result: Any = None
    has_result: bool = False
    error: str | None = None
    """The error text when the tool failed (the app reported it instead of a result)."""
    error_in_history: str = "output-error"
    """How a failed call looks when a later request resends it as history: `output-error`
    when the wire marks the error and the library records the mark (Anthropic `is_error:
    true`, AI SDK `error-text` output); `result` when the wire has no error flag at all (OpenAI
    chat completions: the app sends the error text as the tool message's content, so it is
    that call's result); `unasserted` when the wire marks it but the library's record of the
    history drops the mark (only name, id and arguments are asserted then)."""

    def expected(self, *, with_id: bool = True, in_history: bool = False) -> dict[str, Any]:
        """The expectation shape (`toolCalls` item); `in_history`: as a later request resent it."""
        out: dict[str, Any] = {"toolName": self.tool_name, "args": self.args}
        if with_id and self.tool_call_id:
            out["toolCallId"] = self.tool_call_id
        if self.error is not None:
            if in_history and self.error_in_history == "unasserted":
                pass
            elif in_history and self.error_in_history == "result":
                out["result"] = self.error
                out["state"] = "result"
            else:
                out["state"] = "output-error"
                out["errorText"] = self.error
        elif self.has_result:
            out["result"] = self.result
            out["state"] = "result"
        else:
            out["state"] = "call"
        return out


@dataclass
class Turn:
    """What one agent turn sent and received.

    Attributes:
        user_text: The new user message of this turn.
        history: The non-system messages sent before it, in expectation shape.
        intermediate_text: Assistant text received together with the tool calls.
        tool_calls: Tool calls received (with the results the app sent back).
        final_text: The text of the last model answer.
        steps: The model replies that asked for tools, in order, as (text, calls), when a turn
            has several (`add_tool_step`); empty for the one-step turns of the older scenarios.
    """

    user_text: str
    history: list[dict[str, Any]] = field(default_factory=list)
    intermediate_text: str | None = None
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    final_text: str = ""
    steps: list[tuple[str | None, list[ToolCallRecord]]] = field(default_factory=list)

    def add_tool_step(self, text: str | None, calls: list[ToolCallRecord]) -> None:
        """Record one model reply that asked for tools (its text and calls, in wire order)."""
        self.steps.append((text, list(calls)))
        self.intermediate_text = text
        self.tool_calls.extend(calls)

    def remembered_after(self) -> list[dict[str, Any]]:
        """This turn as history for the next one (expectation shape, wire order)."""
        out: list[dict[str, Any]] = [{"role": "user", "text": self.user_text}]
        if self.steps:
            for text, calls in self.steps:
                out.append(
                    {
                        "role": "assistant",
                        "text": text or "",
                        "toolCalls": [c.expected(in_history=True) for c in calls],
                    }
                )
        elif self.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "text": self.intermediate_text or "",
                    "toolCalls": [c.expected(in_history=True) for c in self.tool_calls],
                }
            )
        out.append({"role": "assistant", "text": self.final_text})
        return out


def agent_run_expectation(
    turn: Turn,
    *,
    convention: str,
    entity_name: str | None,
    system_messages: list[str] | None = None,
    tagged: dict[str, list[str]] | None = None,
    content_captured: bool = True,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The expected run of one agent invocation from what the driver recorded."""
    run: dict[str, Any] = {
        "convention": convention,
        "entityName": entity_name,
        "systemMessages": system_messages if system_messages is not None else [SYSTEM_PROMPT],
        "taggedSystemMessages": tagged if tagged is not None else {},
        "inputMessages": [{"role": "user", "text": turn.user_text}],
        "rememberedMessages": list(turn.history),
        "output": {
            "text": turn.final_text,
            "toolCalls": [c.expected() for c in turn.tool_calls],
        },
        "contentCaptured": content_captured,
    }
    if extra:
        run.update(extra)
    return run


def write_expected(
    directory: Path,
    scenario: str,
    *,
    library: str,
    library_version: str,
    convention: str,
    notes: str,
    runs: list[dict[str, Any]],
) -> Path:
    """Write ``<scenario>.expected.json`` (stable key order, UTF-8, trailing newline)."""
    doc = {
        "library": library,
        "libraryVersion": library_version,
        "scenario": scenario,
        "convention": convention,
        "notes": notes,
        "runs": runs,
    }
    path = directory / f"{scenario}.expected.json"
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path


def write_requests(directory: Path, scenario: str, bodies: list[Any]) -> Path:
    """Write ``<scenario>.requests.json``: the request bodies the fake provider received, in order
    (the wire the expectations are checked against)."""
    path = directory / f"{scenario}.requests.json"
    path.write_text(json.dumps(bodies, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path


def otel_providers(endpoint: str, service_name: str, *, logs: bool = False) -> tuple[Any, Any]:
    """A TracerProvider (and LoggerProvider when ``logs``) exporting OTLP/HTTP protobuf.

    Batch processors, as in production; callers must ``shutdown()`` both before
    reading the capture (that flushes).
    """
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": service_name, "deployment.environment": "capture"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces"))
    )
    logger_provider = None
    if logs:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        logger_provider = LoggerProvider(resource=resource)
        logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{endpoint}/v1/logs"))
        )
    return tracer_provider, logger_provider


def summarize_capture(path: Path) -> str:
    """One line: requests, spans and log records in a capture file."""
    spans = logs = lines = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        lines += 1
        doc = json.loads(line)
        for rs in doc.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                spans += len(ss.get("spans", []))
        for rl in doc.get("resourceLogs", []):
            for sl in rl.get("scopeLogs", []):
                logs += len(sl.get("logRecords", []))
    return f"{path.name}: {lines} requests, {spans} spans, {logs} log records, {path.stat().st_size} bytes"


def run_scenarios(driver: str, scenarios: Iterable[str], run_scenario: Callable[[str], Any]) -> int:
    """A driver's entry point: with a scenario named on the command line, run it here; without,
    run every scenario in its own fresh interpreter (`python <driver> <scenario>`), so no
    instrumentation, global provider or env-read-at-import setting leaks between scenarios.

    Returns:
        The process exit status (a failing scenario raises instead).
    """
    if len(sys.argv) > 1:
        run_scenario(sys.argv[1])
        return 0
    for name in scenarios:
        subprocess.run([sys.executable, driver, name], check=True)
    return 0
