"""`scorecar` imports a command's module only when it runs (or `--help` lists it): `inspect`
starts without the sidecar, the config or the demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from collector.cli import main

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl"

_PROBE = """
import json, sys
from collector.cli import main
try:
    main(["inspect", sys.argv[1]])
except SystemExit as exc:
    code = exc.code
print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)
"""


def test_inspect_loads_neither_the_sidecar_nor_the_config() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE, str(EXAMPLE)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    code, modules = json.loads(done.stderr.splitlines()[-1])
    assert code == 0
    heavy = {"collector.config", "collector.service", "collector.cli._demo",
             "collector.cli._score", "collector.cli._serve", "rich"}
    assert not heavy & set(modules)


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.output.split("Commands:")[1].splitlines()
              if line.strip()]
    assert listed == ["check-config", "demo", "inspect", "score", "serve"]
