"""Built-in scorers: ports of Mastra's `@mastra/evals` prebuilt scorers (DESIGN §4).

The code scorers compute the same numbers as Mastra's (JavaScript string semantics included);
completeness tracks Mastra's `compromise`-based scores within a mean absolute difference of
0.02. `get_builtin(id, **options)` builds one by its config id (`builtin:<id>`).
"""

from scorers.builtin import checks
from scorers.builtin.answer_relevancy import create_answer_relevancy_scorer
from scorers.builtin.bias import create_bias_scorer
from scorers.builtin.completeness import create_completeness_scorer
from scorers.builtin.content_similarity import compare_two_strings, create_content_similarity_scorer
from scorers.builtin.faithfulness import create_faithfulness_scorer
from scorers.builtin.hallucination import create_hallucination_scorer
from scorers.builtin.keyword_coverage import create_keyword_coverage_scorer, extract_keywords
from scorers.builtin.prompt_alignment import create_prompt_alignment_scorer
from scorers.builtin.registry import BUILTINS, BuiltinScorer, get_builtin
from scorers.builtin.textual_difference import create_textual_difference_scorer
from scorers.builtin.tone import analyze_sentiment, create_tone_scorer
from scorers.builtin.tool_call_accuracy import create_tool_call_accuracy_scorer
from scorers.builtin.tool_call_appropriateness import create_tool_call_appropriateness_scorer
from scorers.builtin.toxicity import create_toxicity_scorer

__all__ = [
    "BUILTINS",
    "BuiltinScorer",
    "analyze_sentiment",
    "checks",
    "compare_two_strings",
    "create_answer_relevancy_scorer",
    "create_bias_scorer",
    "create_completeness_scorer",
    "create_content_similarity_scorer",
    "create_faithfulness_scorer",
    "create_hallucination_scorer",
    "create_keyword_coverage_scorer",
    "create_prompt_alignment_scorer",
    "create_textual_difference_scorer",
    "create_tone_scorer",
    "create_tool_call_accuracy_scorer",
    "create_tool_call_appropriateness_scorer",
    "create_toxicity_scorer",
    "extract_keywords",
    "get_builtin",
]
