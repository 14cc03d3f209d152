"""What every user of one load process shares for one test: ids, prompts, model, headers.

`ProcessState.for_env(environment)` is built on first use after `test_start` (when
workers have received the master's options) and dropped at the next `test_start`, so
options changed in the web UI take effect. It hands out request ids (UUIDs: some
servers accept nothing else in `X-Request-Id`, and they are unique across load
machines) and the header that carries them (`--request-id-header`, or none), and holds
this process's share of the seeded prompt order (worker index of `--expect-workers`),
the API key header (from the environment variable named by `--api-key-env`; never
logged), and the model id (`--model`, else the first id listed by `GET /v1/models`,
fetched once; a `--model` the server does not list is warned about once). Other
workloads add what they share through `EXTENSIONS` (chat sessions: the session deck; a
trace replay: its prompt writer),
so a bad conversations file fails the same loud way as a bad prompt file.
"""

from __future__ import annotations

import functools
import logging
import random
import ssl
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import replace
from itertools import count
from typing import Any
from weakref import WeakKeyDictionary

import gevent
import orjson
from gevent.lock import Semaphore
from locust import events
from locust.env import Environment
from locust.runners import LocalRunner, WorkerRunner

from specload.config import api_key
from specload.errors import UserError
from specload.loadgen.options import RunOptions
from specload.runfiles.records import client_id
from specload.traffic import prompt_fit
from specload.traffic.category_mix import CategoryMix
from specload.traffic.conversations import SessionDeck
from specload.traffic.prompt_sets import load_prompts
from specload.traffic.prompts import Prompt, PromptOrder
from specload.traffic.shapes import LengthSpec, PromptBuilder
from specload.traffic.trace_prompts import TracePrompts

MODELS_PATH = "/v1/models"
log = logging.getLogger(__name__)

_contexts: WeakKeyDictionary[Environment, ProcessState] = WeakKeyDictionary()
_user_seq = count(1)
# Called with every new context: what other workloads share per process (sessions.py).
EXTENSIONS: list[Callable[[ProcessState], None]] = []


class ModelDiscoveryError(Exception):
    """`GET /v1/models` failed or listed no model."""


class ProcessState:
    """Per-process, per-test shared state of the streaming users."""

    def __init__(self, environment: Environment) -> None:
        self.env = environment
        self.opts = RunOptions.from_env(environment)
        self.client_id = client_id()
        self.share = index, share_count = _share(environment)
        prompts = prompt_fit.apply(load_prompts(self.opts.prompts, self.opts.prompt_format),
                                   prompt_fit.parse_skip(self.opts.skip_prompts),
                                   prompt_fit.parse_cut(self.opts.cut_prompts))
        mixed = CategoryMix.parse(self.opts.categories).deal(prompts) if (
            self.opts.categories) else prompts
        self._order = PromptOrder(mixed, self.opts.seed, index, share_count)
        self._prompts = prompts
        opts = self.opts
        seed = opts.seed * 1_000_003 + index  # each process its own draws
        self._lengths = random.Random(seed)
        self._synthetic = PromptBuilder(self.corpus, seed, opts.shared_prefix_tokens) \
            if opts.prompt_tokens else None
        self._prompt_len = LengthSpec.parse(opts.prompt_tokens) if opts.prompt_tokens else None
        self._output_len = LengthSpec.parse(opts.output_tokens) if opts.output_tokens else None
        self.auth_headers = api_key.bearer(api_key.resolve(self.opts.api_key_env))
        header = self.opts.request_id_header.strip()
        self.request_id_header = "" if header.lower() in ("", "off", "none") else header
        self._model = self.opts.model
        self._model_lock = Semaphore()
        # the background check of --model against the server's list, once started
        self.model_check: gevent.Greenlet | None = None
        self._request_seq = count(1)
        self.sessions: SessionDeck | None = None
        self.trace_prompts: TracePrompts | None = None
        for extend in EXTENSIONS:
            extend(self)

    @classmethod
    def for_env(cls, environment: Environment) -> ProcessState:
        ctx = _contexts.get(environment)
        if ctx is None:
            ctx = _contexts[environment] = cls(environment)
        return ctx

    @functools.cached_property
    def corpus(self) -> str:
        """The prompt set's text, what synthetic and trace prompts are written from."""
        return " ".join(p.text for p in self._prompts)

    def next_request(self) -> tuple[int, str]:
        """This process's next request: its sequence number (from 1) and a UUID id."""
        return next(self._request_seq), str(uuid.uuid4())

    def next_user_id(self) -> int:
        return next(_user_seq)

    def next_prompt(self) -> Prompt:
        """The next prompt: from the prompt set, or synthetic of a drawn length."""
        if self._synthetic is not None and self._prompt_len is not None:
            built = self._synthetic.build(self._prompt_len.sample(self._lengths))
            prompt = Prompt(built.messages, "synthetic", None, built.chars)
        else:
            prompt = self._order.next()
        return self.with_output_length(prompt)

    def with_output_length(self, prompt: Prompt) -> Prompt:
        """The prompt with its max_tokens drawn from `--output-tokens`, if given."""
        if self._output_len is None:
            return prompt
        return replace(prompt, max_tokens=self._output_len.sample(self._lengths))

    def observe_prompt(self, prompt: Prompt, prompt_tokens: int | None) -> None:
        """The server counted `prompt_tokens` for a synthetic prompt: calibrate."""
        if self._synthetic is not None and prompt.chars and prompt_tokens:
            self._synthetic.observe(prompt.chars, prompt_tokens)

    def model(self, host: str) -> str:
        """The model id to request; discovers it from `host` once if `--model` is empty."""
        if self.opts.model and self.model_check is None:
            self.model_check = gevent.spawn(self._check_model, host)
        if self._model:
            return self._model
        with self._model_lock:
            if not self._model:
                self._model = self._fetch_models(host)[0]
        return self._model

    def url_tls(self, host: str) -> ssl.SSLContext | None:
        """The TLS context for urllib calls to `host` (None for plain HTTP)."""
        opts = self.opts
        # building a TLS context loads the trust store, which holds the event loop for
        # tens of ms: only for HTTPS, and once per process
        return (plain_tls_context(opts.ca_bundle or None, opts.insecure)
                if host.lower().startswith("https:") else None)

    def _fetch_models(self, host: str) -> list[str]:
        return fetch_models(host, self.auth_headers, self.opts.request_timeout_s,
                            self.url_tls(host))

    def _check_model(self, host: str) -> None:
        """Warn (once) when the server does not list the requested model."""
        try:
            listed = self._fetch_models(host)
        except ModelDiscoveryError as exc:
            log.warning("specload: could not check --model %s: %s", self._model, exc)
            return
        if self._model not in listed:
            log.warning("specload: the server does not list model %r (it lists %s); it may "
                        "serve another model or reject the requests", self._model,
                        ", ".join(listed))


@functools.cache
def plain_tls_context(ca_bundle: str | None, insecure: bool) -> ssl.SSLContext:
    """An ordinary client TLS context with the users' trust settings (for urllib)."""
    if insecure:
        return ssl._create_unverified_context()
    return ssl.create_default_context(cafile=ca_bundle)


def fetch_models(host: str, headers: dict[str, str], timeout: float,
                 context: ssl.SSLContext | None = None) -> list[str]:
    """The model ids listed by `GET {host}/v1/models` (at least one)."""
    url = host.rstrip("/") + MODELS_PATH
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as resp:
            body: Any = orjson.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raise ModelDiscoveryError(f"GET {MODELS_PATH}: HTTP {exc.code}") from exc
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ModelDiscoveryError(f"GET {MODELS_PATH}: {exc}") from exc
    data = body.get("data") if isinstance(body, dict) else None
    ids = [str(m["id"]) for m in data or [] if isinstance(m, dict) and m.get("id")]
    if not ids:
        raise ModelDiscoveryError(f"GET {MODELS_PATH} listed no model; pass --model")
    return ids


def _share(environment: Environment) -> tuple[int, int]:
    runner = environment.runner
    if not isinstance(runner, WorkerRunner):
        return 0, 1
    expected = int(getattr(environment.parsed_options, "expect_workers", 1) or 1)
    return runner.worker_index, max(expected, runner.worker_index + 1)


def _check_at_init(environment: Environment, **_: Any) -> None:
    """In a single process, refuse bad options and input files before anything starts.

    (A master must not exit here: its `--processes` workers would wait a minute for it.
    There, `_rebuild` reports the error at test start and quits the whole run.)
    """
    if not isinstance(environment.runner, LocalRunner) or environment.parsed_options is None:
        return
    try:
        ProcessState(environment)
    except (UserError, ValueError) as exc:
        sys.stderr.write(f"specload: {exc}\n")
        raise SystemExit(2) from None


def _rebuild(environment: Environment, **_: Any) -> None:
    """Fresh context per test; a bad option or prompt file stops the run with one line."""
    _contexts.pop(environment, None)
    try:
        ctx = ProcessState.for_env(environment)
        if ctx.opts.insecure:
            log.warning("specload: --insecure: HTTPS certificates are not verified")
    except (UserError, ValueError) as exc:
        log.error("specload: %s", exc)
        environment.process_exit_code = 2
        if environment.runner is not None:
            gevent.spawn(environment.runner.quit)


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init.add_listener(_check_at_init)
    events.test_start.add_listener(_rebuild)
