"""The offline schema check finds what a cluster's API server would refuse."""

from __future__ import annotations

from tests.support.deploy import SCHEMA_VERSIONS, schema_problem

SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
           "spec": {"ports": [{"name": "master", "port": 5557}]}}


def test_a_valid_object_passes_and_a_wrong_one_is_named() -> None:
    for version in SCHEMA_VERSIONS:
        assert schema_problem(SERVICE, version) is None
    typo = {**SERVICE, "spec": {"ports": [{"name": "master", "port": 5557, "prot": "TCP"}]}}
    problem = schema_problem(typo, SCHEMA_VERSIONS[-1])
    assert problem is not None
    assert problem.startswith("Service/s spec.ports.0: ") and "'prot'" in problem
