"""The repo's copy of the team's convention fixtures matches ../shared, when ../shared is there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COPY = ROOT / "tests" / "testdata" / "conventions" / "convention-fixtures.json"
SHARED = ROOT.parent / "shared" / "reference" / "convention-fixtures.json"


def test_fixture_copy_matches_shared() -> None:
    if not SHARED.exists():
        pytest.skip("../shared is not beside this clone (it is in CI)")
    assert json.loads(COPY.read_text(encoding="utf-8")) == json.loads(
        SHARED.read_text(encoding="utf-8")), (
        "../shared/reference/convention-fixtures.json changed: copy it to " + str(COPY))
