"""`scorecar inspect` through click's runner, on the committed captures."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from collector.cli import main

ROOT = Path(__file__).resolve().parents[3]
CAPTURES = ROOT / "tests" / "testdata" / "captures"
EXAMPLE = ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl"


def _invoke(*args: str) -> tuple[int, list[dict], str]:
    result = CliRunner().invoke(main, ["inspect", *args])
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.strip()]
    return result.exit_code, lines, result.stderr


def test_example_trace_prints_its_two_runs() -> None:
    code, runs, err = _invoke(str(EXAMPLE))
    assert code == 0
    assert [r["input"]["inputMessages"][0]["content"]["content"] for r in runs] == [
        "What is the weather in Paris?", "Should I take an umbrella?"]
    assert [r["output"][0]["content"]["content"] for r in runs] == [
        "It is 14°C and raining in Paris.", "Yes, take an umbrella: it is raining in Paris."]
    assert runs[0]["output"][0]["content"]["parts"][1]["toolInvocation"]["result"] == {
        "temp_c": 14, "conditions": "rain"}
    assert "2 run(s) from 2 trace(s)" in err


def test_every_field_present_and_sorted() -> None:
    libraries = ("genai-openai-v2", "genai-openai-v2-events", "mastra", "openinference-anthropic",
                 "openllmetry")
    pairs = [(p, p.with_name(p.name.replace(".expected.json", ".otlp.jsonl")))
             for lib in libraries for p in sorted((CAPTURES / lib).glob("*.expected.json"))]
    code, runs, err = _invoke(*[str(capture) for _, capture in pairs])
    assert code == 0
    expected_total = sum(len(json.loads(e.read_text())["runs"]) for e, _ in pairs)
    assert len(runs) == expected_total
    keys = [(r["target"]["startedAt"], r["target"]["traceId"], r["target"]["spanId"])
            for r in runs]
    assert keys == sorted(keys)
    for r in runs:  # nulls are printed, not omitted
        assert set(r) == {"runId", "input", "output", "groundTruth", "requestContext", "target"}
        assert set(r["target"]) >= {"traceId", "spanId", "entityType", "entityId", "entityName",
                                    "conversationId", "resourceId", "convention", "resource",
                                    "startedAt", "endedAt", "derived", "truncated",
                                    "contentCaptured"}
        assert "groundTruth" in r and r["groundTruth"] is None
    assert "reasons:" in err or "run(s)" in err


def test_traces_split_across_files_are_grouped(tmp_path: Path) -> None:
    lines = (CAPTURES / "mastra" / "three_turns_memory_tool.otlp.jsonl").read_text().splitlines()
    # One span per file, in reverse order: every trace is spread over many files.
    files = []
    for i, line in enumerate(reversed(lines)):
        doc = json.loads(line)
        for rs in doc.get("resourceSpans", []):
            for ss in rs["scopeSpans"]:
                for j, s in enumerate(ss["spans"]):
                    part = {"resourceSpans": [{**rs, "scopeSpans": [{**ss, "spans": [s]}]}]}
                    f = tmp_path / f"part-{i}-{j}.jsonl"
                    f.write_text(json.dumps(part) + "\n")
                    files.append(str(f))
    assert len(files) > 10
    code, split_runs, _ = _invoke(*files)
    code_whole, whole_runs, _ = _invoke(str(CAPTURES / "mastra" / "three_turns_memory_tool.otlp.jsonl"))
    assert code == code_whole == 0
    assert split_runs == whole_runs and len(whole_runs) == 3


def test_single_pretty_printed_document(tmp_path: Path) -> None:
    first = json.loads(EXAMPLE.read_text().splitlines()[0])
    f = tmp_path / "one.json"
    f.write_text(json.dumps(first, indent=2))
    compact = tmp_path / "one.jsonl"
    compact.write_text(json.dumps(first) + "\n")
    code, runs, err = _invoke(str(f))
    assert code == 0 and "span(s)" in err
    assert runs and runs == _invoke(str(compact))[1]


def test_no_runs_is_still_success(tmp_path: Path) -> None:
    f = tmp_path / "http.jsonl"
    f.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
        "name": "GET /health"}]}]}]}) + "\n")
    code, runs, err = _invoke(str(f))
    assert (code, runs) == (0, [])
    assert "0 run(s)" in err and "not_genai=1" in err


def test_bad_lines_are_counted_good_ones_used(tmp_path: Path) -> None:
    f = tmp_path / "mixed.jsonl"
    f.write_bytes(EXAMPLE.read_bytes() + b"{not json\n")
    code, runs, err = _invoke(str(f))
    assert code == 0 and len(runs) == 2
    assert "malformed_json=1" in err


def test_unreadable_input_fails_clearly(tmp_path: Path) -> None:
    code, _, err = _invoke(str(tmp_path / "missing.jsonl"))
    assert code == 2 and "missing.jsonl" in err
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x00\x01 not otlp at all")
    code, runs, err = _invoke(str(garbage))
    assert code == 2 and runs == []
    assert "not OTLP JSON" in err


def test_an_unreadable_file_is_a_scorecar_error(tmp_path: Path) -> None:
    import pytest

    from collector.otlp import UnreadableInputError, read_otlp_file
    from scorers.errors import ScorecarError

    with pytest.raises(UnreadableInputError) as info:
        read_otlp_file(tmp_path / "missing.jsonl")
    assert isinstance(info.value, ScorecarError) and not info.value.retryable
    assert "missing.jsonl" in str(info.value)


def test_a_pretty_printed_document_of_the_wrong_shape_says_which_field(tmp_path: Path) -> None:
    doc = tmp_path / "wrong.json"
    doc.write_text('{\n  "resourceSpans": 5\n}\n')
    code, runs, err = _invoke(str(doc))
    assert code == 2 and runs == []
    assert "resourceSpans: expected an array, got a number" in err
