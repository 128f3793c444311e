"""The scorer API: a Python port of Mastra's `createScorer` (DESIGN §4).

Users write `from scorers import create_scorer, PromptStep, Judge`.
"""

from scorers.errors import (
    ConfigError,
    JudgeAuthError,
    JudgeParseError,
    JudgeUnavailableError,
    ScorecarError,
    ScorerError,
    ScorerRunError,
)
from scorers.types import (
    AgentRunInput,
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
    "JudgeAuthError",
    "JudgeParseError",
    "JudgeUnavailableError",
    "Message",
    "RunTarget",
    "ScoreRecord",
    "ScorecarError",
    "ScorerError",
    "ScorerResult",
    "ScorerRun",
    "ScorerRunError",
    "SystemMessage",
    "ToolInvocation",
]
