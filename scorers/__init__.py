"""The scorer API: a Python port of Mastra's `createScorer` (DESIGN §4).

Users write `from scorers import create_scorer, PromptStep, Judge`. Everything a scorer author
or the sidecar needs is here; the rest lives in the public modules `scorers.types` (the data
model), `scorers.judge`, `scorers.processors`, `scorers.errors`, `scorers.sampling`,
`scorers.records`, `scorers.semconv`, `scorers.builtin` and `scorers.testing`
(`ScriptedProvider`, an offline judge). Modules whose names start with `_` are internal.
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
    ExportError,
    JudgeAuthError,
    JudgeParseError,
    JudgeRequestError,
    JudgeUnavailableError,
    ScorecarError,
    ScorerError,
    ScorerRunError,
)
from scorers.filtering import filter_run
from scorers.judge import (
    Judge,
    JudgeProvider,
    JudgeReply,
    JudgeRequest,
    default_model,
    default_provider,
    use_judge_provider,
)
from scorers.processors import Matcher, StreamErrorRetryProcessor
from scorers.records import score_record, skipped_record
from scorers.redact import PiiRedactor
from scorers.sampling import NoSampling, RatioSampling, Sampling, is_sampled
from scorers.types import (
    AgentRunInput,
    ConversationAgent,
    ConversationRun,
    ConversationTurn,
    Message,
    RunTarget,
    ScoreRecord,
    ScorerResult,
    ScorerRun,
    SystemMessage,
)

__all__ = [
    # building scorers
    "NotScorable",
    "PromptStep",
    "Scorer",
    "StepResults",
    "create_scorer",
    "filter_run",
    "not_scorable",
    # the judge
    "Judge",
    "JudgeProvider",
    "JudgeReply",
    "JudgeRequest",
    "Matcher",
    "PiiRedactor",
    "StreamErrorRetryProcessor",
    "default_model",
    "default_provider",
    "use_judge_provider",
    # runs, results, records
    "AgentRunInput",
    "ConversationAgent",
    "ConversationRun",
    "ConversationTurn",
    "Message",
    "RunTarget",
    "ScoreRecord",
    "ScorerResult",
    "ScorerRun",
    "SystemMessage",
    "score_record",
    "skipped_record",
    # sampling
    "NoSampling",
    "RatioSampling",
    "Sampling",
    "is_sampled",
    # errors
    "ConfigError",
    "ExportError",
    "JudgeAuthError",
    "JudgeParseError",
    "JudgeRequestError",
    "JudgeUnavailableError",
    "ScorecarError",
    "ScorerError",
    "ScorerRunError",
]
