"""Reading the sidecar's Prometheus metrics in tests."""

from __future__ import annotations

from collector._telemetry import Metrics


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    """The value of one sample of `metrics` (0.0 when it was never set).

    Args:
        metrics: the registry's owner.
        name: the sample's name, with its suffix (`scorecar_export_total`,
            `scorecar_score_lag_seconds_count`).
        **labels: every label of the sample.
    """
    return metrics.registry.get_sample_value(name, labels) or 0.0
