"""A real Prometheus server for the dashboard test, and the dashboard JSON's queries.

`Prometheus` runs Debian's `prometheus` binary (`apt-get install -y --no-install-recommends
prometheus`; `/usr/bin/prometheus`, or the binary named by `SCORECAR_PROMETHEUS`) on a free
loopback port with a temporary config and TSDB, and queries it over its HTTP API. The Debian
service is never used. A missing binary fails the test with the install command, never skips it.

The dashboard helpers read `helm/scorecar/dashboards/scorecar.json`: its panels (rows
flattened), every PromQL expression, Grafana's variable substitution for a query sent to
Prometheus, and the metric and label names an expression uses.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import yaml

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "helm" / "scorecar" / "dashboards" / "scorecar.json"
INSTALL_PROMETHEUS = "apt-get install -y --no-install-recommends prometheus"


class PrometheusMissing(RuntimeError):
    """No Prometheus binary; the message says how to install one."""


def find_prometheus() -> Path:
    """The Prometheus server binary: `$SCORECAR_PROMETHEUS`, `/usr/bin/prometheus` or PATH.

    Raises:
        PrometheusMissing: none found (the message holds the install command).
    """
    override = os.environ.get("SCORECAR_PROMETHEUS")
    candidates = [override] if override else ["/usr/bin/prometheus", shutil.which("prometheus")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    raise PrometheusMissing(
        "the dashboard test needs a real Prometheus server: install Debian's package with "
        f"`{INSTALL_PROMETHEUS}` (or set SCORECAR_PROMETHEUS to a prometheus binary)")


def prometheus_version(binary: Path) -> str:
    """`prometheus --version`'s first line, e.g. `prometheus, version 2.42.0+ds (…)`."""
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30,
                         check=True)
    return (out.stdout or out.stderr).splitlines()[0].strip()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Prometheus:
    """`prometheus` on `127.0.0.1:<free port>` scraping `targets` every `scrape_interval`.

    Args:
        binary: the server binary (`find_prometheus()`).
        workdir: a temporary directory for the config, the TSDB and the log.
        targets: `host:port` targets of the one scrape job, `job`.
        job: the scrape job's name.
        scrape_interval: Prometheus duration, e.g. `1s`.
    """

    def __init__(self, binary: Path, workdir: Path, targets: list[str], *,
                 job: str = "scorecar", scrape_interval: str = "1s") -> None:
        self.binary = binary
        self.workdir = workdir
        self.job = job
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.config_path = workdir / "prometheus.yml"
        self.log_path = workdir / "prometheus.log"
        config = {
            "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
            "scrape_configs": [{"job_name": job, "scrape_interval": scrape_interval,
                                "scrape_timeout": scrape_interval,
                                "static_configs": [{"targets": targets}]}],
        }
        self.config_path.write_text(yaml.safe_dump(config), encoding="utf-8")

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> Self:
        """Start the server and wait for `/-/ready` (a few tries if the port was taken)."""
        for _ in range(3):
            self.port = _free_port()
            tsdb = self.workdir / f"tsdb-{self.port}"
            with self.log_path.open("ab") as log:
                self.proc = subprocess.Popen(
                    [str(self.binary), f"--config.file={self.config_path}",
                     f"--storage.tsdb.path={tsdb}", f"--web.listen-address=127.0.0.1:{self.port}",
                     "--log.level=warn"],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            if self._wait_ready(timeout):
                return self
            self.stop()
            if "address already in use" not in self.log():
                break
        raise RuntimeError(f"prometheus did not become ready; its log:\n{self.log()[-3000:]}")

    def _wait_ready(self, timeout: float) -> bool:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as resp:
                    if resp.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        return False

    def log(self) -> str:
        """What the server logged so far."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s); idempotent."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ------------------------------------------------------------------ HTTP API

    def api(self, path: str, params: Mapping[str, str | list[str]]) -> Any:
        """GET `/api/v1/<path>`; returns `data`, or raises with Prometheus's error message."""
        query = urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as exc:
            body = json.load(exc)
        if body.get("status") != "success":
            raise PromQLError(f"{body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's result (vector or scalar, as a list of samples)."""
        data = self.api("query", {"query": expr})
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return list(data["result"])

    def label_values(self, label: str, match: str) -> list[str]:
        """`label_values(match, label)` as Grafana asks it: `/api/v1/label/<label>/values`."""
        return list(self.api(f"label/{label}/values", {"match[]": [match]}))

    def last_scrape(self) -> float | None:
        """The time of the job's latest successful scrape (Unix seconds), or None."""
        # `timestamp()` of a plain selector is the sample's (scrape's) time; of any other
        # expression (e.g. `up == 1`) it is the evaluation time.
        up = self.query(f'up{{job="{self.job}"}}')
        when = self.query(f'timestamp(up{{job="{self.job}"}})')
        if not up or not when or float(up[0]["value"][1]) != 1:
            return None
        return float(when[0]["value"][1])

    def wait_scrapes(self, after: float, count: int = 2, timeout: float = 30.0) -> None:
        """Wait until the job was scraped successfully `count` times after `after` (Unix s)."""
        seen: set[float] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = self.last_scrape()
            if last is not None and last > after:
                seen.add(last)
                if len(seen) >= count:
                    return
            time.sleep(0.2)
        raise TimeoutError(f"prometheus scraped job {self.job!r} {len(seen)} time(s) after "
                           f"{after:.3f} within {timeout:g} s; its log:\n{self.log()[-3000:]}")


class PromQLError(RuntimeError):
    """Prometheus refused a query (bad PromQL, bad parameters)."""


# ---------------------------------------------------------------------- the dashboard JSON


def load_dashboard(path: Path = DASHBOARD) -> dict[str, Any]:
    """The dashboard JSON the chart ships."""
    return dict(json.loads(path.read_text(encoding="utf-8")))


def panels(dashboard: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those nested in (collapsed) rows, in order."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def expressions(dashboard: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(panel, target) for every PromQL target of every panel."""
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            if "expr" in target:
                yield panel, target


def variables(dashboard: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The dashboard's template variables by name."""
    return {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}


_LABEL_VALUES = re.compile(r"^label_values\((?P<match>.*),\s*(?P<label>[a-zA-Z_]\w*)\s*\)$", re.S)


def parse_label_values(definition: str) -> tuple[str, str]:
    """`label_values(<selector>, <label>)` -> (selector, label)."""
    m = _LABEL_VALUES.match(definition.strip())
    if m is None:
        raise ValueError(f"not a label_values(selector, label) query: {definition!r}")
    return m["match"].strip(), m["label"]


def regex_value(values: list[str]) -> str:
    """Grafana's Prometheus formatting of a multi-value variable: `(a|b)`, regex-escaped."""
    escaped = [re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", v) for v in values]
    return "(" + "|".join(escaped) + ")" if len(escaped) > 1 else escaped[0]


def substitute(expr: str, values: Mapping[str, str]) -> str:
    """Replace `$name`, `${name}` and `[[name]]` like Grafana (longest names first)."""
    for name in sorted(values, key=len, reverse=True):
        value = values[name]
        expr = expr.replace("${" + name + "}", value).replace("[[" + name + "]]", value)
        expr = re.sub(r"\$" + re.escape(name) + r"(?![A-Za-z0-9_])", value.replace("\\", "\\\\"),
                      expr)
    return expr


GRAFANA_INTERVALS = {"__rate_interval": "1m", "__interval": "1m", "__range": "5m",
                     "__range_s": "300", "__range_ms": "300000", "__interval_ms": "60000"}
"""Grafana's built-in interval variables, as a short dashboard time range would set them."""

_METRIC = re.compile(r"\b(scorecar_[a-z0-9_]+)\b")
_GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
_MATCHERS = re.compile(r"\b(scorecar_[a-z0-9_]+)\s*\{([^}]*)\}")
_MATCHER_NAME = re.compile(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)")


def metric_names(expr: str) -> set[str]:
    """The scorecar series names an expression reads."""
    return set(_METRIC.findall(expr))


def grouping_labels(expr: str) -> set[str]:
    """Labels named in `by (…)` / `without (…)` clauses."""
    return {name.strip() for group in _GROUPING.findall(expr) for name in group.split(",")
            if name.strip()}


def matcher_labels(expr: str) -> dict[str, set[str]]:
    """Per scorecar series in the expression, the label names its selector matches on."""
    out: dict[str, set[str]] = {}
    for metric, body in _MATCHERS.findall(expr):
        out.setdefault(metric, set()).update(_MATCHER_NAME.findall(body))
    return out
