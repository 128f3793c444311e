"""Wiring and lifecycle: the `Sidecar` (every component in one asyncio process), the admin
port (/metrics, /healthz, /readyz), logging."""

from collector.service._admin import (
    AdminServer,
    split_endpoint,
)
from collector.service._logging import (
    JsonFormatter,
    setup_logging,
)
from collector.service._sidecar import (
    Ports,
    Sidecar,
    build_sinks,
)

__all__ = ["AdminServer", "JsonFormatter", "Ports", "Sidecar", "build_sinks", "setup_logging", "split_endpoint"]
