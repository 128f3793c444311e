"""The scorer API: a Python port of Mastra's `createScorer` (DESIGN §4).

Users write `from scorers import create_scorer, PromptStep, Judge`.
"""

from scorers.builder import (
    NotScorable,
    PromptStep,
    Scorer,
    StepResults,
    create_scorer,
    not_scorable,
)
from scorers.errors import (
    ConfigError,
    JudgeAuthError,
    JudgeParseError,
    JudgeRequestError,
    JudgeUnavailableError,
    ScorecarError,
    ScorerError,
    ScorerRunError,
)
from scorers.filtering import FilterRun, filter_run
from scorers.judge import (
    Judge,
    JudgeProvider,
    JudgeReply,
    JudgeRequest,
    default_model,
    use_judge_provider,
)
from scorers.processors import Matcher, RetryDecision, StreamErrorRetryProcessor
from scorers.records import score_record, skipped_record
from scorers.redact import PiiRedactor
from scorers.sampling import NoSampling, RatioSampling, Sampling, is_sampled
from scorers.types import (
    AgentRunInput,
    JudgeExecution,
    Message,
    RunTarget,
    ScoreRecord,
    ScorerResult,
    ScorerRun,
    SystemMessage,
    ToolInvocation,
)

__all__ = [
    "AgentRunInput",
    "ConfigError",
    "FilterRun",
    "Judge",
    "JudgeAuthError",
    "JudgeExecution",
    "JudgeParseError",
    "JudgeProvider",
    "JudgeReply",
    "JudgeRequest",
    "JudgeRequestError",
    "JudgeUnavailableError",
    "Matcher",
    "Message",
    "NoSampling",
    "NotScorable",
    "PiiRedactor",
    "PromptStep",
    "RatioSampling",
    "RetryDecision",
    "RunTarget",
    "Sampling",
    "ScoreRecord",
    "ScorecarError",
    "Scorer",
    "ScorerError",
    "ScorerResult",
    "ScorerRun",
    "ScorerRunError",
    "StepResults",
    "StreamErrorRetryProcessor",
    "SystemMessage",
    "ToolInvocation",
    "create_scorer",
    "default_model",
    "filter_run",
    "is_sampled",
    "not_scorable",
    "score_record",
    "skipped_record",
    "use_judge_provider",
]
