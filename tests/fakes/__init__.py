"""Fakes for tests: real servers on loopback ports that the real clients talk to."""
