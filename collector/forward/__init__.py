"""Pass-through: every received request forwarded unchanged to the next collector, through
a bounded queue with retry, never blocking ingestion."""

from collector.forward._forwarder import (
    Forwarder,
    ForwardingSink,
    Signal,
)

__all__ = ["Forwarder", "ForwardingSink", "Signal"]
