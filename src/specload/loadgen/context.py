"""What every user of one load process shares for one test: ids, prompts, model, headers.

`ProcessContext.for_env(environment)` is built on first use after `test_start` (when
workers have received the master's options) and dropped at the next `test_start`, so
options changed in the web UI take effect. It hands out request ids from a process-wide
counter (`<client_id>-<seq>`, client id `<hostname>-<pid>`), and holds this process's
share of the seeded prompt order (worker index of `--expect-workers`), the API key
header (from the environment variable named by `--api-key-env`; never logged), and the
model id (`--model`, else the first id listed by `GET /v1/models`, fetched once).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import urllib.error
import urllib.request
from itertools import count
from typing import Any
from weakref import WeakKeyDictionary

import gevent
import orjson
from gevent.lock import Semaphore
from locust import events
from locust.env import Environment
from locust.runners import LocalRunner, WorkerRunner

from specload.errors import UserError
from specload.loadgen.options import RunOptions
from specload.prompts import Prompt, PromptOrder, load_prompts

MODELS_PATH = "/v1/models"
log = logging.getLogger(__name__)

_contexts: WeakKeyDictionary[Environment, ProcessContext] = WeakKeyDictionary()
# Process-wide, not per test: a second test from the web UI appends to the same
# `_requests.csv`, so request ids must not start over. (Forked workers get fresh copies.)
_request_seq = count(1)
_user_seq = count(1)


class ModelDiscoveryError(Exception):
    """`GET /v1/models` failed or listed no model."""


class ProcessContext:
    """Per-process, per-test shared state of the streaming users."""

    def __init__(self, environment: Environment) -> None:
        self.env = environment
        self.opts = RunOptions.from_env(environment)
        # computed here, not at import: `--processes` forks after importing the locustfile
        self.client_id = f"{socket.gethostname()}-{os.getpid()}"
        index, share_count = _share(environment)
        self._order = PromptOrder(load_prompts(self.opts.prompts), self.opts.seed,
                                  index, share_count)
        key = os.environ.get(self.opts.api_key_env, "")
        self.auth_headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._model = self.opts.model
        self._model_lock = Semaphore()

    @classmethod
    def for_env(cls, environment: Environment) -> ProcessContext:
        ctx = _contexts.get(environment)
        if ctx is None:
            ctx = _contexts[environment] = cls(environment)
        return ctx

    def next_request_id(self) -> str:
        return f"{self.client_id}-{next(_request_seq)}"

    def next_user_id(self) -> int:
        return next(_user_seq)

    def next_prompt(self) -> Prompt:
        return self._order.next()

    def model(self, host: str) -> str:
        """The model id to request; discovers it from `host` once if `--model` is empty."""
        if self._model:
            return self._model
        with self._model_lock:
            if not self._model:
                self._model = fetch_first_model(host, self.auth_headers,
                                                self.opts.request_timeout)
        return self._model


def fetch_first_model(host: str, headers: dict[str, str], timeout: float) -> str:
    """The first model id listed by `GET {host}/v1/models`."""
    url = host.rstrip("/") + MODELS_PATH
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            body: Any = orjson.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raise ModelDiscoveryError(f"GET {MODELS_PATH}: HTTP {exc.code}") from exc
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ModelDiscoveryError(f"GET {MODELS_PATH}: {exc}") from exc
    data = body.get("data") if isinstance(body, dict) else None
    if not data or not isinstance(data[0], dict) or not data[0].get("id"):
        raise ModelDiscoveryError(f"GET {MODELS_PATH} listed no model; pass --model")
    return str(data[0]["id"])


def _share(environment: Environment) -> tuple[int, int]:
    runner = environment.runner
    if not isinstance(runner, WorkerRunner):
        return 0, 1
    expected = int(getattr(environment.parsed_options, "expect_workers", 1) or 1)
    return runner.worker_index, max(expected, runner.worker_index + 1)


@events.init.add_listener
def _check_at_init(environment: Environment, **_: Any) -> None:
    """In a single process, refuse bad options and prompt files before anything starts.

    (A master must not exit here: its `--processes` workers would wait a minute for it.
    There, `_rebuild` reports the error at test start and quits the whole run.)
    """
    if not isinstance(environment.runner, LocalRunner) or environment.parsed_options is None:
        return
    try:
        load_prompts(RunOptions.from_env(environment).prompts)
    except (UserError, ValueError) as exc:
        sys.stderr.write(f"specload: {exc}\n")
        raise SystemExit(2) from None


@events.test_start.add_listener
def _rebuild(environment: Environment, **_: Any) -> None:
    """Fresh context per test; a bad option or prompt file stops the run with one line."""
    _contexts.pop(environment, None)
    try:
        ProcessContext.for_env(environment)
    except (UserError, ValueError) as exc:
        log.error("specload: %s", exc)
        environment.process_exit_code = 2
        if environment.runner is not None:
            gevent.spawn(environment.runner.quit)
