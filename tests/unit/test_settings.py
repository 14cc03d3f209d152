"""Every declared setting round-trips: scenario key -> `locust` flag -> parsed value.

Each setting of `settings.Request`, `Windows` and `Workload` is given a value that is
not its default in a scenario; the runner's command line for it is parsed by a Locust
parser holding the options derived from the same declarations, and every value must
come back as the scenario held it. With no keys given, the Locust defaults are the
scenario's. A setting added to a declaration is covered here without a new line.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from locust.argument_parser import LocustArgumentParser

from specload.cli import build_parser
from specload.config.scenario import (
    Arm,
    CommandArm,
    Distributed,
    Placement,
    Scenario,
    SimArm,
    Slo,
    keys_reference,
    parse_scenario,
)
from specload.config.settings import (
    Declared,
    Request,
    Simulator,
    Windows,
    Workload,
    declared,
    from_attributes,
    reference,
)
from specload.config.settings import to_args as settings_args
from specload.loadgen import shape, workload_options
from specload.loadgen.options import RunOptions, add_arguments
from specload.loadgen.workload_options import WorkloadOptions
from specload.runner.locust_proc import LoadMode, locust_command, request_args, workload_args
from specload.traffic.kinds import LOAD_STEPS, OPEN, TRACE
from specload.traffic.shapes import LengthSpec

# settings whose value names a file the scenario checks
SHAREGPT = '[{"conversations": [{"from": "human", "value": "hi"}]}]'
TRACE_LINES = "".join(f'{{"timestamp": {t}, "input_length": 9, "output_length": 2}}\n'
                      for t in range(0, 6000, 500))
FILES = {"prompts": SHAREGPT, "conversations": SHAREGPT, "trace": TRACE_LINES,
         "ca_bundle": "not parsed here\n",
         "tls_cert": "not parsed here\n", "tls_key": "not parsed here\n"}
# values the scenario checks against what exists (profiles, flavours, fault kinds), and
# the prompts file's format (the file above is ShareGPT's)
KNOWN = {"profile": "bench-20ms", "flavor": "sglang", "faults": ("cut:0.1:20",),
         "prompt_format": "sharegpt"}


def other_value(d: Declared, tmp_path: Path) -> Any:
    """A value for `d` that is not its default and that the scenario accepts."""
    if d.name in FILES:
        path = tmp_path / f"{d.name}.json"
        path.write_text(FILES[d.name])
        return str(path)
    if d.name in KNOWN:
        return KNOWN[d.name]
    if d.rule.choices:
        return next(c for c in d.rule.choices if c != d.default)
    if d.rule.distribution is not None:
        return "uniform:2:9" if d.rule.distribution is LengthSpec else "exponential:3"
    if d.rule.json_object:
        return '{"chat_template_kwargs":{"enable_thinking":false},"top_p":0.9}'

    if d.base is bool:
        return not d.default
    if d.base is int:
        return (d.default or 0) + 3
    if d.base is float:
        return (d.default or 1.0) + 1.5
    return "MY_KEY" if d.name == "api_key_env" else f"x-{d.name}"


def scenario_with(tmp_path: Path, **keys: Any):
    raw = {"name": "s", "arms": [{"name": "a", "url": "http://127.0.0.1:1"}], **keys}
    return parse_scenario(raw, tmp_path)


def given(cls: type, tmp_path: Path) -> dict[str, Any]:
    return {d.name: other_value(d, tmp_path) for d in declared(cls) if d.rule.scenario}


def parser() -> LocustArgumentParser:
    """A parser with specload's options as the locustfiles register them."""
    p = LocustArgumentParser()
    add_arguments(p, Request)
    workload_options.add_workload_arguments(p)
    shape.add_ladder_arguments(p)
    return p


# settings that cannot be set together with others: each round-trips on its own
ALONE = {"categories": "sharegpt:1"}  # selects from the prompt set: no synthetic prompts


def test_every_setting_round_trips(tmp_path: Path) -> None:
    windows = given(Windows, tmp_path)
    windows["max_measure_s"] = windows["measure_s"] + 5
    # an open workload of sessions takes every workload key but the load steps' own
    every = given(Workload, tmp_path)
    steps_only = {k: every.pop(k) for k in LOAD_STEPS.keys if k in every}
    trace_only = {k: every.pop(k) for k in TRACE.keys if k in every and k not in OPEN.keys}
    workload = {**every, "kind": "open", "rates": [1.0]}
    request = {k: v for k, v in given(Request, tmp_path).items() if k not in ALONE}
    sc = scenario_with(tmp_path, request=request, workload=workload, **windows)
    argv = [*request_args(sc.request), *workload_args(sc.workload, sc.levels),
            *settings_args(sc, Windows)]
    parsed = parser().parse_args(argv)
    for cls, values in ((Request, sc.request), (Windows, sc), (Workload, sc.workload)):
        back = from_attributes(cls, parsed)
        for d in declared(cls):
            if d.rule.scenario and d.name not in (*ALONE, *steps_only, *trace_only):
                assert getattr(back, d.name) == getattr(values, d.name), (d.name, d.flag)
                assert getattr(back, d.name) != d.default, d.name
    assert WorkloadOptions.from_env(SimpleNamespace(parsed_options=parsed)).rates == "1"
    stepping = scenario_with(tmp_path, workload={**steps_only, "kind": "steps",
                                                 "steps": [4, 128, 4]})
    parsed = parser().parse_args(workload_args(stepping.workload, stepping.levels))
    back = WorkloadOptions.from_env(SimpleNamespace(parsed_options=parsed))
    assert back.steps == "4,128,4"
    assert {k: getattr(back, k) for k in steps_only} == steps_only
    replay = scenario_with(tmp_path, workload={**trace_only, "kind": "trace", "speed": [1, 2]})
    parsed = parser().parse_args(workload_args(replay.workload, replay.levels))
    back = WorkloadOptions.from_env(SimpleNamespace(parsed_options=parsed))
    assert back.speeds == "1,2"
    assert {k: getattr(back, k) for k in trace_only} == trace_only


@pytest.mark.parametrize(("name", "value"), ALONE.items())
def test_a_setting_set_alone_round_trips(tmp_path: Path, name: str, value: str) -> None:
    prompts = other_value(next(d for d in declared(Request) if d.name == "prompts"),
                          tmp_path)  # a ShareGPT file: its prompts are "sharegpt"
    sc = scenario_with(tmp_path, request={"prompts": prompts, name: value})
    back = from_attributes(Request, parser().parse_args(request_args(sc.request)))
    assert getattr(back, name) == getattr(sc.request, name) == value


def test_every_simulator_setting_round_trips(tmp_path: Path) -> None:
    sim = {"spec": "on", **given(Simulator, tmp_path)}
    sc = scenario_with(tmp_path, arms=[{"name": "a", "sim": sim}])
    arm = sc.arms[0].sim
    assert arm is not None
    parsed = build_parser().parse_args(["sim", *settings_args(arm.settings(), Simulator)])
    for d in declared(Simulator):
        assert getattr(parsed, d.name) == getattr(arm, d.name) != d.default, d.name
    defaults = build_parser().parse_args(["sim"])
    assert from_attributes(Simulator, defaults) == Simulator()


def test_defaults_agree_on_both_sides(tmp_path: Path) -> None:
    sc = scenario_with(tmp_path)
    parsed = parser().parse_args([*request_args(sc.request), *workload_args(sc.workload,
                                                                            sc.levels)])
    assert from_attributes(RunOptions, parsed) == RunOptions()
    assert RunOptions() == RunOptions(**{d.name: getattr(sc.request, d.name)
                                         for d in declared(Request) if d.rule.scenario})
    assert from_attributes(Workload, parsed) == Workload(
        **{d.name: getattr(sc.workload, d.name) for d in declared(Workload)})
    assert Windows() == Windows(**{d.name: getattr(sc, d.name) for d in declared(Windows)})


@pytest.mark.parametrize("cls", [Request, Windows, Workload, Simulator])
def test_every_setting_has_help_and_a_flag(cls: type) -> None:
    flags = [d.flag for d in declared(cls)]
    assert len(set(flags)) == len(flags)
    for d in declared(cls):
        assert d.help and d.flag.startswith("--") and "_" not in d.flag, d.name
        assert d.default is None or isinstance(d.default, tuple if d.rule.repeat else d.base), \
            d.name


@pytest.mark.parametrize(("key", "value", "message"), [
    ("max_tokens", 0, "request.max_tokens: must be at least 1, got 0"),
    ("request_timeout_s", 0, "request.request_timeout_s: must be more than 0, got 0"),
    ("prompt_tokens", "uniform:9:2", "request.prompt_tokens: uniform:9:2"),
])
def test_a_bound_is_declared_once_and_holds_on_both_sides(
        tmp_path: Path, key: str, value: Any, message: str) -> None:
    from specload.errors import UserError

    with pytest.raises(UserError, match=message):
        scenario_with(tmp_path, request={key: value})
    flag = next(d.flag for d in declared(Request) if d.name == key)
    with pytest.raises(ValueError, match=flag):
        RunOptions(**{key: value}).validate()


def test_the_settings_page_is_the_declaration() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "settings.md"
    assert page.read_text().endswith(keys_reference() + "\n" + reference()), (
        "regenerate docs/settings.md's tables")


@pytest.mark.parametrize("model", [Scenario, Arm, SimArm, CommandArm, Placement, Distributed, Slo])
def test_every_scenario_key_says_what_it_is(model: type) -> None:
    """The scenario's own keys carry their help in their models, not in comments."""
    assert [n for n, f in model.model_fields.items() if not f.description] == []


def test_a_scenario_read_back_from_its_manifest_gives_the_same_command(tmp_path: Path) -> None:
    # A resumed sweep validates the manifest's dump, which holds every key: the command
    # lines must not grow options that a locustfile lacks (`--think-time` for users),
    # switches it has no `--no-` form of, or a None (`--slots None`).
    arms = [{"name": "a", "sim": {"spec": "on"}}, {"name": "b", "sim": {"spec": "off"}}]
    sc = scenario_with(tmp_path, arms=arms)
    again = parse_scenario(sc.public_dict(), tmp_path)
    mode = LoadMode()
    assert (locust_command(again, "URL", tmp_path, again.levels, mode)
            == locust_command(sc, "URL", tmp_path, sc.levels, mode))
    assert [a.sim.settings() for a in again.arms if a.sim] == [
        a.sim.settings() for a in sc.arms if a.sim]
    assert [settings_args(a.sim.settings(), Simulator) for a in sc.arms if a.sim] == [
        [], ["--spec", "off"]]


@pytest.mark.parametrize(("values", "message"), [
    ({"cv": 2.0}, "cv needs arrivals: gamma (Poisson arrivals have cv 1)"),
    ({"arrivals": "bursty"}, "--arrivals must be one of poisson, gamma, got 'bursty'"),
])
def test_each_workload_problem_is_reported_once(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as err:
        WorkloadOptions(**values).validate()
    assert str(err.value) == message
