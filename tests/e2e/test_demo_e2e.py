"""`scorecar demo --once`: the README's first command, end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_demo_once_scores_six_libraries_and_exits_0() -> None:
    env = {k: v for k, v in os.environ.items()
           if k != "ANTHROPIC_API_KEY" and not k.startswith("OTEL_")}
    proc = subprocess.run([sys.executable, "-m", "collector.cli", "demo", "--once"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for library in ("otel-genai", "mastra", "openinference", "openllmetry", "pydantic-ai",
                    "vercel-ai-sdk"):
        assert library in out
    for scorer in ("completeness", "keyword_coverage", "tone", "tool_call_accuracy"):
        assert scorer in out
    assert "44 score records (0 failed)" in out
    assert "What is the weather in Paris?" in out
    assert "/metrics" in out
