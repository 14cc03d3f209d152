"""`spawn_message.install`: Locust's default options, parsed once per process."""

from __future__ import annotations

import pytest
from locust import argument_parser

from specload.loadgen import spawn_message


def test_the_defaults_are_locusts_and_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Locust's own function (another test's plugin.install may have wrapped it already);
    # restored after the test
    found = argument_parser.default_args_dict
    monkeypatch.setattr(argument_parser, "default_args_dict",
                        getattr(found, "__wrapped__", found))
    built = []
    setup = argument_parser.setup_parser_arguments
    monkeypatch.setattr(argument_parser, "setup_parser_arguments",
                        lambda parser: built.append(1) or setup(parser))
    expected = argument_parser.default_args_dict()
    spawn_message.install()
    spawn_message.install()  # a second install keeps the one cache
    # a spawn message's keys, each tested as runners.WorkerRunner.handle_message does
    kept = [k for k in ("ladder", "host", "warmup") if k not in argument_parser.default_args_dict()]
    assert kept == ["ladder", "warmup"]
    assert argument_parser.default_args_dict() == expected
    assert len(built) == 2  # the expected dict's, then the cache's first call
