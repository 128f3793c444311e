"""JSON-lines score sink (DESIGN §7): one `ScoreRecord` per line, the debugging view and what
offline scoring writes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

from scorers.errors import ExportError
from scorers.types import ScoreRecord

__all__ = ["JsonlSink"]


class JsonlSink:
    """Appends every record as one JSON line (camelCase keys, nulls kept) to `path`.

    Each batch is written and flushed before `export` returns; parent directories are created
    on the first write. Lines validate back with `ScoreRecord.model_validate_json`.

    Args:
        path: the file to append to.
    """

    name = "jsonl"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"JsonlSink({str(self.path)!r})"

    async def export(self, records: Sequence[ScoreRecord]) -> None:
        """Append `records`, one line each.

        Raises:
            ExportError: retryable; the file could not be written (disk full, permissions…).
        """
        if not records:
            return
        text = "".join(r.model_dump_json(by_alias=True) + "\n" for r in records)
        await asyncio.to_thread(self._append, text)

    def _append(self, text: str) -> None:
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(text)
                    fh.flush()
            except OSError as exc:
                raise ExportError(f"cannot write score records to {self.path}: "
                                  f"{exc.strerror or exc}", retryable=True) from exc

    async def shutdown(self) -> None:
        """Nothing is held open between batches."""
