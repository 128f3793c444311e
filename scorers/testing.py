"""Test judge scorers offline: `ScriptedProvider`, an in-process judge (like httpx's
`MockTransport`)."""

from __future__ import annotations

import inspect
import json
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from scorers._provider import JudgeReply, JudgeRequest

__all__ = ["Reply", "ScriptedProvider"]

Reply = JudgeReply | str | dict[str, Any] | list[Any] | BaseException
"""What a script gives for one call: a `JudgeReply`; a string (the judge's text); a dict or
list (the JSON the judge answers: as the forced tool call's input when the request forced one,
else as text, as Anthropic structured outputs return it); or an exception to raise (e.g.
`JudgeUnavailableError("busy", retry_after=1.0)`)."""


class ScriptedProvider:
    """A `JudgeProvider` that answers from a script, in process: no network, no API key.

    Args:
        replies: the replies in call order (a `Reply` each), or a function (sync or async)
            called with each `JudgeRequest` and returning its `Reply`.

    Attributes:
        requests: every request received, in order (model, system prompt, messages, the
            output schema or forced tool).

    Raises (from `complete`):
        LookupError: the script has no reply left for a call.

    Example:
        ```python
        from scorers import use_judge_provider
        from scorers.testing import ScriptedProvider

        judge = ScriptedProvider([{"relevant_statements": 1, "total_statements": 2},
                                  "Only one statement is about the river."])
        result = await relevance.run(run, judge_provider=judge)   # or:
        with use_judge_provider(judge):
            result = await relevance.run(run)
        assert result.score == 0.5
        assert "<answer>" in judge.requests[0].messages[-1]["content"]
        ```

        A provider's errors are scripted too, and go through the judge's error processors as
        the real ones do: `ScriptedProvider([JudgeUnavailableError("busy", retry_after=0.1),
        {"score": 1}])`.
    """

    def __init__(self, replies: Iterable[Reply]
                 | Callable[[JudgeRequest], Reply | Awaitable[Reply]]) -> None:
        self._handler = replies if callable(replies) else None
        self._script: deque[Reply] = deque() if callable(replies) else deque(replies)
        self.requests: list[JudgeRequest] = []

    def __repr__(self) -> str:
        left = "a function" if self._handler is not None else f"{len(self._script)} left"
        return f"ScriptedProvider({left}, {len(self.requests)} requests)"

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        """Answer one request from the script (a `JudgeProvider`)."""
        self.requests.append(request)
        if self._handler is not None:
            reply = self._handler(request)
            if inspect.isawaitable(reply):
                reply = await reply
        elif self._script:
            reply = self._script.popleft()
        else:
            raise LookupError(f"ScriptedProvider: no reply left for request "
                              f"{len(self.requests)}")
        return _as_reply(reply, request)


def _as_reply(reply: Any, request: JudgeRequest) -> JudgeReply:
    if isinstance(reply, BaseException):
        raise reply
    if isinstance(reply, JudgeReply):
        return reply
    if isinstance(reply, str):
        return JudgeReply(text=reply)
    if isinstance(reply, (dict, list)):
        if request.tool is not None:  # a non-object answer is sent as the tool's "value"
            return JudgeReply(text="", tool_input=reply if isinstance(reply, dict)
                              else {"value": reply})
        return JudgeReply(text=json.dumps(reply))
    raise TypeError(f"a scripted reply must be a JudgeReply, str, dict, list or exception, "
                    f"not {type(reply).__name__}")
