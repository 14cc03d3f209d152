"""specload's Locust arguments: parsed by Locust's parser, shown in the web UI, validated."""

from __future__ import annotations

import pytest
from locust.argument_parser import get_parser, ui_extra_args_dict
from locust.env import Environment

from specload.loadgen import plugin, shape, workload_options
from specload.loadgen.options import RunOptions

plugin.install()  # as a locustfile does: specload's arguments and listeners

NAMES = ("model", "max_tokens", "ignore_eos", "min_tokens", "temperature", "prompts", "seed",
         "api_key_env", "request_timeout_s", "continuous_usage", "records")


def env_for(*args: str) -> Environment:
    return Environment(parsed_options=get_parser().parse_args(list(args)))


def test_defaults() -> None:
    opts = RunOptions.from_env(env_for())
    assert opts == RunOptions()
    assert opts.continuous_usage and opts.records and opts.api_key_env == "OPENAI_API_KEY"


def test_values_are_parsed() -> None:
    opts = RunOptions.from_env(env_for(
        "--model", "m", "--max-tokens", "64", "--ignore-eos", "--min-tokens", "64",
        "--temperature", "0.7", "--seed", "9", "--api-key-env", "MY_KEY",
        "--request-timeout", "12.5", "--no-continuous-usage", "--no-records",
        "--prompts", "p.jsonl", "--failure-backoff", "0", "--request-id-header", "off",
        "--insecure",
    ))
    assert opts == RunOptions(
        model="m", max_tokens=64, ignore_eos=True, min_tokens=64, temperature=0.7,
        prompts="p.jsonl", seed=9, api_key_env="MY_KEY", request_timeout_s=12.5,
        failure_backoff_s=0.0, request_id_header="off", ca_bundle="", insecure=True,
        continuous_usage=False, records=False)


def test_all_options_are_in_the_web_ui() -> None:
    assert set(NAMES) <= set(ui_extra_args_dict([]))


def test_every_web_ui_option_has_a_typed_default() -> None:
    """Locust's web UI keeps a form field's text as it is where the option's default is
    None (locust/web.py, `swarm`): a number would arrive as text. Each has a default of
    its type instead (a trace window's length was None, and a run started from the form
    failed at its first tick)."""
    plugin.install(workload_options, shape)
    fields = ui_extra_args_dict([])
    assert {"trace", "speeds", "duration_s", "rates", "steps"} <= set(fields)
    assert [k for k, v in fields.items() if v["default_value"] is None] == []


def test_bare_environment_uses_defaults() -> None:
    assert RunOptions.from_env(Environment()) == RunOptions()


@pytest.mark.parametrize("args, fragment", [
    (["--max-tokens", "0"], "--max-tokens"),
    (["--min-tokens", "-1"], "--min-tokens"),
    (["--request-timeout", "0"], "--request-timeout"),
    (["--temperature", "-0.5"], "--temperature"),
    (["--failure-backoff", "-1"], "--failure-backoff"),
    (["--ca-bundle", "/no/such/file.pem"], "--ca-bundle"),
    (["--min-tokens", "300"], r"min_tokens \(300\) is larger than max_tokens \(256\)"),
])
def test_invalid_values(args: list[str], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        RunOptions.from_env(env_for(*args))
