"""OTLP files -> `Decoded`: OTLP JSON lines as the Collector's file exporter writes them, or one
JSON document, possibly pretty-printed (what `scorecar inspect`, `demo` and the tests read)."""

from __future__ import annotations

from pathlib import Path

from collector.otlp._decoded import Decoded
from collector.otlp._json import decode_json_bytes
from scorers.errors import ScorecarError

__all__ = ["UnreadableInputError", "read_otlp_file"]


class UnreadableInputError(ScorecarError):
    """A file could not be read at all (missing, a directory, permission denied, not OTLP JSON)."""


def read_otlp_file(path: Path) -> Decoded:
    """Decode one file: JSON lines, or a single (possibly multi-line) JSON document.

    Raises:
        UnreadableInputError: the file cannot be opened or read.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadableInputError(f"{path}: {exc.strerror or exc}") from exc
    out = Decoded()
    stripped = data.strip()
    if not stripped:
        return out
    # One document spread over many lines (pretty-printed) parses whole; else JSON lines.
    whole = decode_json_bytes(stripped) if b"\n" in stripped else None
    if whole is not None and not whole.refused.get("malformed_json"):
        return whole
    if whole is not None and whole.errors and \
            not whole.errors[0].startswith("malformed_json: not JSON"):
        # Valid JSON with fields of the wrong type: say so, rather than retry it line by line.
        raise UnreadableInputError(f"{path}: not an OTLP request ({whole.errors[0]})")
    usable = 0
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        part = decode_json_bytes(line)
        if not (part.refused.get("malformed_json") or part.refused.get("not_otlp")
                or part.refused.get("too_deep")) or part.spans or part.logs:
            usable += 1
        part.errors = [f"{path}:{n}: {e}" for e in part.errors]
        out.extend(part)
    if usable == 0:
        first = out.errors[0] if out.errors else "no OTLP request found"
        raise UnreadableInputError(f"{path}: not OTLP JSON ({first})")
    return out
