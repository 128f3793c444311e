"""A scorer as the sidecar runs it: the scorer plus its config-level filter, sampling and
timeout (DESIGN §8 `scorers[]`). The config builds these; the scheduler and workers read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scorers import Scorer, ScorerRun
from scorers.sampling import NoSampling, RatioSampling

__all__ = ["RunFilter", "ScorerSpec"]


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a scorer sees. Empty fields match everything.

    Attributes:
        agents: agent names (`target.entityName`) or ids (`target.entityId`).
        conventions: `target.convention` values (`genai`, `mastra`, …).
        attributes: key → value that must equal the run's resource attribute or request
            context entry of that key (either place matches).
    """

    agents: tuple[str, ...] = ()
    conventions: tuple[str, ...] = ()
    attributes: Mapping[str, Any] = field(default_factory=dict)

    def matches(self, run: ScorerRun) -> bool:
        """True when `run` passes every non-empty field."""
        t = run.target
        if self.agents and (t is None or (t.entity_name not in self.agents
                                          and t.entity_id not in self.agents)):
            return False
        if self.conventions and (t is None or t.convention not in self.conventions):
            return False
        if self.attributes:
            resource = t.resource if t is not None else {}
            for key, want in self.attributes.items():
                if resource.get(key, _MISSING) != want and \
                        run.request_context.get(key, _MISSING) != want:
                    return False
        return True


_MISSING = object()


@dataclass(frozen=True, slots=True)
class ScorerSpec:
    """One configured scorer.

    Attributes:
        scorer: the scorer itself.
        sampling: which traces it scores (deterministic by trace id).
        filter: which runs it sees.
        timeout: seconds one run of it may take, judge calls included.
    """

    scorer: Scorer
    sampling: NoSampling | RatioSampling = field(default_factory=NoSampling)
    filter: RunFilter = field(default_factory=RunFilter)
    timeout: float = 30.0

    @property
    def id(self) -> str:
        """The scorer's id."""
        return self.scorer.id
