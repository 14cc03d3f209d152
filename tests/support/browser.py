"""Headless Chromium for browser tests, driven over the Chrome DevTools Protocol.

`chromium()` finds Debian's chromium (the test is skipped without it, except in CI, where
.ci/run installs it). `Browser` starts it with a DevTools port and one page, and offers
`navigate`, `evaluate` (a JavaScript expression's value, promises awaited), `wait_for`
and `screenshot`; meanwhile it collects every console error, failed load and uncaught
exception of the page in `errors`. It speaks the protocol's JSON over a WebSocket with
the websocket-client package (a dev dependency), one command at a time.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import websocket

from specload.runner.processes import free_port

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")


def chromium() -> str:
    """Chromium's path; skips the test without it, except in CI (.ci/run installs it)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI") == "true":
        pytest.fail("chromium is not installed (apt-get install -y chromium)")
    pytest.skip("chromium is not installed")


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, folder: Path, width: int = 1400, height: int = 1000) -> None:
        port = free_port()
        self.log = folder / "chromium.log"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [chromium(), *FLAGS, f"--user-data-dir={folder / 'profile'}",
                 f"--remote-debugging-port={port}", f"--window-size={width},{height}",
                 "about:blank"], stdout=subprocess.DEVNULL, stderr=log)
        self.errors: list[str] = []
        self._next_id = 0
        self.ws = websocket.create_connection(self._page_socket(port), timeout=60,
                                              suppress_origin=True)
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable")

    def _page_socket(self, port: int) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list",
                                            timeout=2) as resp:
                    pages = [t for t in json.loads(resp.read()) if t["type"] == "page"]
                if pages:
                    return str(pages[0]["webSocketDebuggerUrl"])
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        pytest.fail(f"chromium's DevTools did not come up: {self.log.read_text()[-2000:]}")

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    # -- the protocol ---------------------------------------------------------------------

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Run one command; events that arrive meanwhile are looked at for errors."""
        self._next_id += 1
        self.ws.send(json.dumps({"id": self._next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self._next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return dict(msg.get("result", {}))
            self._event(msg.get("method", ""), msg.get("params", {}))

    def _event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append(details.get("exception", {}).get("description")
                               or details.get("text", "exception"))
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description", "")))
                                        for a in params["args"]))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            self.errors.append(f"{entry['text']} ({entry.get('url', '')})")

    # -- conveniences ---------------------------------------------------------------------

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (a promise is awaited)."""
        got = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                        awaitPromise=True)
        if "exceptionDetails" in got:
            raise RuntimeError(f"{expression}: {got['exceptionDetails']}")
        return got["result"].get("value")

    def wait_for(self, expression: str, timeout: float, what: str) -> Any:
        """Evaluate `expression` until it is truthy; fails the test after `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.25)
        pytest.fail(f"timed out waiting for {what}; page errors: {self.errors}")

    def navigate(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete'", 30, f"{url} to load")

    def screenshot(self, path: Path, full_page: bool = True) -> None:
        """A PNG of the page (all of it with `full_page`)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params |= {"captureBeyondViewport": True,
                       "clip": {"x": 0, "y": 0, "width": size["width"],
                                "height": size["height"], "scale": 1}}
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", **params)["data"]))
