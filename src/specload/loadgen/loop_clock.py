"""Locust's `--run-time` counted from when the run starts, not from a stale loop clock.

A gevent timer started from the main greenlet counts from the event loop's cached idea
of the time, which moves only when the loop runs (`loop.update_now()` moves it by
hand). Headless Locust (2.47, main.py) starts its `--run-time` timer with
`gevent.spawn_later` right after firing the `init` event, and its loop has not run since
the process began: the cached time is as old as the imports and the `init` listeners
(specload's read the prompt file and check the options). The run then ends early by
that much: a `-t 2s` run on a busy machine ended 0.03 s after its users spawned, before
any request. `plugin.install` registers the listener here after every other part's, so
it brings the loop's time up to date after their work.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from gevent import get_hub
from locust import events


def on_init(**_: Any) -> None:
    get_hub().loop.update_now()


def install() -> None:
    """Make `on_init` the last of the `init` listeners registered so far (from every
    `plugin.install`, after the parts it installs)."""
    with suppress(ValueError):  # not registered yet
        events.init.remove_listener(on_init)
    events.init.add_listener(on_init)
