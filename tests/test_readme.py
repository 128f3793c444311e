"""The README's runnable snippets print what the README says they print."""

from __future__ import annotations

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


def test_first_command_is_the_inspect_of_a_shipped_trace() -> None:
    first = re.search(r"```bash\n(.*?)\n", README)
    assert first, "README must start with its two commands"
    trace = re.search(r"scorecar inspect (\S+)", first.group(1))
    assert trace and (ROOT / trace.group(1)).is_file()
    done = subprocess.run([sys.executable, "-m", "collector.cli", "inspect", trace.group(1)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    summary = re.search(r"\$ scorecar inspect \S+ > runs.jsonl\n(.*?)\n", README)
    assert summary and summary.group(1) in done.stderr
    assert len(done.stdout.splitlines()) == 2
