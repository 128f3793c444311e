"""Mutation testing (not run in CI: too slow): which deliberate bugs does the suite miss?

Runs mutmut 3 (`pip install -e '.[mutation]'`) over the modules named in issue 13, one group at
a time, each with only the tests that exercise it:

    judge       scorers/judge.py            tests/scorers/test_judge.py, test_processors.py
    processors  scorers/processors.py       the same
    builtins    the code built-ins          tests/scorers/builtin
    transforms  transforms/*.py             tests/transforms
    intake      collector/intake/*.py       tests/collector/intake, the export-timing tests
    queue       collector/scoring/queue/    tests/collector/scoring/test_queue.py, test_workers.py

mutmut rewrites code only in its own `mutants/` copy; this script goes one step further and
runs each group in a scratch workspace (`.mutation/<group>/`, git-ignored) holding a copy of the
packages and tests plus a generated `[tool.mutmut]` section, so the working tree is never
touched and each group gets its own test selection (mutmut then narrows it per function to the
tests that covered that function). Printed per module: mutants, killed, survived, timeouts,
other (no tests / suspicious / not checked), then every survivor as file:line and its diff.

    python bench/mutation.py [--group NAME ...] [--module PATH ...] [--every K]
                             [--keep | --survivors | --report]

`--every K` runs a deterministic sample: every K-th mutant (sorted by name) of each module.
`--module` limits a group to some of its files (e.g. transforms/_calls.py). `--keep` reuses
the workspaces of a previous run (mutmut caches results per mutant); without it they are
rebuilt from the working tree. `--survivors` reruns only the previous run's survivors, with the
tests as they are now (the new test_mutants_* files are copied in). `--report` only prints the
results already in the workspaces.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".mutation"
BUILTINS = (
    "completeness",
    "content_similarity",
    "keyword_coverage",
    "textual_difference",
    "tone",
    "tool_call_accuracy",
    "checks",
    "_elements",
    "_messages",
)
# The packages every group's tests import (collector: the transforms tests decode captures).
PACKAGES = ("collector", "transforms", "scorers", "exporters")
PYTEST_ARGS = ["-p", "no:cacheprovider", "-n", "0"]  # mutmut runs pytest in process
# mutmut's exit codes (mutmut.stats.status_by_exit_code), folded into the printed columns.
STATUS = {1: "killed", 3: "killed", 37: "killed", 0: "survived", 36: "timeout", 24: "timeout",
          -24: "timeout", 152: "timeout", 255: "timeout"}


@dataclass(frozen=True)
class Group:
    """Modules mutated together and the tests that exercise them."""

    name: str
    source: str  # the package mutmut copies (and mutates where `modules` allow)
    modules: tuple[str, ...]
    tests: tuple[str, ...]


# The retry tests (test_processors) drive judge.py's call loop; test_judge drives processors.
JUDGE_TESTS = ("tests/scorers/test_judge.py", "tests/scorers/test_processors.py",
               "tests/scorers/test_mutants_judge*.py", "tests/scorers/test_mutants_processors*.py")

GROUPS = (
    Group("judge", "scorers", ("scorers/judge.py",), JUDGE_TESTS),
    Group("processors", "scorers", ("scorers/processors.py",), JUDGE_TESTS),
    Group("builtins", "scorers", tuple(f"scorers/builtin/{m}.py" for m in BUILTINS),
          ("tests/scorers/builtin", "tests/scorers/test_mutants_builtin*.py")),
    Group("transforms", "transforms",
          tuple(sorted(str(p.relative_to(ROOT)) for p in (ROOT / "transforms").glob("*.py"))),
          ("tests/transforms",)),
    # The durability core (the production-behaviour issue): trace assembly, the span log and
    # ingest; the job queue.
    Group("intake", "collector",
          tuple(f"collector/intake/{m}.py" for m in ("_assembly", "_held", "_spanlog",
                                                     "_ingest")),
          ("tests/collector/intake", "tests/collector/scoring/test_export_timing.py",
           "tests/collector/test_mutants_intake*.py")),
    Group("queue", "collector",
          tuple(f"collector/scoring/queue/{m}.py" for m in ("_sqlite", "_memory", "_job")),
          ("tests/collector/scoring/test_queue.py", "tests/collector/scoring/test_workers.py",
           "tests/collector/test_mutants_queue*.py")),
)


def _expand(ws: Path, tests: tuple[str, ...]) -> list[str]:
    """Test paths, globs (the new test_mutants_* files) expanded to the files that exist."""
    return [str(p.relative_to(ws)) for t in tests for p in sorted(ws.glob(t))]


def _toml_list(items: list[str] | tuple[str, ...]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def _prepare(group: Group, modules: tuple[str, ...], keep: bool) -> Path:
    ws = WORK / group.name
    if ws.exists() and not keep:
        shutil.rmtree(ws)
    if not ws.exists():
        ws.mkdir(parents=True)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "e2e", "deploy")
        for pkg in (*PACKAGES, "tests", "bench"):
            shutil.copytree(ROOT / pkg, ws / pkg, ignore=ignore)
    for new_test in ROOT.glob("tests/**/test_mutants_*.py"):  # kept up to date with --keep
        shutil.copy2(new_test, ws / new_test.relative_to(ROOT))
    pyproject = (ROOT / "pyproject.toml").read_text()
    pyproject = re.sub(r"\n\[tool\.mutmut\].*?(?=\n\[|\Z)", "", pyproject, flags=re.S)
    also = [p for p in (*PACKAGES, "bench") if p != group.source]  # tests import bench/ too
    pyproject += (
        "\n[tool.mutmut]\n"
        f"source_paths = [{json.dumps(group.source)}]\n"
        f"only_mutate = {_toml_list(modules)}\n"
        f"also_copy = {_toml_list(also)}\n"
        f"pytest_add_cli_args = {_toml_list(PYTEST_ARGS)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(_expand(ws, group.tests))}\n"
        "use_git_change_detection = false\n"
    )
    (ws / "pyproject.toml").write_text(pyproject)
    return ws


def _mutmut() -> list[str]:
    return [str(Path(sys.executable).with_name("mutmut"))]


def _meta(ws: Path, module: str) -> dict[str, int | None]:
    """Each mutant's exit code (None: not run), earlier results kept by --survivors included."""
    path = ws / "mutants" / (module + ".meta")
    if not path.exists():
        return {}
    codes: dict[str, int | None] = json.loads(path.read_text())["exit_code_by_key"]
    earlier = _earlier(ws).get(module, {})
    return {n: code if code is not None else earlier.get(n) for n, code in codes.items()}


def _earlier(ws: Path) -> dict[str, dict[str, int | None]]:
    path = ws / "earlier-results.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _keep_earlier(ws: Path, modules: tuple[str, ...]) -> None:
    """Save the results mutmut is about to drop (a new test selection resets them all)."""
    saved = _earlier(ws)
    for module in modules:
        saved[module] = _meta(ws, module)
    (ws / "earlier-results.json").write_text(json.dumps(saved))


def _generate(ws: Path) -> None:
    """Let mutmut copy, mutate and collect coverage stats, running no mutant yet."""
    # A filter matching nothing: mutmut stops (assertion) right after stats collection.
    subprocess.run([*_mutmut(), "run", "__no_such_mutant__"], cwd=ws, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _run(ws: Path, names: list[str]) -> None:
    # mutmut runs the named mutants even if cached; chunks keep the command line short.
    for i in range(0, len(names), 400):
        subprocess.run([*_mutmut(), "run", "--max-children", "2", *names[i:i + 400]], cwd=ws,
                       check=False, stdout=subprocess.DEVNULL)


def _def_line(module: str, name: str) -> int:
    """The line of the function a mutant lives in (mutmut names it x_f or xǁClassǁmethod)."""
    function = name.rsplit(".", 1)[-1].split("__mutmut_")[0]
    parts = ([p for p in function.removeprefix("x").split("ǁ") if p] if "ǁ" in function
             else [function.removeprefix("x_")])
    tree = ast.parse((ROOT / module).read_text())
    scope: list[ast.stmt] = tree.body
    for part in parts:
        for node in scope:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and \
                    node.name == part:
                scope = node.body
                line = node.lineno
                break
        else:
            return 0
    return line


def _diff(ws: Path, module: str, name: str) -> tuple[int, str]:
    out = subprocess.run([*_mutmut(), "show", name], cwd=ws, capture_output=True, text=True,
                         check=False).stdout
    line = offset = 0
    changed: list[str] = []
    for row in out.splitlines():
        m = re.match(r"@@ -(\d+)", row)
        if m:
            line = int(m.group(1))
            offset = 0
        elif row[:1] in "+-" and not row.startswith(("+++", "---")):
            if not changed:
                line += offset
            changed.append(row)
        elif not changed:
            offset += 1
    # The diff is of the function alone: its line 1 is the def line in the file.
    return _def_line(module, name) + line - 1, "\n".join(changed)


def _sample(names: list[str], every: int) -> list[str]:
    return sorted(names)[::every]


def _status(code: int | None) -> str:
    return "not run" if code is None else STATUS.get(code, "other")


def _sample_items(codes: dict[str, int | None], every: int) -> list[tuple[str, int | None]]:
    return [(n, codes[n]) for n in _sample(list(codes), every)]


def main(argv: list[str] | None = None) -> int:
    """Run the groups and print per-module figures and survivors."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", action="append", choices=[g.name for g in GROUPS])
    parser.add_argument("--module", action="append", help="only these files (repo paths)")
    parser.add_argument("--every", type=int, default=1, help="run every K-th mutant per module")
    parser.add_argument("--keep", action="store_true", help="reuse .mutation/ workspaces")
    parser.add_argument("--report", action="store_true", help="only print stored results")
    parser.add_argument("--survivors", action="store_true",
                        help="rerun only the survivors of the previous run (after new tests)")
    args = parser.parse_args(argv)

    total = Counter[str]()
    for group in GROUPS:
        if args.group and group.name not in args.group:
            continue
        modules = tuple(m for m in group.modules if not args.module or m in args.module)
        if not modules:
            continue
        started = time.monotonic()
        ws = _prepare(group, modules, keep=args.keep or args.report or args.survivors)
        if args.survivors:
            # Read before mutmut regenerates: a changed test selection resets stored results.
            chosen = [n for m in modules for n, code in _sample_items(_meta(ws, m), args.every)
                      if code == 0]
            _keep_earlier(ws, modules)
            # New tests cover functions mutmut has no record of: collect its stats again.
            (ws / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
            _generate(ws)
            _run(ws, chosen)
        elif not args.report:
            (ws / "earlier-results.json").unlink(missing_ok=True)
            _generate(ws)
            # With --keep, mutants already checked by an earlier run keep their result.
            chosen = [n for m in modules for n, code in _sample_items(_meta(ws, m), args.every)
                      if code is None or not args.keep]
            _run(ws, chosen)
        print(f"== {group.name} ({', '.join(group.tests)}; every {args.every}; "
              f"{time.monotonic() - started:.0f} s)")
        for module in modules:
            codes = _meta(ws, module)
            picked = _sample(list(codes), args.every)
            counts = Counter(_status(codes[n]) for n in picked)
            total.update(counts)
            print(f"{module}: mutants {len(codes)}, sampled {len(picked)}, "
                  f"killed {counts['killed']}, survived {counts['survived']}, "
                  f"timeouts {counts['timeout']}, other {counts['other']}, "
                  f"not run {counts['not run']}")
            for name in picked:
                if codes[name] == 0:
                    line, change = _diff(ws, module, name)
                    print(f"  SURVIVED {module}:{line} {name}")
                    for row in change.splitlines():
                        print(f"      {row}")
    print(f"== total: {dict(total)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
