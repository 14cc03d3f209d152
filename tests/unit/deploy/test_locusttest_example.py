"""The LocustTest example uses the Locust operator's fields only, and runs specload's ladder."""

from __future__ import annotations

import shlex

import yaml

from tests.support.deploy import LOCUSTTEST, locusttest_problems


def example() -> dict:
    return yaml.safe_load(LOCUSTTEST.read_text())


def test_example_has_exactly_the_operators_fields() -> None:
    assert locusttest_problems(example()) == []


def test_example_runs_the_ladder_with_one_cpu_per_worker_process() -> None:
    spec = example()["spec"]
    args = shlex.split(spec["args"])
    for option in ("--host", "--ladder", "--warmup", "--measure", "--csv"):
        assert option in args
    # the operator adds --master / --worker itself; Locust refuses --processes with --master
    assert not {"--master", "--worker", "--processes", "-f"} & set(args)
    assert "specload.loadgen.locustfile_ladder" in spec["locustfile"]["content"]
    limits = spec["worker"]["resources"]["limits"]
    assert str(limits["cpu"]) == str(spec["worker"]["resources"]["requests"]["cpu"]) == "1"


def test_the_check_finds_what_the_operator_would_drop_or_refuse() -> None:
    bad = example()
    spec = bad["spec"]
    spec["volumes"] = [{"name": "results"}]
    spec["env"] = [{"name": "OPENAI_API_KEY", "valueFrom": {"secretKeyRef": {"name": "k"}}}]
    spec["workers"] = 0
    spec["imagePullPolicy"] = "Sometimes"
    spec["locustfile"]["configMap"] = {"name": "cm"}
    spec["master"]["resources"]["requests"]["cpu"] = ["1"]
    assert sorted(locusttest_problems(bad)) == sorted([
        "spec.volumes: not a field of the operator's LocustTest",
        "spec.env.0.valueFrom: not a field of the operator's LocustTest",
        "spec.workers: required, 1 or more, got 0",
        "spec.imagePullPolicy: one of IfNotPresent, Always, Never",
        "spec.locustfile: exactly one of content and configMap",
        "spec.master.resources.requests.cpu: expected int-or-string, got ['1']",
    ])
    assert locusttest_problems({"apiVersion": "locust.io/v2", "kind": "LocustTest",
                                "spec": {"workers": 1}}) == [
        "not a locust.io/v1 LocustTest: locust.io/v2 LocustTest"]
