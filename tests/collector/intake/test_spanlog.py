"""The write-ahead span log on a real file system: round trip, torn and corrupt tails,
rotation, segment deletion by holds, and disk errors turned into retryable refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collector.intake import Overloaded
from collector.intake._spanlog import HEADER, MemorySpanLog, SpanLog

ROOT = Path(__file__).resolve().parents[3]


def _replay(log: SpanLog) -> list[tuple[int, str, bytes]]:
    return [(seg, kind, body) for seg, kind, body in log.replay()]


def test_round_trip_after_restart(tmp_path: Path) -> None:
    log = SpanLog(tmp_path)
    bodies = [b"first", b"\x00\x01binary\xff", b"x" * 10_000]
    segs = [log.append("traces_protobuf", bodies[0], ["t1"]),
            log.append("logs_json", bodies[1], ["t1", "t2"]),
            log.append("traces_json", bodies[2], [])]
    assert segs == [1, 1, 1]
    log.close()
    del log  # "crash": nothing but the files is left

    again = SpanLog(tmp_path)
    assert _replay(again) == [(1, "traces_protobuf", bodies[0]), (1, "logs_json", bodies[1]),
                              (1, "traces_json", bodies[2])]
    assert again.replay_stats["records"] == 3
    assert again.replay_stats["torn"] == again.replay_stats["corrupt"] == 0
    # New appends never go behind old records: a fresh segment.
    assert again.append("traces_protobuf", b"new", ["t3"]) == 2


def test_torn_tail_and_garbage_are_counted_and_skipped(tmp_path: Path) -> None:
    log = SpanLog(tmp_path, segment_bytes=HEADER.size + 100)
    for i in range(3):
        log.append("traces_protobuf", bytes([i]) * 60, [f"t{i}"])
    log.close()
    segs = sorted((tmp_path / "spanlog").glob("*.log"))
    assert len(segs) == 3
    # Segment 1: cut mid-record (kill -9 mid-write). Segment 2: garbage after a good record.
    with segs[0].open("r+b") as f:
        f.truncate(HEADER.size + 30)
    with segs[1].open("ab") as f:
        f.write(b"\x00\x00garbage that is not a record" * 3)

    again = SpanLog(tmp_path)
    records = []
    for seg, _kind, body in again.replay():
        records.append((seg, body[:1]))
        again.track(seg, [f"t{body[0]}"])
    assert records == [(2, b"\x01"), (3, b"\x02")]
    assert again.replay_stats["torn"] == 1
    assert again.replay_stats["corrupt"] == 1
    # A damaged file whose good records are still held stays as it is.
    assert segs[1].read_bytes().endswith(b"not a record")
    assert again.segments == [2, 3]


def test_flipped_byte_is_corrupt_not_a_crash(tmp_path: Path) -> None:
    log = SpanLog(tmp_path)
    log.append("traces_protobuf", b"a" * 50, ["t"])
    log.append("traces_protobuf", b"b" * 50, ["t"])
    log.close()
    path = tmp_path / "spanlog" / "000001.log"
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF  # inside the second body: the checksum catches it
    path.write_bytes(bytes(data))
    (tmp_path / "spanlog" / "000002.log").write_bytes(os.urandom(3000))

    again = SpanLog(tmp_path)
    assert [body for _, _, body in _replay(again)] == [b"a" * 50]
    assert again.replay_stats["corrupt"] == 2


def test_rotation_at_segment_bytes(tmp_path: Path) -> None:
    log = SpanLog(tmp_path, segment_bytes=3 * (HEADER.size + 40))
    segs = [log.append("traces_protobuf", b"z" * 40, ["t"]) for _ in range(7)]
    assert segs == [1, 1, 1, 2, 2, 2, 3]
    big = log.append("traces_protobuf", b"B" * 1000, ["t"])  # larger than a segment: alone
    assert big == 4
    assert log.append("traces_protobuf", b"z", ["t"]) == 5
    sizes = {p.name: p.stat().st_size for p in (tmp_path / "spanlog").glob("*.log")}
    assert sizes["000001.log"] == 3 * (HEADER.size + 40)
    assert sizes["000004.log"] == HEADER.size + 1000


def test_segment_deleted_once_every_trace_released_not_before(tmp_path: Path) -> None:
    log = SpanLog(tmp_path, segment_bytes=HEADER.size + 10)
    assert log.append("traces_protobuf", b"1" * 10, ["a", "b"]) == 1
    assert log.append("traces_protobuf", b"2" * 10, ["b"]) == 2
    assert log.append("traces_protobuf", b"3" * 10, ["c"]) == 3  # the active segment
    log.release("a")
    assert log.segments == [1, 2, 3]  # b still holds segment 1
    log.release("b", {1: 1})
    assert log.segments == [2, 3]
    log.release("b", {2: 1})
    assert log.segments == [3]
    log.release("c")
    assert log.segments == [3]  # still being written to
    assert log.append("traces_protobuf", b"4" * 10, ["d"]) == 4  # rotation collects it
    assert log.segments == [4]


def test_holds_are_counted_per_record(tmp_path: Path) -> None:
    log = SpanLog(tmp_path, segment_bytes=1)  # one record per segment
    log.append("traces_protobuf", b"x", ["a"])
    log.append("traces_protobuf", b"y", ["a"])
    log.append("traces_protobuf", b"z", ["other"])
    log.release("a", {1: 1})
    assert log.segments == [2, 3] and log.held("a")
    log.release("a")  # every remaining hold
    assert log.segments == [3] and not log.held("a")


def test_replayed_segments_deleted_once_their_traces_are_released(tmp_path: Path) -> None:
    log = SpanLog(tmp_path, segment_bytes=1)
    log.append("traces_protobuf", b"x", ["a"])
    log.append("traces_protobuf", b"y", ["b"])
    log.close()

    again = SpanLog(tmp_path)
    for seg, _, body in again.replay():
        again.track(seg, ["a" if body == b"x" else "b"])
    assert again.segments == [1, 2]
    again.release("a")
    assert again.segments == [2]
    again.release("b")
    assert again.segments == []


def test_replay_deletes_segments_that_hold_nothing(tmp_path: Path) -> None:
    (tmp_path / "spanlog").mkdir()
    (tmp_path / "spanlog" / "000007.log").write_bytes(b"not a span log at all")
    log = SpanLog(tmp_path)
    assert _replay(log) == []
    assert log.replay_stats["corrupt"] == 1
    assert log.segments == []
    assert log.append("traces_protobuf", b"x", ["t"]) == 8


def test_disk_full_refuses_retryably_and_recovers(tmp_path: Path) -> None:
    log = SpanLog(tmp_path)
    # The next segment is /dev/full: every write fails with ENOSPC, as on a full volume.
    os.symlink("/dev/full", tmp_path / "spanlog" / "000001.log")
    with pytest.raises(Overloaded) as info:
        log.append("traces_protobuf", b"refused", ["t"])
    assert info.value.reason == "storage"
    assert info.value.retry_after > 0
    assert log.storage_error is not None and "space" in log.storage_error.lower()
    assert log.append("traces_protobuf", b"accepted", ["t"]) == 2
    assert log.storage_error is None
    log.close()
    assert [body for _, _, body in SpanLog(tmp_path).replay()] == [b"accepted"]


def test_unwritable_directory_refuses(tmp_path: Path) -> None:
    log = SpanLog(tmp_path)
    (tmp_path / "spanlog").rmdir()
    (tmp_path / "spanlog").write_text("a file where the directory was")
    with pytest.raises(Overloaded) as info:
        log.append("traces_protobuf", b"x", ["t"])
    assert info.value.reason == "storage"


_FSIZE_SCRIPT = """
import json, resource, signal, sys
from pathlib import Path
from collector.intake import Overloaded
from collector.intake import SpanLog
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
log = SpanLog(Path(sys.argv[1]))
limit = 10_000
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
acked, refused = [], 0
for i in range(40):
    body = bytes([i]) * 700
    try:
        log.append("traces_protobuf", body, ["t"])
        acked.append(i)
    except Overloaded as exc:
        assert exc.reason == "storage", exc.reason
        refused += 1
print(json.dumps({"acked": acked, "refused": refused}))
"""


def test_file_size_limit_partial_write_is_cut_and_refused(tmp_path: Path) -> None:
    # A real EFBIG from the kernel, mid-record: the half-written record is cut off again, so
    # replay returns exactly what was acknowledged.
    proc = subprocess.run([sys.executable, "-c", _FSIZE_SCRIPT, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    result = json.loads(proc.stdout)
    assert result["refused"] > 0
    assert len(result["acked"]) == 10_000 // (HEADER.size + 700)
    log = SpanLog(tmp_path)
    bodies = [body for _, _, body in log.replay()]
    assert bodies == [bytes([i]) * 700 for i in result["acked"]]
    assert log.replay_stats["torn"] == log.replay_stats["corrupt"] == 0


def test_memory_span_log_keeps_nothing() -> None:
    log = MemorySpanLog()
    assert log.append("traces_protobuf", b"x", ["t"]) == 0
    log.track(0, ["t"])
    log.release("t")
    assert list(log.replay()) == []
    log.close()
