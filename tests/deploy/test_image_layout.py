"""The container image, without a container engine: the Dockerfile is read statically, then its
build steps are run in a temporary root exactly as written (same `pip install` commands, same
pinned requirements) and the image's entrypoint is started from that root the way a restricted
Kubernetes pod starts it: as the image's numeric user, with the root filesystem mounted
read-only in a private mount namespace, only the data volume writable. The sidecar must answer
`/healthz` and `/readyz`, and score a trace into the data volume.
"""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy._tools import ROOT

DOCKERFILE = ROOT / "Dockerfile"
RUNTIME_TXT = ROOT / "requirements" / "runtime.txt"
IMAGE_PYTHON = "/usr/bin/python3.11"
"""The Python of this machine with the image's minor version (python:3.11-slim)."""


# --------------------------------------------------------------------------- Dockerfile reading


@dataclass
class Instruction:
    """One Dockerfile instruction: keyword, flags (`--from=build`) and the rest."""

    keyword: str
    flags: dict[str, str]
    args: str

    def exec_form(self) -> list[str]:
        """The JSON (exec) form of the arguments."""
        value = json.loads(self.args)
        assert isinstance(value, list), f"{self.keyword} must use the JSON exec form"
        return [str(v) for v in value]


@dataclass
class Stage:
    """A `FROM … [AS name]` and its instructions."""

    base: str
    name: str | None
    steps: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [s for s in self.steps if s.keyword == keyword]

    def env(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for step in self.all("ENV"):
            for pair in shlex.split(step.args):
                key, _, value = pair.partition("=")
                out[key] = value
        return out


def parse_dockerfile(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARGs (with defaults) and the stages, ARGs substituted in FROM lines."""
    lines: list[str] = []
    current = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        lines.append(current + stripped)
        current = ""
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in lines:
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        flags: dict[str, str] = {}
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            name, _, value = flag[2:].partition("=")
            flags[name] = value
            rest = rest.lstrip()
        if keyword == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name] = default
        elif keyword == "FROM":
            base, _, name = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)],
                                   rest).partition(" AS ")
            stages.append(Stage(base.strip(), name.strip() or None))
        else:
            stages[-1].steps.append(Instruction(keyword, flags, rest.strip()))
    return args, stages


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8"))[1]


def test_dockerfile_is_a_slim_pinned_non_root_image(stages: list[Stage]) -> None:
    build, final = stages
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", final.base), final.base
    assert build.base == final.base
    # dependencies only from the pinned file, without resolution, then checked
    installs = " ".join(s.args for s in build.all("RUN"))
    assert "pip install --no-deps --only-binary=:all: -r /src/requirements/runtime.txt" in installs
    assert "pip install --no-deps /src" in installs and "pip check" in installs
    # a numeric non-root user that exists in the image and owns only the data volume
    (user,) = final.all("USER")
    assert re.fullmatch(r"[1-9]\d*:[1-9]\d*", user.args), "USER must be numeric uid:gid, not 0"
    uid, gid = user.args.split(":")
    setup = " ".join(s.args for s in final.all("RUN"))
    assert f"--uid {uid}" in setup and f"--gid {gid}" in setup
    env = final.env()
    data = env["SCORECAR_STORAGE__PATH"]
    assert f"chown {uid}:{gid} {data}" in setup
    assert env["TMPDIR"] == data, "temporary files must go to the data volume"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert final.all("VOLUME")[0].exec_form() == [data]
    (expose,) = final.all("EXPOSE")
    assert expose.args.split() == ["4317", "4318", "9464"]
    (entrypoint,) = final.all("ENTRYPOINT")
    command = entrypoint.exec_form()
    assert [Path(command[0]).name, *command[1:]] == ["scorecar", "serve"]
    # the final stage gets the venv from the build stage, nothing else
    (copy,) = final.all("COPY")
    assert copy.flags == {"from": build.name} and copy.args.split() == ["/opt/scorecar"] * 2


def test_dockerignore_lets_in_what_the_dockerfile_copies(stages: list[Stage]) -> None:
    allowed = {line[1:].rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.startswith("!")}
    for step in stages[0].all("COPY"):
        for src in step.args.split()[:-1]:
            assert src in allowed and (ROOT / src).exists(), src


def test_runtime_pins_cover_pyproject() -> None:
    import tomllib

    pins = {}
    for line in RUNTIME_TXT.read_text().splitlines():
        if line and not line.startswith("#"):
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", line
            pins[canonicalize_name(req.name)] = spec.version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for line in project["dependencies"]:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is a dependency but not pinned in requirements/runtime.txt"
        assert req.specifier.contains(pins[name]), f"{name}=={pins[name]} does not satisfy {req}"


# --------------------------------------------------------------------------- the built layout


@dataclass
class Layout:
    root: Path
    user: tuple[int, int]
    env: dict[str, str]
    workdir: Path
    command: list[str]
    data: Path


def _rewrite(text: str, root: Path, dirs: list[str]) -> str:
    for d in sorted(dirs, key=len, reverse=True):
        text = re.sub(rf"(?<![\w./]){re.escape(d)}(?![\w-])", str(root) + d, text)
    return text


@pytest.fixture(scope="module")
def layout(stages: list[Stage]) -> Iterator[Layout]:
    """The image's file layout under a temporary root, built by the Dockerfile's own steps."""
    if not os.access(IMAGE_PYTHON, os.X_OK):
        pytest.fail(f"{IMAGE_PYTHON} is needed to build the image layout")
    build, final = stages
    root = Path(tempfile.mkdtemp(prefix="scorecar-image-"))
    root.chmod(0o755)  # traversable by the image user, writable by root only
    try:
        shims = root / ".shims"
        shims.mkdir()
        (shims / "python").symlink_to(IMAGE_PYTHON)
        dirs = ["/opt/scorecar", "/src"]
        env = {"PATH": f"{shims}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
               **build.env()}
        for step in build.steps:
            if step.keyword == "COPY":
                *sources, dest = step.args.split()
                for src in sources:
                    target = root / dest.lstrip("/")
                    if dest.endswith("/"):
                        target = target / Path(src).name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    if (ROOT / src).is_dir():
                        shutil.copytree(ROOT / src, target, ignore=shutil.ignore_patterns(
                            "__pycache__", "*.pyc"))
                    else:
                        shutil.copy2(ROOT / src, target)
            elif step.keyword == "RUN":
                out = subprocess.run(["sh", "-ec", _rewrite(step.args, root, dirs)], env=env,
                                     capture_output=True, text=True, timeout=300)
                assert out.returncode == 0, f"RUN {step.args}\n{out.stdout}\n{out.stderr}"
            elif step.keyword != "ENV":
                raise AssertionError(f"the test does not know how to run {step.keyword}")
        shutil.rmtree(root / "src")  # the final stage has only the venv
        (user,) = final.all("USER")
        uid, gid = (int(v) for v in user.args.split(":"))
        final_env = final.env()
        data = root / final_env["SCORECAR_STORAGE__PATH"].lstrip("/")
        data.mkdir(parents=True)
        os.chown(data, uid, gid)  # the final stage's `chown 10001:10001 /var/lib/scorecar`
        (root / "etc" / "scorecar").mkdir(parents=True)
        image_env = {k: _rewrite(v.replace("$PATH", "/usr/local/bin:/usr/bin:/bin"), root,
                                 dirs + [final_env["SCORECAR_STORAGE__PATH"]])
                     for k, v in final_env.items()}
        (workdir,) = final.all("WORKDIR")
        (entrypoint,) = final.all("ENTRYPOINT")
        yield Layout(root, (uid, gid), image_env, root / workdir.args.lstrip("/"),
                     [_rewrite(a, root, dirs) for a in entrypoint.exec_form()], data)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _wait_for_ports(proc: subprocess.Popen[str], timeout: float) -> dict[str, int]:
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 0.5)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if "metrics_port" in record:
            return {k: int(record[f"{k}_port"]) for k in ("grpc", "http", "metrics")}
    raise AssertionError("scorecar did not report its ports:\n" + "".join(seen))


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.slow
def test_image_layout_serves_as_non_root_on_a_read_only_root(layout: Layout) -> None:
    config = layout.root / "etc" / "scorecar" / "config.yaml"
    scores = layout.data / "scores.jsonl"
    config.write_text(
        "receivers:\n  grpc: {endpoint: '127.0.0.1:0'}\n  http: {endpoint: '127.0.0.1:0'}\n"
        "exporters:\n  prometheus: {endpoint: '127.0.0.1:0'}\n"
        f"  jsonl: {{path: '{scores}'}}\n"
        "assembly: {quiet_period: 0.2, build_processes: 0}\n"
        "scorers:\n  - scorer: 'builtin:completeness'\n")
    config.chmod(0o644)
    uid, gid = layout.user
    # A private mount namespace: `/` re-mounted read-only, the data volume bound writable, then
    # the image's user and entrypoint, as a container runtime with readOnlyRootFilesystem does.
    script = ('mount --bind "$DATA" "$DATA" && mount -o remount,bind,ro / '
              f'&& exec setpriv --reuid={uid} --regid={gid} --clear-groups -- "$@"')
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"],
                           capture_output=True, text=True)
    assert probe.returncode == 0, f"a mount namespace is needed (run as root): {probe.stderr}"
    proc = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-ec", script, "sh",
         *layout.command, "-c", str(config), "--log-format", "json", "--grace", "5"],
        cwd=layout.workdir, env={**layout.env, "DATA": str(layout.data)},
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ports = _wait_for_ports(proc, timeout=60)
        base = f"http://127.0.0.1:{ports['metrics']}"
        assert _get(f"{base}/healthz") == (200, "ok\n")
        assert _get(f"{base}/readyz") == (200, "ready\n")
        status, metrics = _get(f"{base}/metrics")
        assert status == 200 and "scorecar_queue_depth" in metrics
        # a real trace in over OTLP/HTTP JSON, a score out into the data volume
        body = (ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl").read_bytes()
        for line in body.splitlines():
            req = urllib.request.Request(f"http://127.0.0.1:{ports['http']}/v1/traces",
                                         data=line, method="POST",
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as resp:
                assert resp.status == 200
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (scores.exists() and scores.read_text()):
            time.sleep(0.2)
        records = [json.loads(x) for x in scores.read_text().splitlines()]
        assert {r["scorerId"] for r in records} == {"completeness"}
        assert {r["status"] for r in records} == {"scored"}
        assert scores.stat().st_uid == uid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    # everything the sidecar wrote is on the data volume and belongs to the image user
    written = [p for p in layout.data.rglob("*")]
    assert written and all(p.stat().st_uid == uid for p in written)
