"""The "Tokens" tab of Locust's web UI, and `GET /specload/live` with the same data as JSON.

Locust 2.47's web-UI extension points (locust/web.py, examples/extend_web_ui.py):
`web_ui.template_args["extended_tabs"]` adds a tab, `extended_tables` gives it a table
whose rows `/stats/requests` carries as `extended_stats`, routes go on the Flask app
`web_ui.app`. The React UI renders an extended tab as that table only (webui/src: a tab
without a component gets the extended table), so the per-rung table is Locust's and the
charts come from `static/tokens_tab.js`, which the index page loads and which draws
plotly.js (served from here, no CDN) from `/specload/live` above the table. The figures
come from a child process (`report/live_figures.py`); on this process's event loop, which
runs the users in a single-process run, rows are only appended to lists as they arrive
(`LiveRungs.tap`, `health_probe.listen`), piped to the child as orjson lines once a second
(at most ~1 ms of work at a time) and its answers served as they are, since a stalled loop
merges chunks and corrupts figures (scripts/bench_liveview.py measures it). The tab exists
where the web UI runs: the local runner, or the master of `--processes N` and
master/worker runs; headless runs start nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gevent
import orjson
from flask import Blueprint, Response, request, send_file
from gevent import subprocess
from locust import events
from locust.env import Environment
from locust.runners import MasterRunner
from locust.web import WebUI

from specload.loadgen import health_probe
from specload.loadgen.live import LiveRungs, is_writer
from specload.loadgen.options import RunOptions
from specload.report.plotjs import PLOTLY_JS
from specload.report.rung_columns import View, headings

log = logging.getLogger(__name__)

TAB_KEY = "tokens"
FEED_INTERVAL_S = 1.0
ROWS_PER_LINE = 250
# Responses go out in pieces with the loop free in between: on loopback a 4.6 MB
# plotly.min.js sent at once held the loop ~50 ms.
PIECE_BYTES = 64 * 1024
STATIC = Path(__file__).with_name("static")
NOT_READY = b'{"ready": false, "state": "ready", "error": ""}'
NO_RECORDS = "--no-records: users build no request rows, so there are no token figures"


class TokensTab:
    """Feeds the figures' child process and serves its answers (see the module docstring)."""

    def __init__(self, environment: Environment, web_ui: WebUI) -> None:
        self.env = environment
        self.live = LiveRungs.for_env(environment)
        self.latest = NOT_READY  # the JSON of /specload/live
        self.table = b"[]"  # the tab's table rows
        self._rows: list[list[Any]] = []
        self._client: list[list[Any]] = []
        self._sent_rungs = 0
        self._sent_rounds = 0  # clock rounds: kept across tests
        self._stopped_at: float | None = None
        self._reset_at: float | None = None  # a test started: the feeder says so first
        self._greenlets: list[gevent.Greenlet] = []
        self.live.tap(self._rows.extend)
        health_probe.listen(self._client.append)
        environment.events.test_start.add_listener(self._on_test_start)
        environment.events.test_stop.add_listener(self._on_test_stop)
        environment.events.quit.add_listener(self._on_quit)
        self._install(web_ui)
        self.proc = subprocess.Popen([sys.executable, "-m", "specload.report.live_figures"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._greenlets = [gevent.spawn(self._feed_forever), gevent.spawn(self._read_forever)]

    # -- web UI -----------------------------------------------------------------------------

    def _install(self, web_ui: WebUI) -> None:
        web_ui.template_args["extended_tabs"] = [{"title": "Tokens", "key": TAB_KEY}]
        web_ui.template_args["extended_tables"] = [{
            "key": TAB_KEY,
            "structure": [{"key": k, "title": t} for k, t in headings(View.LIVE).items()]}]
        base = getattr(self.env.parsed_options, "web_base_path", None) or ""
        pages = Blueprint("specload", __name__, url_prefix=f"{base}/specload")
        guard = web_ui.auth_required_if_enabled
        pages.add_url_rule("/live", "live", guard(self._live))
        pages.add_url_rule("/tokens_tab.js", "script", guard(
            lambda: send_file(STATIC / "tokens_tab.js", max_age=0)))
        pages.add_url_rule("/plotly.min.js", "plotly", guard(self._plotly))
        if web_ui.app is not None:
            web_ui.app.register_blueprint(pages)
            web_ui.app.after_request(self._extend_page)

    def _live(self) -> Response:
        return Response(_pieces(self.latest), mimetype="application/json",
                        headers={"Cache-Control": "no-store"})

    def _plotly(self) -> Response:
        return Response(_file_pieces(PLOTLY_JS), mimetype="text/javascript",
                        headers={"Cache-Control": "max-age=3600"})

    def _extend_page(self, response: Response) -> Response:
        """The index page loads the tab's script; `/stats/requests` carries its table.

        A new response each time: Locust memoizes `/stats/requests` for 2 s, so the one it
        returns may be served again and must stay as it was.
        """
        endpoint = request.endpoint
        if (endpoint not in ("locust.index", "locust.request_stats")
                or response.status_code != 200 or response.direct_passthrough):
            return response
        data = response.get_data()
        if endpoint == "locust.index":
            data = data.replace(b"</body>",
                                b'<script src="./specload/tokens_tab.js"></script></body>', 1)
        else:
            end = data.rstrip().rfind(b"}")  # the report object's closing brace
            data = b'%s,"extended_stats":[{"key":"%s","data":%s}]%s' % (
                data[:end], TAB_KEY.encode(), self.table, data[end:])
        extended = Response(data, status=response.status_code, mimetype=response.mimetype)
        for name, value in response.headers.items():
            if name.lower() not in ("content-length", "content-type"):
                extended.headers[name] = value
        return extended

    # -- feeding the child ------------------------------------------------------------------

    def _on_test_start(self, environment: Environment, **_: Any) -> None:
        self._rows.clear()
        self._client.clear()
        self._sent_rungs = 0
        self._stopped_at = None
        self._reset_at = time.time()  # not sent from here: one writer per pipe

    def _on_test_stop(self, environment: Environment, **_: Any) -> None:
        self._stopped_at = time.time()

    def _tick(self) -> dict[str, Any]:
        runner = self.env.runner
        # The watermark first: every row of a request that started before it is here.
        settled = self.live.complete_until()
        rows, self._rows[:] = list(self._rows), []
        client, self._client[:] = list(self._client), []
        rungs = self.live.final[self._sent_rungs:]
        self._sent_rungs += len(rungs)
        rounds = self.live.rounds[self._sent_rounds:]
        self._sent_rounds += len(rounds)
        phases = getattr(self.env.shape_class, "phases", None)
        records = RunOptions.from_env(self.env, check=False).records
        return {"now": time.time(), "settled_until": settled, "stopped_at": self._stopped_at,
                "shares_loop": not isinstance(runner, MasterRunner),
                "state": runner.state if runner else "ready",
                "users": runner.user_count if runner else 0, "rows": rows, "client": client,
                "clock": rounds,
                "rungs": rungs, "notice": "" if records else NO_RECORDS,
                "phases": [dataclasses.asdict(p) for p in phases()] if phases else []}

    def _send(self, msg: dict[str, Any]) -> bool:
        try:
            self.proc.stdin.write(orjson.dumps(msg) + b"\n")
            self.proc.stdin.flush()
        except OSError as exc:  # the child is gone: say so where the tab shows it
            log.error("Tokens tab: its figures' process stopped (%s)", exc)
            self.latest = orjson.dumps({"ready": False, "state": "error",
                                        "error": f"the live figures' process stopped: {exc}"})
            return False
        return True

    def _feed_forever(self) -> None:
        while True:
            if self._reset_at is not None:
                reset, self._reset_at = self._reset_at, None
                if not self._send({"reset": reset}):
                    return
            tick = self._tick()
            rows = tick.pop("rows")
            # Many rows go in several lines, the loop free in between (~1 ms per 250 rows).
            for i in range(0, len(rows), ROWS_PER_LINE):
                if not self._send({"rows": rows[i:i + ROWS_PER_LINE]}):
                    return
                gevent.sleep(0)
            if not self._send(tick):
                return
            gevent.sleep(FEED_INTERVAL_S)

    def _read_forever(self) -> None:
        for line in self.proc.stdout:
            tag, _, body = line.rstrip(b"\n").partition(b" ")
            if tag == b"live":
                self.latest = body
            elif tag == b"table":
                self.table = body

    def _on_quit(self, **_: Any) -> None:
        gevent.killall(self._greenlets, block=False)
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def _pieces(data: bytes) -> Iterator[bytes]:
    for i in range(0, len(data), PIECE_BYTES):
        yield data[i:i + PIECE_BYTES]
        gevent.sleep(0)


def _file_pieces(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while piece := fh.read(PIECE_BYTES):
            yield piece
            gevent.sleep(0)


def _on_init(environment: Environment, web_ui: WebUI | None = None, **_: Any) -> None:
    if web_ui is not None and is_writer(environment):
        TokensTab(environment, web_ui)


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init.add_listener(_on_init)
