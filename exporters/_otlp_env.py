"""The OTLP exporter's environment (the SDK's `OTEL_EXPORTER_OTLP_*` variables), readable
without importing the OpenTelemetry SDK: the sidecar imports `exporters.otlp` (and the SDK, ~6
MiB) only when a signal is to be sent."""

from __future__ import annotations

import os
from typing import Literal

__all__ = ["SIGNALS", "OtlpSignal", "env", "otlp_enabled", "signal_enabled"]

OtlpSignal = Literal["traces", "logs"]
"""What an `OtlpSink` sends: `traces` (evaluation and judge spans) or `logs` (log records)."""

SIGNALS: tuple[OtlpSignal, ...] = ("traces", "logs")


def env(*names: str) -> str | None:
    """The first of the environment variables `names` that is set and not empty."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def signal_enabled(signal: OtlpSignal, endpoint: str | None) -> bool:
    """Whether to send `signal`: an endpoint is given or the environment names one for it, and
    `OTEL_{SIGNAL}_EXPORTER` is not `none`."""
    upper = signal.upper()
    if (os.environ.get(f"OTEL_{upper}_EXPORTER") or "").strip().lower() == "none":
        return False
    return bool(endpoint or env("OTEL_EXPORTER_OTLP_ENDPOINT",
                                f"OTEL_EXPORTER_OTLP_{upper}_ENDPOINT"))


def otlp_enabled(endpoint: str | None) -> bool:
    """Whether any signal would be sent to `endpoint` (or to what the environment names)."""
    return any(signal_enabled(s, endpoint) for s in SIGNALS)
