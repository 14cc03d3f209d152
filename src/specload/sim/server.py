"""`specload sim`: load the profile, bind, print the ready line, serve until a signal.

With `--port 0` the OS picks a free port; once the socket listens, exactly one line
`specload-sim listening on http(s)://HOST:PORT` goes to stdout (flushed), which is what
scripts and tests wait for. `--tls-cert`/`--tls-key` serve HTTPS. `--data-parallel N`
runs N engine ranks (each with the profile's resources) behind the one API, requests
going to the least-loaded rank. SIGINT and SIGTERM stop the engines, close connections
and the trace, and exit with status 0. Configuration mistakes exit 2 with one line on
stderr. `--api-key KEY`, or `--api-key-env NAME` to keep the key off the command line,
guards the flavour's routes as its engine does; the key is never printed, logged or
traced.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import ssl
import sys
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from specload.sim import SimConfigError, heap_trim
from specload.sim.api import SimApi
from specload.sim.core import EngineCore
from specload.sim.faults import FaultPicker, parse_fault
from specload.sim.flavors import DEFAULT_FLAVOR, Flavor, adaptive_controller, flavor_named
from specload.sim.generate import Settings
from specload.sim.openai_request import Limits
from specload.sim.profile import Profile, engine_profile
from specload.sim.receive_stamps import listen_socket
from specload.sim.step_loop import StepLoop
from specload.sim.trace import TraceWriter


def _url(host: str, port: int, tls: bool) -> str:
    scheme = "https" if tls else "http"
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def build_api(args: argparse.Namespace, profile: Profile) -> SimApi:
    """Engines + API for parsed `specload sim` arguments; SimConfigError if they are bad."""
    flavor = flavor_named(getattr(args, "flavor", None) or DEFAULT_FLAVOR)
    ranks = getattr(args, "data_parallel", 1) or 1
    if ranks < 1:
        raise SimConfigError("--data-parallel must be 1 or more")
    adaptive = adaptive_controller(flavor, args.spec)
    slots = getattr(args, "slots", None) or flavor.slots
    caching = getattr(args, "prefix_caching", None)
    engines = [StepLoop(EngineCore(profile, args.spec, args.k, args.seed + rank, slots, caching,
                                   adaptive)) for rank in range(ranks)]
    context = getattr(args, "max_model_len", None) or profile.model.max_model_len
    if context > profile.model.max_model_len:
        raise SimConfigError(f"--max-model-len {context} is above the profile's "
                             f"max_model_len ({profile.model.max_model_len})")
    limits = Limits(model_name=args.model_name or profile.model.name,
                    max_model_len=context, cut_to_room=flavor.cuts_output_to_context,
                    max_output_tokens=profile.workload.max_output_tokens)
    settings = Settings(
        flavor=flavor, limits=limits, eos_mean=profile.workload.eos_mean_tokens,
        seed=args.seed, faults=FaultPicker([parse_fault(f) for f in args.faults], args.seed),
        trace=TraceWriter(args.trace) if args.trace else None, created=int(time.time()),
        reasoning_tokens=getattr(args, "reasoning_tokens", 0) or 0,
        connection_close=bool(getattr(args, "connection_close", False)),
        spec_metrics_k=_spec_metrics_k(args, flavor, engines),
        spec_metrics_detailed=getattr(args, "per_request_spec_decode_metrics",
                                      "none") == "detailed")
    metrics_on = bool(getattr(args, "metrics", False))
    if metrics_on and flavor.metrics is None:
        raise SimConfigError(f"--metrics: the {flavor.name} flavor has no /metrics")
    key = api_key(args)
    if key is not None and flavor.api_key is None:
        raise SimConfigError(f"--api-key: the {flavor.name} flavor does not model an API "
                             "key (vllm and llamacpp do)")
    return SimApi(engines, settings, args.spec, getattr(args, "interrupt", None),
                  api_key=key, metrics_on=metrics_on)


def _spec_metrics_k(args: argparse.Namespace, flavor: Flavor, engines: list[StepLoop]
                    ) -> int | None:
    """The draft length of `metrics.speculative_decoding`'s histogram, when it is sent."""
    if getattr(args, "per_request_spec_decode_metrics", "none") == "none":
        return None
    if not flavor.spec_decode_metrics:
        raise SimConfigError("--per-request-spec-decode-metrics: the "
                             f"{flavor.name} flavor does not send them (vllm does)")
    if args.spec == "off":
        # vllm/config/vllm.py: "--per-request-spec-decode-metrics requires speculative
        # decoding"
        raise SimConfigError("--per-request-spec-decode-metrics needs --spec on or schedule")
    return engines[0].core.k


def api_key(args: argparse.Namespace) -> str | None:
    """The key of `--api-key` or of the variable `--api-key-env` names (None: no key)."""
    key, env = getattr(args, "api_key", None), getattr(args, "api_key_env", None)
    if key is not None and env is not None:
        raise SimConfigError("--api-key and --api-key-env go alone, not together")
    if env is not None:
        key = os.environ.get(env)
        if not key:
            raise SimConfigError(f"--api-key-env: the variable {env} is unset or empty")
    if key is not None and not key:
        raise SimConfigError("--api-key must not be empty")
    return key


def tls_context(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    """A server TLS context for `--tls-cert`/`--tls-key`, or None; SimConfigError if bad."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise SimConfigError("--tls-cert and --tls-key go together")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise SimConfigError(f"cannot load the TLS certificate/key: {exc}") from None
    return ctx


async def serve(api: SimApi, host: str, port: int, tls: ssl.SSLContext | None = None,
                stop: asyncio.Event | None = None,
                ready: Callable[[str], None] | None = None) -> int:
    """Serve until SIGINT/SIGTERM, or until `stop` is set when one is given (a server in
    a thread of another program, which cannot take signals); `ready` gets the URL."""
    keepalive = api.flavor.keepalive_timeout_s
    timeouts: dict[str, Any] = {} if keepalive is None else {"keepalive_timeout": keepalive}
    runner = web.AppRunner(api.app(), access_log=None, handle_signals=False,
                           shutdown_timeout=1.0, **timeouts)
    await runner.setup()
    try:
        sock = listen_socket(host, port)
    except OSError as exc:
        await runner.cleanup()
        print(f"specload: error: cannot listen on {host}:{port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    await web.SockSite(runner, sock, ssl_context=tls).start()
    bound = sock.getsockname()[1]
    core = api.engine.core
    print(f"specload-sim: profile model {api.limits.model_name}, spec {core.mode}"
          + (f" k={core.k}" if core.mode == "on" else "")
          + f", flavor {api.flavor.name}, {len(api.engines)} rank(s)"
          + (", API key required" if api.api_key else ""),
          file=sys.stderr, flush=True)
    url = _url(host, bound, tls is not None)
    print(f"specload-sim listening on {url}", flush=True)
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready(url)
    engine_task: asyncio.Future[Any] = asyncio.gather(*(e.run() for e in api.engines))
    stop_task: asyncio.Future[Any] = asyncio.create_task(stop.wait())
    trim_task = asyncio.create_task(heap_trim.trim_forever())
    status = 0
    try:
        await asyncio.wait({engine_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
        if engine_task.done() and not engine_task.cancelled():
            failure = engine_task.exception()
            print(f"specload-sim: engine stopped: {failure!r}", file=sys.stderr)
            status = 1
    finally:
        for task in (engine_task, stop_task, trim_task):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await runner.cleanup()
        if api.settings.trace is not None:
            api.settings.trace.close()
    return status


def main(args: argparse.Namespace) -> int:
    """Entry point of `specload sim`."""
    try:
        profile = engine_profile(args)
        api = build_api(args, profile)
        tls = tls_context(getattr(args, "tls_cert", None), getattr(args, "tls_key", None))
    except SimConfigError as exc:
        print(f"specload: error: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(serve(api, args.host, args.port, tls))
