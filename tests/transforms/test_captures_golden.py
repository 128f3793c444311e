"""Golden tests: spans real instrumentation libraries produced (tests/testdata/captures/,
written by the capture scripts without importing scorecar) -> the whole runs the drivers expect,
compared field by field with what `scorecar inspect` prints (rule: tests/transforms/_golden.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collector.cli import main
from tests.transforms._golden import (
    NOT_COMPARED,
    compare_whole_run,
    expected_runs,
    library_golden,
    load_supplement,
)
from tests.transforms._runs import decode_file, runs_of

CAPTURES = Path(__file__).resolve().parents[1] / "testdata" / "captures"
# Every library scorecar reads (transforms parts 1 and 2); each must have captures, and every
# capture an expectation.
REQUIRED_LIBRARIES = {"genai-openai-v2", "genai-openai-v2-events", "openinference-anthropic",
                      "openllmetry", "mastra", "vercel-ai-v6", "vercel-ai-v7", "anthropic-sdk",
                      "openlit", "openai-agents", "pydantic-ai", "langfuse",
                      # transforms part 3: agent frameworks
                      "langgraph-openinference", "langgraph-openllmetry", "strands", "google-adk",
                      "smolagents", "agno"}
EXPECTED = sorted(CAPTURES.glob("*/*.expected.json"))


SUPPLEMENT = load_supplement()


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


# Expectations the committed capture cannot support (reported to the lead, not edited here):
# the span data itself lacks what the expectation asks for.
KNOWN_CAPTURE_GAPS: dict[str, str] = {}


def _case_id(p: Path) -> str:
    return f"{p.parent.name}/{p.name.removesuffix('.expected.json')}"


CASES = [pytest.param(p, id=_case_id(p), marks=[pytest.mark.xfail(
    reason=KNOWN_CAPTURE_GAPS[_case_id(p)], strict=True)] if _case_id(p) in KNOWN_CAPTURE_GAPS
    else []) for p in EXPECTED]


@pytest.mark.parametrize("expected_path", CASES)
def test_capture_rebuilds_expected_runs(expected_path: Path) -> None:
    # The whole run, every field in order, as `scorecar inspect` prints it (see _golden.py for
    # the rule, the fields no library can know and the supplement of what drivers recorded).
    capture_id = _case_id(expected_path)
    expected = _load(expected_path)
    capture = expected_path.with_name(expected_path.name.replace(".expected.json",
                                                                 ".otlp.jsonl"))
    decoded = decode_file(capture)
    # openlit's streamed calls emit log records without trace/span ids: the decoder refuses
    # them (counted); nothing else in a real capture may be refused.
    assert set(decoded.refused) <= {"log_without_trace"}, decoded.errors
    if decoded.refused:
        assert expected_path.parent.name == "openlit", decoded.refused
    result = CliRunner().invoke(main, ["inspect", str(capture)])
    assert result.exit_code == 0, result.output
    runs = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    want = expected_runs(capture_id, expected, SUPPLEMENT)
    assert len(runs) == len(want), (
        f"{len(runs)} runs ({[r['target']['entityName'] for r in runs]}), expected "
        f"{len(want)}; {result.stderr}")
    problems = []
    for i, (exp, run) in enumerate(zip(want, runs)):
        problems += [f"run {i}: {p}" for p in compare_whole_run(capture_id, exp, run)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("expected_path", CASES)
def test_capture_counts_the_expected_reasons(expected_path: Path) -> None:
    # What the transforms refuse or note about a real capture, per reason code (every code is a
    # `transforms.reasons.Reason`): none, unless its folder's golden.json states the count and
    # why (content hidden, one call recorded twice, ...). A new rule that starts refusing or
    # double-counting real spans fails here even when the runs still come out right.
    library, scenario = _case_id(expected_path).split("/", 1)
    want = {k: v for k, v in library_golden(library).get("reasons", {}).get(scenario, {}).items()
            if not k.startswith("//")}
    capture = expected_path.with_name(f"{scenario}.otlp.jsonl")
    _runs, reasons = runs_of(decode_file(capture))
    assert {str(k): n for k, n in reasons.items()} == want


def test_reason_expectations_name_existing_captures() -> None:
    stale = [f"{lib}/{scenario}" for lib in {p.parent.name for p in EXPECTED}
             for scenario in library_golden(lib).get("reasons", {})
             if not (CAPTURES / lib / f"{scenario}.expected.json").is_file()]
    assert not stale, stale


def test_supplement_and_exemptions_name_existing_captures() -> None:
    # A stale entry would silently stop applying to anything.
    ids = {_case_id(p) for p in EXPECTED}
    stale = (set(SUPPLEMENT["captures"]) | set(NOT_COMPARED)) - ids
    assert not stale, stale
    libraries = {p.parent.name for p in EXPECTED}
    assert set(SUPPLEMENT["libraries"]) <= libraries


def test_every_required_library_has_captures() -> None:
    present = {p.parent.name for p in EXPECTED}
    missing = REQUIRED_LIBRARIES - present
    assert not missing, f"no captures for {sorted(missing)}"
    # A new capture directory is a library someone meant to support: it must be listed.
    unlisted = {p.name for p in CAPTURES.iterdir()
                if p.is_dir() and any(p.glob("*.otlp.jsonl"))} - REQUIRED_LIBRARIES
    assert not unlisted, f"capture directories not in REQUIRED_LIBRARIES: {sorted(unlisted)}"
    # Every capture has its expectation (a capture without one would test nothing).
    lonely = [p.name for lib in REQUIRED_LIBRARIES for p in (CAPTURES / lib).glob("*.otlp.jsonl")
              if not p.with_name(p.name.replace(".otlp.jsonl", ".expected.json")).exists()]
    assert not lonely, f"captures without expectations: {lonely}"


ALL_CAPTURES = sorted(CAPTURES.glob("*/*.otlp.jsonl"))


@pytest.mark.parametrize("capture", ALL_CAPTURES,
                         ids=[f"{p.parent.name}/{p.name.removesuffix('.otlp.jsonl')}"
                              for p in ALL_CAPTURES])
def test_each_call_and_tool_counts_once(capture: Path) -> None:
    # Libraries repeat a call (openlit's log records, OpenInference around the Anthropic SDK's
    # own span, Langfuse's OpenAI integration inside an app's generation): the output still
    # holds each text and each tool call once.
    runs, _ = runs_of(decode_file(capture))
    for run in runs:
        for msg in run.output:
            texts = [p.text for p in msg.content.parts if p.type == "text"]
            ids = [t.tool_call_id for t in msg.tool_invocations]
            assert len(texts) == len(set(texts)), texts
            assert len(ids) == len(set(ids)), ids
