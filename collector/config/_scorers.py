"""Scorer resolution: from `scorers[]` entries to `ScorerSpec`s, and the `Judge` the `judge:`
block describes.

`builtin:<id>` → `scorers.builtin.get_builtin(id, judge=<the judge block's Judge>, **options)`
(code scorers get no judge); `module:attr` (attr may be dotted) → a `scorers.Scorer`, or a
callable factory called with `**options` that returns one. The module is imported from
`sys.path`, to which the current directory is added. Every problem is collected with its path.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr

from collector.config._models import DEFAULT_JUDGE, Config, JudgeConfig, ScorerConfig
from collector.config._problems import ConfigProblems, Problem
from collector.scoring import RunFilter, ScorerSpec
from scorers import Judge, Scorer, StreamErrorRetryProcessor
from scorers._provider import split_model
from scorers.builtin.registry import BUILTINS, get_builtin
from scorers.errors import ConfigError
from scorers.processors import exponential_delay

__all__ = ["BUILTIN_PREFIX", "Resolved", "build_judge", "build_scorer_specs", "judge_table",
           "load_object", "missing_keys", "resolve_scorers", "with_judge_defaults"]

BUILTIN_PREFIX = "builtin:"


class _Refused(Exception):
    """A scorer entry that cannot be resolved: which key is at fault and why."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


@dataclass
class Resolved:
    """What `resolve_scorers` found.

    Attributes:
        specs: one spec per entry that resolved, in order.
        problems: every problem, with its path.
        needs_key: judge name → ids of the scorers that call that judge with its configured
            key (and so need one).
    """

    specs: list[ScorerSpec] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    needs_key: dict[str, list[str]] = field(default_factory=dict)


def build_judge(judge: JudgeConfig, api_key: SecretStr | None = None) -> Judge:
    """The `scorers.Judge` the `judge:` block describes (what built-in judge scorers get).

    Args:
        judge: the judge block.
        api_key: the key; default `judge.api_key` (set by `load_config`).

    Returns:
        `Judge(model, base_url, timeout, api_key, error_processors=[StreamErrorRetryProcessor(
        max_retries, exponential delay from 1 s, max_retry_after)] (none when max_retries is
        0), max_processor_retries, input_processors=[PiiRedactor()] when redact_pii)`.
    """
    return _make_judge(judge, api_key if api_key is not None else judge.api_key)


def _make_judge(judge: JudgeConfig, api_key: SecretStr | None) -> Judge:
    retries = ([StreamErrorRetryProcessor(max_retries=judge.max_retries,
                                          delay=exponential_delay(initial=1.0),
                                          max_retry_after=judge.max_retry_after)]
               if judge.max_retries > 0 else [])
    return Judge(model=judge.model, base_url=judge.base_url, timeout=judge.timeout,
                 api_key=api_key, error_processors=retries,
                 max_processor_retries=judge.max_retries,
                 headers=dict(judge.headers) or None, api_version=judge.api_version,
                 redact_pii=True if judge.redact_pii else None)


def load_object(ref: str) -> Any:
    """The object named by the import path `module:attr` (attr may be dotted).

    Raises:
        ValueError: not of the form `module:attr`.
        ImportError: the module cannot be imported (or raised while importing).
        AttributeError: the module has no such attribute.
    """
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name.strip() or not attr.strip():
        raise ValueError("must be 'builtin:<id>' or an import path 'module:attribute'")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)  # scorers next to the config, as `python -m` would find them
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError:
        raise
    except Exception as exc:  # the module itself raised (or has a syntax error)
        raise ImportError(f"importing {module_name} raised {type(exc).__name__}: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AttributeError(f"{getattr(obj, '__name__', module_name)!r} has no attribute "
                                 f"{part!r}")
        obj = getattr(obj, part)
    return obj


def with_judge_defaults(scorer: Scorer, judge: Judge | None) -> Scorer:
    """`scorer` with every field its own `Judge` leaves unset taken from `judge` (the judge its
    config entry names): provider/model, key, base URL, headers, timeout, error processors
    (the retries), `redact_pii`. What the scorer's `Judge` sets wins; its prompt steps' judges
    still merge over the result. A scorer without a judge (a code scorer) is returned as is.
    """
    if judge is None or not scorer.has_judge:
        return scorer
    own = scorer.judge
    if own is None:
        return dataclasses.replace(scorer, judge=judge)
    if own.model is not None and split_model(own.model)[0] != split_model(
            judge.model or "anthropic/-")[0]:
        # Its own model is another provider's: that provider's endpoint and credentials are
        # not the configured judge's (the SDK's own variables apply).
        judge = judge.model_copy(update={"api_key": None, "base_url": None, "headers": None,
                                         "api_version": None})
    return dataclasses.replace(scorer, judge=own.merged_over(judge))


def _needs_key(scorer: Scorer) -> bool:
    if not scorer.has_judge:
        return False
    own = scorer.judge
    return own is None or (own.api_key is None and own.provider is None)


def _builtin(entry: ScorerConfig, judge: Judge | None, judge_ok: bool) -> tuple[Scorer, bool]:
    key = entry.scorer[len(BUILTIN_PREFIX):]
    spec = BUILTINS.get(key)
    if spec is None:
        raise _Refused("scorer", f"unknown built-in scorer {key!r}; valid ids: "
                                 f"{', '.join(sorted(BUILTINS))}")
    if "judge" in entry.options:
        raise _Refused("options", "'judge' is not an option: built-in judge scorers use the "
                                  "judge: block")
    if spec.takes_judge and not judge_ok:
        raise _Refused("scorer", "not built: the judge: block is invalid")
    try:
        scorer = get_builtin(key, judge=judge if spec.takes_judge else None, **entry.options)
    except ConfigError as exc:
        raise _Refused("options", str(exc)) from None
    except Exception as exc:  # a factory refusing its options in its own way
        raise _Refused("options", f"built-in scorer {key!r} refused its options: "
                                  f"{type(exc).__name__}: {exc}") from None
    return scorer, spec.takes_judge


def _imported(entry: ScorerConfig, judge: Judge | None) -> tuple[Scorer, bool]:
    scorer, needs_key = _import_scorer(entry)
    return with_judge_defaults(scorer, judge), needs_key


def _import_scorer(entry: ScorerConfig) -> tuple[Scorer, bool]:
    ref = entry.scorer
    try:
        obj = load_object(ref)
    except ValueError as exc:
        raise _Refused("scorer", f"{ref!r} {exc}") from None
    except (ImportError, AttributeError) as exc:
        raise _Refused("scorer", f"cannot import {ref!r}: {exc}") from None
    if isinstance(obj, Scorer):
        if entry.options:
            raise _Refused("options", f"{ref!r} is a Scorer, not a factory: it takes no options")
        return obj, _needs_key(obj)
    if not callable(obj):
        raise _Refused("scorer", f"{ref!r} is a {type(obj).__name__}, not a scorers.Scorer or "
                                 f"a factory returning one")
    try:
        inspect.signature(obj).bind(**entry.options)
    except TypeError as exc:
        raise _Refused("options", f"{ref!r} does not take these options: {exc}") from None
    except ValueError:  # no signature to check (some C callables): let the call decide
        pass
    try:
        made = obj(**entry.options)
    except Exception as exc:
        raise _Refused("scorer", f"factory {ref!r} raised {type(exc).__name__}: {exc}") from None
    if not isinstance(made, Scorer):
        raise _Refused("scorer", f"factory {ref!r} returned a {type(made).__name__}, not a "
                                 f"scorers.Scorer")
    return made, _needs_key(made)


def resolve_scorers(entries: Sequence[tuple[int, ScorerConfig]], judge: JudgeConfig,
                    api_key: SecretStr | None, judge_ok: bool = True, *,
                    judges: Mapping[str, tuple[JudgeConfig, SecretStr | None]] | None = None,
                    invalid: frozenset[str] = frozenset()) -> Resolved:
    """Resolve each `(index, entry)` of `scorers[]`.

    Args:
        entries: the entries that validated, with their index in `scorers[]`.
        judge: the judge block (the judge named `default`).
        api_key: its key.
        judge_ok: False when the judge block itself was invalid (scorers using it are then
            not built; the judge's problems are reported elsewhere).
        judges: the named judges of `judges:` that validated, with their keys.
        invalid: names of `judges:` entries that did not validate (their scorers are not
            built; their problems are reported elsewhere).

    Returns:
        The specs (each scorer's `Judge` defaulted from the judge its entry names, see
        `with_judge_defaults`), the problems (paths `scorers[i].scorer` / `.options` /
        `.judge`), and per judge the ids of the scorers that need its API key.
    """
    result = Resolved()
    available: dict[str, tuple[JudgeConfig, SecretStr | None]] = dict(judges or {})
    if judge_ok:
        available[DEFAULT_JUDGE] = (judge, api_key)
    built: dict[str, Judge | None] = {}

    def judge_for(name: str) -> Judge | None:
        if name not in built:
            config, key = available[name]
            try:
                built[name] = _make_judge(config, key)
            except Exception as exc:
                where = "judge" if name == DEFAULT_JUDGE else f"judges.{name}"
                result.problems.append(Problem(where, f"cannot build the judge: "
                                                      f"{type(exc).__name__}: {exc}"))
                built[name] = None
        return built[name]

    first: dict[str, int] = {}
    for index, entry in entries:
        name = entry.judge or DEFAULT_JUDGE
        try:
            built_judge: Judge | None = None
            if name in available:
                built_judge = judge_for(name)
            elif name != DEFAULT_JUDGE and name not in invalid:
                raise _Refused("judge", f"no judge named {name!r}: define it under judges: "
                                        f"(known: {', '.join(sorted(available)) or 'none'})")
            ok = built_judge is not None  # else its own problems are reported elsewhere
            if entry.scorer.startswith(BUILTIN_PREFIX):
                scorer, needs_key = _builtin(entry, built_judge, ok)
                scorer = with_judge_defaults(scorer, built_judge)
            else:
                scorer, needs_key = _imported(entry, built_judge)
        except _Refused as exc:
            result.problems.append(Problem(f"scorers[{index}].{exc.key}", exc.message))
            continue
        if scorer.id in first:
            result.problems.append(Problem(
                f"scorers[{index}].scorer",
                f"duplicate scorer id {scorer.id!r} (also scorers[{first[scorer.id]}]): "
                f"every scorer needs its own id"))
            continue
        first[scorer.id] = index
        if needs_key:
            result.needs_key.setdefault(name, []).append(scorer.id)
        filt = entry.filter
        result.specs.append(ScorerSpec(
            scorer=scorer, sampling=entry.sampling,
            filter=RunFilter(agents=tuple(filt.agents), conventions=tuple(filt.conventions),
                             attributes=dict(filt.attributes)),
            timeout=entry.timeout, judge=name))
    return result


def missing_keys(needs_key: Mapping[str, list[str]],
                 judges: Mapping[str, tuple[JudgeConfig, SecretStr | None]]) -> list[Problem]:
    """A problem per judge whose scorers need a key it does not have."""
    problems: list[Problem] = []
    for name, ids in needs_key.items():
        config, key = judges[name]
        if key is not None or config.api_key_file is not None or not config.key_required:
            continue
        where = "judge" if name == DEFAULT_JUDGE else f"judges.{name}"
        problems.append(Problem(where, (
            f"no API key for the judge scorers {', '.join(ids)}: set the environment variable "
            f"{config.key_variable} (named by {where}.api_key_env) or {where}.api_key_file")))
    return problems


def judge_table(config: Config) -> dict[str, tuple[JudgeConfig, SecretStr | None]]:
    """Every judge of `config` by name (`default` = the `judge:` block), with its key."""
    table = {name: (judge, judge.api_key) for name, judge in config.judges.items()}
    table[DEFAULT_JUDGE] = (config.judge, config.judge.api_key)
    return table


def build_scorer_specs(config: Config, *, require_key: bool = True) -> list[ScorerSpec]:
    """The configured scorers as `ScorerSpec`s, in config order.

    A config from `load_config` returns the scorers resolved while loading (factories are
    called once). A config built in code is resolved here.

    Args:
        config: the configuration.
        require_key: refuse judge scorers whose judge needs a key and has none (turn off when
            a judge provider is injected, e.g. with `scorers.use_judge_provider` in tests).

    Returns:
        One spec per `scorers[]` entry.

    Raises:
        ConfigError: every problem at once, with paths (`scorers[1].scorer: …`).
    """
    cached = config._resolved
    if cached is not None and cached[0] is config.scorers and cached[1] is config.judge:
        return list(cached[2])
    table = judge_table(config)
    resolved = resolve_scorers(list(enumerate(config.scorers)), config.judge,
                               config.judge.api_key,
                               judges={k: v for k, v in table.items() if k != DEFAULT_JUDGE})
    problems = [str(p) for p in resolved.problems]
    if require_key:
        problems += [str(p) for p in missing_keys(resolved.needs_key, table)]
    if problems:
        raise ConfigProblems(problems)
    return resolved.specs
