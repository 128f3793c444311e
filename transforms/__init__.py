"""Pure functions: the spans of one trace -> agent scorer runs (DESIGN §3)."""

__all__: list[str] = []
