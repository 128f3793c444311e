"""The README's judge configs (OpenAI, Azure OpenAI, vLLM, Ollama): each YAML block, as written,
is accepted by `scorecar check-config`, and scores a run against the strict fake OpenAI server
(only the endpoint is pointed at the fake, with `SCORECAR_JUDGE__BASE_URL` and
`SCORECAR_JUDGES__STRONG__BASE_URL`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collector.cli import main
from collector.config import build_scorer_specs, load_config
from collector.scoring import run_scorer
from scorers import ScorerResult, ScorerRun
from tests.fakes.fake_openai import FakeOpenAI, RecordedRequest, StructuredReply, TextReply

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTION = README.split("### Choosing the judge", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
BLOCKS = {m.group(1).split(" (")[0]: m.group(0)[len("```yaml\n"):-len("```")]
          for m in re.finditer(r"```yaml\n# judge: (.*?)\n.*?```", SECTION, re.S)}
KEYS = {"OpenAI": ("OPENAI_API_KEY", "sk-openai-readme"),
        "Azure OpenAI": ("AZURE_OPENAI_API_KEY", "azure-readme-key"),
        "vLLM in the cluster": (None, "EMPTY"), "Ollama": (None, "EMPTY")}


def test_the_readme_has_the_four_judge_configs() -> None:
    assert set(BLOCKS) == set(KEYS)


def _reply(request: RecordedRequest) -> Any:
    if request.response_format == "json_schema" or request.forced_tool:
        return StructuredReply({"results": [{"statement": "s", "result": "yes", "reason": "r"}],
                                "verdicts": [{"opinion": "o", "verdict": "no", "reason": "r"}]})
    return TextReply("Because.")


@pytest.mark.parametrize("name", sorted(KEYS))
async def test_readme_judge_config_checks_and_scores(name: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    variable, key = KEYS[name]
    path = tmp_path / "scorecar.yaml"
    path.write_text(BLOCKS[name], encoding="utf-8")
    with FakeOpenAI(strict=True, api_key=key, default_reply=_reply) as fake:
        azure = "api_version" in BLOCKS[name]
        env = {"SCORECAR_JUDGE__BASE_URL": (f"http://127.0.0.1:{fake.port}" if azure
                                            else fake.base_url)}
        if "judges:" in BLOCKS[name]:
            env["SCORECAR_JUDGES__STRONG__BASE_URL"] = fake.base_url
        if variable is not None:
            env[variable] = key
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        checked = CliRunner().invoke(main, ["check-config", "-c", str(path)])
        assert checked.exit_code == 0, checked.output
        assert "judge default: openai/" in checked.output
        assert key not in checked.output or key == "EMPTY"
        config = load_config(path, env=env)
        specs = build_scorer_specs(config)
        for spec in specs:
            outcome, _ = await run_scorer(spec, ScorerRun(input="Will it rain?",
                                                          output="Yes, take an umbrella."))
            assert isinstance(outcome, ScorerResult), (spec.id, outcome)
        assert not fake.take_rejections() and not fake.problems
        sent = fake.chat_requests
    assert sent
    model = re.search(r"model: openai/(\S+)", BLOCKS[name])
    assert model is not None and sent[0].body["model"] == model.group(1)
    if azure:
        assert sent[0].path.startswith(f"/openai/deployments/{model.group(1)}/")
