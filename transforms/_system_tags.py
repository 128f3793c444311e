"""System messages a framework adds with a fixed header, and the tag the framework gives them.

Mastra hands its live scorers the system messages its memory and processors add under a tag
(`taggedSystemMessages`: `memory` for working memory and semantic recall,
`processor-retry-feedback` for a processor's retry feedback); its OTel export keeps the texts
and drops the tags. The texts start with fixed headers, so the tag can be read back from them.
Every header here is copied from the framework's source (the version is named); a system message
none of them starts is not recognised (the run builder files it under `runtime`).

Not in the table, because nothing in the text says what it is: Mastra's per-call `system`
option (tag `user-provided`) and MCP server instructions (`mcp-guidance`), whose texts the app or
server chooses; Mastra's observational memory (`observational-memory`), whose observation chunks
carry no header. The other frameworks captured here add no separate memory system message:
Agno (3.1) appends `<memories_from_previous_interactions>` and `<summary_of_previous_interactions>`
to its one system message, Google ADK (2.13) preloads memory as a user message and Strands
(1.62) puts its conversation summary among the messages.
"""

from __future__ import annotations

__all__ = ["HEADERS", "tag_for"]

# (header, tag), checked with str.startswith on the message text.
HEADERS: tuple[tuple[str, str], ...] = (
    # @mastra/core 1.71 processors/memory/working-memory.ts: getWorkingMemoryToolInstruction,
    # its VNext form, and getReadOnlyWorkingMemoryInstruction ("… (READ-ONLY):").
    ("WORKING_MEMORY_SYSTEM_INSTRUCTION", "memory"),
    # @mastra/core 1.71 processors/memory/semantic-recall.ts: formatCrossThreadMessages
    # (messages recalled from the resource's other threads).
    ("The following messages were remembered from a different conversation:", "memory"),
    # @mastra/core 1.71 loop/workflows/agentic-execution/llm-execution-step.ts: the feedback a
    # retrying output processor gives the model.
    ("[Processor Feedback] Your previous response was not accepted:", "processor-retry-feedback"),
)
_FIRST_CHARS = tuple({header[0] for header, _ in HEADERS})


def tag_for(text: str) -> str | None:
    """The framework's tag for a system message, when its text starts with a known header.

    Args:
        text: the system message's text.

    Returns:
        The tag (e.g. `memory`), or None when no known header starts the text.
    """
    if not text.startswith(_FIRST_CHARS):  # one check for the common case
        return None
    for header, tag in HEADERS:
        if text.startswith(header):
            return tag
    return None
