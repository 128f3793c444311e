"""JsonlSink: one ScoreRecord per line in a real file, readable back as ScoreRecords."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exporters import JsonlSink, ScoreSink
from scorers import ScoreRecord
from scorers.errors import ExportError
from tests.exporters._records import make_records


async def test_records_round_trip_one_per_line(tmp_path: Path) -> None:
    records = await make_records()
    path = tmp_path / "nested" / "dir" / "scores.jsonl"
    sink = JsonlSink(path)
    assert isinstance(sink, ScoreSink) and sink.name == "jsonl"
    await sink.export([records.code, records.judge])
    await sink.export([records.failed, records.offline])
    await sink.shutdown()

    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    back = [ScoreRecord.model_validate_json(line) for line in lines]
    assert back == [records.code, records.judge, records.failed, records.offline]
    first = json.loads(lines[0])
    assert first["scorerId"] == "completeness" and first["traceId"] == records.code.trace_id
    assert "reason" in first and first["reason"] is None  # nulls are kept
    assert json.loads(lines[2])["error"]["name"] == "JudgeParseError"


async def test_an_existing_file_is_appended_to(tmp_path: Path) -> None:
    records = await make_records()
    path = tmp_path / "scores.jsonl"
    path.write_text('{"earlier": true}\n', encoding="utf-8")
    await JsonlSink(path).export([records.code])
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == '{"earlier": true}' and len(lines) == 2


async def test_an_unwritable_path_is_a_retryable_export_error(tmp_path: Path) -> None:
    records = await make_records()
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    sink = JsonlSink(blocker / "scores.jsonl")  # a directory that cannot exist
    with pytest.raises(ExportError) as info:
        await sink.export([records.code])
    assert info.value.retryable
    assert str(blocker) in str(info.value)
