"""Loading the configuration (DESIGN §8): one YAML file, `SCORECAR_*` env overrides, every
problem reported at once before any socket opens.

```python
config = load_config(Path("scorecar.yaml"))      # raises ConfigError listing every problem
specs = build_scorer_specs(config)               # the scorers, ready for the scheduler
```

Env overrides: `SCORECAR_JUDGE__MODEL=x` sets `judge.model`; segments are joined
with `__`, lower-cased, and a number selects a list entry (`SCORECAR_SCORERS__0__TIMEOUT=5`).
A variable whose name has no `__` is an override only when it names a top-level section
(`SCORECAR_SCORERS='[{scorer: "builtin:tone"}]'`); other `SCORECAR_*` names are left alone.
Values are read as YAML scalars (`0.2`, `true`, `null`); a value starting with `[` or `{` is
read as a YAML flow collection.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, SecretStr, ValidationError

from collector.config._fields import ENV_NAME
from collector.config._models import (
    DEFAULT_JUDGE,
    Config,
    JudgeConfig,
    ReceiverAuthConfig,
    ReceiversConfig,
    ScorerConfig,
)
from collector.config._problems import (
    ConfigProblems,
    Problem,
    annotate,
    key_path,
    validation_problems,
)
from collector.config._scorers import missing_keys, resolve_scorers
from collector.config._secrets import API_KEY_REFUSED, read_api_key, read_bearer_token, scrub

__all__ = ["ENV_PREFIX", "load_config"]

_M = TypeVar("_M", bound=BaseModel)
ENV_PREFIX = "SCORECAR_"
_SECTIONS = frozenset(Config.model_fields)


# --------------------------------------------------------------------------- YAML


def _read_yaml(path: Path) -> tuple[Any, dict[str, int], list[Problem]]:
    """The parsed document, its key paths → line numbers, and the problems found reading it."""
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        return None, {}, [Problem("", f"cannot read {path}: {exc.strerror or exc}")]
    except UnicodeDecodeError as exc:
        return None, {}, [Problem("", f"{path} is not UTF-8 text (byte {exc.start})")]
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return None, {}, [Problem("", _yaml_error(exc))]
    lines: dict[str, int] = {}
    problems: list[Problem] = []
    if node is not None:
        _walk_nodes(node, (), lines, problems)
    if data is not None and not isinstance(data, dict):
        problems.append(Problem("", f"the file must hold a mapping of sections "
                                    f"({', '.join(_SECTIONS)}), not a {type(data).__name__}"))
        data = None
    return data, lines, problems


def _yaml_error(exc: yaml.YAMLError) -> str:
    # Only the problem and its position: YAML's own message quotes the line, which may hold
    # a secret.
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(exc, "problem", None) or type(exc).__name__
    context = getattr(exc, "context", None)
    return f"YAML syntax error at {where}{problem}" + (f" ({context})" if context else "")


def _walk_nodes(node: Any, loc: tuple[str | int, ...], lines: dict[str, int],
                problems: list[Problem]) -> None:
    lines.setdefault(key_path(loc), node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                problems.append(Problem(key_path(loc + (key,)),
                                        f"duplicate key (line {line}; first at line {seen[key]})"))
                continue
            seen[key] = line
            lines[key_path(loc + (key,))] = line
            _walk_nodes(value_node, loc + (key,), lines, problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk_nodes(item, loc + (i,), lines, problems)


# --------------------------------------------------------------------------- env overrides


def _env_value(raw: str) -> Any:
    """An env value read as a YAML scalar (`0.2`, `true`, `null`) or a flow collection."""
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    if isinstance(value, (dict, list)) and raw.lstrip()[:1] not in ("[", "{"):
        return raw  # `a: b` is a string here, not a mapping
    return value


def _apply_env(data: dict[str, Any], env: Mapping[str, str],
               origins: dict[str, str]) -> list[Problem]:
    """Merge `SCORECAR_*` overrides into `data` (in place); record each path's variable."""
    problems: list[Problem] = []
    overrides = []
    for name, raw in env.items():
        if not name.upper().startswith(ENV_PREFIX):
            continue
        parts = name[len(ENV_PREFIX):].split("__")
        if len(parts) == 1 and parts[0].lower() not in _SECTIONS:
            continue  # not a config override (another SCORECAR_* setting)
        overrides.append((len(parts), name, parts, raw))
    for _, name, parts, raw in sorted(overrides):  # whole sections first, then their keys
        if any(not p for p in parts):
            problems.append(Problem("", f"{name}: empty key segment in the variable name"))
            continue
        loc: list[str | int] = []
        target: Any = data
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(target, list):
                if not part.isdigit() or int(part) >= len(target):
                    problems.append(Problem(
                        key_path(loc), f"{name}: no entry {part!r} in this list "
                                    f"({len(target)} entr{'y' if len(target) == 1 else 'ies'})"))
                    break
                key: Any = int(part)
            else:
                key = part.lower()
            loc.append(key)
            if last:
                target[key] = _env_value(raw)
                origins[key_path(loc)] = name
                break
            child = target[key] if isinstance(key, int) else target.get(key)
            if not isinstance(child, (dict, list)):
                child = [] if parts[i + 1].isdigit() else {}  # a list index: no such entry yet
                target[key] = child
            target = child
    return problems


# --------------------------------------------------------------------------- loading


def load_config(path: Path | None, env: Mapping[str, str] | None = None) -> Config:
    """Read, override, validate and resolve the configuration. Opens no socket.

    Args:
        path: the YAML file; None (or an empty file): every default.
        env: the environment to read `SCORECAR_*` overrides and the judge's API key from
            (default `os.environ`).

    Returns:
        The validated config, its scorers resolved (see `build_scorer_specs`) and
        `config.judge.api_key` set when a key was found.

    Raises:
        ConfigError: a `ConfigProblems` listing every problem at once, each with its key path
            (and line, for keys from the file), e.g. `assembly.quiet_period: …`,
            `scorers[1].scorer: cannot import 'my_mod:x': …`.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    problems: list[Problem] = []
    lines: dict[str, int] = {}
    data: Any = None
    if path is not None:
        data, lines, problems = _read_yaml(path)
    if data is None:
        data = {}
    origins: dict[str, str] = {}
    problems += _apply_env(data, environ, origins)

    judge_data = data.get("judge")
    if isinstance(judge_data, dict) and "api_key" in judge_data:
        del judge_data["api_key"]
        problems.append(Problem("judge.api_key", API_KEY_REFUSED))
    judges_data = data.get("judges")
    if isinstance(judges_data, dict):
        for name, entry in judges_data.items():
            if isinstance(entry, dict) and "api_key" in entry:
                del entry["api_key"]
                problems.append(Problem(f"judges.{name}.api_key", API_KEY_REFUSED))

    config: Config | None = None
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems += validation_problems(exc, Config)

    # Resolve what validated, even when other parts did not: every problem at once.
    judge = config.judge if config is not None else _validate_part(JudgeConfig, judge_data)
    entries: list[tuple[int, ScorerConfig]] = []
    if config is not None:
        entries = list(enumerate(config.scorers))
    elif isinstance(data.get("scorers"), list):
        for i, item in enumerate(data["scorers"]):
            entry = _validate_part(ScorerConfig, item)
            if entry is not None:
                entries.append((i, entry))

    api_key: SecretStr | None = None
    if judge is not None:
        api_key, key_problem = read_api_key(judge, environ)
        if key_problem is not None:
            problems.append(key_problem)
    named: dict[str, tuple[JudgeConfig, SecretStr | None]] = {}
    invalid: set[str] = set()
    raw_judges = (config.judges if config is not None
                  else judges_data if isinstance(judges_data, dict) else {})
    for name, raw in raw_judges.items():
        if name == DEFAULT_JUDGE or not ENV_NAME.match(str(name)):
            problems.append(Problem(f"judges.{name}", (
                "'default' is the judge: block; name the others differently"
                if name == DEFAULT_JUDGE else "a judge's name is letters, digits and _")))
            invalid.add(str(name))
            continue
        part = raw if isinstance(raw, JudgeConfig) else _validate_part(JudgeConfig, raw)
        if part is None:
            invalid.add(str(name))
            continue
        key, key_problem = read_api_key(part, environ, f"judges.{name}")
        if key_problem is not None:
            problems.append(key_problem)
        named[str(name)] = (part, key)
    bearers: dict[str, SecretStr] = {}
    receivers = config.receivers if config is not None \
        else _validate_part(ReceiversConfig, data.get("receivers"))
    for name in ("grpc", "http"):
        auth = getattr(receivers, name).auth if receivers is not None else ReceiverAuthConfig()
        bearer, bearer_problem = read_bearer_token(auth, environ, f"receivers.{name}.auth")
        if bearer_problem is not None:
            problems.append(bearer_problem)
        if bearer is not None:
            bearers[name] = bearer
    resolved = resolve_scorers(entries, judge or JudgeConfig(), api_key,
                               judge_ok=judge is not None, judges=named,
                               invalid=frozenset(invalid))
    problems += [Problem(p.path, p.message) for p in resolved.problems]
    table = dict(named)
    if judge is not None:
        table[DEFAULT_JUDGE] = (judge, api_key)
    problems += missing_keys({k: v for k, v in resolved.needs_key.items() if k in table}, table)

    if problems:
        keys = (api_key, *(key for _, key in named.values()), *bearers.values())
        secrets = [k.get_secret_value() for k in keys if k is not None]
        # In file order (problems without a line keep their place after those with one).
        annotated = sorted((annotate(p, lines, origins) for p in problems),
                           key=lambda a: a[1] if a[1] is not None else 1 << 30)
        text = [scrub(a[0], secrets) for a in annotated]
        raise ConfigProblems(text, str(path) if path is not None else None)
    assert config is not None  # no problems: it validated
    config.judge._api_key = api_key
    for name, (_, key) in named.items():
        config.judges[name]._api_key = key
    for name, bearer in bearers.items():
        getattr(config.receivers, name).auth._token = bearer
    config._resolved = (config.scorers, config.judge, tuple(resolved.specs))
    return config


def _validate_part(model: type[_M], value: Any) -> _M | None:
    try:
        return model.model_validate(value if value is not None else {})
    except ValidationError:
        return None  # already reported by the whole-config validation
