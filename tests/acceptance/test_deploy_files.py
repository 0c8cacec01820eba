"""``deploy/kubernetes/``: valid for Kubernetes, and true to the command line they run.

Every manifest is validated offline against the API schemas that ``kubernetes-validate``
bundles (strict: an unknown field is an error). Every command and flag the containers run
must parse and show in ``backfiller <command> --help``; every variable they set must be one the
code reads; every Secret and ConfigMap they refer to must be defined here, with placeholders
only. The migration Job, the API and the daemon then run as written, as processes on
loopback, and every probe and metrics scrape they declare must answer. Nothing here starts a
Kubernetes cluster.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import kubernetes_validate
import pytest
import yaml

from tests.acceptance.celery.support import broker_url
from tests.support import HTTP, REPO, free_port

pytestmark = pytest.mark.any_database

MANIFESTS = REPO / "deploy" / "kubernetes"
# The oldest and the newest Kubernetes release whose schemas the pinned validator bundles
# that these files are checked against.
KUBERNETES_VERSIONS = ("1.30", "1.37")
# Variables the manifests set that the code on this branch does not read yet, each with why.
# A name that the code starts reading fails the test below: then take it off this list.
NOT_READ_YET: dict[str, str] = {}
SOURCES = (REPO / "backfiller", REPO / "clients" / "python" / "backfiller_client")
WORKLOADS = ("Deployment", "Job")


def files() -> list[Path]:
    return sorted(MANIFESTS.glob("*.yaml"))


@cache
def documents() -> tuple[dict[str, Any], ...]:
    found: list[dict[str, Any]] = []
    for path in files():
        found += [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    return tuple(found)


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for doc in documents() if doc["kind"] == kind]


def named(kind: str, name: str) -> dict[str, Any]:
    (found,) = [doc for doc in of_kind(kind) if doc["metadata"]["name"] == name]
    return found


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def containers() -> list[tuple[str, dict[str, Any]]]:
    """(workload name, container) of every Deployment and Job."""
    return [
        (doc["metadata"]["name"], container)
        for kind in WORKLOADS
        for doc in of_kind(kind)
        for container in pod_spec(doc)["containers"]
    ]


def subcommand(args: list[str]) -> list[str]:
    """The command path at the head of ``args``: ``["db", "upgrade"]``, ``["serve"]``."""
    path = []
    for arg in args:
        if arg.startswith("-"):
            break
        path.append(arg)
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    # Wide, so that rich's help tables never cut an option's name.
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run(
        [sys.executable, "-m", "backfiller", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )


def test_the_files_hold_the_documented_topology() -> None:
    kinds = sorted((doc["kind"], doc["metadata"]["name"]) for doc in documents())
    assert kinds == [
        ("ConfigMap", "backfiller-config"),
        ("Deployment", "backfiller-api"),
        ("Deployment", "backfiller-daemon"),
        ("Deployment", "backfiller-worker"),
        ("Job", "backfiller-migrate"),
        ("Secret", "backfiller-api-token"),
        ("Secret", "backfiller-broker"),
        ("Secret", "backfiller-database"),
        ("Service", "backfiller-api"),
    ]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", files(), ids=lambda p: p.name)
def test_every_manifest_is_valid_kubernetes(path: Path, version: str) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            where = ".".join(map(str, error.path))
            raise AssertionError(f"{path.name}, {doc['kind']}, {where}: {error.message}") from None


def test_every_command_and_flag_is_one_the_cli_has() -> None:
    seen = set()
    every = containers()
    # The manifest's own arguments parse: --help answers only once every option is known.
    with ThreadPoolExecutor() as pool:
        helps = list(pool.map(lambda c: cli(*c[1]["args"], "--help"), every))
    for (workload, container), parsed in zip(every, helps, strict=True):
        assert container["command"] == ["backfiller"], workload
        args: list[str] = container["args"]
        command = subcommand(args)
        assert parsed.returncode == 0, f"{workload}: backfiller {' '.join(args)}: {parsed.stderr}"
        shown = set(re.findall(r"(?<![\w-])-{1,2}[a-z][\w-]*", parsed.stdout))
        flags = {arg.split("=")[0] for arg in args if arg.startswith("-")}
        assert flags <= shown, f"{workload}: not in `backfiller {' '.join(command)} --help`"
        seen.add(" ".join(command))
    assert seen == {"db upgrade", "serve", "daemon", "worker"}


@cache
def source_text() -> str:
    return "\n".join(p.read_text() for root in SOURCES for p in root.rglob("*.py"))


def set_variables() -> dict[str, set[str]]:
    """Every variable the manifests set, with the workloads it is set on."""
    config = {doc["metadata"]["name"]: set(doc.get("data", {})) for doc in of_kind("ConfigMap")}
    found: dict[str, set[str]] = {}
    for workload, container in containers():
        names = {entry["name"] for entry in container.get("env", [])}
        for source in container.get("envFrom", []):
            names |= config[source["configMapRef"]["name"]]
        for name in names:
            found.setdefault(name, set()).add(workload)
    return found


def test_every_variable_set_is_one_the_code_reads() -> None:
    variables = set_variables()
    assert "BACKFILLER_DATABASE_URL" in variables and "BACKFILLER_BROKER_URL" in variables
    for name in variables:
        read = re.search(rf"\b{name}\b", source_text()) is not None
        if name in NOT_READ_YET:
            assert not read, f"the code reads {name} now: take it off NOT_READ_YET"
        else:
            assert read, f"{name} is set on {sorted(variables[name])} but no code reads it"


def test_workers_never_get_the_database() -> None:
    worker = named("Deployment", "backfiller-worker")
    text = yaml.safe_dump(worker)
    assert "BACKFILLER_DATABASE_URL" not in text and "backfiller-database" not in text
    assert "backfiller-worker" not in set_variables()["BACKFILLER_DATABASE_URL"]


def references(container: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """(kind, name, key) of every Secret and ConfigMap a container reads."""
    found: list[tuple[str, str, str | None]] = []
    kinds = {"secret": "Secret", "configMap": "ConfigMap"}
    for entry in container.get("env", []):
        for field, kind in kinds.items():
            ref = entry.get("valueFrom", {}).get(f"{field}KeyRef")
            if ref is not None:
                found.append((kind, ref["name"], ref["key"]))
    for source in container.get("envFrom", []):
        for field, kind in kinds.items():
            if f"{field}Ref" in source:
                found.append((kind, source[f"{field}Ref"]["name"], None))
    return found


def test_secrets_are_placeholders_and_every_reference_is_defined() -> None:
    for secret in of_kind("Secret"):
        assert "data" not in secret, secret["metadata"]["name"]
        for key, value in secret["stringData"].items():
            assert value.startswith("FILL-IN "), f"{secret['metadata']['name']}.{key}: {value}"
    for workload, container in containers():
        for kind, name, key in references(container):
            defined = named(kind, name)
            keys = defined.get("stringData", defined.get("data", {}))
            assert key is None or key in keys, f"{workload}: {kind} {name} has no key {key}"
    secret_names = {ref[1] for _, c in containers() for ref in references(c) if ref[0] == "Secret"}
    assert secret_names == {s["metadata"]["name"] for s in of_kind("Secret")}


def flag_value(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args else None


def test_probes_metrics_and_resources() -> None:
    for kind in WORKLOADS:
        for workload in of_kind(kind):
            name = workload["metadata"]["name"]
            spec = pod_spec(workload)
            assert spec["securityContext"]["runAsNonRoot"] is True, name
            assert spec["securityContext"]["runAsUser"] > 0, name
            assert spec["automountServiceAccountToken"] is False, name
            annotations = workload["spec"]["template"]["metadata"].get("annotations", {})
            for container in spec["containers"]:
                assert container["securityContext"]["allowPrivilegeEscalation"] is False, name
                assert container["securityContext"]["capabilities"]["drop"] == ["ALL"], name
                requests = container["resources"]["requests"]
                assert set(requests) == {"cpu", "memory"}, name
                port = flag_value(container["args"], "--metrics-port")
                if port is None:  # the workers: no metrics port yet
                    assert "prometheus.io/scrape" not in annotations, name
                    continue
                assert flag_value(container["args"], "--metrics-host") == "0.0.0.0", name
                assert annotations == {
                    "prometheus.io/scrape": "true",
                    "prometheus.io/port": port,
                    "prometheus.io/path": "/metrics",
                }, name
                ports = {p["name"]: p["containerPort"] for p in container["ports"]}
                assert ports["metrics"] == int(port), name


def probe_target(container: dict[str, Any], probe: str) -> tuple[str, int]:
    found = container[probe]["httpGet"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    return found["path"], ports[found["port"]]


def test_the_api_is_ready_on_readyz_behind_its_service() -> None:
    api = named("Deployment", "backfiller-api")
    (container,) = pod_spec(api)["containers"]
    port = int(flag_value(container["args"], "--port") or 0)
    assert probe_target(container, "readinessProbe") == ("/readyz", port)
    assert probe_target(container, "livenessProbe") == ("/healthz", port)
    service = named("Service", "backfiller-api")
    assert service["spec"]["selector"] == api["spec"]["selector"]["matchLabels"]
    assert api["spec"]["template"]["metadata"]["labels"] == api["spec"]["selector"]["matchLabels"]
    (service_port,) = service["spec"]["ports"]
    assert service_port["targetPort"] == "http"
    daemon = named("Deployment", "backfiller-daemon")
    (container,) = pod_spec(daemon)["containers"]
    metrics = int(flag_value(container["args"], "--metrics-port") or 0)
    assert probe_target(container, "readinessProbe") == ("/readyz", metrics)
    for name, container in containers():
        url = {e["name"]: e.get("value") for e in container.get("env", [])}.get("BACKFILLER_URL")
        assert url in (None, f"http://{service['metadata']['name']}"), name


def test_workers_take_the_default_queue_and_all_run_one_image() -> None:
    config = named("ConfigMap", "backfiller-config")["data"]
    (worker,) = pod_spec(named("Deployment", "backfiller-worker"))["containers"]
    queues = (flag_value(worker["args"], "--queues") or "").split(",")
    assert config["BACKFILLER_CELERY_QUEUE"] in queues
    assert len({container["image"] for _, container in containers()}) == 1
    migrate = named("Job", "backfiller-migrate")
    assert pod_spec(migrate)["restartPolicy"] == "Never"


# -- the containers, run: as processes on loopback, with their manifest's arguments and env ----


def as_process(
    workload: dict[str, Any], values: dict[tuple[str, str], str]
) -> tuple[list[str], dict[str, str], dict[int, int]]:
    """A container's arguments and environment for a process here: its ports moved to free
    ones (container port -> port here), 0.0.0.0 to loopback, Secrets' keys from ``values``."""
    (container,) = pod_spec(workload)["containers"]
    declared = {p["containerPort"] for p in container.get("ports", [])}
    moved = {port: free_port() for port in declared}
    args = []
    for arg in container["args"]:
        if arg == "0.0.0.0":
            arg = "127.0.0.1"
        elif arg.isdigit() and int(arg) in moved:
            arg = str(moved[int(arg)])
        args.append(arg)
    config = named("ConfigMap", "backfiller-config")["data"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if container.get("envFrom"):
        env.update(config)
    env["BACKFILLER_DEFINITIONS"] = "backfiller.examples.quickstart:definitions"
    for entry in container.get("env", []):
        ref = entry.get("valueFrom", {}).get("secretKeyRef")
        if ref is None:
            env[entry["name"]] = entry["value"]
        elif (ref["name"], ref["key"]) in values:
            env[entry["name"]] = values[(ref["name"], ref["key"])]
        else:
            assert ref.get("optional") is True, f"{entry['name']} has no value"
    return [sys.executable, "-m", "backfiller", *args], env, moved


def probes(workload: dict[str, Any], moved: dict[int, int]) -> dict[str, str]:
    """Every URL Kubernetes would call on this pod (probes, metrics scrape), here."""
    (container,) = pod_spec(workload)["containers"]
    named_ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    found = {}
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        get = container[probe]["httpGet"]
        found[probe] = f"http://127.0.0.1:{moved[named_ports[get['port']]]}{get['path']}"
    annotations = workload["spec"]["template"]["metadata"]["annotations"]
    port = moved[int(annotations["prometheus.io/port"])]
    found["metrics"] = f"http://127.0.0.1:{port}{annotations['prometheus.io/path']}"
    return found


def answering(urls: dict[str, str], timeout: float) -> dict[str, int]:
    """The status each URL answers once all answer 200, or when ``timeout`` runs out."""
    statuses: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for what, url in urls.items():
            with suppress(httpx.HTTPError):
                statuses[what] = HTTP.get(url, timeout=2).status_code
        if len(statuses) == len(urls) and set(statuses.values()) == {200}:
            break
        time.sleep(0.3)
    return statuses


@pytest.mark.slow
def test_the_migration_api_and_daemon_run_and_answer_their_probes(tmp_path: Path) -> None:
    """The Job's, the API's and the daemon's containers, as written, on loopback: the Job
    migrates, then every probe and metrics scrape the manifests declare answers 200.
    (The workers' command runs in tests/acceptance/test_cluster_script.py.)"""
    broker = broker_url("rabbitmq")
    values = {
        ("backfiller-database", "database-url"): f"sqlite:///{tmp_path / 'backfiller.db'}",
        ("backfiller-broker", "broker-url"): broker,
        ("backfiller-broker", "broker-key"): "k" * 64,
    }
    argv, env, _ = as_process(named("Job", "backfiller-migrate"), values)
    migrated = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert migrated.returncode == 0, migrated.stderr
    started: list[subprocess.Popen[bytes]] = []
    urls: dict[str, str] = {}
    try:
        for name in ("backfiller-api", "backfiller-daemon"):
            workload = named("Deployment", name)
            argv, env, moved = as_process(workload, values)
            env["BACKFILLER_CELERY_QUEUE"] = f"test-deploy-{os.getpid()}"
            with open(tmp_path / f"{name}.log", "wb") as log:  # the process keeps its own copy
                started.append(
                    subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=log, stderr=log)
                )
            urls |= {f"{name} {what}": url for what, url in probes(workload, moved).items()}
        statuses = answering(urls, timeout=180)
        logs = {p.name: p.read_text()[-2000:] for p in tmp_path.glob("*.log")}
        assert statuses == dict.fromkeys(urls, 200), logs
    finally:
        for process in started:
            process.terminate()
        for process in started:
            process.wait(30)
