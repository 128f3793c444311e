"""The repo's copy of the team's convention fixtures matches ../shared.

In CI (`CI=true`, as CI services set it) ../shared must be beside the clone: a missing copy fails
the test, so a silently skipped check cannot pass for a passed one. Elsewhere (a clone on its
own) the test is skipped with the reason.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COPY = ROOT / "tests" / "testdata" / "conventions" / "convention-fixtures.json"
SHARED = ROOT.parent / "shared" / "reference" / "convention-fixtures.json"


def in_ci(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """`CI` set to a true value (`true`, `1`, `yes`; any case)."""
    return environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def check_fixture_copy(shared: Path, ci: bool) -> None:
    """Fail (in CI) or skip (elsewhere) without `shared`; else compare the two documents."""
    if not shared.exists():
        message = f"{shared} is missing: the convention fixtures cannot be compared"
        if ci:
            pytest.fail(f"{message} (CI=true: ../shared must be beside the clone)")
        pytest.skip(f"{message} (not in CI; set CI=true to make this a failure)")
    assert json.loads(COPY.read_text(encoding="utf-8")) == json.loads(
        shared.read_text(encoding="utf-8")), (
        f"{shared} changed: copy it to {COPY}")


def test_fixture_copy_matches_shared() -> None:
    check_fixture_copy(SHARED, in_ci())


def test_a_missing_shared_copy_fails_in_ci_and_skips_elsewhere(tmp_path: Path) -> None:
    missing = tmp_path / "shared" / "reference" / "convention-fixtures.json"
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        check_fixture_copy(missing, ci=True)
    with pytest.raises(pytest.skip.Exception, match="not in CI"):
        check_fixture_copy(missing, ci=False)


@pytest.mark.parametrize(("value", "expected"), [
    ("true", True), ("TRUE", True), ("1", True), ("yes", True),
    ("", False), ("false", False), ("0", False)])
def test_ci_is_read_from_the_environment(value: str, expected: bool) -> None:
    assert in_ci({"CI": value}) is expected
    assert in_ci({}) is False
