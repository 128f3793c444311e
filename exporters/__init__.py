"""Score sinks: OTLP, Prometheus, JSON lines (DESIGN §7)."""

__all__: list[str] = []
