"""The sidecar's configuration (DESIGN §8), one job per module:

```
_fields      the field types the models share (seconds, counts, host:port, URLs, files)
_models      the models, one per section, and `Config`
_problems    `Problem`, `ConfigProblems`; validation errors as problems with paths and lines
_secrets     the judge's API key and the bearer tokens, read at load time, never on fields
_load        `load_config`: YAML, `SCORECAR_*` env overrides, every problem at once
_scorers     scorer resolution: `scorers[]` entries to `ScorerSpec`s, the judge block's `Judge`
_display     the masked view for check-config
```

Models import nothing above them: `_scorers` imports the models, never the reverse.
"""

from collector.config._display import config_to_masked_dict, render_effective_config
from collector.config._load import load_config
from collector.config._models import (
    AssemblyConfig,
    Config,
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
)
from collector.config._problems import ConfigProblems
from collector.config._scorers import build_judge, build_scorer_specs
from collector.config._secrets import API_KEY_REFUSED

__all__ = ["API_KEY_REFUSED", "AssemblyConfig", "Config", "ConfigProblems", "ExportersConfig", "FilterConfig", "ForwardConfig", "JsonlExporterConfig", "JudgeConfig", "LimitsConfig", "OtlpExporterConfig", "PrometheusExporterConfig", "ReceiverAuthConfig", "ReceiverConfig", "ReceiversConfig", "ScorerConfig", "StorageConfig", "TlsConfig", "build_judge", "build_scorer_specs", "config_to_masked_dict", "load_config", "render_effective_config"]
