"""Each package's public names exist, and dependencies point one way (DESIGN §1)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["collector", "transforms", "scorers", "exporters"]

# What each package may import from the others: collector → transforms → scorers ← exporters,
# plus collector → exporters and collector → scorers. Nothing imports collector.
ALLOWED = {
    "collector": {"transforms", "scorers", "exporters"},
    "transforms": {"scorers"},
    "scorers": set(),
    "exporters": {"scorers"},
}


@pytest.mark.parametrize("package", PACKAGES)
def test_all_names_resolve(package: str) -> None:
    module = importlib.import_module(package)
    names = module.__all__
    assert len(names) == len(set(names)), f"{package}.__all__ has duplicates"
    for name in names:
        assert hasattr(module, name), f"{package}.__all__ lists {name!r}, which is missing"


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_dependencies_point_one_way(package: str) -> None:
    forbidden = set(PACKAGES) - ALLOWED[package] - {package}
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = _imported_packages(path) & forbidden
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert not offenders, "\n".join(offenders)


def test_scorers_exports_the_design_names() -> None:
    import scorers

    required = {"create_scorer", "PromptStep", "Judge", "StreamErrorRetryProcessor",
                "filter_run", "not_scorable", "ScorerRunError", "ScorerRun", "ScorerResult",
                "Message", "SystemMessage", "AgentRunInput", "ScoreRecord"}
    missing = required - set(scorers.__all__)
    assert not missing, f"scorers.__all__ lacks {sorted(missing)}"
