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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr

from collector.config._models import Config, JudgeConfig, ScorerConfig
from collector.config._problems import ConfigProblems, Problem
from collector.scoring import RunFilter, ScorerSpec
from scorers import Judge, PiiRedactor, Scorer, StreamErrorRetryProcessor
from scorers.builtin.registry import BUILTINS, get_builtin
from scorers.errors import ConfigError
from scorers.processors import exponential_delay

__all__ = ["BUILTIN_PREFIX", "Resolved", "build_judge", "build_scorer_specs", "load_object",
           "resolve_scorers", "with_judge_defaults"]

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
        needs_key: ids of the scorers that call the judge with the configured key.
    """

    specs: list[ScorerSpec] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    needs_key: list[str] = field(default_factory=list)


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
                 input_processors=[PiiRedactor()] if judge.redact_pii else None)


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
    return dataclasses.replace(scorer, judge=own.merged_over(judge) if own is not None else judge)


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
                    api_key: SecretStr | None, judge_ok: bool = True) -> Resolved:
    """Resolve each `(index, entry)` of `scorers[]`.

    Args:
        entries: the entries that validated, with their index in `scorers[]`.
        judge: the judge block (its `Judge` goes to built-in judge scorers).
        api_key: the judge's key.
        judge_ok: False when the judge block itself was invalid (judge built-ins are then
            not built; the judge's problems are reported elsewhere).

    Returns:
        The specs, the problems (paths `scorers[i].scorer` / `scorers[i].options`), and the
        ids of the scorers that need the API key.
    """
    result = Resolved()
    built_judge: Judge | None = None
    if judge_ok and entries:
        try:
            built_judge = _make_judge(judge, api_key)
        except Exception as exc:
            result.problems.append(Problem("judge", f"cannot build the judge: "
                                                    f"{type(exc).__name__}: {exc}"))
            judge_ok = False
    first: dict[str, int] = {}
    for index, entry in entries:
        try:
            if entry.scorer.startswith(BUILTIN_PREFIX):
                scorer, needs_key = _builtin(entry, built_judge, judge_ok)
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
            result.needs_key.append(scorer.id)
        filt = entry.filter
        result.specs.append(ScorerSpec(
            scorer=scorer, sampling=entry.sampling,
            filter=RunFilter(agents=tuple(filt.agents), conventions=tuple(filt.conventions),
                             attributes=dict(filt.attributes)),
            timeout=entry.timeout))
    return result


def build_scorer_specs(config: Config, *, require_key: bool = True) -> list[ScorerSpec]:
    """The configured scorers as `ScorerSpec`s, in config order.

    A config from `load_config` returns the scorers resolved while loading (factories are
    called once). A config built in code is resolved here.

    Args:
        config: the configuration.
        require_key: refuse judge scorers when `config.judge.api_key` is None (turn off when a
            judge provider is injected, e.g. with `scorers.use_judge_provider` in tests).

    Returns:
        One spec per `scorers[]` entry.

    Raises:
        ConfigError: every problem at once, with paths (`scorers[1].scorer: …`).
    """
    cached = config._resolved
    if cached is not None and cached[0] is config.scorers and cached[1] is config.judge:
        return list(cached[2])
    resolved = resolve_scorers(list(enumerate(config.scorers)), config.judge,
                               config.judge.api_key)
    problems = [str(p) for p in resolved.problems]
    if require_key and resolved.needs_key and config.judge.api_key is None:
        problems.append(f"judge: no API key for the judge scorers "
                        f"{', '.join(resolved.needs_key)}: set the environment variable "
                        f"{config.judge.api_key_env} or judge.api_key_file")
    if problems:
        raise ConfigProblems(problems)
    return resolved.specs
