"""The Kubernetes manifests render with `kubectl kustomize`, fit the Kubernetes schemas,
and wire the pieces together: ports, CPUs per worker process, scenario, API key, results.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from specload.cli import build_parser
from specload.config.scenario import parse_scenario
from tests.support import REPO
from tests.support.deploy import (
    BASE,
    KUBERNETES,
    SCHEMA_VERSIONS,
    SWEEP,
    by_kind,
    render,
    schema_problem,
)

IMAGE = "registry.example.com/specload:0.1.0"


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["spec"]["template"]["spec"]["containers"]


def scenario_of(objs: list[dict[str, Any]]) -> Any:
    text = by_kind(objs, "ConfigMap", "specload-scenario")["data"]["scenario.yaml"]
    return parse_scenario(yaml.safe_load(text), Path("."))


def option(args: list[str], name: str) -> str:
    return next(a.split("=", 1)[1] for a in args if a.startswith(f"{name}="))


@pytest.fixture(scope="module")
def base() -> list[dict[str, Any]]:
    return render(BASE)


@pytest.fixture(scope="module")
def sweep() -> list[dict[str, Any]]:
    return render(SWEEP)


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
def test_every_object_fits_the_kubernetes_schema(base, sweep, version: str) -> None:
    reader = yaml.safe_load((SWEEP / "results-reader.yaml").read_text())
    objs = [*base, *sweep, reader]
    assert [p for o in objs if (p := schema_problem(o, version))] == []


def test_base_master_service_workers_scenario_and_key(base) -> None:
    assert sorted(o["kind"] for o in base) == [
        "ConfigMap", "Deployment", "Deployment", "Secret", "Service"]
    service = by_kind(base, "Service", "specload-master")
    assert {(p["name"], p["port"]) for p in service["spec"]["ports"]} == {
        ("master", 5557), ("web-ui", 8089), ("metrics", 9464)}
    assert service["spec"]["type"] == "ClusterIP"
    master = by_kind(base, "Deployment", "specload-master")
    assert service["spec"]["selector"].items() <= (
        master["spec"]["template"]["metadata"]["labels"].items())
    assert {p["name"] for p in containers(master)[0]["ports"]} == {"master", "web-ui"}

    workers = by_kind(base, "Deployment", "specload-worker")
    (worker,) = containers(workers)
    assert worker["args"][:2] == ["worker", "specload-master"]
    processes = int(option(worker["args"], "--processes"))
    assert option(worker["args"], "--port") == "5557"
    resources = worker["resources"]
    assert resources["requests"]["cpu"] == resources["limits"]["cpu"] == str(processes)

    scenario = scenario_of(base)
    assert scenario.distributed.workers == workers["spec"]["replicas"] * processes
    assert (scenario.distributed.master_bind_host, scenario.distributed.master_bind_port) == (
        "0.0.0.0", 5557)
    secret = by_kind(base, "Secret", "specload-api-key")
    for deployment in (master, workers):
        (env,) = containers(deployment)[0]["env"]
        assert env["name"] == scenario.request.api_key_env
        assert env["valueFrom"]["secretKeyRef"]["name"] == secret["metadata"]["name"]
        assert env["valueFrom"]["secretKeyRef"]["key"] in secret["stringData"]
        assert containers(deployment)[0]["image"] == IMAGE


def test_sweep_overlay_runs_the_scenario_as_a_job_writing_to_a_claim(sweep) -> None:
    job = by_kind(sweep, "Job", "specload-sweep")
    (container,) = containers(job)
    assert container["args"][:4] == ["sweep", "/scenarios/scenario.yaml", "--out", "/results"]
    args = build_parser().parse_args(container["args"])  # the CLI takes them as they are
    assert (args.metrics_port, args.metrics_host) == (9464, "0.0.0.0")
    assert container["image"] == IMAGE
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert mounts["results"] == "/results"
    claim = by_kind(sweep, "PersistentVolumeClaim", "specload-results")
    assert volumes["results"]["persistentVolumeClaim"]["claimName"] == (
        claim["metadata"]["name"])
    # the generated ConfigMap's name (with its hash) reached the Job's volume
    config_map = by_kind(sweep, "ConfigMap", "specload-scenario")
    assert volumes["scenario"]["configMap"]["name"] == config_map["metadata"]["name"]
    # the workers reach the sweep through the master Service; the live master is off
    service = by_kind(sweep, "Service", "specload-master")
    assert service["spec"]["selector"].items() <= (
        job["spec"]["template"]["metadata"]["labels"].items())
    assert by_kind(sweep, "Deployment", "specload-master")["spec"]["replicas"] == 0
    assert container["ports"] == [{"name": "master", "containerPort": 5557},
                                  {"name": "metrics", "containerPort": 9464}]
    metrics = next(p for p in service["spec"]["ports"] if p["name"] == "metrics")
    assert (metrics["port"], metrics["targetPort"]) == (args.metrics_port, "metrics")


def test_the_docs_recipe_for_your_own_overlay_renders(tmp_path: Path) -> None:
    """docs/distributed.md's deploy/kubernetes/local overlay: image, key and scenario."""
    docs = (REPO / "docs" / "distributed.md").read_text()
    block = re.search(r"```yaml\n(# deploy/kubernetes/local/kustomization.yaml\n.*?)```",
                      docs, re.DOTALL)
    assert block, "the recipe's kustomization.yaml is not in docs/distributed.md"
    local = tmp_path / "local"
    local.mkdir()
    to_repo = os.path.relpath(KUBERNETES, local)
    (local / "kustomization.yaml").write_text(block.group(1).replace("../", f"{to_repo}/", 1))
    (local / "scenario.yaml").write_text((BASE / "scenario.yaml").read_text())
    (local / "api-key").write_text("sk-test")
    objs = render(local)
    images = {c["image"] for o in objs if o["kind"] in ("Deployment", "Job")
              for c in containers(o)}
    assert len(images) == 1 and IMAGE not in images
    secret = by_kind(objs, "Secret", "specload-api-key")
    assert secret["metadata"]["name"] == "specload-api-key"
    assert "data" in secret and "api-key" in secret["data"]
    assert by_kind(objs, "Job", "specload-sweep")
