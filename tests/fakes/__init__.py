"""Fakes for tests: real servers on loopback ports that the real clients talk to, in-process
sinks that record what they are given, SDK-made telemetry, and reading the metrics."""
