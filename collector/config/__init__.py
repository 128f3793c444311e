"""The sidecar's configuration: models, loading (YAML, `SCORECAR_*` env, problems with paths
and lines), secrets read at load time, scorer resolution, the masked view for check-config."""

from collector.config._config import (
    API_KEY_REFUSED,
    AssemblyConfig,
    Config,
    ConfigProblems,
    ExportersConfig,
    FilterConfig,
    ForwardConfig,
    JsonlExporterConfig,
    JudgeConfig,
    LimitsConfig,
    OtlpExporterConfig,
    PrometheusExporterConfig,
    ReceiverAuthConfig,
    ReceiverConfig,
    ReceiversConfig,
    ScorerConfig,
    StorageConfig,
    TlsConfig,
    build_judge,
    build_scorer_specs,
    config_to_masked_dict,
    load_config,
    render_effective_config,
)

__all__ = ["API_KEY_REFUSED", "AssemblyConfig", "Config", "ConfigProblems", "ExportersConfig", "FilterConfig", "ForwardConfig", "JsonlExporterConfig", "JudgeConfig", "LimitsConfig", "OtlpExporterConfig", "PrometheusExporterConfig", "ReceiverAuthConfig", "ReceiverConfig", "ReceiversConfig", "ScorerConfig", "StorageConfig", "TlsConfig", "build_judge", "build_scorer_specs", "config_to_masked_dict", "load_config", "render_effective_config"]
