"""`specload sim`: load the profile, bind, print the ready line, serve until a signal.

With `--port 0` the OS picks a free port; once the socket listens, exactly one line
`specload-sim listening on http://HOST:PORT` goes to stdout (flushed), which is what
scripts and tests wait for. SIGINT and SIGTERM stop the engine, close connections
and the trace, and exit with status 0. Configuration mistakes exit 2 with one line on
stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from aiohttp import web

from specload.sim import SimConfigError, heap_trim
from specload.sim.api import SimApi
from specload.sim.arrival import listen_socket
from specload.sim.core import EngineCore
from specload.sim.engine import Engine
from specload.sim.faults import FaultPicker, parse_fault
from specload.sim.openai_request import Limits
from specload.sim.profile import Profile, load_profile
from specload.sim.trace import TraceWriter


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def build_api(args: argparse.Namespace, profile: Profile) -> SimApi:
    """Engine + API for parsed `specload sim` arguments; SimConfigError if they are bad."""
    core = EngineCore(profile, args.spec, args.k, args.seed)
    faults = FaultPicker([parse_fault(f) for f in args.fault], args.seed)
    limits = Limits(model_name=args.model_name or profile.model.name,
                    max_model_len=profile.model.max_model_len,
                    max_output_tokens=profile.workload.max_output_tokens)
    trace = TraceWriter(args.trace) if args.trace else None
    return SimApi(Engine(core), limits, profile.workload.eos_mean_tokens, args.seed, faults,
                  trace, args.spec)


async def _serve(api: SimApi, host: str, port: int) -> int:
    runner = web.AppRunner(api.app(), access_log=None, handle_signals=False,
                           shutdown_timeout=1.0)
    await runner.setup()
    try:
        sock = listen_socket(host, port)
    except OSError as exc:
        await runner.cleanup()
        print(f"specload: error: cannot listen on {host}:{port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    await web.SockSite(runner, sock).start()
    bound = sock.getsockname()[1]
    core = api.engine.core
    print(f"specload-sim: profile model {api.limits.model_name}, spec {core.mode}"
          + (f" k={core.k}" if core.mode == "on" else ""), file=sys.stderr, flush=True)
    print(f"specload-sim listening on {_url(host, bound)}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    engine_task = asyncio.create_task(api.engine.run())
    stop_task = asyncio.create_task(stop.wait())
    trim_task = asyncio.create_task(heap_trim.trim_forever())
    status = 0
    try:
        await asyncio.wait({engine_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
        if engine_task.done() and not engine_task.cancelled():
            exc = engine_task.exception()
            print(f"specload-sim: engine stopped: {exc!r}", file=sys.stderr)
            status = 1
    finally:
        for task in (engine_task, stop_task, trim_task):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await runner.cleanup()
        if api.trace is not None:
            api.trace.close()
    return status


def main(args: argparse.Namespace) -> int:
    """Entry point of `specload sim`."""
    try:
        profile = load_profile(args.profile)
        api = build_api(args, profile)
    except SimConfigError as exc:
        print(f"specload: error: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(_serve(api, args.host, args.port))
