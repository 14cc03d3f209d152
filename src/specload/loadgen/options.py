"""specload's request settings as Locust options, and their values for one run.

The options are derived from `settings.Request` and registered on
`events.init_command_line_parser` by `install` (from `plugin.install`): Locust parses
them and the web UI's form shows them. `locust -f locustfiles/chat.py --help` cannot
list them: Locust 2.47 prints its help before it imports the locustfile
(argument_parser.py, `parse_locustfile_option` runs `get_parser().parse_args()` on -h,
and main.py imports locustfiles only after it; locustio/locust#2917 was closed
unfixed), and nothing of a project runs before that short of an interpreter-wide
startup hook. So each locustfile prints the whole help itself: `python
locustfiles/chat.py --help` (`print_locust_help`).
Locust sends custom arguments to workers in spawn messages (MasterRunner.start puts
`parsed_options` in each spawn message), so code reads them through
`RunOptions.from_env` at test start or task time, never at import or init.
"""

from __future__ import annotations

import argparse
import os
from typing import Self, TypeVar

from locust import events
from locust.env import Environment

from specload.config.settings import Export, Request, add_options, from_attributes, problems
from specload.traffic import prompt_fit


def add_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """Register the settings `cls` declares (`config/settings.py`) as Locust options, each shown
    in the web UI's form with its help."""
    # on the parser itself: only LocustArgumentParser.add_argument knows include_in_web_ui
    # (argument groups bypass it)
    add_options(parser, cls, include_in_web_ui=True)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    # The web UI and a --master listen on loopback unless asked otherwise (--web-host,
    # --master-bind-host): a load generator's UI must not be open to the network.
    parser.set_defaults(web_host="127.0.0.1", master_bind_host="127.0.0.1")
    add_arguments(parser, Request)
    add_options(parser, Export)  # where a headless run serves /metrics: not a form field


T = TypeVar("T")


def read_options(cls: type[T], environment: Environment) -> T:
    """An options dataclass from Locust's parsed options (defaults for anything absent)."""
    return from_attributes(cls, environment.parsed_options)


def print_locust_help() -> None:
    """Locust's --help with every option registered so far (specload's included)."""
    from locust.argument_parser import get_parser  # builds a parser, firing our listeners

    get_parser().print_help()


class FromLocust:
    """Settings read from Locust's parsed options and checked: each problem of a declared
    setting (`settings.problems`) and those `more_problems` adds, in one line."""

    __slots__ = ()

    @classmethod
    def from_env(cls, environment: Environment, check: bool = True) -> Self:
        """Read the current values (defaults for anything absent, e.g. in a bare Environment).

        With `check`, values that cannot work raise ValueError (one-line message).
        """
        opts = read_options(cls, environment)
        if check:
            opts.validate()
        return opts

    def more_problems(self) -> list[str]:
        return []

    def validate(self) -> None:
        """Raise ValueError naming every value that cannot work, in one line."""
        found = problems(self) + self.more_problems()
        if found:
            raise ValueError("; ".join(found))


class RunOptions(FromLocust, Request):
    """The values of the request settings (`settings.Request`) for one run."""

    __slots__ = ()

    def more_problems(self) -> list[str]:
        found = []
        if self.ca_bundle and not os.path.isfile(self.ca_bundle):
            found.append(f"--ca-bundle {self.ca_bundle}: no such file")
        for text, parse in ((self.skip_prompts, prompt_fit.parse_skip),
                            (self.cut_prompts, prompt_fit.parse_cut)):
            try:
                parse(text)
            except ValueError as exc:
                found.append(str(exc))
        return found


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init_command_line_parser.add_listener(_add_arguments)
