"""The README's runnable snippets print what the README says they print."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _python_block_with_output(marker: str) -> tuple[str, str]:
    """The ```python block containing `marker` and the plain ``` block right after it."""
    body = r"((?:(?!```).)*)"  # a block's text: no fence inside
    pattern = re.compile(rf"```python\n{body}```\s*\n```(?:console)?\n{body}```", re.S)
    for code, output in pattern.findall(README):
        if marker in code:
            return code, output
    raise AssertionError(f"no python block with {marker!r} followed by its output in README")


def test_builtin_scorers_snippet_prints_the_readme_scores() -> None:
    code, expected = _python_block_with_output("get_builtin(\"completeness\")")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == expected.split()


def test_redactor_command_prints_the_readme_line() -> None:
    match = re.search(r"\$ python -c '(.*?)'\n(.*?)\n```", README, re.S)
    assert match, "README lost the PiiRedactor example"
    code, expected = match.groups()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected.strip()


def test_first_command_runs_the_demo_and_prints_the_readme_table() -> None:
    first = re.search(r"```bash\n(.*?)\n", README)
    assert first, "README must start with its two commands"
    assert "scorecar demo --once" in first.group(1)
    env = {k: v for k, v in os.environ.items()
           if k != "ANTHROPIC_API_KEY" and not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-m", "collector.cli", "demo", "--once"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = re.search(r"```console\n\$ scorecar demo --once\n(.*?)```", README, re.S)
    assert shown, "README lost the demo's output"
    rows = [line for line in shown.group(1).splitlines() if line.startswith(("┃", "│"))]
    assert len(rows) == 12  # the header and one row per agent run of the six libraries
    assert rows == [line for line in done.stdout.splitlines() if line.startswith(("┃", "│"))]
    assert "44 score records (0 failed)" in done.stdout


def test_inspect_example_prints_the_readme_summary() -> None:
    summary = re.search(r"\$ scorecar inspect (\S+) \| jq[^\n]*\n(scorecar inspect: [^\n]*)\n",
                        README)
    assert summary, "README lost the inspect example"
    trace, line = summary.groups()
    done = subprocess.run([sys.executable, "-m", "collector.cli", "inspect", trace],
                          capture_output=True, text=True, cwd=ROOT, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert line in done.stderr
    assert len(done.stdout.splitlines()) == 2
