"""The masked view `scorecar check-config` prints: the effective config as YAML with every
secret replaced by `***`, then the resolved scorers as YAML comments."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

from collector.config._models import Config, JudgeConfig
from collector.config._scorers import build_scorer_specs
from collector.config._secrets import MASK, scrub
from scorers import Judge
from scorers.judge import default_model

__all__ = ["config_to_masked_dict", "render_effective_config"]


_SECRET_OPTION = re.compile(r"key|token|secret|passw|auth|credential", re.IGNORECASE)


def _mask_url(value: Any) -> Any:
    if not isinstance(value, str) or "://" not in value or "@" not in value:
        return value
    parts = urlsplit(value)
    if parts.username is None and parts.password is None:
        return value
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{MASK}@{host}"))


def _masked_judge(data: dict[str, Any], judge: JudgeConfig) -> dict[str, Any]:
    masked: dict[str, Any] = {}
    for name, value in data.items():
        masked[name] = _mask_url(value)
        if name == "api_key_file":
            masked["api_key"] = MASK if judge.api_key is not None else None
    masked["headers"] = {k: MASK for k in data.get("headers") or {}}
    return masked


def config_to_masked_dict(config: Config) -> dict[str, Any]:
    """The config as plain data (JSON types), secrets replaced by `***`.

    Masked: each judge's API key (shown as `api_key: "***"` when one was found, else null),
    every header value (the judges' too), user info in URLs, and scorer options whose name looks like a secret
    (`*key*`, `*token*`, `*secret*`, `*password*`, `*auth*`, `*credential*`).
    """
    data = config.model_dump(mode="json")
    data["judge"] = _masked_judge(data["judge"], config.judge)
    data["judges"] = {name: _masked_judge(value, config.judges[name])
                      for name, value in data["judges"].items()}
    for section in (data["exporters"]["otlp"], data["forward"]):
        section["headers"] = {k: MASK for k in section["headers"]}
        section["endpoint"] = _mask_url(section["endpoint"])
    for scorer in data["scorers"]:
        scorer["options"] = {k: MASK if _SECRET_OPTION.search(k) else v
                             for k, v in scorer["options"].items()}
    return data


def render_effective_config(config: Config) -> str:
    """What `scorecar check-config` prints: the effective config as YAML, secrets masked,
    then the resolved scorers as YAML comments (the output stays valid YAML).

    Raises:
        ConfigError: the scorers do not resolve (a config built in code).
    """
    specs = build_scorer_specs(config, require_key=False)
    text = yaml.safe_dump(config_to_masked_dict(config), sort_keys=False,
                          default_flow_style=False, allow_unicode=True)
    lines = [f"# resolved scorers: {len(specs)}"]
    for entry, spec in zip(config.scorers, specs):
        kind = "code"
        if spec.scorer.has_judge:
            judge = spec.scorer.judge or Judge()
            kind = f"judge {spec.judge}: {judge.model or default_model()}"
        shown = spec.id if spec.id.isprintable() else repr(spec.id)
        lines.append(f"#   - {shown}  ({entry.scorer}, {kind}, timeout {spec.timeout:g}s)")
    keys = [config.judge.api_key, *(j.api_key for j in config.judges.values())]
    secrets = [k.get_secret_value() for k in keys if k is not None]
    return scrub(text + "\n".join(lines) + "\n", secrets)
