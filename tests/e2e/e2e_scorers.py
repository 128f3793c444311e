"""Scorers the end-to-end tests load by import path (`tests.e2e.e2e_scorers:NAME`)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from scorers import create_scorer


def _random(run: Any, results: Any) -> float:
    # A score that would differ on every re-run: a second value for one score id shows up.
    return random.random()


random_score = create_scorer(id="random", description="a different score on every run") \
    .generate_score(_random)


async def _hang(run: Any, results: Any) -> float:
    await asyncio.sleep(3600)
    return 1.0


hang = create_scorer(id="hang", description="never finishes").generate_score(_hang)


def _boom(run: Any, results: Any) -> float:
    raise RuntimeError("this scorer always raises")


boom = create_scorer(id="boom", description="always raises").generate_score(_boom)
