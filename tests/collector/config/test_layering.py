"""The config package has no import circle: the models (and what they stand on) never import
scorer resolution, loading or the masked view, which import them."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "collector" / "config"
ABOVE_THE_MODELS = ("collector.config._scorers", "collector.config._load",
                    "collector.config._display")

# A fresh interpreter imports one module with `collector.config` stubbed by an empty package
# (its __init__ would import every module) and prints which config modules got imported.
_PROBE = """
import json, sys, types
package = types.ModuleType("collector.config")
package.__path__ = [sys.argv[2]]
sys.modules["collector.config"] = package
__import__(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("collector.config."))))
"""


def _imported_with(module: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _PROBE, module, str(PACKAGE)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    loaded: list[str] = json.loads(done.stdout)
    return loaded


@pytest.mark.parametrize("module", ["_fields", "_problems", "_secrets", "_models"])
def test_the_models_and_below_never_import_what_stands_on_them(module: str) -> None:
    loaded = _imported_with(f"collector.config.{module}")
    assert f"collector.config.{module}" in loaded
    assert not [m for m in ABOVE_THE_MODELS if m in loaded], loaded


@pytest.mark.parametrize("module", ["_fields", "_problems", "_secrets", "_models"])
def test_not_even_lazily(module: str) -> None:
    """No import inside a function either (the old circle was a lazy one)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    named = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            named |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    assert not [m for m in ABOVE_THE_MODELS if m in named], sorted(named)


def test_scorer_resolution_imports_the_models_not_loading() -> None:
    loaded = _imported_with("collector.config._scorers")
    assert "collector.config._models" in loaded
    assert "collector.config._load" not in loaded and "collector.config._display" not in loaded
