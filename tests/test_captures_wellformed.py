"""The committed golden captures are valid OTLP JSON and their expectations match them.

This does not use scorecar's decoder or transforms (those are tested against these files
elsewhere); it checks the files themselves with the OTLP protobuf schema, so a hand edit or a
broken capture script cannot slip in: ids are lowercase hex (not protobuf-JSON base64), every
line parses strictly as an export request, and every text and tool call id an expectation
asserts was really recorded in its capture.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

CAPTURES = Path(__file__).parent / "testdata" / "captures"
CAPTURE_FILES = sorted(CAPTURES.glob("*/*.otlp.jsonl"))
EXPECTED_FILES = sorted(CAPTURES.glob("*/*.expected.json"))
ID_LENGTHS = {"traceId": 32, "spanId": 16, "parentSpanId": 16}
ROLES = {"user", "assistant", "system"}


def _walk_ids(node: Any, found: list[tuple[str, str]]) -> None:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in ID_LENGTHS and isinstance(value, str):
                    found.append((key, value))
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def _to_protobuf_json(node: Any) -> Any:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in ID_LENGTHS and isinstance(value, str):
                    item[key] = base64.b64encode(bytes.fromhex(value)).decode()
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return node


def _strings(node: Any) -> list[str]:
    out: list[str] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            out.append(item)
    return out


def test_there_are_captures_for_every_library_of_issue_4() -> None:
    libraries = {p.parent.name for p in CAPTURE_FILES}
    assert {"genai-openai-v2", "genai-openai-v2-events", "openinference-anthropic", "openllmetry", "mastra"} <= libraries


@pytest.mark.parametrize("path", CAPTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_capture_lines_are_strict_otlp_json_with_hex_ids(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines, "empty capture"
    spans = 0
    for number, line in enumerate(lines, 1):
        doc = json.loads(line)
        ids: list[tuple[str, str]] = []
        _walk_ids(doc, ids)
        for key, value in ids:
            assert re.fullmatch(rf"[0-9a-f]{{{ID_LENGTHS[key]}}}", value), f"line {number}: {key}={value!r}"
        if "resourceSpans" in doc:
            message: Any = ExportTraceServiceRequest()
            spans += sum(len(ss.get("spans", [])) for rs in doc["resourceSpans"] for ss in rs.get("scopeSpans", []))
        else:
            assert "resourceLogs" in doc, f"line {number} is neither traces nor logs"
            message = ExportLogsServiceRequest()
        ParseDict(_to_protobuf_json(doc), message)  # strict: unknown fields or bad enums fail
    assert spans > 0, "a capture without a single span"


@pytest.mark.parametrize("path", EXPECTED_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_expectations_are_well_formed_and_grounded_in_their_capture(path: Path) -> None:
    expected = json.loads(path.read_text(encoding="utf-8"))
    scenario = path.name.removesuffix(".expected.json")
    capture = path.with_name(f"{scenario}.otlp.jsonl")
    assert capture.exists(), "expectation without capture"
    assert expected["scenario"] == scenario
    assert expected["library"] and expected["libraryVersion"] and expected["convention"]
    assert isinstance(expected["runs"], list) and expected["runs"], "no runs"
    recorded = "\n".join(_strings([json.loads(line) for line in capture.read_text(encoding="utf-8").splitlines()]))
    for run in expected["runs"]:
        assert run["convention"]
        messages = run.get("inputMessages", []) + run.get("rememberedMessages", [])
        for message in messages:
            assert message["role"] in ROLES
        tool_calls = list(run.get("output", {}).get("toolCalls", []))
        tool_calls += [c for m in messages for c in m.get("toolCalls", [])]
        for call in tool_calls:
            assert call["toolName"]
            if call.get("toolCallId"):
                assert call["toolCallId"] in recorded, f"tool call id {call['toolCallId']} not in the capture"
        if run.get("contentCaptured") is False:
            continue
        texts = [m["text"] for m in messages if m.get("text")]
        texts += run.get("systemMessages") or []
        if run.get("output", {}).get("text"):
            texts.append(run["output"]["text"])
        for text in texts:
            # Strings inside JSON-encoded attributes are escaped; accept either spelling.
            encoded = json.dumps(text)[1:-1]
            assert text in recorded or encoded in recorded, f"{text[:60]!r} is not in the capture"
