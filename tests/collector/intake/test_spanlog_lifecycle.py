"""The span log's lifecycle: closing is safe without use and twice, and what was appended before
a close is replayed by the next log on the same directory."""

from __future__ import annotations

from pathlib import Path

from collector.intake import MemorySpanLog, SpanLog, open_spanlog


def test_close_without_use_and_twice(tmp_path: Path) -> None:
    log = open_spanlog(tmp_path)
    assert isinstance(log, SpanLog)
    log.close()
    log.close()
    mem = open_spanlog(None)
    assert isinstance(mem, MemorySpanLog)
    mem.close()
    mem.close()


def test_what_was_appended_before_close_is_replayed(tmp_path: Path) -> None:
    log = open_spanlog(tmp_path)
    log.append("traces_protobuf", b"\x0a\x00", ["1" * 32])
    log.close()
    again = open_spanlog(tmp_path)
    assert [(kind, body) for _, kind, body in again.replay()] == [("traces_protobuf", b"\x0a\x00")]
    again.close()
