"""`create_scorer`: the scorer pipeline, a Python port of Mastra's `createScorer` (DESIGN §4).

A scorer is an immutable chain of up to four steps — `preprocess`, `analyze`, `generate_score`
(required) and `generate_reason` — each a plain function (sync or async) called with keyword
arguments, or a `PromptStep` answered by the LLM judge::

    scorer = (
        create_scorer(id="short-answers", description="1 when the answer is short")
        .generate_score(lambda run, results: 1.0 if len(run.output[-1].text) < 200 else 0.0)
    )
    result = await scorer.run(run)     # -> ScorerResult
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from scorers.errors import ScorerError, ScorerRunError
from scorers.judge import Judge, JudgeProvider, call_judge, use_judge_provider
from scorers.types import (
    JudgeExecution,
    JudgeStepTelemetry,
    NotScorableInfo,
    ScorerResult,
    ScorerRun,
)

__all__ = [
    "NotScorable",
    "PromptStep",
    "Scorer",
    "StepResults",
    "create_scorer",
    "not_scorable",
]

StepName = Literal["preprocess", "analyze", "generate_score", "generate_reason"]

PrepareRun = Callable[[ScorerRun], ScorerRun | Awaitable[ScorerRun]]
StepFunction = Callable[..., Any]


@dataclass(frozen=True)
class NotScorable:
    """Returned by a function step to end the run without a score."""

    reason: str | None = None


def not_scorable(reason: str | None = None) -> NotScorable:
    """End the scorer run without a score (status `not_scorable`).

    Args:
        reason: why the run cannot be scored; stored in `ScorerResult.not_scorable`.

    Returns:
        A marker that a function step returns.
    """
    return NotScorable(reason)


@dataclass(frozen=True)
class PromptStep:
    """A step answered by the LLM judge.

    Attributes:
        description: what the step does (documentation and telemetry).
        create_prompt: function (sync or async) called with `run`, `results` (and `score` for
            `generate_reason`) returning the user prompt text.
        output_schema: a pydantic model class or a JSON-schema dict for the judge's structured
            output. Required for `preprocess`/`analyze`; for `generate_score` it needs
            `calculate_score`; not allowed for `generate_reason` (plain text).
        judge: step-level judge settings, merged field by field over the scorer's judge.
        calculate_score: for `generate_score` only: `(run=, results=, output=)` → the score,
            where `output` is the judge's parsed structured output.
    """

    description: str
    create_prompt: StepFunction
    output_schema: type[BaseModel] | dict[str, Any] | None = None
    judge: Judge | None = None
    calculate_score: StepFunction | None = None


@dataclass(frozen=True)
class StepResults:
    """The results of the steps that ran so far, as steps see them (read-only).

    Results of prompt steps whose schema is a pydantic model are instances of that model.
    """

    preprocess_step_result: Any = None
    analyze_step_result: Any = None
    generate_score_step_result: Any = None


@dataclass(frozen=True)
class _Step:
    name: StepName
    definition: StepFunction | PromptStep


def _private_copy(run: ScorerRun) -> ScorerRun:
    """A copy of `run` that shares no list or dict with it (steps may mutate what they get).

    Dumping and validating again runs in pydantic-core and is several times faster than
    `model_copy(deep=True)`, whose `copy.deepcopy` walks every value in Python.
    """
    return type(run).model_validate(run.model_dump(round_trip=True))


@dataclass(frozen=True)
class Scorer:
    """A configured scorer. Build one with `create_scorer`; every step method returns a new one.

    Attributes:
        id: the scorer id (free text; used as a metric label).
        name: display name (defaults to `id`).
        description: what the scorer measures.
        type: `"agent"` for agent-typed runs, or None.
        judge: the scorer-level judge settings, or None.
        prepare_run: optional function (sync or async) turning the run into the one scored.
    """

    id: str
    description: str
    name: str
    judge: Judge | None = None
    type: str | None = None
    prepare_run: PrepareRun | None = None
    steps: tuple[_Step, ...] = field(default=())

    # ------------------------------------------------------------------ building

    @property
    def has_judge(self) -> bool:
        """True when the scorer has a judge config or any prompt step."""
        return self.judge is not None or any(isinstance(s.definition, PromptStep)
                                             for s in self.steps)

    @property
    def step_names(self) -> list[str]:
        """The names of the configured steps, in the order they run."""
        return [s.name for s in self.steps]

    def _with(self, name: StepName, definition: StepFunction | PromptStep) -> Scorer:
        if any(s.name == name for s in self.steps):
            raise ValueError(f"scorer {self.id!r} already has a {name} step")
        if isinstance(definition, PromptStep):
            _check_prompt_step(name, definition)
        elif not callable(definition):
            raise TypeError(f"{name} step must be a function or a PromptStep, "
                            f"not {type(definition).__name__}")
        # Steps run in the order they were chained, as in Mastra.
        return Scorer(id=self.id, description=self.description, name=self.name,
                      judge=self.judge, type=self.type, prepare_run=self.prepare_run,
                      steps=(*self.steps, _Step(name, definition)))

    def preprocess(self, step: StepFunction | PromptStep) -> Scorer:
        """Add the preprocess step (a function, or a PromptStep with `output_schema`)."""
        return self._with("preprocess", step)

    def analyze(self, step: StepFunction | PromptStep) -> Scorer:
        """Add the analyze step (a function, or a PromptStep with `output_schema`)."""
        return self._with("analyze", step)

    def generate_score(self, step: StepFunction | PromptStep) -> Scorer:
        """Add the required generate_score step; it must produce a finite number."""
        return self._with("generate_score", step)

    def generate_reason(self, step: StepFunction | PromptStep) -> Scorer:
        """Add the generate_reason step (called with `score` too); it produces text."""
        return self._with("generate_reason", step)

    # ------------------------------------------------------------------ running

    async def run(self, run: ScorerRun | Mapping[str, Any], *,
                  judge_provider: JudgeProvider | None = None) -> ScorerResult:
        """Score one run.

        Args:
            run: a `ScorerRun`, or a dict in its JSON (camelCase) or Python (snake_case) shape.
                It is never mutated.
            judge_provider: the provider this run's judges call when their `Judge` sets none
                (e.g. `scorers.testing.ScriptedProvider`, or a rate-limited wrapper); the same
                as running inside `use_judge_provider(judge_provider)`. Default: the one of
                the enclosing `use_judge_provider` block, else `default_provider()`.

        Returns:
            The prepared run's fields plus every step's result, prompt and judge executions.
            `status` is `not_scorable` when a step returned `not_scorable(...)`.

        Raises:
            ScorerError: the scorer has no generate_score step, or `run` is a dict that is not
                a valid run (before anything runs).
            ScorerRunError: `prepare_run` or a step failed, or the score is not a finite number;
                carries `failed_step`, `completed_steps` and `partial_result`.
        """
        if judge_provider is not None:
            if not callable(getattr(judge_provider, "complete", None)):
                raise TypeError("judge_provider must have an async complete(request) method")
            with use_judge_provider(judge_provider):
                return await self.run(run)
        if not any(s.name == "generate_score" for s in self.steps):
            raise ScorerError(f"scorer {self.id!r} has no generate_score step")
        if isinstance(run, ScorerRun):
            original = _private_copy(run)
        else:
            try:
                original = _private_copy(ScorerRun.model_validate(dict(run)))
            except (ValidationError, TypeError, ValueError) as exc:
                raise ScorerError(f"scorer {self.id!r}: the run is not a valid ScorerRun: "
                                  f"{exc}") from exc
        prepared = original
        if self.prepare_run is not None:
            try:
                value = self.prepare_run(original)
                if inspect.isawaitable(value):
                    value = await value
                prepared = _private_copy(_as_run(value))
            except Exception as exc:
                raise ScorerRunError(str(exc) or type(exc).__name__, scorer_id=self.id,
                                     failed_step="prepare_run", completed_steps=[],
                                     partial_result=_result_from(original, {})) from exc

        state: dict[str, Any] = {}
        results = StepResults()
        completed: list[str] = []
        telemetry: dict[str, JudgeStepTelemetry] = {}
        for step in self.steps:
            try:
                value, prompt, execution = await self._run_step(step, prepared, results, state)
            except Exception as exc:
                message = f"{type(exc).__name__}: {exc}"
                cause: BaseException = exc
                if isinstance(step.definition, PromptStep) and isinstance(exc, ScorerError):
                    # the judge's or the prompt step's own failure, with its judge execution
                    if exc.execution is not None:
                        telemetry[step.name] = JudgeStepTelemetry(executions=[exc.execution])
                    message = str(exc)
                    if type(exc) is ScorerError and exc.__cause__ is not None:
                        cause = exc.__cause__  # e.g. a processor's or calculate_score's error
                state["judge"] = telemetry
                error = ScorerRunError(message, scorer_id=self.id, failed_step=step.name,
                                       completed_steps=list(completed),
                                       partial_result=_result_from(prepared, state))
                error.execution = exc.execution if isinstance(exc, ScorerError) else None
                raise error from cause
            if prompt is not None:
                state[f"{step.name}_prompt"] = prompt
            if execution is not None:
                telemetry[step.name] = JudgeStepTelemetry(executions=[execution])
            if isinstance(value, NotScorable):
                state["judge"] = telemetry
                state["status"] = "not_scorable"
                state["not_scorable"] = NotScorableInfo(step=step.name, reason=value.reason)
                return _result_from(prepared, state)
            completed.append(step.name)
            if step.name == "generate_reason":
                state["reason"] = value
            else:
                state[f"{step.name}_step_result"] = value
                results = StepResults(
                    preprocess_step_result=state.get("preprocess_step_result"),
                    analyze_step_result=state.get("analyze_step_result"),
                    generate_score_step_result=state.get("generate_score_step_result"))
                if step.name == "generate_score":
                    state["score"] = float(value)
        state["judge"] = telemetry
        return _result_from(prepared, state)

    async def _run_step(self, step: _Step, run: ScorerRun, results: StepResults,
                        state: dict[str, Any]) -> tuple[Any, str | None, JudgeExecution | None]:
        kwargs: dict[str, Any] = {"run": run, "results": results}
        if step.name == "generate_reason":
            kwargs["score"] = state.get("score")
        definition = step.definition
        if not isinstance(definition, PromptStep):
            value = await _call(definition, kwargs)
            _check_value(step.name, value)
            return value, None, None

        prompt = await _call(definition.create_prompt, kwargs)
        if not isinstance(prompt, str):
            raise ScorerError(f"{step.name} create_prompt returned {type(prompt).__name__}, "
                              "not a string")
        state[f"{step.name}_prompt"] = prompt
        if step.name == "generate_reason":
            kind: Literal["text", "score", "object"] = "text"
        elif step.name == "generate_score" and definition.output_schema is None:
            kind = "score"
        else:
            kind = "object"
        outcome = await call_judge(self.judge, definition.judge, step=step.name, prompt=prompt,
                                   kind=kind, output_schema=definition.output_schema)
        value = outcome.value
        if step.name == "generate_score" and definition.calculate_score is not None:
            try:
                value = await _call(definition.calculate_score,
                                    {"run": run, "results": results, "output": value})
            except Exception as exc:
                raise ScorerError(f"calculate_score raised {type(exc).__name__}: {exc}",
                                  execution=outcome.execution) from exc
        elif kind == "score":
            value = value["score"]
        try:
            _check_value(step.name, value)
        except ValueError as exc:
            raise ScorerError(str(exc), execution=outcome.execution) from exc
        return value, prompt, outcome.execution


def _check_prompt_step(name: StepName, step: PromptStep) -> None:
    if not callable(step.create_prompt):
        raise TypeError(f"{name} PromptStep.create_prompt must be callable")
    if name in ("preprocess", "analyze") and step.output_schema is None:
        raise ValueError(f"a {name} PromptStep needs an output_schema")
    if name == "generate_reason" and step.output_schema is not None:
        raise ValueError("a generate_reason PromptStep answers in plain text: no output_schema")
    if step.calculate_score is not None and name != "generate_score":
        raise ValueError("calculate_score is only for the generate_score step")
    if name == "generate_score" and step.output_schema is not None and step.calculate_score is None:
        raise ValueError("a generate_score PromptStep with an output_schema needs calculate_score")
    schema = step.output_schema
    if schema is not None and not isinstance(schema, dict) and not (
            isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise TypeError("output_schema must be a pydantic model class or a JSON-schema dict")


def _check_value(step: str, value: Any) -> None:
    if isinstance(value, NotScorable):
        return
    if step == "generate_score":
        # A bool is an int in Python, but never a score.
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"generate_score returned {type(value).__name__} {value!r}, "
                             "not a number")
        if not math.isfinite(value):
            raise ValueError(f"generate_score returned {value!r}, not a finite number")
    elif step == "generate_reason" and value is not None and not isinstance(value, str):
        raise ValueError(f"generate_reason returned {type(value).__name__}, not a string")


async def _call(fn: StepFunction, kwargs: dict[str, Any]) -> Any:
    """Call `fn` with the keyword arguments it accepts; await it when it is async."""
    accepts_all, names = _accepted(fn)
    args = kwargs if accepts_all else {k: v for k, v in kwargs.items() if k in names}
    value = fn(**args)
    if inspect.isawaitable(value):
        value = await value
    return value


def _accepted(fn: StepFunction) -> tuple[bool, frozenset[str]]:
    # Steps may declare only the arguments they use (`lambda run, results: …` as a reason step).
    # Cached: a step's signature is read once, not on every run (a tenth of a code scorer's
    # time when it was read per call); an unhashable callable is read every time.
    try:
        return _accepted_cached(fn)
    except TypeError:
        return _signature_names(fn)


@functools.lru_cache(maxsize=1024)
def _accepted_cached(fn: StepFunction) -> tuple[bool, frozenset[str]]:
    return _signature_names(fn)


def _signature_names(fn: StepFunction) -> tuple[bool, frozenset[str]]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True, frozenset()
    return (any(p.kind is p.VAR_KEYWORD for p in params),
            frozenset(p.name for p in params
                      if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)))


def _as_run(value: Any) -> ScorerRun:
    if isinstance(value, ScorerRun):
        return value
    if isinstance(value, Mapping):
        return ScorerRun.model_validate(dict(value))
    raise TypeError(f"prepare_run returned {type(value).__name__}, not a ScorerRun")


def _result_from(run: ScorerRun, state: dict[str, Any]) -> ScorerResult:
    fields = {name: getattr(run, name) for name in ScorerRun.model_fields}
    return ScorerResult.model_validate({**fields, **state})


def create_scorer(*, id: str, description: str, name: str | None = None,  # noqa: A002
                  judge: Judge | None = None, type: str | None = None,  # noqa: A002
                  prepare_run: PrepareRun | None = None) -> Scorer:
    """Create a scorer with no steps yet (Mastra's `createScorer`).

    Args:
        id: the scorer id (required, non-empty).
        description: what the scorer measures.
        name: display name; defaults to `id`.
        judge: judge settings shared by the prompt steps (each field may be overridden per step).
        type: `"agent"` for scorers of agent runs (typing and documentation only).
        prepare_run: function (sync or async) returning the run to score, e.g. `filter_run(...)`.

    Returns:
        A `Scorer`; add steps with `.preprocess/.analyze/.generate_score/.generate_reason`.
    """
    if not isinstance(id, str) or not id.strip():
        raise ValueError("create_scorer needs a non-empty id")
    if prepare_run is not None and not callable(prepare_run):
        raise TypeError("prepare_run must be callable")
    return Scorer(id=id, description=description, name=name or id, judge=judge, type=type,
                  prepare_run=prepare_run)
