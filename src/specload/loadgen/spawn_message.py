"""A worker reads each spawn message without parsing Locust's options again per key.

Locust 2.47's `WorkerRunner.handle_message` (runners.py) keeps a spawn message's
options that are not Locust's own with `k not in argument_parser.default_args_dict()`
inside a dict comprehension: for every key of the message it builds Locust's argument
parser and parses an empty command line again. With specload's options that held a
worker's event loop for 80-110 ms at every spawn message, and the master sends one per
second while a rung's users ramp up, so the first requests of a rung started late and
every chunk in flight was stamped late. The defaults are the same at every call (Locust's
own arguments, no config file), so `install` keeps the first answer.
"""

from __future__ import annotations

import functools

from locust import argument_parser


def install() -> None:
    """Answer `default_args_dict` from the first call; read-only use (membership) only."""
    original = argument_parser.default_args_dict
    if not hasattr(original, "cache_info"):  # not wrapped yet
        argument_parser.default_args_dict = functools.cache(original)
