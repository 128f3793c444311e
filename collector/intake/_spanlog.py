"""The write-ahead span log (DESIGN §5): what a receiver acknowledged survives `kill -9`.

Every accepted request body is appended to a segment file under `<storage.path>/spanlog/`
(`000001.log`, `000002.log`, …) with a plain `write` before the receiver answers OK — no fsync
per request: once the bytes are in the kernel a killed process loses nothing (a power cut may
lose the last moments). Segments rotate at `segment_bytes`.

Each record is `magic "SC" | version | kind | body length (u32 LE) | crc32 (u32 LE) | body`;
the crc covers the kind, the length and the body. Replay reads the segments in order and stops
reading a segment at the first torn (cut short) or corrupt record, counting it; the file is
left as it is and the other segments are still read.

Holds: `append(kind, body, trace_ids)` puts one hold per trace id on the segment it wrote to.
Whoever buffers those spans releases the hold once they are scheduled (their jobs are in the
queue) or evicted: `release(trace_id, segments)`. A segment that is no longer written to and
holds nothing is deleted. After a restart the caller re-decodes each replayed body and calls
`track(segment, trace_ids)`, so holds on old segments continue.

`MemorySpanLog` keeps nothing (`storage.kind: memory`).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import struct
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Protocol, get_args

from collector.intake._ports import BodyKind, Overloaded

__all__ = ["MemorySpanLog", "ReplayStats", "SpanLog", "WriteAheadLog", "open_spanlog"]

log = logging.getLogger(__name__)

MAGIC = b"SC"
VERSION = 1
HEADER = struct.Struct("<2sBBII")  # magic, version, kind, body length, crc32
DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
_KIND_CODES: dict[str, int] = {k: i for i, k in enumerate(get_args(BodyKind), 1)}
_CODE_KINDS: dict[int, BodyKind] = {i: k for k, i in _KIND_CODES.items()}  # type: ignore[misc]
_SEGMENT_NAME = re.compile(r"^(\d{6,})\.log$")


class ReplayStats(Counter[str]):
    """What a replay read: `records`, `bytes`, `segments`, and the bad records: `torn` (cut
    short at the end of a segment) and `corrupt` (bad magic, version, kind or checksum)."""


class WriteAheadLog(Protocol):
    """What `collector.intake._ingest.Ingest` needs from a span log (`SpanLog` or `MemorySpanLog`)."""

    def append(self, kind: BodyKind, body: bytes, trace_ids: Iterable[str]) -> int:
        """Write one request body; return the segment it went to (a hold per trace id)."""
        ...

    def track(self, segment: int, trace_ids: Iterable[str]) -> None:
        """Put a hold per trace id on `segment` (for bodies read back by `replay`)."""
        ...

    def release(self, trace_id: str, segments: Mapping[int, int] | None = None) -> None:
        """Drop holds of `trace_id` (those counted in `segments`, or all when None)."""
        ...

    def replay(self) -> Iterator[tuple[int, BodyKind, bytes]]:
        """Every record of the existing segments, oldest first."""
        ...

    @property
    def replay_stats(self) -> ReplayStats:
        """Counts of the last replay."""
        ...

    def close(self) -> None:
        """Close the active segment (idempotent)."""
        ...


class SpanLog:
    """Append-only segment files holding accepted request bodies until their traces are
    scheduled.

    Not thread-safe: call it from one thread (the event loop).

    Args:
        path: `storage.path`; segments live in `path / "spanlog"` (created if missing).
        segment_bytes: a segment is closed once it holds this many bytes (a larger record
            gets a segment of its own).
        retry_after: the `Retry-After` given to clients when the disk refuses a write.

    Raises:
        OSError: the directory cannot be created or listed (a startup error).
    """

    def __init__(self, path: Path, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 retry_after: float = 5.0) -> None:
        if segment_bytes <= 0:
            raise ValueError("segment_bytes must be positive")
        self.dir = Path(path) / "spanlog"
        self.dir.mkdir(parents=True, exist_ok=True)
        self._segment_bytes = segment_bytes
        self._retry_after = retry_after
        self._holds: dict[int, Counter[str]] = {}
        self._trace_segments: dict[str, set[int]] = {}
        self._existing = sorted(self._scan())
        self._next = (self._existing[-1] + 1) if self._existing else 1
        self._active: int | None = None
        self._fd: int | None = None
        self._size = 0
        self._stats = ReplayStats()
        self._storage_error: str | None = None

    # ------------------------------------------------------------------ writing

    def append(self, kind: BodyKind, body: bytes, trace_ids: Iterable[str]) -> int:
        """Write one record with a plain `write` (no fsync) and return its segment number.

        Args:
            kind: how `body` is encoded (stored, so replay decodes it the same way).
            body: the un-gzipped request body.
            trace_ids: the trace ids the body holds; each gets a hold on the segment.

        Raises:
            Overloaded: `storage` — the disk refused the write (full, read-only, permission,
                file size limit); nothing of the record counts as written.
        """
        code = _KIND_CODES[kind]
        length = len(body)
        crc = zlib.crc32(body, zlib.crc32(struct.pack("<BI", code, length)))
        record = HEADER.pack(MAGIC, VERSION, code, length, crc) + body
        try:
            segment = self._writable(len(record))
            self._write_all(record)
        except OSError as exc:
            self._failed(exc)
            raise Overloaded("storage", self._retry_after) from exc
        self._size += len(record)
        if self._storage_error is not None:
            log.warning("span log writable again (%s)", self.dir)
            self._storage_error = None
        self.track(segment, trace_ids)
        return segment

    def _writable(self, size: int) -> int:
        if self._fd is not None and self._size > 0 and self._size + size > self._segment_bytes:
            self._rotate()
        if self._fd is None:
            self._open_next()
        assert self._active is not None
        return self._active

    def _open_next(self) -> None:
        number = self._next
        self._next += 1
        path = self._path(number)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                     0o600)
        self._fd, self._active = fd, number
        try:
            self._size = os.fstat(fd).st_size
        except OSError:
            self._size = 0
        self._holds.setdefault(number, Counter())

    def _write_all(self, record: bytes) -> None:
        assert self._fd is not None
        view = memoryview(record)
        done = 0
        while done < len(view):
            n = os.write(self._fd, view[done:])
            if n <= 0:  # pragma: no cover - regular files never return 0 for a non-empty write
                raise OSError(errno.EIO, "write returned 0")
            done += n
        # A half-written record is cut off again below (_failed), never acknowledged.

    def _failed(self, exc: OSError) -> None:
        """Undo a partial record: truncate back to the last whole one, else start a new
        segment next time (a torn record mid-file would hide every later record)."""
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                self._rotate()
        message = f"{exc.strerror or exc} ({self.dir})"
        if message != self._storage_error:
            log.error("span log write refused: %s; receivers answer retryably", message)
            self._storage_error = message

    def _rotate(self) -> None:
        old, fd = self._active, self._fd
        self._fd = self._active = None
        self._size = 0
        if fd is not None:
            try:
                os.close(fd)
            except OSError:  # pragma: no cover - close of a regular file
                pass
        if old is not None:
            self._collect(old)

    # ------------------------------------------------------------------ holds

    def track(self, segment: int, trace_ids: Iterable[str]) -> None:
        """Put one hold per (distinct) trace id on `segment`.

        Args:
            segment: a segment number from `append` or `replay`.
            trace_ids: the trace ids the record holds.
        """
        holds = self._holds.setdefault(segment, Counter())
        for tid in set(trace_ids):
            holds[tid] += 1
            segs = self._trace_segments.get(tid)
            if segs is None:
                self._trace_segments[tid] = {segment}
            else:
                segs.add(segment)

    def release(self, trace_id: str, segments: Mapping[int, int] | None = None) -> None:
        """Drop holds of `trace_id`: its jobs are in the queue, or it was evicted or dropped.

        Args:
            trace_id: the trace.
            segments: holds to drop per segment (as `ReadyTrace.segments` counts them); None
                drops every hold the trace has.
        """
        segs = self._trace_segments.get(trace_id)
        if not segs:
            return
        todo = {s: 1 << 62 for s in segs} if segments is None else segments
        for seg, count in todo.items():
            holds = self._holds.get(seg)
            if holds is None or trace_id not in holds:
                continue
            left = holds[trace_id] - count
            if left > 0:
                holds[trace_id] = left
                continue
            del holds[trace_id]
            segs.discard(seg)
            if not holds:
                self._collect(seg)
        if not segs:
            del self._trace_segments[trace_id]

    def _collect(self, segment: int) -> None:
        """Delete `segment` when it is no longer written to and holds nothing."""
        if segment == self._active or self._holds.get(segment):
            return
        self._holds.pop(segment, None)
        try:
            self._path(segment).unlink(missing_ok=True)
        except OSError as exc:
            log.warning("could not delete span log segment %s: %s", self._path(segment), exc)

    # ------------------------------------------------------------------ replay

    def replay(self) -> Iterator[tuple[int, BodyKind, bytes]]:
        """Read back every segment that existed when this log was opened, oldest first.

        Yields `(segment, kind, body)`. Before asking for the next record the caller decodes
        the body and calls `track(segment, trace_ids)`. A segment is read up to its first torn
        or corrupt record (counted in `replay_stats`, logged, the file left as it is). Once
        the iterator is exhausted, old segments that hold nothing are deleted.
        """
        self._stats = stats = ReplayStats()
        for number in self._existing:
            stats["segments"] += 1
            self._holds.setdefault(number, Counter())
            yield from self._read_segment(number, stats)
        for number in self._existing:
            self._collect(number)
        self._existing = []

    def _read_segment(self, number: int, stats: ReplayStats
                      ) -> Iterator[tuple[int, BodyKind, bytes]]:
        path = self._path(number)
        try:
            f = path.open("rb")
        except OSError as exc:
            log.error("span log segment %s unreadable: %s", path, exc)
            stats["unreadable"] += 1
            return
        with f:
            offset = 0
            while True:
                try:
                    head = f.read(HEADER.size)
                except OSError as exc:
                    log.error("span log segment %s unreadable at %d: %s", path, offset, exc)
                    stats["unreadable"] += 1
                    return
                if not head:
                    return
                bad = None
                if len(head) < HEADER.size:
                    bad = "torn"
                else:
                    magic, version, code, length, crc = HEADER.unpack(head)
                    if magic != MAGIC or version != VERSION or code not in _CODE_KINDS:
                        bad = "corrupt"
                    else:
                        body = f.read(length)
                        if len(body) < length:
                            bad = "torn"
                        elif zlib.crc32(body, zlib.crc32(head[3:8])) != crc:
                            bad = "corrupt"
                if bad is not None:
                    stats[bad] += 1
                    log.warning("span log segment %s: %s record at byte %d; the rest of the "
                                "segment is skipped", path, bad, offset)
                    return
                stats["records"] += 1
                stats["bytes"] += HEADER.size + length
                offset += HEADER.size + length
                yield number, _CODE_KINDS[code], body

    @property
    def replay_stats(self) -> ReplayStats:
        """Counts of the last `replay()`."""
        return self._stats

    # ------------------------------------------------------------------ misc

    @property
    def segments(self) -> list[int]:
        """Numbers of the segment files on disk, oldest first."""
        return sorted(self._scan())

    @property
    def storage_error(self) -> str | None:
        """The last write error, until a write succeeds again (for `/readyz`)."""
        return self._storage_error

    def held(self, trace_id: str) -> bool:
        """Whether `trace_id` still holds any segment."""
        return trace_id in self._trace_segments

    def close(self) -> None:
        """Close the active segment; the log may be appended to again later (idempotent)."""
        if self._fd is not None:
            self._rotate()

    def _path(self, number: int) -> Path:
        return self.dir / f"{number:06d}.log"

    def _scan(self) -> Iterator[int]:
        for entry in os.scandir(self.dir):
            m = _SEGMENT_NAME.match(entry.name)
            if m:
                yield int(m.group(1))


class MemorySpanLog:
    """A span log that keeps nothing (`storage.kind: memory`): appends go nowhere, replay
    yields nothing, every segment number is 0."""

    def __init__(self) -> None:
        self._stats = ReplayStats()

    def append(self, kind: BodyKind, body: bytes, trace_ids: Iterable[str]) -> int:
        """Keep nothing; return segment 0."""
        return 0

    def track(self, segment: int, trace_ids: Iterable[str]) -> None:
        """Nothing to track."""

    def release(self, trace_id: str, segments: Mapping[int, int] | None = None) -> None:
        """Nothing to release."""

    def replay(self) -> Iterator[tuple[int, BodyKind, bytes]]:
        """Nothing to replay."""
        return iter(())

    @property
    def replay_stats(self) -> ReplayStats:
        """Always empty."""
        return self._stats

    def close(self) -> None:
        """Nothing to close."""


def open_spanlog(path: Path | None, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES
                 ) -> SpanLog | MemorySpanLog:
    """`SpanLog(path)` for `storage.kind: sqlite`, `MemorySpanLog()` when `path` is None."""
    if path is None:
        return MemorySpanLog()
    return SpanLog(path, segment_bytes=segment_bytes)
