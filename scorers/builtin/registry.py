"""Built-in scorers by id, for configuration (`scorer: "builtin:<id>"`).

Code scorers and judge scorers share one table: a judge scorer's factory takes the judge as
its first argument, and `takes_judge` says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scorers.builder import Scorer
from scorers.builtin.answer_relevancy import create_answer_relevancy_scorer
from scorers.builtin.bias import create_bias_scorer
from scorers.builtin.completeness import create_completeness_scorer
from scorers.builtin.content_similarity import create_content_similarity_scorer
from scorers.builtin.faithfulness import create_faithfulness_scorer
from scorers.builtin.hallucination import create_hallucination_scorer
from scorers.builtin.keyword_coverage import create_keyword_coverage_scorer
from scorers.builtin.prompt_alignment import create_prompt_alignment_scorer
from scorers.builtin.textual_difference import create_textual_difference_scorer
from scorers.builtin.tone import create_tone_scorer
from scorers.builtin.tool_call_accuracy import create_tool_call_accuracy_scorer
from scorers.builtin.tool_call_appropriateness import create_tool_call_appropriateness_scorer
from scorers.builtin.toxicity import create_toxicity_scorer
from scorers.errors import ConfigError

__all__ = ["BUILTINS", "BuiltinScorer", "get_builtin"]


@dataclass(frozen=True)
class BuiltinScorer:
    """One registered built-in scorer.

    Attributes:
        factory: builds the scorer; options are its keyword arguments.
        takes_judge: the factory's first argument is a `Judge` (an LLM-judge scorer).
    """

    factory: Callable[..., Scorer]
    takes_judge: bool = False


BUILTINS: dict[str, BuiltinScorer] = {
    "completeness": BuiltinScorer(create_completeness_scorer),
    "content_similarity": BuiltinScorer(create_content_similarity_scorer),
    "keyword_coverage": BuiltinScorer(create_keyword_coverage_scorer),
    "textual_difference": BuiltinScorer(create_textual_difference_scorer),
    "tone": BuiltinScorer(create_tone_scorer),
    "tool_call_accuracy": BuiltinScorer(create_tool_call_accuracy_scorer),
    # LLM-judge scorers: the config's `judge:` block is passed as the first argument.
    "answer_relevancy": BuiltinScorer(create_answer_relevancy_scorer, takes_judge=True),
    "bias": BuiltinScorer(create_bias_scorer, takes_judge=True),
    "faithfulness": BuiltinScorer(create_faithfulness_scorer, takes_judge=True),
    "hallucination": BuiltinScorer(create_hallucination_scorer, takes_judge=True),
    "prompt_alignment": BuiltinScorer(create_prompt_alignment_scorer, takes_judge=True),
    "tool_call_appropriateness": BuiltinScorer(create_tool_call_appropriateness_scorer,
                                               takes_judge=True),
    "toxicity": BuiltinScorer(create_toxicity_scorer, takes_judge=True),
}
"""Every built-in scorer by id (the id is also the scorer's metric label)."""

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _snake(name: str) -> str:
    return _CAMEL.sub(r"_\1", name).lower()


def get_builtin(id: str, *, judge: Any = None, **options: Any) -> Scorer:  # noqa: A002
    """Build the built-in scorer `id` with `options` as keyword arguments.

    Args:
        id: a key of `BUILTINS`, with or without the `builtin:` prefix.
        judge: the `Judge` for LLM-judge scorers (required for them, refused for the others).
        **options: the factory's keyword arguments; Mastra's camelCase names
            (`expectedTool`) are accepted too.

    Returns:
        The scorer.

    Raises:
        ConfigError: unknown id (the message lists the valid ones), a judge missing or
            not expected, or options the factory refuses.
    """
    key = id.removeprefix("builtin:")
    spec = BUILTINS.get(key)
    if spec is None:
        raise ConfigError(f"unknown built-in scorer {id!r}; valid ids: "
                          f"{', '.join(sorted(BUILTINS))}")
    kwargs = {_snake(k): v for k, v in options.items()}
    try:
        if spec.takes_judge:
            if judge is None:
                raise ConfigError(f"built-in scorer {key!r} needs a judge")
            return spec.factory(judge, **kwargs)
        if judge is not None:
            raise ConfigError(f"built-in scorer {key!r} is a code scorer and takes no judge")
        return spec.factory(**kwargs)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"built-in scorer {key!r}: bad options {sorted(kwargs)}: {exc}") from exc
