"""Each package's public names exist, and dependencies point one way (DESIGN §1)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
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


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_module_declares_its_public_names(package: str) -> None:
    """Each package and each of its public modules has an `__all__` of existing, public names;
    modules whose names start with `_` are internal and are not checked."""
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        module = importlib.import_module(info.name)
        names = getattr(module, "__all__", None)
        assert names is not None, f"{info.name} has no __all__"
        assert len(names) == len(set(names)), f"{info.name}.__all__ has duplicates"
        private = [n for n in names if n.startswith("_")]
        assert not private, f"{info.name}.__all__ lists private names {private}"
        missing = [n for n in names if not hasattr(module, n)]
        assert not missing, f"{info.name}.__all__ lists missing names {missing}"


# What a user imports from `scorers`: one screen. A change here is an API change.
SCORERS_API = {
    # building scorers
    "NotScorable", "PromptStep", "Scorer", "StepResults", "create_scorer", "filter_run",
    "not_scorable",
    # the judge
    "Judge", "JudgeProvider", "JudgeReply", "JudgeRequest", "Matcher", "PiiRedactor",
    "StreamErrorRetryProcessor", "default_model", "default_provider", "use_judge_provider",
    # runs, results, records
    "AgentRunInput", "ConversationAgent", "ConversationRun", "ConversationTurn", "Message",
    "RunTarget", "ScoreRecord", "ScorerResult", "ScorerRun",
    "SystemMessage", "score_record", "skipped_record",
    # sampling
    "NoSampling", "RatioSampling", "Sampling", "is_sampled",
    # errors
    "ConfigError", "ExportError", "JudgeAuthError", "JudgeParseError", "JudgeRequestError",
    "JudgeUnavailableError", "ScorecarError", "ScorerError", "ScorerRunError",
}

SCORERS_MODULE_API = {
    "scorers.judge": {"AnthropicProvider", "DEFAULT_MAX_PROCESSOR_RETRIES", "DEFAULT_MAX_TOKENS",
                      "DEFAULT_TIMEOUT", "Judge", "JudgeProvider", "JudgeReply", "JudgeRequest",
                      "OpenAIProvider", "RouterProvider", "default_model", "default_provider",
                      "use_judge_provider"},
    "scorers.processors": {"ErrorProcessor", "Matcher", "RetryDecision",
                           "StreamErrorRetryProcessor", "exponential_delay"},
    "scorers.errors": {"ConfigError", "ExportError", "JudgeAuthError", "JudgeParseError",
                       "JudgeRequestError", "JudgeUnavailableError", "ScorecarError",
                       "ScorerError", "ScorerRunError"},
    "scorers.builder": {"NotScorable", "PromptStep", "Scorer", "StepResults", "create_scorer",
                        "not_scorable"},
    "scorers.records": {"score_record", "skipped_record"},
    "scorers.testing": {"Reply", "ScriptedProvider"},
}


def test_scorers_exports_exactly_its_api() -> None:
    import scorers

    assert set(scorers.__all__) == SCORERS_API
    assert len(scorers.__all__) <= 45  # one screen


@pytest.mark.parametrize("module", sorted(SCORERS_MODULE_API))
def test_scorers_modules_export_exactly_their_api(module: str) -> None:
    assert set(importlib.import_module(module).__all__) == SCORERS_MODULE_API[module]


def test_judge_internals_stay_out_of_the_api() -> None:
    import scorers.judge

    for internal in ("call_judge", "ResolvedJudge", "JudgeOutcome", "JudgeCallFailed"):
        assert internal not in scorers.judge.__all__
    assert not hasattr(scorers.judge, "JudgeCallFailed")


def test_scorers_exports_the_design_names() -> None:
    import scorers

    required = {"create_scorer", "PromptStep", "Judge", "StreamErrorRetryProcessor",
                "filter_run", "not_scorable", "ScorerRunError", "ScorerRun", "ScorerResult",
                "Message", "SystemMessage", "AgentRunInput", "ScoreRecord"}
    missing = required - set(scorers.__all__)
    assert not missing, f"scorers.__all__ lacks {sorted(missing)}"


def test_the_anthropic_sdk_is_imported_by_the_provider_module_only() -> None:
    offenders = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "scorers").rglob("*.py"))
                 if "anthropic" in _imported_packages(path) and path.name != "_anthropic.py"]
    assert not offenders, f"only scorers/_anthropic.py may import anthropic: {offenders}"


def test_the_openai_sdk_is_imported_by_its_provider_module_only() -> None:
    offenders = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "scorers").rglob("*.py"))
                 if "openai" in _imported_packages(path) and path.name != "_openai.py"]
    offenders += [str(path.relative_to(ROOT))
                  for room in ("collector", "transforms", "exporters")
                  for path in sorted((ROOT / room).rglob("*.py"))
                  if {"openai", "anthropic"} & _imported_packages(path)]
    assert not offenders, f"only scorers/_openai.py may import openai: {offenders}"


def test_the_sdk_of_the_judge_loads_only_when_a_judge_is_called() -> None:
    """`anthropic` weighs ~70 MiB, `openai` tens: a sidecar with code scorers only never imports
    either."""
    import subprocess
    import sys

    code = ("import sys, collector.service, collector.cli, scorers, scorers.builtin; "
            "from scorers.builtin import get_builtin; get_builtin('completeness'); "
            "print('anthropic' in sys.modules, 'openai' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)
    assert done.stdout.strip() == "False False"


IDLE_SIDECAR = r"""
import asyncio, sys, tempfile
from pathlib import Path
from collector.config import build_scorer_specs, load_config
from collector.service import Sidecar

async def main():
    path = Path(tempfile.mkdtemp()) / "c.yaml"
    path.write_text(
        'receivers: {grpc: {endpoint: "127.0.0.1:0"}, http: {endpoint: "127.0.0.1:0"}}\n'
        'storage: {kind: memory}\n'
        'exporters: {prometheus: {endpoint: "127.0.0.1:0"}}\n'
        'judge: {model: "openai/gpt-4.1-mini"}\n'
        'judges: {claude: {model: "anthropic/claude-haiku-4-5"}}\n'
        'scorers: [{scorer: "builtin:toxicity"}, {scorer: "builtin:bias", judge: claude}]\n')
    config = load_config(path, env={"OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "sk-y"})
    async with Sidecar(config, build_scorer_specs(config)):
        await asyncio.sleep(0.2)
        print("anthropic" in sys.modules, "openai" in sys.modules)

asyncio.run(main())
"""


def test_an_idle_sidecar_with_judge_scorers_imports_no_provider_sdk() -> None:
    """Started, with judge scorers of both providers, and no judge job yet: neither SDK is
    imported (it is imported in a worker thread when the first judge job is picked up)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", IDLE_SIDECAR], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False False"


def test_a_sidecar_without_an_otlp_endpoint_never_loads_the_otel_sdk_or_jsonschema() -> None:
    """Idle footprint: the OpenTelemetry SDK (~6 MiB) is for the OTLP exporter and the demo's
    sender, jsonschema (~8 MiB) for JSON-schema dict output schemas; a sidecar with neither
    loads neither — and loads the SDK once an endpoint is configured."""
    import subprocess
    import sys

    code = ("import sys, os; os.environ.pop('OTEL_EXPORTER_OTLP_ENDPOINT', None); "
            "from collector.config import load_config; from collector._telemetry import Metrics; "
            "from collector.service._sidecar import build_sinks; import collector.cli; "
            "c = load_config(None); build_sinks(c, Metrics()); "
            "print('opentelemetry.sdk' in sys.modules, 'jsonschema' in sys.modules); "
            "os.environ['OTEL_EXPORTER_OTLP_ENDPOINT'] = 'http://127.0.0.1:1'; "
            "build_sinks(c, Metrics()); "
            "print('opentelemetry.sdk' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)
    assert done.stdout.split() == ["False", "False", "True"], done.stdout + done.stderr


# collector/'s rooms (DESIGN §1), lowest first: a room imports only rooms of a lower rank, so
# there is no import circle and nothing imports upward. The data path reads left to right; the
# config sits above scoring (it resolves scorers into specs) and below the components it
# configures; service wires everything and cli sits on top.
ROOM_RANK = {
    "_retry": 0, "_telemetry": 0,
    "otlp": 1,
    "intake": 2,
    "scoring": 3,
    "conversations": 4,
    "config": 5,
    "receivers": 6, "forward": 6,
    "service": 7,
    "cli": 8,
}


def _room_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "collector" or len(parts) < 2:
        return None
    return parts[1].removesuffix(".py")


def test_collector_rooms_import_downward_only() -> None:
    offenders = []
    for path in sorted((ROOT / "collector").rglob("*.py")):
        rel = path.relative_to(ROOT / "collector")
        room = rel.parts[0].removesuffix(".py")
        if room == "__init__":
            continue
        assert room in ROOM_RANK, f"collector/{rel}: room {room!r} is not in DESIGN §1's map"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
                if node.module == "collector":
                    names = [f"collector.{a.name}" for a in node.names]
            for name in names:
                other = _room_of(name)
                if other is None or other == room:
                    continue
                if other not in ROOM_RANK or ROOM_RANK[other] >= ROOM_RANK[room]:
                    offenders.append(f"collector/{rel} ({room}) imports {name} ({other})")
    assert not offenders, "\n".join(offenders)


def test_collector_offers_the_process() -> None:
    import collector

    assert set(collector.__all__) == {"Sidecar", "load_config", "main"}
    from collector.cli import main
    from collector.config import load_config
    from collector.service import Sidecar

    assert (collector.Sidecar, collector.load_config, collector.main) == (
        Sidecar, load_config, main)
