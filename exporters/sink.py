"""The one seam every score sink implements (DESIGN §7): `export()` a batch of `ScoreRecord`s
and say, by returning or raising, whether the backend confirmed them.

The collector's workers call every enabled sink and acknowledge a job only when all of them
returned; a sink never hides a failure behind a fire-and-forget batch processor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from scorers.types import ScoreRecord

__all__ = ["ScoreSink"]


@runtime_checkable
class ScoreSink(Protocol):
    """A destination for score records.

    Attributes:
        name: the `exporter` label of `scorecar_export_total` (`otlp`, `prometheus`, `jsonl`).
    """

    name: str

    async def export(self, records: Sequence[ScoreRecord]) -> None:
        """Deliver `records`; return only once the backend confirmed them.

        Raises:
            ExportError: the backend refused or could not be reached; `retryable` says whether
                the same records may be sent again later.
        """
        ...

    async def shutdown(self) -> None:
        """Flush and release resources; safe to call twice, and without any export."""
        ...
