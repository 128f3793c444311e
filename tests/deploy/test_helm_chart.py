"""The Helm chart, rendered by a real helm (4.x) and checked offline: every Kubernetes object
against the Kubernetes JSON schemas (kubernetes-validate, strict), the scorecar config it renders
against scorecar's own config loader (`scorecar check-config`), the alert rules with promtool
(syntax, and unit tests that the alerts fire), plus what an operator relies on: hardened
security defaults, the judge key only from a Secret, pods rolling on config changes, the Grafana
dashboard ConfigMap, and clear refusals of bad values.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy import _tools
from tests.deploy._tools import ROOT

CHART = ROOT / "helm" / "scorecar"
EXAMPLES = CHART / "examples"
K8S_VERSIONS = ("1.25.0", "1.37.0")
"""The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest schema set."""
NATIVE_SIDECAR_VERSIONS = ("1.29.0", "1.37.0")
"""Native sidecars (init containers with restartPolicy: Always) are on by default from 1.29."""
CRDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule"}
CANARY = "sk-ant-api03-CANARY-0123456789abcdef"


@pytest.fixture(scope="module")
def helm() -> Path:
    try:
        return _tools.helm()
    except _tools.ToolMissing as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def promtool() -> Path:
    try:
        return _tools.promtool()
    except _tools.ToolMissing as exc:
        pytest.fail(str(exc))


def _run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HELM_CACHE_HOME": str(ROOT / ".tools" / "helm-cache"),
                               "HELM_CONFIG_HOME": str(ROOT / ".tools" / "helm-config"),
                               "HELM_DATA_HOME": str(ROOT / ".tools" / "helm-data")})


def render(helm: Path, tmp_path: Path, values: dict[str, Any] | None = None, *,
           files: tuple[Path, ...] = (), chart: Path = CHART,
           namespace: str = "agents") -> list[dict[str, Any]]:
    """`helm template` → the rendered objects (fails the test on a helm error)."""
    out = try_render(helm, tmp_path, values, files=files, chart=chart, namespace=namespace)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def try_render(helm: Path, tmp_path: Path, values: dict[str, Any] | None = None, *,
               files: tuple[Path, ...] = (), chart: Path = CHART,
               namespace: str = "agents") -> subprocess.CompletedProcess[str]:
    args = ["template", "rel", str(chart), "--namespace", namespace]
    for f in files:
        args += ["-f", str(f)]
    if values is not None:
        vf = tmp_path / f"values-{len(list(tmp_path.glob('values-*')))}.yaml"
        vf.write_text(yaml.safe_dump(values))
        args += ["-f", str(vf)]
    return _run_helm(helm, *args)


def one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind
             and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''} in {[d['kind'] for d in docs]}"
    return found[0]


def pod_spec(docs: list[dict[str, Any]]) -> dict[str, Any]:
    workloads = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")]
    assert len(workloads) == 1
    spec: dict[str, Any] = workloads[0]["spec"]["template"]["spec"]
    return spec


def scorecar_container(spec: dict[str, Any]) -> dict[str, Any]:
    (c,) = [c for c in spec["containers"] + spec.get("initContainers", [])
            if c["name"] == "scorecar"]
    return c


def validate_k8s(docs: list[dict[str, Any]], versions: tuple[str, ...] = K8S_VERSIONS) -> None:
    """Every built-in object against the Kubernetes schemas (strict: no unknown fields);
    Prometheus Operator objects by their required shape (no schema ships offline)."""
    for doc in docs:
        if doc["kind"] in CRDS:
            assert doc["apiVersion"] == "monitoring.coreos.com/v1"
            assert doc["metadata"]["name"] and doc["spec"]
            continue
        for version in versions:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                raise AssertionError(f"{doc['kind']} {doc['metadata']['name']} is not a valid "
                                     f"Kubernetes {version} object: {exc.message} at "
                                     f"{list(exc.path)}") from None


def rendered_config(docs: list[dict[str, Any]], name: str = "rel-scorecar") -> dict[str, Any]:
    cm = one(docs, "ConfigMap", name)
    config: dict[str, Any] = yaml.safe_load(cm["data"]["config.yaml"])
    return config


def check_config(docs: list[dict[str, Any]], tmp_path: Path, name: str = "rel-scorecar") -> str:
    """`scorecar check-config` on the rendered config.yaml, with the rendered scorer modules
    on PYTHONPATH as the pod mounts them; returns its output."""
    cm = one(docs, "ConfigMap", name)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(cm["data"]["config.yaml"])
    modules = tmp_path / "scorer-modules"
    modules.mkdir(exist_ok=True)
    for doc in docs:
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"].endswith("-scorers"):
            for fname, source in doc["data"].items():
                (modules / fname).write_text(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCORECAR_")}
    env["PYTHONPATH"] = f"{modules}{os.pathsep}{ROOT}"
    env["ANTHROPIC_API_KEY"] = CANARY
    out = subprocess.run([sys.executable, "-m", "collector.cli", "check-config", "-c", str(cfg)],
                         capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert out.returncode == 0, f"scorecar refuses the rendered config:\n{out.stderr}"
    assert CANARY not in out.stdout + out.stderr
    return out.stdout


# --------------------------------------------------------------------------- lint and render


def test_helm_is_helm_4(helm: Path) -> None:
    assert _tools.tool_version(helm).startswith("v4.")


@pytest.mark.parametrize("values", [None, "mode=sidecar", "values-production.yaml",
                                    "values-loadbalancing.yaml"])
def test_helm_lint_strict(helm: Path, values: str | None) -> None:
    args = ["lint", "--strict", str(CHART)]
    if values and "=" in values:
        args += ["--set", values]
    elif values:
        args += ["-f", str(EXAMPLES / values)]
    out = _run_helm(helm, *args)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 chart(s) failed" in out.stdout


CASES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "sidecar": {"mode": "sidecar", "podMonitor": {"enabled": True,
                                                  "selector": {"app": "my-agent"}},
                "prometheusRule": {"enabled": True}},
    "everything-on": {
        "replicaCount": 2, "service": {"headless": {"enabled": True}},
        "judge": {"existingSecret": "judge-key"},
        "extraEnvsFrom": [{"secretRef": {"name": "otlp-headers"}}],
        "extraEnvs": [{"name": "OTEL_EXPORTER_OTLP_HEADERS",
                       "valueFrom": {"secretKeyRef": {"name": "otlp-headers", "key": "h"}}}],
        "serviceMonitor": {"enabled": True, "extraLabels": {"release": "kube-prometheus-stack"}},
        "podMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True, "selector": 'namespace="agents"'},
        "startupProbe": {"enabled": True},
        "scorerModules": {"existingConfigMap": "my-scorers"},
        "dashboards": {"namespace": "monitoring"},
    },
    "statefulset": {"replicaCount": 3, "persistence": {"enabled": True,
                                                       "storageClassName": "fast"}},
    "no-dashboard-no-limits": {"dashboards": {"enabled": False}, "resources": None},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_rendered_object_is_valid_kubernetes(helm: Path, tmp_path: Path,
                                                   case: str) -> None:
    docs = render(helm, tmp_path, CASES[case])
    validate_k8s(docs)
    if case != "sidecar":
        check_config(docs, tmp_path)


@pytest.mark.parametrize("name", ["values-production.yaml", "values-loadbalancing.yaml"])
def test_example_values_render_valid_objects_and_config(helm: Path, tmp_path: Path,
                                                        name: str) -> None:
    docs = render(helm, tmp_path, files=(EXAMPLES / name,))
    validate_k8s(docs)
    out = check_config(docs, tmp_path)
    # the large number survives the trip through helm as an integer (not 2e+06)
    if name == "values-production.yaml":
        assert "daily_token_budget: 2000000" in out
        assert "my_scorers:answered" in out


def test_deployment_mode_objects(helm: Path, tmp_path: Path) -> None:
    docs = render(helm, tmp_path)
    assert sorted(d["kind"] for d in docs) == ["ConfigMap", "ConfigMap", "Deployment",
                                              "Service", "ServiceAccount"]
    svc = one(docs, "Service")
    ports = {p["port"]: p for p in svc["spec"]["ports"]}
    assert sorted(ports) == [4317, 4318, 9464]
    assert ports[4317]["appProtocol"] == "grpc" and ports[4317]["name"] == "otlp"
    c = scorecar_container(pod_spec(docs))
    assert c["args"][:2] == ["-c", "/etc/scorecar/config.yaml"]
    assert "--log-format" in c["args"] and "--grace" in c["args"]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 9464}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 9464}
    assert {p["containerPort"] for p in c["ports"]} == {4317, 4318, 9464}
    config = rendered_config(docs)
    assert config["receivers"]["grpc"]["endpoint"] == "0.0.0.0:4317"
    assert config["exporters"]["prometheus"]["endpoint"] == "0.0.0.0:9464"
    assert config["storage"]["path"] == "/var/lib/scorecar"
    assert config["limits"]["memory_mib"] == 819  # 80 % of the 1Gi limit
    assert pod_spec(docs)["terminationGracePeriodSeconds"] == 30


def test_persistence_modes(helm: Path, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, {"replicaCount": 3, "persistence": {"enabled": True}})
    sts = one(docs, "StatefulSet")
    assert sts["spec"]["serviceName"] == "rel-scorecar-headless"
    assert sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "scorecar-data"
    assert one(docs, "Service", "rel-scorecar-headless")["spec"]["clusterIP"] == "None"
    assert "scorecar-data" not in {v["name"] for v in pod_spec(docs)["volumes"]}
    docs = render(helm, tmp_path, {"persistence": {"existingClaim": "queue"}})
    dep = one(docs, "Deployment")
    assert dep["spec"]["strategy"] == {"type": "Recreate"}
    (data,) = [v for v in pod_spec(docs)["volumes"] if v["name"] == "scorecar-data"]
    assert data["persistentVolumeClaim"] == {"claimName": "queue"}
    out = try_render(helm, tmp_path, {"replicaCount": 2, "persistence": {"existingClaim": "q"}})
    assert out.returncode == 1 and "one replica only" in out.stderr


def test_sidecar_mode_renders_no_workload(helm: Path, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, {"mode": "sidecar"})
    assert sorted(d["kind"] for d in docs) == ["ConfigMap", "ConfigMap"]


# --------------------------------------------------------------------------- the agent example


@pytest.fixture(scope="module")
def agent_chart(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/agent with scorecar (this chart) built in as its dependency."""
    chart = tmp_path_factory.mktemp("agent") / "agent"
    shutil.copytree(EXAMPLES / "agent", chart)
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    assert meta["dependencies"][0]["repository"] == "file://../.."
    meta["dependencies"][0]["repository"] = f"file://{CHART}"
    (chart / "Chart.yaml").write_text(yaml.safe_dump(meta))
    out = _run_helm(helm, "dependency", "build", str(chart))
    assert out.returncode == 0, out.stderr
    return chart


def test_agent_example_lints(helm: Path, agent_chart: Path) -> None:
    out = _run_helm(helm, "lint", "--strict", "--with-subcharts", str(agent_chart))
    assert out.returncode == 0 and "0 chart(s) failed" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("native", [False, True])
def test_agent_example_runs_scorecar_in_its_pod(helm: Path, tmp_path: Path, agent_chart: Path,
                                                native: bool) -> None:
    docs = render(helm, tmp_path, {"scorecar": {"sidecar": {"native": native}}},
                  chart=agent_chart)
    validate_k8s(docs, NATIVE_SIDECAR_VERSIONS if native else K8S_VERSIONS)
    agent = one(docs, "Deployment")
    spec = agent["spec"]["template"]["spec"]
    sidecar = scorecar_container(spec)
    (app,) = [c for c in spec["containers"] if c["name"] == "agent"]
    env = {e["name"]: e.get("value") for e in app["env"]}
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://localhost:4317"
    assert {p["containerPort"] for p in sidecar["ports"]} == {4317, 4318, 9464}
    if native:
        assert sidecar in spec["initContainers"] and sidecar not in spec["containers"]
        assert sidecar["restartPolicy"] == "Always"
        assert sidecar["startupProbe"]["httpGet"]["path"] == "/readyz"
    else:
        assert "initContainers" not in spec and "restartPolicy" not in sidecar
    # the volumes it mounts are in the pod, the config it reads is rendered, the pod rolls
    volumes = {v["name"] for v in spec["volumes"]}
    assert {m["name"] for m in sidecar["volumeMounts"]} <= volumes
    assert spec["volumes"][0]["configMap"]["name"] == "rel-scorecar"
    check_config(docs, tmp_path)
    annotations = agent["spec"]["template"]["metadata"]["annotations"]
    assert annotations["checksum/config"] == checksum_of(docs)
    monitor = one(docs, "PodMonitor")
    assert monitor["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name":
                                                          "weather-agent"}
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"


def test_native_sidecar_is_refused_by_kubernetes_before_1_28(helm: Path, tmp_path: Path,
                                                            agent_chart: Path) -> None:
    docs = render(helm, tmp_path, {"scorecar": {"sidecar": {"native": True}}},
                  chart=agent_chart)
    with pytest.raises(AssertionError, match="restartPolicy"):
        validate_k8s([one(docs, "Deployment")], ("1.25.0",))


# --------------------------------------------------------------------------- security


def assert_hardened(container: dict[str, Any]) -> None:
    sc = container["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] > 0
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False and sc["privileged"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/etc/scorecar"]["readOnly"] is True
    # the only writable place is the data volume, and the queue and temp files go there
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["SCORECAR_STORAGE__PATH"] == env["TMPDIR"] == "/var/lib/scorecar"
    assert not mounts["/var/lib/scorecar"].get("readOnly")


def test_security_defaults(helm: Path, tmp_path: Path, agent_chart: Path) -> None:
    docs = render(helm, tmp_path)
    spec = pod_spec(docs)
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["automountServiceAccountToken"] is False
    assert one(docs, "ServiceAccount")["automountServiceAccountToken"] is False
    assert_hardened(scorecar_container(spec))
    (data,) = [v for v in spec["volumes"] if v["name"] == "scorecar-data"]
    assert "emptyDir" in data
    container = scorecar_container(spec)
    assert container["resources"]["limits"]["memory"] == "1Gi"
    # the same container in an agent's pod
    agent = one(render(helm, tmp_path, chart=agent_chart), "Deployment")
    assert_hardened(scorecar_container(agent["spec"]["template"]["spec"]))


def test_judge_key_comes_only_from_an_existing_secret(helm: Path, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, {"judge": {"existingSecret": "judge", "existingSecretKey": "k"},
                                   "config": {"judge": {"api_key_env": "MY_JUDGE_KEY"}}})
    assert not [d for d in docs if d["kind"] == "Secret"], "the chart never creates the Secret"
    env = {e["name"]: e for e in scorecar_container(pod_spec(docs))["env"]}
    assert env["MY_JUDGE_KEY"] == {"name": "MY_JUDGE_KEY", "valueFrom": {
        "secretKeyRef": {"name": "judge", "key": "k"}}}
    assert rendered_config(docs)["judge"] == {"api_key_env": "MY_JUDGE_KEY"}
    # without a Secret, no key variable at all
    env = {e["name"] for e in scorecar_container(pod_spec(render(helm, tmp_path)))["env"]}
    assert "ANTHROPIC_API_KEY" not in env


@pytest.mark.parametrize("values", [
    {"judge": {"apiKey": CANARY}},
    {"config": {"judge": {"api_key": CANARY}}},
    {"judge": {"existingSecret": CANARY}},
], ids=["judge.apiKey", "config.judge.api_key", "key-as-secret-name"])
def test_a_key_value_in_values_is_refused_and_never_echoed(helm: Path, tmp_path: Path,
                                                            values: dict[str, Any]) -> None:
    out = try_render(helm, tmp_path, values)
    assert out.returncode == 1
    assert "judge" in out.stderr
    assert CANARY not in out.stdout + out.stderr


# --------------------------------------------------------------------------- config checksum


def checksum_of(docs: list[dict[str, Any]]) -> str:
    """What the pod annotation must be: the hash of the rendered config (and modules)."""
    annotations = [d["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
                   for d in docs if d["kind"] in ("Deployment", "StatefulSet")]
    return annotations[0]


def test_pods_roll_when_config_or_scorer_modules_change(helm: Path, tmp_path: Path) -> None:
    base = checksum_of(render(helm, tmp_path))
    assert len(base) == 64
    changed = checksum_of(render(helm, tmp_path, {"config": {"scorers": [
        {"scorer": "builtin:completeness"}, {"scorer": "builtin:tone"}]}}))
    module = checksum_of(render(helm, tmp_path, {"scorerModules": {"files": {
        "mine.py": "x = 1\n"}}}))
    module2 = checksum_of(render(helm, tmp_path, {"scorerModules": {"files": {
        "mine.py": "x = 2\n"}}}))
    memory = checksum_of(render(helm, tmp_path, {"resources": {"limits": {"memory": "2Gi"}}}))
    same = checksum_of(render(helm, tmp_path, {"replicaCount": 4, "podLabels": {"a": "b"}}))
    assert len({base, changed, module, module2, memory}) == 5
    assert same == base


def test_scorer_modules_are_mounted_and_importable(helm: Path, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, files=(EXAMPLES / "values-production.yaml",))
    cm = one(docs, "ConfigMap", "rel-scorecar-scorers")
    assert "my_scorers.py" in cm["data"]
    c = scorecar_container(pod_spec(docs))
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["PYTHONPATH"] == mounts["scorecar-scorers"] == "/etc/scorecar-scorers"
    (vol,) = [v for v in pod_spec(docs)["volumes"] if v["name"] == "scorecar-scorers"]
    assert vol["configMap"]["name"] == "rel-scorecar-scorers"
    assert "answered" in check_config(docs, tmp_path)


def test_memory_limit_follows_the_container_limit(helm: Path, tmp_path: Path) -> None:
    def mib(values: dict[str, Any]) -> Any:
        return rendered_config(render(helm, tmp_path, values)).get("limits", {}).get(
            "memory_mib")

    assert mib({"resources": {"limits": {"memory": "2Gi"}}}) == 1638
    assert mib({"resources": {"limits": {"memory": "1500M"}}}) == 1144
    assert mib({"resources": {"limits": {"memory": "2Gi"}}, "memoryLimitPercent": 50}) == 1024
    assert mib({"config": {"limits": {"memory_mib": 300}}}) == 300
    assert mib({"useMemoryLimit": False}) is None
    assert mib({"resources": {"limits": None}}) is None


# --------------------------------------------------------------------------- dashboard


def test_dashboard_configmap_ships_the_dashboard(helm: Path, tmp_path: Path) -> None:
    docs = render(helm, tmp_path)
    cm = one(docs, "ConfigMap", "rel-scorecar-dashboard")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["annotations"]["grafana_dashboard_folder"] == "scorecar"
    shipped = json.loads(cm["data"]["scorecar.json"])
    assert shipped == json.loads((CHART / "dashboards" / "scorecar.json").read_text())
    docs = render(helm, tmp_path, {"dashboards": {
        "label": "grafana-dashboards", "labelValue": "scorecar", "folder": "Agents",
        "folderAnnotation": "k8s-sidecar-target-directory", "namespace": "monitoring",
        "extraLabels": {"team": "ml"}}})
    cm = one(docs, "ConfigMap", "rel-scorecar-dashboard")
    assert cm["metadata"]["namespace"] == "monitoring"
    assert cm["metadata"]["labels"]["grafana-dashboards"] == "scorecar"
    assert cm["metadata"]["labels"]["team"] == "ml" and "grafana_dashboard" not in \
        cm["metadata"]["labels"]
    assert cm["metadata"]["annotations"] == {"k8s-sidecar-target-directory": "Agents"}
    docs = render(helm, tmp_path, {"dashboards": {"enabled": False}})
    assert "rel-scorecar-dashboard" not in {d["metadata"]["name"] for d in docs}


# --------------------------------------------------------------------------- bad values


@pytest.mark.parametrize(("values", "message"), [
    ({"mode": "daemonset"}, "at '/mode': value must be one of 'deployment', 'sidecar'"),
    ({"replicaCount": "two"}, "at '/replicaCount': got string, want integer"),
    ({"replicas": 3}, "additional properties 'replicas' not allowed"),
    ({"ports": {"metrics": {"name": "scorecar-metrics-port", "containerPort": 9464,
                            "servicePort": 9464, "protocol": "TCP"}}}, "/ports/metrics/name"),
    ({"resources": {"limits": {"memory": "1 GB"}}}, "/resources/limits/memory"),
    ({"config": {"scorers": [{"sampling": {"type": "none"}}]}}, "missing property 'scorer'"),
    ({"prometheusRule": {"defaultRules": {"scoreThreshold": 5}}},
     "/prometheusRule/defaultRules/scoreThreshold"),
], ids=["mode", "replicaCount-type", "typo", "port-name-too-long", "memory-quantity",
        "scorer-missing", "threshold-range"])
def test_bad_values_are_refused_by_the_schema(helm: Path, tmp_path: Path,
                                              values: dict[str, Any], message: str) -> None:
    out = try_render(helm, tmp_path, values)
    assert out.returncode == 1
    assert "values don't meet the specifications of the schema" in out.stderr
    assert message in out.stderr, out.stderr


@pytest.mark.parametrize(("values", "message"), [
    ({"mode": "sidecar", "serviceMonitor": {"enabled": True}}, "use podMonitor"),
    ({"mode": "sidecar", "podMonitor": {"enabled": True}}, "podMonitor.selector"),
], ids=["servicemonitor-in-sidecar-mode", "podmonitor-without-selector"])
def test_impossible_combinations_are_refused_clearly(helm: Path, tmp_path: Path,
                                                     values: dict[str, Any],
                                                     message: str) -> None:
    out = try_render(helm, tmp_path, values)
    assert out.returncode == 1 and message in out.stderr, out.stderr


# --------------------------------------------------------------------------- monitoring


def test_service_and_pod_monitors(helm: Path, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, CASES["everything-on"])
    sm = one(docs, "ServiceMonitor")
    assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert sm["spec"]["endpoints"] == [{"port": "metrics", "path": "/metrics",
                                        "interval": "30s"}]
    svc = one(docs, "Service", "rel-scorecar")
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    assert "metrics" in {p["name"] for p in svc["spec"]["ports"]}
    pm = one(docs, "PodMonitor")
    pod_labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert pm["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    docs = render(helm, tmp_path)
    assert not [d for d in docs if d["kind"] in CRDS], "monitors and rules are off by default"


@pytest.fixture(scope="module")
def rules_file(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("rules")
    docs = render(helm, tmp, {"prometheusRule": {"enabled": True,
                                                 "additionalRuleLabels": {"team": "ml"}}})
    rule = one(docs, "PrometheusRule")
    path = tmp / "rules.yaml"
    path.write_text(yaml.safe_dump(rule["spec"]))
    return path


def test_alert_rules_pass_promtool(promtool: Path, rules_file: Path) -> None:
    out = subprocess.run([str(promtool), "check", "rules", str(rules_file)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS: 9 rules found" in out.stdout
    alerts = {r["alert"] for g in yaml.safe_load(rules_file.read_text())["groups"]
              for r in g["rules"]}
    assert {"ScorecarJudgeErrors", "ScorecarQueueGrowing", "ScorecarSpansRefused",
            "ScorecarScoreLow"} <= alerts
    # every metric the rules read is one scorecar exports (DESIGN §7)
    text = rules_file.read_text()
    from collector._telemetry import Metrics

    exported = Metrics().render().decode()
    for metric in ("scorecar_judge_requests_total", "scorecar_queue_depth",
                   "scorecar_spans_refused_total", "scorecar_score_sum", "scorecar_score_count",
                   "scorecar_scorer_runs_total", "scorecar_export_total",
                   "scorecar_score_lag_seconds_bucket"):
        assert metric in text
        family = metric.removesuffix("_sum").removesuffix("_count").removesuffix("_bucket")
        assert f"# TYPE {family} " in exported, metric


def test_a_broken_rule_expression_fails_promtool(helm: Path, promtool: Path,
                                                 tmp_path: Path) -> None:
    docs = render(helm, tmp_path, {"prometheusRule": {"enabled": True, "groups": [
        {"name": "mine", "rules": [{"alert": "Broken",
                                    "expr": "sum by (scorer (scorecar_score_count)"}]}]}})
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(one(docs, "PrometheusRule")["spec"]))
    out = subprocess.run([str(promtool), "check", "rules", str(path)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1 and "Broken" in out.stdout + out.stderr


PROMTOOL_TESTS = """
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'scorecar_judge_requests_total{{namespace="agents",pod="p",provider="openai",model="m",outcome="ok"}}'
        values: '0+10x40'
      - series: 'scorecar_judge_requests_total{{namespace="agents",pod="p",provider="openai",model="m",outcome="retryable"}}'
        values: '0+5x40'
      - series: 'scorecar_judge_requests_total{{namespace="agents",pod="p",provider="openai",model="m",outcome="auth"}}'
        values: '0x40'
      - series: 'scorecar_score_sum{{namespace="agents",scorer="completeness",agent="weather"}}'
        values: '0+3x40'
      - series: 'scorecar_score_count{{namespace="agents",scorer="completeness",agent="weather"}}'
        values: '0+10x40'
      - series: 'scorecar_score_sum{{namespace="agents",scorer="tone",agent="weather"}}'
        values: '0+9x40'
      - series: 'scorecar_score_count{{namespace="agents",scorer="tone",agent="weather"}}'
        values: '0+10x40'
      - series: 'scorecar_queue_depth{{namespace="agents",pod="p"}}'
        values: '1000+100x60'
      - series: 'scorecar_spans_refused_total{{namespace="agents",pod="p",reason="queue_full"}}'
        values: '0+60x40'
    alert_rule_test:
      - eval_time: 30m
        alertname: ScorecarJudgeErrors
        exp_alerts:
          - exp_labels: {{severity: warning, team: ml, namespace: agents, pod: p, provider: openai, model: m}}
            exp_annotations:
              summary: "scorecar: 33.33% of judge requests to m fail"
              description: "More than 10% of judge requests failed over 10 minutes (outcome retryable: rate limits or provider errors; refused: bad requests; quota: the key's quota is used up; unknown_model: no such model or deployment). Judge scorers are failing or falling behind."
      - eval_time: 30m
        alertname: ScorecarJudgeAuthFailing
        exp_alerts: []
      - eval_time: 30m
        alertname: ScorecarScoreLow
        exp_alerts:
          - exp_labels: {{severity: warning, team: ml, namespace: agents, scorer: completeness, agent: weather}}
            exp_annotations:
              summary: "weather: mean completeness score 0.30 is below 0.5"
              description: "The mean score over 1h dropped below 0.5. Look at the evaluation spans of this scorer in your tracing backend for the explanations."
      - eval_time: 40m
        alertname: ScorecarQueueGrowing
        exp_alerts:
          - exp_labels: {{severity: warning, team: ml, namespace: agents, pod: p}}
            exp_annotations:
              summary: "scorecar: the scoring queue keeps growing (5000 jobs)"
              description: "Jobs arrive faster than scorers finish them for 30 minutes (judge limits, a slow scorer, or an OTLP backend that is down). Raise judge limits, sample less, or add replicas."
      - eval_time: 30m
        alertname: ScorecarSpansRefused
        exp_alerts:
          - exp_labels: {{severity: warning, team: ml, namespace: agents, pod: p, reason: queue_full}}
            exp_annotations:
              summary: "scorecar refuses spans (queue_full)"
              description: "Spans are being refused for 10 minutes. queue_full, memory, evicted: scorecar is overloaded (the agent's exporter retries, then drops); other reasons: malformed or oversized requests from the agent."
"""


def test_alerts_fire_on_the_conditions_they_describe(promtool: Path, rules_file: Path,
                                                     tmp_path: Path) -> None:
    tests = tmp_path / "tests.yaml"
    tests.write_text(PROMTOOL_TESTS.format(rules=json.dumps(str(rules_file))))
    out = subprocess.run([str(promtool), "test", "rules", str(tests)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


# --------------------------------------------------------------------------- docs


def test_notes_tell_how_to_connect(helm: Path) -> None:
    out = _run_helm(helm, "install", "--dry-run=client", "rel", str(CHART), "-n", "agents",
                    "--set", "replicaCount=3")
    assert out.returncode == 0, out.stderr
    notes = out.stdout.split("NOTES:", 1)[1]
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=http://rel-scorecar.agents.svc:4317" in notes
    assert "routing_key: traceID" in notes
    out = _run_helm(helm, "install", "--dry-run=client", "rel", str(CHART), "--set",
                    "mode=sidecar")
    notes = out.stdout.split("NOTES:", 1)[1]
    assert 'include "scorecar.container" .Subcharts.scorecar' in notes


def test_loadbalancing_example_routes_to_the_headless_service(helm: Path,
                                                              tmp_path: Path) -> None:
    docs = render(helm, tmp_path, files=(EXAMPLES / "values-loadbalancing.yaml",),
                  namespace="scoring")
    # the example's release is named "scorecar": its fullname is then just "scorecar"
    out = _run_helm(helm, "template", "scorecar", str(CHART), "-n", "scoring", "-f",
                    str(EXAMPLES / "values-loadbalancing.yaml"))
    assert out.returncode == 0, out.stderr
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    sts = one(docs, "StatefulSet")
    assert sts["spec"]["replicas"] == 3
    headless = one(docs, "Service", "scorecar-headless")
    assert headless["spec"]["clusterIP"] == "None"
    collector = yaml.safe_load((EXAMPLES / "otel-collector-loadbalancing.yaml").read_text())
    lb = collector["config"]["exporters"]["loadbalancing"]
    assert lb["routing_key"] == "traceID"
    host = lb["resolver"]["dns"]["hostname"]
    assert host == f"{headless['metadata']['name']}.scoring.svc.cluster.local"
    otlp_port = {p["name"]: p["port"] for p in headless["spec"]["ports"]}["otlp"]
    assert lb["resolver"]["dns"]["port"] == otlp_port
    pipelines = collector["config"]["service"]["pipelines"]
    assert all(p["exporters"] == ["loadbalancing"] for p in pipelines.values())


def test_chart_readme_documents_every_example(helm: Path) -> None:
    readme = (CHART / "README.md").read_text()
    for path in sorted(EXAMPLES.iterdir()):
        assert f"examples/{path.name}" in readme, path.name
    for key in ("scorecar.container", "scorecar.nativeSidecar", "scorecar.volumes",
                "scorecar.checksum", "judge.existingSecret", "routing_key: traceID",
                "grafana_dashboard"):
        assert key in readme, key
