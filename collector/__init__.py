"""The process: receivers, assembly, scheduling, config, CLI. Only collector/ wires."""

__all__: list[str] = []
