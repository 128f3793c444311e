"""scorecar's process, laid out as its data path (DESIGN §1):

```
otlp/        the codec, pure: decoded types, protobuf, strict proto3 JSON, JSON -> protobuf
receivers/   transports (gRPC, HTTP) and their security; one refusal -> status table
intake/      the request path up to "acknowledged and durable": span log, ingest, assembly
scoring/     off the request path: build runs, select scorers, schedule, queue, score, export
forward/     pass-through to the next collector
config/      models, loading, secrets, scorer resolution, the masked view
service/     wiring and lifecycle (Sidecar), health and the admin port, logging
cli/         one module per `scorecar` command
```

Only collector/ wires the other packages together; nothing imports it. What the package offers:
`Sidecar` (the whole process), `load_config` and the CLI's `main`, imported on first use so
that `import collector` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collector.cli import main
    from collector.config import load_config
    from collector.service import Sidecar

__all__ = ["Sidecar", "load_config", "main"]

_HOMES = {"Sidecar": "collector.service", "load_config": "collector.config",
          "main": "collector.cli"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'collector' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
