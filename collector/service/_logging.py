"""Process logging for `serve`, `demo` and `score`: text for people, JSON lines for machines
(`--log-format json`). Secrets never reach a log line: nothing here prints config values.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Literal

__all__ = ["JsonFormatter", "setup_logging"]

_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message",
                                                                                  "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, exception, and any `extra=`."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def setup_logging(level: str = "info", fmt: Literal["text", "json"] = "text") -> None:
    """Route every `scorecar.*` (and library) log line to stderr in the chosen format."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Chatty libraries stay at warning unless asked for debug.
    if level.lower() != "debug":
        for name in ("aiohttp.access", "grpc", "opentelemetry", "httpx", "anthropic"):
            logging.getLogger(name).setLevel(logging.WARNING)
